"""IMPALA on Hopper-v5 (MuJoCo, 3-dim continuous torque; needs the ``mujoco`` extra): no stop value.

16 envs × 32-step unrolls (512 env steps per collection), batches of 8 unrolls, 16 updates per collection (each unroll
trained on 8 times, then dropped), V-trace with lambda 0.95 and gamma 0.99, rewards × 0.1, no entropy bonus, value
weight 0.5, Adam 1.5e-4 decayed linearly to 0 over the 1M-step budget (31,248 iterations), gradient norm 0.5;
separate 64×64 tanh actor and critic with orthogonal init, the Gaussian's mean bounded to the action range, std
starting at 0.5, observation normalization (``model.obs_norm``).

MEASURED (2026-11-25, ``python bench/ladder.py --rows hopper --algos impala --seeds 0,1,2 --budget 1000000
--override policy.learn.learning_rate=0.00015 --override env.stop_value=2000``, the values now shipped): 2000
reached and confirmed on seeds 0 and 2 at 370k / 267k env steps (hold-out of that checkpoint on 50 fresh episodes
2839 / 2534); seed 1 climbs slowly (1000–1400 from 200k to 900k, 1995 at 984k; hold-out of its best 1914): 2/3, so
no stop value. The whole 1M (``env.stop_value=None``): seed 0 best 2845 at 410k, then back to 800–950; seed 2 best
2869, 1700–2490 from 650k on. Adam 3e-4 (the config until 2026-11-24): 1/3 (seed 0 solved at 431k, seeds 1 and 2
best 983 and 1572); Adam 2e-4: seed 0 solved (hold-out 2604), seed 1 best 1895 (hold-out 985); gamma 0.995: seeds
1 and 2 solved (hold-out 2098 / 2198), seed 0 stays near 1070 — 2/3 again, another seed failing. Also tried on seed 1
(Adam 3e-4, the whole 1M): rewards divided by the running return std (``learn.reward_norm``) in place of × 0.1, best
1903; with ``learn.adv_norm`` as well, best 542; ``adv_norm`` alone, best 530. With 4 updates per collection (each
unroll trained on twice) seed 0's best was 845. ACER (``hopper_acer.py``) and PPO (``hopper_ppo.py``) solve this row.
"""
main_config = dict(
    exp_name='hopper_impala',
    env=dict(
        env_id='Hopper-v5',
        collector_env_num=16,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=None,
    ),
    policy=dict(
        unroll_len=32,
        model=dict(
            encoder_hidden_size_list=[64, 64],
            share_encoder=False,
            activation='tanh',
            orthogonal_init=True,
            init_sigma=0.5,
            mu_bound=1.0,
            obs_norm=True,
        ),
        learn=dict(
            update_per_collect=16,
            batch_size=8,
            learning_rate=0.00015,
            lr_decay_iters=31248,
            discount_factor=0.99,
            lambda_=0.95,
            reward_scale=0.1,
            value_weight=0.5,
            entropy_weight=0.0,
            grad_clip_value=0.5,
        ),
        collect=dict(n_sample=16),  # unrolls across 16 envs: 32 steps per env, 512 env steps per collection
        # every 640 iterations (20,480 env steps)
        eval=dict(evaluator=dict(eval_freq=640)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=8)),
    ),
    max_env_step=1_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='impala'),
)
