"""IMPALA on CartPole-v1 (500-step episodes): solved at an evaluation mean return of 475.

MEASURED (2026-11-24, ``python bench/ladder.py --rows cartpole --algos impala --seeds 0,1,2``, one torch thread):
solved and confirmed on 50 fresh episodes (500 / 500 / 500) on 3/3 seeds at 19k / 32k / 24k env steps (5–6 s each);
hold-out of the best checkpoint on 50 other episodes 500 / 500 / 500.
"""
main_config = dict(
    exp_name='cartpole_impala',
    env=dict(
        env_id='CartPole-v1',
        collector_env_num=8,
        evaluator_env_num=4,
        n_evaluator_episode=8,
        stop_value=475,
    ),
    policy=dict(
        unroll_len=16,
        model=dict(encoder_hidden_size_list=[64, 64]),
        learn=dict(
            update_per_collect=4,
            batch_size=16,
            learning_rate=0.003,
            entropy_weight=0.001,
            value_weight=0.5,
            discount_factor=0.99,
        ),
        collect=dict(n_sample=8),  # unrolls across 8 envs: 16 steps per env
        eval=dict(evaluator=dict(eval_freq=40)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=16)),
    ),
    max_env_step=300_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='impala'),
)
