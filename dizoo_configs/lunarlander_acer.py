"""ACER on LunarLander-v3 (discrete actions, needs gymnasium[box2d]): solved at an evaluation mean of 200."""
main_config = dict(
    exp_name='lunarlander_acer',
    env=dict(
        env_id='LunarLander-v3',
        collector_env_num=8,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=200,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[128, 128]),
        learn=dict(
            update_per_collect=16,
            batch_size=32,
            learning_rate=0.0007,
            discount_factor=0.99,
            c_clip_ratio=10.0,
            value_weight=0.5,
            entropy_weight=0.01,
            trust_region=True,
            trust_region_delta=1.0,
            trust_region_alpha=0.99,
        ),
        collect=dict(n_sample=8),  # unrolls across 8 envs: T = 20 steps per env
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=100000,
            unroll_len=20,
            replay_ratio=4.0,
            replay_start_size=5000,
        )),
    ),
    max_env_step=2_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='acer'),
)
