"""A2C on LunarLander-v3 with domain randomization, as in Gymnasium's A2C vector-env tutorial.

Every collector env gets its own gravity, wind and turbulence, drawn from the distributions below, and new
ones every 50 collections (64k env steps); the evaluator lands with the nominal parameters (gravity -10,
no wind). The draws are printed and saved in <exp_dir>/domain_randomization.json. The A2C settings are
those of lunarlander_a2c.py.

Measured (2026-11-21, seed 0, docs/algorithms/a2c.md): best evaluation 147 within the 3M budget, so it ships
without a stop value (200 was not reached); the config demonstrates domain randomization rather than a faster solve.
"""
main_config = dict(
    exp_name='lunarlander_a2c_dr',  # the run folder is ./lunarlander_a2c_dr_seed<seed>
    env=dict(
        env_id='LunarLander-v3',  # gymnasium's LunarLander, discrete actions (the 'box2d' extra)
        collector_env_num=10,  # the tutorial's 10 envs, each with its own draws
        evaluator_env_num=8,  # evaluation episodes played at once
        n_evaluator_episode=8,  # episodes per evaluation
        # not reached within 3M (best 147, seed 0): the run uses its whole budget
        stop_value=None,
        domain_randomization=dict(
            enable=True,  # every collector env is built with its own parameters, drawn below
            params=dict(
                # N(-10, 1), clipped inside LunarLander's (-12, 0)
                gravity=dict(dist='normal', mean=-10.0, std=1.0, low=-11.99, high=-0.01),
                enable_wind=dict(dist='choice', values=[True, False]),  # wind on or off, equally likely
                # N(15, 1), clipped inside the recommended (0, 20)
                wind_power=dict(dist='normal', mean=15.0, std=1.0, low=0.01, high=19.99),
                # N(1.5, 0.5), clipped inside the recommended (0, 2)
                turbulence_power=dict(dist='normal', mean=1.5, std=0.5, low=0.01, high=1.99),
            ),
            resample_every=50,  # new draws every 50 collections (64k env steps)
            apply_to_evaluator=False,  # evaluation lands with the nominal parameters (gravity -10, no wind)
        ),
    ),
    policy=dict(
        # separate 64x64 tanh actor and critic (each with its learning rate)
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False),
        learn=dict(
            optim='rmsprop',  # RMSprop, the tutorial's
            learning_rate=0.001,  # the actor's step size, constant
            critic_learning_rate=0.005,  # the critic learns 5x faster, as the tutorial's
            discount_factor=0.999,  # the tutorial's gamma
            gae_lambda=0.95,  # the tutorial's GAE lambda
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.01,  # the tutorial's entropy bonus
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
        ),
        collect=dict(n_sample=1280),  # 10 envs x 128 steps
        # every 20 updates = 25,600 env steps, with sampled actions: the greedy lander often hovers (see above)
        eval=dict(deterministic=False, evaluator=dict(eval_freq=20)),
    ),
    max_env_step=3_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='a2c'),  # acframe/policy/a2c.py
)
