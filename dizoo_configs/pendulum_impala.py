"""IMPALA on Pendulum-v1 (continuous torque, Gaussian policy explored with gSDE): solved at -200.

The settings of ``pendulum_a2c.py`` (the RL Zoo's A2C for Pendulum) as IMPALA runs them, with replay: 8 envs × 8-step
unrolls, batches of 8 unrolls, 4 updates per collection (each unroll trained on 4 times, then dropped), V-trace with
gamma 0.9 and lambda 0.9, RMSprop (alpha 0.99, eps 1e-5) at 7e-4 decayed linearly to 0 over the 1M-step budget
(62,500 iterations), value weight 0.4, no entropy bonus, gradient norm 0.5, separate 64×64 tanh actor and critic,
gSDE (log-std initialised at −2, the exploration matrices redrawn every 8 steps), observation normalization and
reward normalization by the running return std (``learn.reward_norm``). Evaluations average 50 episodes
(Pendulum's return depends strongly on the start angle).

MEASURED (2026-11-25, ``python bench/ladder.py --rows pendulum --algos impala --seeds S`` for S = 0, 1, 2, one torch
thread, two runs side by side): solved and confirmed on 50 fresh episodes (−171 / −155 / −172) at 176k / 96k / 96k
env steps (129 / 73 / 72 s); hold-out of the solving checkpoint on 50 other episodes −188 / −174 / −181.
Each unroll trained on once (1 update per collection) solved seeds 1 and 2 at 320k / 448k but seed 0 stayed at
−720 (it never swung up from every start); twice (2 updates) solved seed 0 at 448k; RMSprop at 1e-3 once
per unroll did not solve seed 0 in 1M (best −209). With ``reward_scale=0.1`` instead of ``reward_norm`` seed 0 stayed
near −720 as well. The previous config (Adam 1e-3, bounded mean, 8 updates per collection, each unroll replayed up
to 16 times, no gSDE) reached −804 / −300 / −267 in 500k and collapsed on two seeds.
"""
import math

main_config = dict(
    exp_name='pendulum_impala',
    env=dict(
        env_id='Pendulum-v1',
        collector_env_num=8,
        evaluator_env_num=10,
        n_evaluator_episode=50,
        stop_value=-200,
    ),
    policy=dict(
        unroll_len=8,
        model=dict(
            encoder_hidden_size_list=[64, 64],
            share_encoder=False,
            activation='tanh',
            init_sigma=math.exp(-2),
            orthogonal_init=False,
            use_sde=True,
            obs_norm=True,
        ),
        learn=dict(
            update_per_collect=4,
            batch_size=8,
            optim='rmsprop',
            learning_rate=0.0007,
            rms_alpha=0.99,
            rms_eps=0.00001,
            discount_factor=0.9,
            lambda_=0.9,
            reward_norm=True,
            value_weight=0.4,
            entropy_weight=0.0,
            grad_clip_value=0.5,
            lr_decay_iters=62500,
        ),
        # 8 unrolls across 8 envs: 8 steps per env; gSDE's exploration matrices redrawn every 8 steps
        collect=dict(n_sample=8, sde_sample_freq=8),
        # every 500 iterations (8,000 env steps)
        eval=dict(evaluator=dict(eval_freq=500)),
        # each unroll trained on 4 times
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=4)),
    ),
    max_env_step=1_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='impala'),
)
