"""IMPALA on LunarLander-v3 (discrete actions, needs gymnasium[box2d]): no stop value, it does not reach 200 in 1M.

16 envs × 32-step unrolls, batches of 8 unrolls, 8 updates per collection (each unroll replayed at most 4
times), separate 64×64 actor and critic, observation normalization, Adam 3e-4, gamma 0.999, V-trace lambda 0.98
(PPO's gamma and lambda on this task), entropy bonus 0.01. Measured (2026-11-23, seed 0, the whole 1M budget,
10-episode greedy evaluation every 20k env steps; ``acframe -c lunarlander_impala.py -s 0``, 211 s): −369 at 0,
−19 to −160 up to 760k (the hovering level of issue 9), then rising: best 25 at 861k, −1 at 1M; the training
return with sampled actions −7 to +84 over the last 200k. With 4 updates per collection, each unroll replayed
twice, Adam 5e-4 decayed to 0, gamma 0.995 and lambda 0.95 the same seed evaluated 49 at 62k and −81 to −202
after (−137 at 1M). The ladder's target (200 within 1M) is not met; PPO (``lunarlander_ppo.py``) solves this
row. Longer runs: ``--max-env-step``; a stop: ``env.stop_value``.
"""
main_config = dict(
    exp_name='lunarlander_impala',
    env=dict(
        env_id='LunarLander-v3',
        collector_env_num=16,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=None,
    ),
    policy=dict(
        unroll_len=32,
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False, obs_norm=True),
        learn=dict(
            update_per_collect=8,
            batch_size=8,
            learning_rate=0.0003,
            entropy_weight=0.01,
            value_weight=0.5,
            discount_factor=0.999,
            lambda_=0.98,
        ),
        collect=dict(n_sample=16),  # unrolls across 16 envs: 32 steps per env, 512 per collection
        eval=dict(evaluator=dict(eval_freq=320)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=4)),
    ),
    max_env_step=1_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='impala'),
)
