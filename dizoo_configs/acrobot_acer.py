"""ACER on Acrobot-v1 (500-step episodes, -1 per step until the tip swings above the bar): stop value -90.

8 envs × 20-step unrolls into an episodic replay (50k transitions); per collection the on-policy update and up to 3
replayed batches of 16 sub-trajectories (a Poisson(4) draw capped by ``update_per_collect=4``; from 2k transitions
on), 64×64 bodies, Adam 7e-4, gamma 0.99, truncated
importance weights c = 10, entropy bonus 0.01, the trust region (delta 1).

MEASURED (2026-11-24, ``python bench/ladder.py --rows acrobot --algos acer --seeds 0,1,2``, one torch thread;
a 10-episode greedy evaluation every 100 updates, ~4k env steps): solved and confirmed on 50 fresh episodes
(−85 / −88 / −85) on 3/3 seeds at 78k / 145k / 82k env steps (14–21 s each; RL Zoo's A2C: −83 at 500k); hold-out
of the best checkpoint on 50 other episodes −91 / −89 / −84.
"""
main_config = dict(
    exp_name='acrobot_acer',
    env=dict(
        env_id='Acrobot-v1',
        collector_env_num=8,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=-90,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64]),
        learn=dict(
            update_per_collect=4,
            batch_size=16,
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
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=50000,
            unroll_len=20,
            replay_ratio=4.0,
            replay_start_size=2000,
        )),
    ),
    max_env_step=500_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='acer'),
)
