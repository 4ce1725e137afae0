# DI-engine: dizoo/box2d/lunarlander/config/lunarlander_acer_config.py
from easydict import EasyDict

nstep = 3
lunarlander_acer_default_config = dict(
    env=dict(
        manager=dict(shared_memory=True, ),
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=5,
    ),
    policy=dict(
        cuda=False,
        on_policy=False,
        model=dict(
            obs_shape=8,
            action_shape=4,
            encoder_hidden_size_list=[512, 64],
        ),
        discount_factor=0.99,
        nstep=nstep,
        unroll_len=32,
        learn=dict(
            update_per_collect=10,
            batch_size=32,
            learning_rate_actor=0.0001,
            learning_rate_critic=0.0001,
            entropy_weight=0.0,
            discount_factor=0.99,
            c_clip_ratio=10,
        ),
        collect=dict(
            n_sample=16,
            discount_factor=0.99,
            gae_lambda=0.95,
            collector=dict(collect_print_freq=1000, ),
        ),
        eval=dict(evaluator=dict(eval_freq=5000, )),
        other=dict(replay_buffer=dict(
            type='naive',
            replay_buffer_size=50000,
        ), ),
    ),
)
lunarlander_acer_default_config = EasyDict(lunarlander_acer_default_config)
main_config = lunarlander_acer_default_config

lunarlander_acer_create_config = dict(
    env=dict(
        type='lunarlander',
        import_names=['dizoo.box2d.lunarlander.envs.lunarlander_env'],
    ),
    env_manager=dict(type='subprocess'),
    policy=dict(type='acer'),
)
lunarlander_acer_create_config = EasyDict(lunarlander_acer_create_config)
create_config = lunarlander_acer_create_config

if __name__ == "__main__":
    # DI-engine: from ding.entry import serial_pipeline
    from acframe import serial_pipeline
    serial_pipeline([main_config, create_config], seed=0)
