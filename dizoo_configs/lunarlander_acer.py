"""ACER on LunarLander-v3 (discrete actions, needs gymnasium[box2d]): no stop value, it does not reach 200 in 1M.

8 envs × 20-step unrolls into an episodic replay (100k transitions; on average 4 replayed batches of 32
sub-trajectories per collection, from 5k transitions on), 128×128 bodies, Adam 7e-4, gamma 0.99, truncated
importance weights c = 10, entropy bonus 0.01, the trust region (delta 1). Measured (2026-11-23, seed 0, 1M env
steps, 8-episode greedy evaluation every 1000 updates, ~32k env steps; ``acframe -c lunarlander_acer.py -s 0``):
−713 at 0, −48 to −104 from 130k to 480k, best 151 at 515k, then −90 to +107 (27 at 1M); the training return
with sampled actions was still rising (−74 at 130k, −0.2 at 548k, +66 at 965k). RL Zoo v1's ACER: 185. The
ladder's target (200 within 1M) is not met; PPO (``lunarlander_ppo.py``) solves this row. Longer runs:
``--max-env-step``; a stop: ``env.stop_value``.
"""
main_config = dict(
    exp_name='lunarlander_acer',
    env=dict(
        env_id='LunarLander-v3',
        collector_env_num=8,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=None,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[128, 128]),
        learn=dict(
            update_per_collect=16,
            batch_size=32,
            learning_rate=0.0007,
            discount_factor=0.99,
            c_clip_ratio=10.0,
            value_weight=0.5,
            entropy_weight=0.01,
            trust_region=True,
            trust_region_delta=1.0,
            trust_region_alpha=0.99,
        ),
        collect=dict(n_sample=8),  # unrolls across 8 envs: T = 20 steps per env
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=100000,
            unroll_len=20,
            replay_ratio=4.0,
            replay_start_size=5000,
        )),
    ),
    max_env_step=1_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='acer'),
)
