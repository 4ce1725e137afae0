"""A2C on Pendulum-v1 (continuous actions, Gaussian policy): solved at an evaluation mean return of -250."""
main_config = dict(
    exp_name='pendulum_a2c',
    env=dict(
        env_id='Pendulum-v1',
        collector_env_num=16,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=-250,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False, init_sigma=0.5),
        learn=dict(
            optim='adam',
            learning_rate=0.001,
            discount_factor=0.9,
            gae_lambda=0.9,
            value_weight=0.5,
            entropy_weight=0.0,
            clip_value=0.5,
        ),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=100)),
    ),
    max_env_step=2_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='a2c'),
)
