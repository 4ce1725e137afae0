"""A3C on Acrobot-v1: A2C trained asynchronously by 2 Hogwild workers on one shared model, one shared RMSprop and
shared observation/reward normalization statistics (``acframe -m async -c acrobot_a3c.py``; docs/ddp.md). Solved at
a deterministic evaluation mean return of -90 (as acrobot_a2c.py).

The A3C paper's settings (Mnih et al. 2016) as acrobot_a2c.py's RL Zoo A2C fits them: each worker rolls out
t_max = 5 steps per update with its own envs and applies its gradient to the shared weights without a lock; the
RMSprop statistics are shared (α 0.99); n-step returns (``gae_lambda=1``); the gradient norm clipped. Each worker
steps 8 envs (acrobot_a2c.py's 16, split over the two workers), so one update of a worker is 40 transitions.
Observations and rewards are normalized as acrobot_a2c.py's (VecNormalize's), with one set of running statistics in
shared memory that every worker updates (``models.normalization.share_statistics``).

MEASURED (2026-11-28, ``python bench/bench_a3c.py --env acrobot --solve``, 2 workers on 2 shared cores, one torch
thread each; evaluations every 10k env steps): solved and confirmed on 50 fresh episodes on 3/3 seeds (0, 1, 2) in
each of two runs (Hogwild runs differ): at 20.1k / 20.1k / 20.1k env steps (1.8-3.7 s of training) and 10.0k /
60.3k / 40.2k (2.4-8.9 s) of the 500k budget; seeds 3, 4, 5 at 20.1k / 10.0k / 40.1k. acrobot_a2c.py (serial, the
same 16 envs) in the same run: 60k / 40k / 20k env steps, 2.1-5.6 s (docs/benchmarks.md, "Asynchronous A3C vs serial
A2C"). Without obs/reward normalization the same settings also solved 3/3 seeds, but at 130.4k / 120.4k / 40.1k env
steps: the shared statistics are kept.
"""
main_config = dict(
    exp_name='acrobot_a3c',  # the run folder is ./acrobot_a3c_seed<seed>
    env=dict(
        env_id='Acrobot-v1',  # gymnasium's Acrobot, 500-step episodes
        collector_env_num=8,  # envs stepped by each async worker (worker w's seeded seed + 8w, ...)
        evaluator_env_num=10,  # evaluation episodes played at once (by worker 0)
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=-90,  # mean return that solves it (as acrobot_a2c.py)
    ),
    policy=dict(
        # separate 64x64 tanh actor and critic; observations normalized by shared running statistics
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False, obs_norm=True),
        learn=dict(
            optim='rmsprop',  # RMSprop, its statistics shared by the workers (A3C's shared RMSprop)
            learning_rate=0.0007,  # RMSprop's step size, constant (acrobot_a2c.py's)
            discount_factor=0.99,  # gamma
            gae_lambda=1.0,  # plain n-step returns, as A3C
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.0,  # no entropy bonus (acrobot_a2c.py's)
            reward_norm=True,  # rewards divided by the running std of the return, statistics shared by the workers
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
        ),
        collect=dict(n_sample=40),  # per worker: 8 envs x t_max 5 steps
        eval=dict(evaluator=dict(eval_freq=250)),  # every 250 updates of all workers together = 10,000 env steps
    ),
    parallel=dict(async_worker_num=2),  # Hogwild workers (-m async); at most one per CPU core
    max_env_step=500_000,  # the training budget in env steps, every worker's together
    pipeline='async',  # written for -m async: acframe -c runs it there without -m
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env, one per worker
    policy=dict(type='a2c'),  # acframe/policy/a2c.py: A3C is A2C trained asynchronously
)
