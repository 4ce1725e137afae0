"""A2C on LunarLander-v3 (discrete actions): solved at an evaluation mean return of 200.

The hyper-parameters of Gymnasium's A2C vector-env tutorial (10 envs x 128 steps per update, gamma 0.999,
GAE lambda 0.95, entropy bonus 0.01, RMSprop with the critic learning 5x faster than the actor), with
time-limit truncations bootstrapped from V(final_obs). Evaluation samples from the policy: A2C's greedy
lander often hovers until the time limit while the stochastic policy it learned lands.

Measured (2026-11-21, seeds 0 / 1 / 2, ``python bench/bench_a2c.py --tasks lunarlander``; docs/algorithms/a2c.md):
200 with sampled evaluation actions at 1.66M / 1.89M / 1.36M env steps (about 5 minutes each). The ladder's row
(200 with a greedy evaluation within 1M) is not met by A2C: docs/algorithms/a2c.md has the settings tried and their
curves; PPO (``lunarlander_ppo.py``) solves it.
"""
main_config = dict(
    exp_name='lunarlander_a2c',
    env=dict(
        env_id='LunarLander-v3',
        collector_env_num=10,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=200,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False),
        learn=dict(
            optim='rmsprop',
            learning_rate=0.001,
            critic_learning_rate=0.005,
            discount_factor=0.999,
            gae_lambda=0.95,
            value_weight=0.5,
            entropy_weight=0.01,
            grad_clip_value=0.5,
        ),
        collect=dict(n_sample=1280),  # 10 envs x 128 steps
        eval=dict(deterministic=False, evaluator=dict(eval_freq=20)),
    ),
    max_env_step=3_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='a2c'),
)
