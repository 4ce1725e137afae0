"""ACER on CartPole-v0 (200-step episodes): solved at an evaluation mean return of 195.

CartPole-v0 is the task of ACER's time-to-solve benchmark (``python bench/bench_acer.py``); the ladder's CartPole
row is v1. MEASURED (2026-11-24, ``acframe -c cartpole_acer.py -s SEED``, one torch thread): solved on 3/3 seeds at
240 / 1,140 / 1,140 env steps (0.5–1.3 s of training); on v1 (``env.env_id=CartPole-v1 env.stop_value=475``) at
4.1k / 1.4k / 1.7k env steps (evaluations 500 / 492 / 500, 3–6 s).
"""
main_config = dict(
    exp_name='cartpole_acer',
    env=dict(
        env_id='CartPole-v0',
        collector_env_num=4,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=195,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64]),
        learn=dict(
            update_per_collect=16,
            batch_size=32,
            learning_rate=0.002,
            discount_factor=0.99,
            c_clip_ratio=10.0,
            value_weight=0.5,
            entropy_weight=0.01,
            trust_region=True,
            trust_region_delta=1.0,
            trust_region_alpha=0.99,
        ),
        collect=dict(n_sample=4),  # unrolls across 4 envs: T = 5 steps per env
        eval=dict(evaluator=dict(eval_freq=25)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=50000,
            unroll_len=5,
            replay_ratio=4.0,
            replay_start_size=200,
        )),
    ),
    max_env_step=200_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='acer'),
)
