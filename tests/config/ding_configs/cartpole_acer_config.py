# DI-engine: dizoo/classic_control/cartpole/config/cartpole_acer_config.py
from easydict import EasyDict

cartpole_acer_config = dict(
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        model=dict(
            obs_shape=4,
            action_shape=2,
            encoder_hidden_size_list=[64, 64],
        ),
        learn=dict(
            update_per_collect=4,
            batch_size=16,
            learning_rate_actor=0.0005,
            learning_rate_critic=0.0005,
            entropy_weight=0.0,
            discount_factor=0.9,
            lambda_=0.95,
            unroll_len=32,
            c_clip_ratio=10,
        ),
        collect=dict(
            n_sample=16,
            unroll_len=32,
            discount_factor=0.9,
            gae_lambda=0.95,
            collector=dict(collect_print_freq=1000, ),
        ),
        eval=dict(evaluator=dict(eval_freq=200, )),
        other=dict(replay_buffer=dict(
            replay_buffer_size=10000,
            max_use=100,
        ), ),
    ),
)
cartpole_acer_config = EasyDict(cartpole_acer_config)
main_config = cartpole_acer_config

cartpole_acer_create_config = dict(
    env=dict(
        type='cartpole',
        import_names=['dizoo.classic_control.cartpole.envs.cartpole_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='acer'),
)
cartpole_acer_create_config = EasyDict(cartpole_acer_create_config)
create_config = cartpole_acer_create_config
