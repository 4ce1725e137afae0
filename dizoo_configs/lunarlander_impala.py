"""IMPALA on LunarLander-v3 (discrete actions, needs gymnasium[box2d]): stop value 210.

16 envs × 32-step unrolls (512 env steps per collection), batches of 16 unrolls, 16 updates per collection (each unroll
trained on 16 times, then dropped), separate 64×64 tanh actor and critic with orthogonal init, observation
normalization (``model.obs_norm``), rewards divided by the running std of the discounted return
(``learn.reward_norm``), policy-gradient advantages standardized per batch (``learn.adv_norm``), Adam 3e-4 decayed
linearly to 0 over the 1M-step budget (31,248 iterations), gamma 0.999 and V-trace lambda 0.98 (PPO's on this task),
entropy bonus 0.01, value weight 0.5, gradient norm 0.5.

MEASURED (2026-11-25, ``python bench/ladder.py --rows lunarlander --algos impala --seeds 0,1,2 --budget 1000000``):
210 reached and confirmed on 3/3 seeds at 81,920 / 716,800 / 573,440 env steps (50 fresh episodes: 213 / 216 / 221),
hold-out of that checkpoint on 50 more 219 / 206 / 217. At stop 200 the same runs stopped at 82k / 676k / 532k with
hold-outs 219 / 216 / **190** (seed 2's checkpoint was a 200-policy by a hair), hence 210. Not robust: seed 0 lands
early and, trained on (stop 220), falls back to 0–150 for the rest of the 1M; seed 2 at stop 220 solves with a
hold-out of 252. The whole 1M (``env.stop_value=None``) of nearby settings, seeds 0 / 1 / 2, best greedy evaluation:
batches of 8 (each unroll trained on 8 times) 236 / 230 / 139; Adam 2e-4: 159 / – / 231; Adam 1.5e-4: 265 / 216 /
192; gamma 0.995 and lambda 0.95: 212 / – / 71 by 430k; 32 envs, each unroll trained on 8 times: – / – / 234 (16
updates of 16 unrolls), 114 / – / – (8 updates of 32).
Before ``reward_norm`` and ``adv_norm`` (2026-11-23/24) the best in 1M was 25–49. PPO (``lunarlander_ppo.py``) and
ACER (``lunarlander_acer.py``) solve this row with hold-outs ≥ 200 on 3/3.
"""
main_config = dict(
    exp_name='lunarlander_impala',
    env=dict(
        env_id='LunarLander-v3',
        collector_env_num=16,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=210,
    ),
    policy=dict(
        unroll_len=32,
        model=dict(
            encoder_hidden_size_list=[64, 64],
            share_encoder=False,
            activation='tanh',
            orthogonal_init=True,
            obs_norm=True,
        ),
        learn=dict(
            update_per_collect=16,
            batch_size=16,
            learning_rate=0.0003,
            lr_decay_iters=31248,
            discount_factor=0.999,
            lambda_=0.98,
            reward_norm=True,
            adv_norm=True,
            value_weight=0.5,
            entropy_weight=0.01,
            grad_clip_value=0.5,
        ),
        collect=dict(n_sample=16),  # unrolls across 16 envs: 32 steps per env, 512 env steps per collection
        # every 640 iterations (20,480 env steps)
        eval=dict(evaluator=dict(eval_freq=640)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=16)),
    ),
    max_env_step=1_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='impala'),
)
