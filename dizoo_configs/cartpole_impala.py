"""IMPALA on CartPole-v1 (500-step episodes): solved at an evaluation mean return of 475.

MEASURED (2026-11-24, ``python bench/ladder.py --rows cartpole --algos impala --seeds 0,1,2``, one torch thread):
solved and confirmed on 50 fresh episodes (500 / 500 / 500) on 3/3 seeds at 19k / 32k / 24k env steps (5–6 s each;
re-run 2026-11-30 with ``python bench/bench_impala.py``: 19,328 / 27,008 / 24,448, seed 1 confirmed 500.0);
hold-out of the best checkpoint on 50 other episodes 500 / 500 / 500.
Hold-out seeds (issue 47; 2026-11-28, ``python bench/stop_values.py --configs cartpole_impala --seeds 3,4``): seeds
3 / 4 stopped at 475, confirmed, at 16,768 / 24,448 env steps; their best checkpoints held out 500.0 / 500.0 on 50
fresh episodes (2/2 at or above the ladder's target 475).
"""
main_config = dict(
    exp_name='cartpole_impala',  # the run folder is ./cartpole_impala_seed<seed>
    env=dict(
        env_id='CartPole-v1',  # gymnasium's CartPole, 500-step episodes
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=4,  # evaluation episodes played at once
        n_evaluator_episode=8,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=475,  # mean return that solves it (the ladder's and the RL Zoo's): all three measured seeds reach it
    ),
    policy=dict(
        unroll_len=16,  # the unrolls V-trace trains on: 16 steps
        model=dict(encoder_hidden_size_list=[64, 64]),  # one 64x64 tanh body for actor and critic (VAC's defaults)
        learn=dict(
            update_per_collect=4,  # 4 updates per collection of 8 unrolls
            batch_size=16,  # unrolls per training batch
            learning_rate=0.003,  # Adam (IMPALA's default optimizer), constant
            entropy_weight=0.001,  # a small entropy bonus
            value_weight=0.5,  # value-loss coefficient
            discount_factor=0.99,  # gamma
        ),
        collect=dict(n_sample=8),  # unrolls across 8 envs: 16 steps per env
        eval=dict(evaluator=dict(eval_freq=40)),  # every 40 updates = 10 collections = 1,280 env steps, greedy actions
        # a FIFO of up to 1000 unrolls, each trained on at most 16 times
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=16)),
    ),
    max_env_step=300_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='impala'),  # acframe/policy/impala.py
)
