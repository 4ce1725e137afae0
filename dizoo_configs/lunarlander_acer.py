"""ACER on LunarLander-v3 (discrete actions, needs gymnasium[box2d]): stop value 220, reached on 2 of 3 seeds in 1M.

8 envs × 20-step unrolls into an episodic replay (100k transitions; per collection the on-policy update and on average
4 replayed batches of 32 sub-trajectories, from 5k transitions on), 128×128 bodies, observation normalization
(``model.obs_norm``), Adam 7e-4 decayed linearly to 0 over the 1M-step budget (~31,000 updates), gamma 0.99,
truncated importance weights c = 10, entropy bonus 0.01, the trust region (delta 1).

MEASURED (2026-11-24, ``python bench/ladder.py --rows lunarlander --algos acer --seeds 0,1,2``, one torch thread;
8-episode greedy evaluations every 1000 updates, ~32k env steps): 220 crossed and confirmed on 50 fresh episodes
(234 / — / 233) on seeds 0 and 2 at 772k / 513k env steps (154 / 108 s); seed 1 reached a best evaluation of 182
within the 1M budget. Hold-out of the best checkpoint on 50 other episodes 217 / 190 / 235: the ladder's 200 on
2 of 3 seeds (RL Zoo v1's ACER: 185). Seed 0 over the whole budget (``env.stop_value=None``, 205 s): 202 at 547k,
211–217 to 740k, 241–260 from 772k on (best 260). Without ``obs_norm`` and the decay (the previous version) seed 0's
best was 151 at 515k (27 at 1M). PPO (``lunarlander_ppo.py``) solves the row
on 3/3.
"""
main_config = dict(
    exp_name='lunarlander_acer',
    env=dict(
        env_id='LunarLander-v3',
        collector_env_num=8,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=220,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[128, 128], obs_norm=True),
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
            # the 1M-step budget is ~31,000 updates (6,250 collections × 1 + Poisson(4) replays)
            lr_decay_iters=31000,
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
