"""IMPALA with an LSTM on LunarLander-v3 without its velocities (``lunarlander_novel``: x, y, angle, two leg contacts).

The observation hides the lander's x and y velocities and its angular velocity; an LSTM each for actor and critic
(``policy.model.rnn``) infers them from the history. lunarlander_impala.py's settings (16 envs x 32-step unrolls,
batches of 16 unrolls, each unroll trained on 16 times, V-trace with gamma 0.999 and lambda 0.98, Adam 3e-4 decayed
linearly to 0 over the 1M budget, reward normalization, standardized policy-gradient advantages, entropy bonus 0.01,
observation normalization, orthogonal init) with a 64-unit layer and a 64-unit LSTM each instead of the 64x64 bodies.
Each unroll keeps every env's state at its first step; every update recomputes it from that state with the current
weights, episode starts inside masked (docs/recurrent.md). No stop value: the whole 1M, as
lunarlander_novel_ppo_lstm.py.

MEASURED (2026-11-29 17:35-18:33 UTC, an AMD EPYC, one torch thread, seeds 1 and 2 side by side beside a 2-core
Pong run, 1,309 / 2,001 / 1,972 s; run as ``acframe -c lunarlander_impala.py -s SEED env.env_id=lunarlander_novel
policy.model.rnn.type=lstm policy.model.rnn.hidden_size=64 "policy.model.encoder_hidden_size_list=[64]"
policy.learn.torch_threads=1``, whose compiled config is this file's but for its name), seeds 0 / 1 / 2: best
10-episode greedy evaluation -40 / +53 / -99 (at 471k / 860k / 799k), final -128 / -117 / -140; hold-out on 50 fresh
episodes (``acframe -m eval --load RUN/ckpt/ckpt_best.pth --episodes 50 -s 3000SEED``, i.e. 30000 + SEED) of the
best checkpoint -61 / +39 / -140 (mean -54), of the last -115 / -56 / -138; at the ladder's seeds (``-s
30000SEED``, 300000 + SEED; measured 2026-11-30) the best checkpoints hold out at -65 / +26 / -129 (mean -56).
Beside it at the ladder's seeds: lunarlander_novel_ppo_lstm.py -49 / -104 / -118 (mean -90), sb3-contrib's
RecurrentPPO with the RL Zoo's settings -122 / -88 / -173 (mean -128), lunarlander_novel_acer_lstm.py -119 / -122 /
-121 (mean -121); all far from the ladder's 200. Each unroll trained on 4 times instead of 16 (lr decay
over 7,812 iterations, seed 0, 563 s): best -129, hold-out -155.
"""
main_config = dict(
    exp_name='lunarlander_novel_impala_lstm',  # the run folder is ./lunarlander_novel_impala_lstm_seed<seed>
    env=dict(
        env_id='lunarlander_novel',  # LunarLander-v3 with its velocities removed (acframe.envs.gym_env.NO_VELOCITY)
        collector_env_num=16,  # envs stepped together by the collector
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation
        stop_value=None,  # none: the whole 1M (no seed comes near the ladder's 200)
    ),
    policy=dict(
        unroll_len=32,  # the unrolls V-trace trains on: 32 steps, each from the actors' state at its first step
        model=dict(
            encoder_hidden_size_list=[64],  # one 64-unit layer before each LSTM
            share_encoder=False,  # separate actor and critic: an encoder and an LSTM each
            activation='tanh',  # tanh hidden layers
            orthogonal_init=True,  # orthogonal weight init
            obs_norm=True,  # observations normalized by their running mean and std
            rnn=dict(
                type='lstm',  # the recurrent core: it infers the velocities from the positions it saw
                hidden_size=64,  # units of each LSTM
                num_layers=1,  # one LSTM layer
            ),
        ),
        learn=dict(
            update_per_collect=16,  # 16 updates per collection of 16 unrolls: each unroll trained on 16 times
            batch_size=16,  # unrolls per training batch
            learning_rate=0.0003,  # Adam (IMPALA's default optimizer), decayed below
            lr_decay_iters=31248,  # linear to 0 at the budget: 1,953 collections of 512 env steps x 16 updates
            discount_factor=0.999,  # gamma, lunarlander_impala.py's
            lambda_=0.98,  # V-trace's trace lambda
            reward_norm=True,  # rewards divided by the running std of the discounted return
            adv_norm=True,  # policy-gradient advantages standardized per batch
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.01,  # entropy bonus
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
        ),
        collect=dict(n_sample=16),  # unrolls across 16 envs: 32 steps per env, 512 env steps per collection
        # every 640 iterations (20,480 env steps)
        eval=dict(evaluator=dict(eval_freq=640)),
        # a FIFO of up to 1000 unrolls; each trained on 16 times, then dropped
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=16)),
    ),
    max_env_step=1_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='impala'),  # acframe/policy/impala.py with policy.model.rnn
)
