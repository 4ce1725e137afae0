"""ACER on CartPole-v0 (200-step episodes): solved at an evaluation mean return of 195.

CartPole-v0 is the task of ACER's time-to-solve benchmark (``python bench/bench_acer.py``); the ladder's CartPole
row is v1. MEASURED (2026-11-24, ``acframe -c cartpole_acer.py -s SEED``, one torch thread): solved on 3/3 seeds at
240 / 1,140 / 1,140 env steps (0.5–1.3 s of training); on v1 (``env.env_id=CartPole-v1 env.stop_value=475``) at
4.1k / 1.4k / 1.7k env steps (evaluations 500 / 492 / 500, 3–6 s).
"""
main_config = dict(
    exp_name='cartpole_acer',  # the run folder is ./cartpole_acer_seed<seed>
    env=dict(
        env_id='CartPole-v0',  # 200-step episodes: the task of ACER's time-to-solve benchmark (the ladder's is v1)
        collector_env_num=4,  # envs stepped together by the collector
        evaluator_env_num=8,  # evaluation episodes played at once
        n_evaluator_episode=8,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=195,  # mean return that solves it (CartPole-v0's threshold): all three measured seeds reach it
    ),
    policy=dict(
        # separate 64x64 tanh policy and Q bodies (the acer_q model's defaults)
        model=dict(encoder_hidden_size_list=[64, 64]),
        learn=dict(
            update_per_collect=16,  # at most 16 updates per collection: the on-policy one, then the replays due
            batch_size=32,  # sub-trajectories per replayed batch
            learning_rate=0.002,  # Adam (ACER's default optimizer), constant
            discount_factor=0.99,  # gamma
            c_clip_ratio=10.0,  # truncated importance weights c = 10 (the paper's)
            value_weight=0.5,  # weight of the critic loss
            entropy_weight=0.01,  # entropy bonus
            trust_region=True,  # the efficient trust region against the average policy network
            trust_region_delta=1.0,  # its bound on the linearised KL (the paper's 1)
            trust_region_alpha=0.99,  # Polyak decay of the average policy network (the paper's 0.99)
        ),
        collect=dict(n_sample=4),  # unrolls across 4 envs: T = 5 steps per env
        # every 25 updates: about 100 env steps once replay starts (~5 updates per 20-step collection)
        eval=dict(evaluator=dict(eval_freq=25)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=50000,  # capacity in transitions (whole episodes evicted, oldest first)
            unroll_len=5,  # 5-step sub-trajectories, also the T of each collection
            replay_ratio=4.0,  # Poisson(4) replayed batches per collection (the paper's 4)
            replay_start_size=200,  # replay from 200 stored transitions (10 collections) on
        )),
    ),
    max_env_step=200_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='acer'),  # acframe/policy/acer.py
)
