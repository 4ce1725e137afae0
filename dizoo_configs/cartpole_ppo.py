"""PPO on CartPole-v1 (500-step episodes): solved at a deterministic evaluation mean return of 475.

RL-Zoo's PPO settings for CartPole-v1 (8 envs × 32 steps per rollout, one minibatch of 256, 20 epochs,
gamma 0.98, GAE lambda 0.8, lr 1e-3 and clip 0.2 both decayed linearly to 0 over the 100k-step budget).
Measured (2026-11-23, seeds 0 1 2, budget 100k env steps): solved (10-episode greedy mean >= 475) at
10,240 / 11,520 / 23,040 env steps (800 / 900 / 1,800 gradient steps); `python bench/bench_ppo.py`.
"""
main_config = dict(
    exp_name='cartpole_ppo',
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
            epoch_per_collect=20,
            batch_size=256,
            learning_rate=0.001,
            discount_factor=0.98,
            gae_lambda=0.8,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.0,
            # 100k env steps / 256 per rollout * 20 steps per rollout: zero at the budget
            lr_decay_iters=7800,
            clip_ratio_decay_iters=7800,
        ),
        # transitions per rollout, over all 8 envs (32 steps each)
        collect=dict(n_sample=256),
        eval=dict(evaluator=dict(eval_freq=100)),
    ),
    max_env_step=100_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='ppo'),
)
