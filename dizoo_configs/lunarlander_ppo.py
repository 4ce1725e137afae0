"""PPO on LunarLander-v3 (discrete actions, needs gymnasium[box2d]): solved at a deterministic evaluation of 220.

RL-Zoo's PPO settings for LunarLander (16 envs × 1024 steps per rollout, minibatches of 64, 4 epochs,
gamma 0.999, GAE lambda 0.98, entropy bonus 0.01, Adam 3e-4, clip 0.2; tanh 64×64 actor and critic), no
normalization, no schedules. Measured (2026-11-23, ``python bench/ladder.py --rows lunarlander --algos ppo
--seeds 0,1,2``; a 10-episode greedy evaluation every rollout): 220 reached and confirmed on 50 fresh episodes
at 606k / 655k / 721k env steps (RL Zoo's PPO: 242 at 1M); hold-out of the best checkpoint on 50 other episodes
227 / 234 / 229. Seed 0 over the whole 1M budget (``env.stop_value=None``): 200 first at 459k, 225 at 606k,
250 at 819k, best 254, final 250 — the stop value 220 stops a run early with a hold-out margin over the
ladder's target of 200.
"""
main_config = dict(
    exp_name='lunarlander_ppo',
    env=dict(
        env_id='LunarLander-v3',
        collector_env_num=16,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=220,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False),
        learn=dict(
            epoch_per_collect=4,
            batch_size=64,
            learning_rate=0.0003,
            discount_factor=0.999,
            gae_lambda=0.98,
            clip_ratio=0.2,
            value_weight=0.5,
            entropy_weight=0.01,
        ),
        # transitions per rollout, over all 16 envs (1024 steps each)
        collect=dict(n_sample=16384),
        # every rollout (16384 / 64 * 4 = 1024 gradient steps)
        eval=dict(evaluator=dict(eval_freq=1024)),
    ),
    max_env_step=1_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='ppo'),
)
