"""A2C on LunarLander-v3 (discrete actions), evaluated with sampled actions: trains its whole 3M env steps (no stop value).

The hyper-parameters of Gymnasium's A2C vector-env tutorial (10 envs x 128 steps per update, gamma 0.999,
GAE lambda 0.95, entropy bonus 0.01, RMSprop with the critic learning 5x faster than the actor), with
time-limit truncations bootstrapped from V(final_obs). Evaluation samples from the policy: A2C's greedy
lander often hovers until the time limit while the stochastic policy it learned lands.

MEASURED (2026-11-25, ``python bench/ladder.py --rows lunarlander --algos a2c --seeds S --budget 3000000 --override
env.stop_value=200``; 8-episode sampled evaluations, each crossing confirmed on 50 fresh episodes): 200 confirmed on
seeds 0 and 2 at 2.07M / 2.30M env steps (hold-out of that checkpoint 207 / 218; earlier crossings at 1.59M–2.02M
were refuted by their confirmations, 168–190), not on seed 1 (best 152, hold-out 128 in 3M): 2/3, so no stop
value. (2026-11-21, before confirmation runs existed: 200 at 1.66M / 1.89M / 1.36M on single 8-episode
evaluations.) The ladder's row (200 with a greedy evaluation within 1M) is not met by A2C — nor by SB3's A2C side by
side (best 158, hold-out 112): docs/algorithms/a2c.md has the settings tried and their curves; PPO
(``lunarlander_ppo.py``), ACER and IMPALA solve it.
"""
main_config = dict(
    exp_name='lunarlander_a2c',  # the run folder is ./lunarlander_a2c_seed<seed>
    env=dict(
        env_id='LunarLander-v3',  # gymnasium's LunarLander, discrete actions (the 'box2d' extra)
        collector_env_num=10,  # the tutorial's 10 envs
        evaluator_env_num=8,  # evaluation episodes played at once
        n_evaluator_episode=8,  # episodes per evaluation
        # 200 on 2/3 seeds within 3M (see above): the run uses its whole budget
        stop_value=None,
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
