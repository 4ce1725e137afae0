"""A2C on CartPole-v1 (500-step episodes): solved at a deterministic evaluation mean return of 475."""
main_config = dict(
    exp_name='cartpole_a2c',
    env=dict(
        env_id='CartPole-v1',
        collector_env_num=8,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=475,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False),
        learn=dict(
            optim='rmsprop',
            learning_rate=0.003,
            discount_factor=0.99,
            gae_lambda=1.0,
            value_weight=0.5,
            entropy_weight=0.0,
            grad_clip_value=0.5,
        ),
        collect=dict(n_sample=40),  # 8 envs x 5 steps
        eval=dict(evaluator=dict(eval_freq=10)),
    ),
    max_env_step=100_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='a2c'),
)
