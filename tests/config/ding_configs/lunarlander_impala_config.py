# DI-engine: dizoo/box2d/lunarlander/config/lunarlander_impala_config.py
from easydict import EasyDict

lunarlander_impala_config = dict(
    exp_name='lunarlander_impala_seed0',
    env=dict(
        env_id='LunarLander-v2',
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=3000,
    ),
    policy=dict(
        cuda=True,
        unroll_len=16,
        random_collect_size=256,
        model=dict(
            obs_shape=8,
            action_shape=4,
        ),
        learn=dict(
            update_per_collect=4,
            batch_size=64,
            grad_clip_type='clip_norm',
            clip_value=5,
            learning_rate=0.0003,
            value_weight=0.5,
            entropy_weight=0.001,
            discount_factor=0.99,
            lambda_=0.95,
        ),
        collect=dict(
            n_sample=32,
        ),
        eval=dict(evaluator=dict(eval_freq=1000, )),
        other=dict(replay_buffer=dict(replay_buffer_size=10000, ), ),
    ),
)
lunarlander_impala_config = EasyDict(lunarlander_impala_config)
main_config = lunarlander_impala_config

lunarlander_impala_create_config = dict(
    env=dict(
        type='lunarlander',
        import_names=['dizoo.box2d.lunarlander.envs.lunarlander_env'],
    ),
    env_manager=dict(type='subprocess'),
    policy=dict(type='impala'),
    replay_buffer=dict(type='naive'),
)
lunarlander_impala_create_config = EasyDict(lunarlander_impala_create_config)
create_config = lunarlander_impala_create_config

if __name__ == "__main__":
    # DI-engine: from ding.entry import serial_pipeline
    from acframe.entry import serial_pipeline
    serial_pipeline([main_config, create_config], seed=0, max_env_step=int(1e7))
