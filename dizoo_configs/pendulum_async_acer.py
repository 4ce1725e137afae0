"""Asynchronous ACER with a stochastic dueling network on Pendulum-v1 (continuous actions; ChainerRL's async ACER;
``acframe -m async -c pendulum_async_acer.py``; docs/ddp.md): 2 Hogwild workers, each with its own envs and its own
episodic replay, on one shared model, one shared Adam and one shared average policy network. Solved at a
deterministic evaluation mean of -200.

Each worker steps 4 envs (``pendulum_acer.py``'s 8, split over the two workers) with t_max = 20 and replays from its
own buffer once it holds 1,000 transitions; budget 300k env steps, every worker's together.

MEASURED (2026-11-28, ``/work/bin/heavy /work/bin/heavy python bench/bench_async_acer.py --tasks pendulum``, 2 workers
on the 2 shared cores, one torch thread each; 20-episode deterministic evaluations every 200 updates): solved and
confirmed on 50 fresh episodes on 3/3 seeds (0, 1, 2) at 30,560 / 27,760 / 28,000 env steps of the 300k budget
(evaluations -187 / -157 / -152, confirmations -184 / -142 / -135; 13 / 15 / 16 s of training). Runs are not
repeatable (Hogwild): a second run of the same seeds (``... bench_async_acer.py --serial``) solved 3/3 at 22,960 /
24,160 / 48,160 env steps (9 / 10 / 18 s), the serial ``pendulum_acer.py`` interleaved with it at 39,680 / 45,120 /
34,560 (15 / 19 / 14 s) (docs/benchmarks.md).
"""
main_config = dict(
    exp_name='pendulum_async_acer',  # the run folder is ./pendulum_async_acer_seed<seed>
    env=dict(
        env_id='Pendulum-v1',  # gymnasium's Pendulum, 200-step episodes, continuous torque
        collector_env_num=4,  # envs stepped by each async worker (pendulum_acer.py's 8, split over the 2 workers)
        evaluator_env_num=10,  # evaluation episodes played at once (by worker 0)
        n_evaluator_episode=20,  # episodes per evaluation (8 fixed start states can hold a hard one)
        stop_value=-200,  # mean return that solves it (as pendulum_acer.py)
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64, 64],  # 64x64 tanh bodies
            advantage_hidden_size_list=[64],  # the SDN's advantage MLP on [critic feature, action]
            share_encoder=False,  # separate actor and critic
            init_sigma=0.5,  # the Gaussian's std starts at 0.5
            mu_bound=2.0,  # the Gaussian's mean squashed into Pendulum's torque range [-2, 2]
            n_action_samples=5,  # actions sampled for the SDN's mean advantage
        ),
        learn=dict(
            update_per_collect=32,  # at most 32 updates per collection of a worker: the on-policy one, then its replays
            batch_size=16,  # sub-trajectories per replayed batch (from the worker's own buffer)
            learning_rate=0.003,  # Adam, its statistics shared by the workers, constant
            discount_factor=0.95,  # gamma
            reward_scale=0.1,  # rewards x 0.1: Pendulum's Q values near 1
            c_clip_ratio=10.0,  # truncated importance weights c = 10 (the paper's)
            use_q_opc=False,  # Q_ret (Retrace) in the policy gradient, not Q_opc
            value_weight=0.5,  # weight of the critic loss
            entropy_weight=0.0,  # no entropy bonus
            trust_region=True,  # the efficient trust region against the shared average policy network
            trust_region_delta=1.0,  # its bound on the linearised KL (the paper's 1)
            trust_region_alpha=0.99,  # Polyak decay of the average policy network (the paper's 0.99)
        ),
        collect=dict(n_sample=4),  # per worker: unrolls across its 4 envs, t_max = 20 steps per env
        # every 200 updates of all workers together (~1.8k env steps once both replay), greedy actions
        eval=dict(evaluator=dict(eval_freq=200)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=100000,  # capacity of each worker's buffer in transitions (whole episodes evicted)
            unroll_len=20,  # 20-step sub-trajectories (the paper's k = 20), also the t_max of each collection
            replay_ratio=8.0,  # Poisson(8) replayed batches per collection of a worker (the paper's is 4)
            replay_start_size=1000,  # a worker replays once its own buffer holds 1,000 transitions
        )),
    ),
    parallel=dict(async_worker_num=2),  # Hogwild workers (-m async); at most one per CPU core
    max_env_step=300_000,  # the training budget in env steps, every worker's together
    pipeline='async',  # written for -m async: acframe -c runs it there without -m
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env, one per worker
    policy=dict(type='acer'),  # acframe/policy/acer.py, trained asynchronously
)
