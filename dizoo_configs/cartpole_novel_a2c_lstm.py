"""A2C with an LSTM on CartPole-v1 without velocities (``cartpole_novel``: cart position and pole angle only).

``cartpole_a2c.py``'s settings (8 envs x 5 steps per update, RMSprop 3e-3, n-step returns) with one LSTM of 64 units
after the shared 64x64 encoder, and an entropy bonus of 0.01: the learner recomputes each 5-step segment from the state
stored at its first step (truncated backpropagation through time over 5 steps; the state itself runs on across
segments). Slower than PPO on this task (``cartpole_novel_ppo_lstm.py``).
Measured (2026-11-28, one CPU thread, `acframe -c cartpole_novel_a2c_lstm.py -s SEED`, budget 500k env steps, with
the padded fused unroll of docs/recurrent.md): seeds 0 / 1 / 2 solved (10-episode greedy mean >= 475) at 284k / 332k /
256k env steps (42 / 49 / 40 s), confirmed on 50 fresh episodes at 495.6 / 500 / 500; seeds 3 / 4: 228k / 164k
(confirmed 500 / 497.2) -- not within the 100k the RL Zoo's PPO needs. Why the entropy bonus: without it
(``policy.learn.entropy_weight=0``, this file's value before the fused unroll) seed 0 collapsed to one action within
its first 30k env steps (policy entropy below 0.01 from 26k on, 2e-5 at the end; greedy return 9.9 at every
evaluation after 20k) and stayed there for the whole 500k, while seeds
1 / 2 / 3 / 4 solved at 248k / 256k / 432k / 344k (before the fused unroll, with the bonus at 0: seeds 0 / 1 / 2 at
212k / 264k / 300k -- the unroll adds in another order, so the runs diverge). The same file without the core
(``policy.model.rnn.type=None``) spent the whole 500k on seeds 0 / 1 / 2 with a best evaluation of 47.3 / 45.7 / 44.9
(45.1 / 47.3 / 45.8 with the bonus at 0, before the fused unroll).
"""
main_config = dict(
    exp_name='cartpole_novel_a2c_lstm',  # the run folder is ./cartpole_novel_a2c_lstm_seed<seed>
    env=dict(
        env_id='cartpole_novel',  # CartPole-v1 with its two velocities removed (acframe.envs.gym_env.NO_VELOCITY)
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=475,  # greedy mean return that solves it
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64, 64],  # a 64x64 tanh encoder before the LSTM
            share_encoder=True,  # one encoder and one LSTM for actor and critic (False: an encoder and a core each)
            rnn=dict(
                type='lstm',  # the recurrent core
                hidden_size=64,  # LSTM units
                num_layers=1,  # one LSTM layer
            ),
        ),
        learn=dict(
            optim='rmsprop',  # RMSprop (alpha 0.99, eps 1e-5: the defaults), A2C's usual optimizer
            learning_rate=0.003,  # RMSprop's step size, constant
            discount_factor=0.99,  # gamma
            gae_lambda=1.0,  # plain n-step returns, as A2C
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.01,  # a small entropy bonus: without it a seed's policy collapsed to one action
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
        ),
        collect=dict(n_sample=40),  # 8 envs x 5 steps
        eval=dict(evaluator=dict(eval_freq=100)),  # every 100 updates = 4,000 env steps, greedy actions
    ),
    max_env_step=500_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='a2c'),  # acframe/policy/a2c.py with policy.model.rnn
)
