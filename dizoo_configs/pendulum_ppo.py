"""PPO on Pendulum-v1 (continuous torque, Gaussian policy with a state-independent log-std): solved at -250.

RL-Zoo's PPO settings for Pendulum-v1 (4 envs × 1024 steps per rollout, minibatches of 64, 10 epochs,
gamma 0.9, GAE lambda 0.95, lr 1e-3, clip 0.2, no entropy bonus), without RL-Zoo's gSDE exploration.
Measured (2026-11-23, seeds 0 1 2, 10-episode greedy mean every 8192 env steps): -250 reached at 65,536 /
81,920 / 81,920 env steps (within the 100k budget); best by 100k -221 / -234 / -239; by 200k -216 / -231 / -231.
It does not reach -200 (RL Zoo's PPO with gSDE: -172 at 100k): that needs gSDE or observation normalization.
"""
main_config = dict(
    exp_name='pendulum_ppo',
    env=dict(
        env_id='Pendulum-v1',
        collector_env_num=4,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=-250,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False, init_sigma=1.0),
        learn=dict(
            epoch_per_collect=10,
            batch_size=64,
            learning_rate=0.001,
            discount_factor=0.9,
            gae_lambda=0.95,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.0,
        ),
        # transitions per rollout, over all 4 envs (1024 steps each)
        collect=dict(n_sample=4096),
        # every 2 rollouts (640 gradient steps each)
        eval=dict(evaluator=dict(eval_freq=1280)),
    ),
    max_env_step=100_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='ppo'),
)
