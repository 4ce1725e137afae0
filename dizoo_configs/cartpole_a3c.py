"""A3C on CartPole-v1: A2C trained asynchronously by 2 Hogwild workers on one shared model and one shared RMSprop
(``acframe -m async -c cartpole_a3c.py``; docs/ddp.md). Solved at a deterministic evaluation mean return of 490.

The A3C paper's settings (Mnih et al. 2016): each worker rolls out t_max = 5 steps per update with its own envs and
applies its gradient to the shared weights without a lock; the RMSprop statistics are shared (α 0.99); n-step returns
(``gae_lambda=1``); the gradient norm clipped. Each worker steps 4 envs (``cartpole_a2c.py``'s 8, split over the two
workers), so one update of a worker is 20 transitions.

MEASURED (2026-11-28, ``python bench/bench_a3c.py --solve``, 2 workers on 2 cores, one torch thread each): solved
and confirmed on 50 fresh episodes on 3/3 seeds (0, 1, 2) at 23.7k / 12.8k / 7.9k env steps (2.4-5.7 s each) of the
100k budget; about twice the serial A2C's env steps per second, but more env steps to solve than ``cartpole_a2c.py``
(docs/benchmarks.md, "Asynchronous A3C vs serial A2C"). Re-measured 2026-11-28 after the normalization statistics
became shareable (``--solve --only a3c``): 3/3 again, at 8.1k / 34.5k / 22.1k env steps (1.4-4.9 s).
"""
main_config = dict(
    exp_name='cartpole_a3c',  # the run folder is ./cartpole_a3c_seed<seed>
    env=dict(
        env_id='CartPole-v1',  # gymnasium's CartPole, 500-step episodes
        collector_env_num=4,  # envs stepped by each async worker (worker w's seeded seed + 4w, ...)
        evaluator_env_num=10,  # evaluation episodes played at once (by worker 0)
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=490,  # mean return that solves it (as cartpole_a2c.py)
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False),  # separate 64x64 tanh actor and critic
        learn=dict(
            optim='rmsprop',  # RMSprop, its statistics shared by the workers (A3C's shared RMSprop)
            learning_rate=0.003,  # RMSprop's step size, constant
            discount_factor=0.99,  # gamma
            gae_lambda=1.0,  # plain n-step returns, as A3C
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.0,  # no entropy bonus
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
        ),
        collect=dict(n_sample=20),  # per worker: 4 envs x t_max 5 steps
        eval=dict(evaluator=dict(eval_freq=20)),  # every 20 updates of all workers together = 400 env steps
    ),
    parallel=dict(async_worker_num=2),  # Hogwild workers (-m async); at most one per CPU core
    max_env_step=100_000,  # the training budget in env steps, every worker's together
    pipeline='async',  # written for -m async: acframe -c runs it there without -m
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env, one per worker
    policy=dict(type='a2c'),  # acframe/policy/a2c.py: A3C is A2C trained asynchronously
)
