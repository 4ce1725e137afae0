"""A2C on LunarLander-v3 (discrete actions): solved at a deterministic evaluation mean return of 200."""
main_config = dict(
    exp_name='lunarlander_a2c',
    env=dict(
        env_id='LunarLander-v3',
        collector_env_num=16,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=200,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False),
        learn=dict(
            optim='rmsprop',
            learning_rate=0.001,
            discount_factor=0.99,
            gae_lambda=0.95,
            value_weight=0.5,
            entropy_weight=0.001,
            clip_value=0.5,
        ),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=500)),
    ),
    max_env_step=3_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='a2c'),
)
