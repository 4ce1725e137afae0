"""PPO with an LSTM on Pendulum-v1 without its angular velocity (``pendulum_novel``: cos and sin of the angle only).

The observation hides how fast the pendulum turns; the LSTM (``policy.model.rnn``) infers it from the history. The RL
Zoo's ``ppo_lstm`` settings for PendulumNoVel-v1 (rl-baselines3-zoo hyperparams/ppo_lstm.yml: 4 envs x 1024 steps
per rollout, 10 epochs, gamma 0.9, GAE lambda 0.95, lr 1e-3 and clip 0.2 constant, no entropy bonus, gSDE redrawn
every 4 steps; RecurrentPPO's default minibatch of 128 steps), here as sequences of 128 steps (one per minibatch),
each recomputed from the actors' state stored at its first step; a 64-unit encoder and LSTM (the Zoo's LSTM has
256 units and a separate critic LSTM: this file's core is shared, ``share_encoder=True``).

MEASURED (2026-11-28, one CPU thread, ``python bench/ladder.py --rows pendulum_novel --algos ppo_lstm --seeds 0,1,2``,
the whole 100k, 60 / 61 / 67 s): best 50-episode evaluation -260 / -202 / -195, hold-out of that checkpoint on 50
fresh episodes -236 / -179 / -175 (Pendulum-v1 with its velocity, pendulum_ppo.py: -165 / -160 / -160). The same
file without the core (``policy.model.rnn.type=None``), seed 0: best -1100. sb3-contrib's RecurrentPPO with the Zoo's
settings at the same 100k: hold-out -331 / -370 / -268 in 1,930-2,011 s per seed (docs/benchmarks.md, recurrent section). Re-run after the LSTM's gradient step took the one-lane-per-column unroll
(its sums run in another order, so each seed's run differs in the last bits and then lands elsewhere in the spread;
2026-11-28, ``acframe -c pendulum_novel_ppo_lstm.py -s SEED``): best evaluation -221 / -225 / -176; the ladder's
hold-out (the command above, 56 / 53 / 57 s) -197 / -236 / -170.
"""
main_config = dict(
    exp_name='pendulum_novel_ppo_lstm',  # the run folder is ./pendulum_novel_ppo_lstm_seed<seed>
    env=dict(
        env_id='pendulum_novel',  # Pendulum-v1 with its angular velocity removed (acframe.envs.gym_env.NO_VELOCITY)
        collector_env_num=4,  # the Zoo's 4 envs
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=50,  # episodes per evaluation (as pendulum_ppo.py: a few start states skew 10)
        stop_value=None,  # none: the whole 100k is the policy to ship
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64],  # one 64-unit layer before the LSTM
            share_encoder=True,  # one encoder and one LSTM for actor and critic (False: an encoder and a core each)
            actor_head_hidden_size=64,  # a 64-unit layer after the LSTM in the actor head
            critic_head_hidden_size=64,  # and in the critic head
            init_sigma=1.0,  # gSDE's noise scale starts at 1 (as pendulum_ppo.py)
            use_sde=True,  # gSDE exploration, the Zoo's
            rnn=dict(
                type='lstm',  # the recurrent core
                hidden_size=64,  # units of the LSTM
                num_layers=1,  # one LSTM layer
                seq_len=128,  # 8 sequences of 128 steps per env and rollout, each from its stored start state
            ),
        ),
        learn=dict(
            epoch_per_collect=10,  # the Zoo's 10 epochs over each rollout
            batch_size=128,  # RecurrentPPO's default minibatch: one 128-step sequence, 320 gradient steps per rollout
            learning_rate=0.001,  # Adam, the Zoo's, constant
            discount_factor=0.9,  # the Zoo's gamma
            gae_lambda=0.95,  # the Zoo's GAE lambda
            clip_ratio=0.2,  # PPO's clip range, the Zoo's, constant
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.0,  # the Zoo's: no entropy bonus
        ),
        # transitions per rollout, over all 4 envs (1024 steps each); gSDE redraws its noise every 4 steps
        collect=dict(n_sample=4096, sde_sample_freq=4),
        # every 2 rollouts (320 gradient steps each)
        eval=dict(evaluator=dict(eval_freq=640)),
    ),
    max_env_step=100_000,  # the training budget in env steps, the Zoo's 100k
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py with policy.model.rnn
)
