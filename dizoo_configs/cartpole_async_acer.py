"""Asynchronous ACER on CartPole-v1 (ChainerRL's async ACER; ``acframe -m async -c cartpole_async_acer.py``;
docs/ddp.md): 2 Hogwild workers, each with its own envs and its own episodic replay, on one shared model, one shared
Adam and one shared average policy network. Solved at a deterministic evaluation mean return of 475.

Each worker steps 2 envs (``cartpole_acer.py``'s 4, split over the two workers) with t_max = 5 and replays from its
own buffer; budget 100k env steps, every worker's together.

MEASURED (2026-11-28, ``/work/bin/heavy /work/bin/heavy python bench/bench_async_acer.py --tasks cartpole``, 2 workers
on the 2 shared cores, one torch thread each): solved and confirmed on 50 fresh episodes on 3/3 seeds (0, 1, 2) at
11,230 / 11,280 / 2,380 env steps of the 100k budget (confirmations 495 / 481 / 483; 12 / 12 / 3 s of training).
Runs are not repeatable (Hogwild: the workers' interleaving varies): a second run of the same three seeds
(``... bench_async_acer.py --serial``) solved 3/3 at 8,820 / 6,590 / 12,390 env steps (17-28 s, the machine loaded),
where the serial ``cartpole_acer.py`` on CartPole-v1 (one process, 4 envs) solved at 4,120 / 1,380 / 1,720 in 3-5 s:
on CartPole two async workers need more env steps and more time (docs/benchmarks.md).
"""
main_config = dict(
    exp_name='cartpole_async_acer',  # the run folder is ./cartpole_async_acer_seed<seed>
    env=dict(
        env_id='CartPole-v1',  # gymnasium's CartPole, 500-step episodes (ChainerRL's example task)
        collector_env_num=2,  # envs stepped by each async worker (cartpole_acer.py's 4, split over the 2 workers)
        evaluator_env_num=8,  # evaluation episodes played at once (by worker 0)
        n_evaluator_episode=8,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=475,  # mean return that solves it (CartPole-v1's threshold)
    ),
    policy=dict(
        # separate 64x64 tanh policy and Q bodies (the acer_q model's defaults)
        model=dict(encoder_hidden_size_list=[64, 64]),
        learn=dict(
            update_per_collect=16,  # at most 16 updates per collection of a worker: the on-policy one, then its replays
            batch_size=32,  # sub-trajectories per replayed batch (from the worker's own buffer)
            learning_rate=0.002,  # Adam, its statistics shared by the workers (as A3C's shared RMSprop), constant
            discount_factor=0.99,  # gamma
            c_clip_ratio=10.0,  # truncated importance weights c = 10 (the paper's)
            value_weight=0.5,  # weight of the critic loss
            entropy_weight=0.01,  # entropy bonus (ChainerRL's beta)
            trust_region=True,  # the efficient trust region against the shared average policy network
            trust_region_delta=1.0,  # its bound on the linearised KL (the paper's 1)
            trust_region_alpha=0.99,  # Polyak decay of the average policy network (the paper's 0.99)
        ),
        collect=dict(n_sample=2),  # per worker: unrolls across its 2 envs, t_max = 5 steps per env
        # every 50 updates of all workers together (about 100 env steps once both replay)
        eval=dict(evaluator=dict(eval_freq=50)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=50000,  # capacity of each worker's buffer in transitions (whole episodes evicted)
            unroll_len=5,  # 5-step sub-trajectories, also the t_max of each collection
            replay_ratio=4.0,  # Poisson(4) replayed batches per collection of a worker (the paper's 4)
            replay_start_size=200,  # a worker replays once its own buffer holds 200 transitions
        )),
    ),
    parallel=dict(async_worker_num=2),  # Hogwild workers (-m async); at most one per CPU core
    max_env_step=100_000,  # the training budget in env steps, every worker's together
    pipeline='async',  # written for -m async: acframe -c runs it there without -m
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env, one per worker
    policy=dict(type='acer'),  # acframe/policy/acer.py, trained asynchronously
)
