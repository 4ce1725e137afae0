"""PPO with an LSTM on CartPole-v1 without velocities (``cartpole_novel``: cart position and pole angle only).

The observation hides the cart and pole velocities, so a feed-forward policy cannot tell where the pole is going;
the LSTM (``policy.model.rnn``) infers it from the history. The RL Zoo's ``ppo_lstm`` settings for CartPoleNoVel-v1
(8 envs x 32 steps per rollout, one minibatch of 256 = the whole rollout, 20 epochs, gamma 0.98, GAE lambda 0.8, lr
1e-3 and clip 0.2 decayed linearly to 0 over the 100k-step budget, an LSTM of 64 units).
Measured (2026-11-28 18:57 UTC, one CPU thread, `acframe -c cartpole_novel_ppo_lstm.py -s SEED`, budget 100k env
steps, with the one-lane-per-column unroll on the observations' lanes of docs/recurrent.md): seeds 0 / 1 / 2 solved
(10-episode greedy mean >= 475, confirmed by 493.2 / 495.7 / 498.7 on 50 fresh episodes) at 43.5k / 16.6k / 15.4k
env steps (22.9 / 8.5 / 7.8 s). (The same unroll on the features' lanes, differing in the last bits: 57,600 / 24,320
/ 14,080; with the padded unroll before it: 70,400 / 25,600
/ 21,760, seeds 3 / 4: 38,400 / 26,880; before that: 44,800 / 35,840 / 16,640.) The same file without the core
(``policy.model.rnn.type=None``) spent the whole 100k on seeds 0 / 1 / 2 with a best evaluation of 45.6 / 45.9 / 46.5.
On the benchmark ladder beside sb3-contrib's RecurrentPPO with the Zoo's settings (2026-11-29, an AMD EPYC, where the
float paths differ: ``python bench/ladder.py --rows cartpole_novel --algos ppo_lstm --seeds 0,1,2``): solved at
55k / 32k / 17k env steps in 60 / 36 / 22 s, the best checkpoints held out at 499.5 / 481.1 / 497.9 on 50 fresh
episodes; the whole 100k (``env.stop_value=None``) took 102 s, RecurrentPPO's 466-505 s (docs/benchmarks.md).
The whole 100k on seeds 0 / 1 / 2 (``env.stop_value=None``, 2026-11-29, the AMD EPYC), final checkpoint on 50 fresh
episodes (``acframe -m eval --load RUN/ckpt/ckpt_latest.pth --episodes 50 -s 30000S``): 500.0 on every seed, the
RL Zoo's 500.
"""
main_config = dict(
    exp_name='cartpole_novel_ppo_lstm',  # the run folder is ./cartpole_novel_ppo_lstm_seed<seed>
    env=dict(
        env_id='cartpole_novel',  # CartPole-v1 with its two velocities removed (acframe.envs.gym_env.NO_VELOCITY)
        collector_env_num=8,  # the Zoo's 8 envs
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=475,  # greedy mean return that solves it
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64],  # one 64-unit layer before the LSTM
            share_encoder=True,  # one encoder and one LSTM for actor and critic (False: an encoder and a core each)
            actor_head_hidden_size=64,  # a 64-unit layer after the LSTM in the actor head (the Zoo's pi=[64])
            critic_head_hidden_size=64,  # and in the critic head (the Zoo's vf=[64])
            rnn=dict(
                type='lstm',  # the recurrent core
                hidden_size=64,  # the Zoo's lstm_hidden_size
                num_layers=1,  # one LSTM layer
                seq_len=0,  # whole rollout columns: 8 sequences of 32 steps from their stored start states
            ),
        ),
        learn=dict(
            epoch_per_collect=20,  # the Zoo's 20 epochs over each rollout
            batch_size=256,  # the whole rollout (8 sequences), one gradient step per epoch
            learning_rate=0.001,  # Adam, the Zoo's, decayed below
            discount_factor=0.98,  # the Zoo's gamma
            gae_lambda=0.8,  # the Zoo's GAE lambda
            clip_ratio=0.2,  # PPO's clip range, decayed below
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.0,  # no entropy bonus
            # 100k env steps / 256 per rollout * 20 steps per rollout: zero at the budget
            lr_decay_iters=7800,
            clip_ratio_decay_iters=7800,  # the clip range too, as the Zoo's
        ),
        # transitions per rollout, over all 8 envs (32 steps each)
        collect=dict(n_sample=256),
        # every 100 gradient steps = 5 rollouts = 1,280 env steps, greedy actions
        eval=dict(evaluator=dict(eval_freq=100)),
    ),
    max_env_step=100_000,  # the training budget in env steps, the Zoo's 100k
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py with policy.model.rnn
)
