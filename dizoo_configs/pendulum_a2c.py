"""A2C on Pendulum-v1 (continuous actions, Gaussian policy): solved at an evaluation mean return of -250.

Pendulum's rewards (-16..0 per step) are scaled by 0.1 for the targets, and the Gaussian starts wide
(sigma 1 on torques in [-2, 2]); the env gets actions clipped to [-2, 2], the loss the unclipped samples.
"""
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
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False, init_sigma=1.0),
        learn=dict(
            optim='adam',
            learning_rate=0.003,
            discount_factor=0.9,
            gae_lambda=0.9,
            reward_scale=0.1,
            value_weight=0.5,
            entropy_weight=0.0,
            clip_value=0.5,
        ),
        collect=dict(n_sample=128),  # 16 envs x 8 steps
        eval=dict(evaluator=dict(eval_freq=100)),
    ),
    max_env_step=1_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='a2c'),
)
