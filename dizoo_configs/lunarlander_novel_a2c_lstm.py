"""A2C with an LSTM on LunarLander-v3 without its velocities (``lunarlander_novel``: x, y, angle, two leg contacts).

The observation hides the lander's x and y velocities and its angular velocity; an LSTM each for actor and critic
(``policy.model.rnn``) infers them from the history. lunarlander_a2c.py's settings (Gymnasium's A2C tutorial: 10 envs
x 128 steps per update, gamma 0.999, GAE lambda 0.95, entropy bonus 0.01, RMSprop with the critic learning 5x faster
than the actor, the whole 3M budget, evaluation with sampled actions) with a 64-unit layer and a 64-unit LSTM each
instead of the 64x64 bodies, and observation normalization. Each rollout keeps every env's state at its first step;
the update recomputes the 128 steps from it with the current weights, episode starts inside masked
(docs/recurrent.md). No stop value: the whole 3M, as lunarlander_a2c.py.

MEASURED (2026-11-29 20:14-21:24 UTC, an AMD EPYC, one torch thread, two runs side by side beside a 2-core Pong
run; run as ``acframe -c lunarlander_a2c.py -s SEED env.env_id=lunarlander_novel env.evaluator_env_num=10
env.n_evaluator_episode=10 policy.model.rnn.type=lstm policy.model.rnn.hidden_size=64
"policy.model.encoder_hidden_size_list=[64]" policy.model.obs_norm=True policy.learn.torch_threads=1``, whose compiled
config is this file's but for its name), seeds 0 / 1 / 2: best 10-episode sampled evaluation
43.7 / 84.0 / 5.3 (at 2.94M / 2.76M / 1.97M), final 24.2 / 33.7 / -23.7 (2,177 / 2,213 / 1,907 s); hold-out on 50
fresh episodes with sampled actions (``acframe -m eval --load RUN/ckpt/ckpt_best.pth --episodes 50 -s 300000SEED``)
of the best checkpoint -4.3 / +60.2 / -60.2 (mean -1), of the last -9.6 / +8.0 / +6.4 (mean +2); greedy
(``policy.eval.deterministic=True``) the best checkpoints hold out at -114 / -124 / -153: the greedy lander hovers,
as lunarlander_a2c.py's. With sampled actions lunarlander_novel_impala_lstm.py's best checkpoints (1M; its
hold-out seeds, ``-s 3000SEED``) hold out at -53 / +22 / -103 (mean -44; greedy -61 / +39 / -140). All far from the
ladder's 200 (lunarlander_a2c.py, with the velocities, reaches 200 on 2/3 seeds in 3M). Without the core: not run.
"""
main_config = dict(
    exp_name='lunarlander_novel_a2c_lstm',  # the run folder is ./lunarlander_novel_a2c_lstm_seed<seed>
    env=dict(
        env_id='lunarlander_novel',  # LunarLander-v3 with its velocities removed (acframe.envs.gym_env.NO_VELOCITY)
        collector_env_num=10,  # the tutorial's 10 envs
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation
        stop_value=None,  # none: the whole 3M (no seed comes near the ladder's 200)
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64],  # one 64-unit layer before each LSTM
            share_encoder=False,  # separate actor and critic (each with its learning rate): an encoder and an LSTM each
            obs_norm=True,  # observations normalized by their running mean and std
            rnn=dict(
                type='lstm',  # the recurrent core: it infers the velocities from the positions it saw
                hidden_size=64,  # units of each LSTM
                num_layers=1,  # one LSTM layer
            ),
        ),
        learn=dict(
            optim='rmsprop',  # RMSprop, the tutorial's
            learning_rate=0.001,  # the actor's step size, constant
            critic_learning_rate=0.005,  # the critic (its encoder and LSTM too) learns 5x faster, as the tutorial's
            discount_factor=0.999,  # the tutorial's gamma
            gae_lambda=0.95,  # the tutorial's GAE lambda
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.01,  # the tutorial's entropy bonus
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
        ),
        collect=dict(n_sample=1280),  # 10 envs x 128 steps: each update recomputes 128-step sequences
        # every 20 updates = 25,600 env steps, with sampled actions: the greedy lander often hovers (see above)
        eval=dict(deterministic=False, evaluator=dict(eval_freq=20)),
    ),
    max_env_step=3_000_000,  # the training budget in env steps (lunarlander_a2c.py's)
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='a2c'),  # acframe/policy/a2c.py with policy.model.rnn
)
