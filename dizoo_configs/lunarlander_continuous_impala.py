"""IMPALA on LunarLanderContinuous-v3 (2-dim continuous throttle; needs gymnasium[box2d]): no stop value.

The recipe that lands the discrete lander (``lunarlander_impala.py``: gamma 0.999, V-trace lambda 0.98, rewards
divided by the running return std (``learn.reward_norm``), standardized advantages (``learn.adv_norm``), entropy bonus
0.01, Adam 3e-4 decayed linearly to 0 over the budget, gradient norm 0.5, separate 64×64 tanh actor and critic with
orthogonal init, observation normalization) with unrolls four times longer and smaller, more numerous updates: 16 envs
× 128-step unrolls (2,048 env steps per collection), batches of 2 unrolls, 32 updates per collection (each unroll
trained on 4 times, then dropped; 15,625 iterations in 1M env steps); the Gaussian's mean bounded to the action range,
its std starting at 1.

MEASURED (2026-11-25, seeds 0 / 1 / 2, the whole 1M budget, 10-episode greedy evaluations every 20,480 env steps;
``acframe -c lunarlander_continuous_impala.py -s S``, ~150 s each): a slow, steady climb — 173 / 48 / −3 at 500k, best
197 at 985k / 202 at 1M / 196 at 987k, 171–197 / 113–202 / 126–196 over the last 300k; hold-out of the best checkpoint
on 50 fresh episodes 190 / 162 / 178 (``python bench/ladder.py --rows lunarlander_continuous --algos impala --seeds
0,1,2``, the same runs again). The ladder's 200 within 1M is not met: no stop value. PPO
(``lunarlander_continuous_ppo.py``) solves this row.

Tried (1M each, on seed 1 unless said): 32-step unrolls, batches of 8, 4 updates per collection, rewards × 0.1, gamma
0.99, lambda 0.95, std 0.5, no entropy bonus (the config until 2026-11-25): hovers, best −51 on seed 0; the discrete
lander's exact settings (32-step unrolls, batches of 16, 16 updates per collection): best 205 / 117 / 177 on seeds 0 /
1 / 2, hovering at −100 on seed 1. With 128-step unrolls: batches of 4 and 16 updates per collection, best 177, 65–128
late; batches of 8, each unroll trained on 8 times, best 190, 21–103 late; the same without the decay, 210 once, −146
to 186; batches of 2 with 64 updates per collection (each unroll trained on 8 times), 265 at 104k, then −200 to −18;
the shipped settings at Adam 6e-4, best 108; at a constant 2e-4, 202 at 946k, 101–202 late. The decay stretched over
20,000 iterations (the rate at 0.22× by 1M; seeds 0 / 2): best 210 / 203, 160–201 / 94–186 over the last 300k. More
reuse lands the lander earlier and then loses it; less climbs slowly.
"""
main_config = dict(
    exp_name='lunarlander_continuous_impala',
    env=dict(
        env_id='LunarLanderContinuous-v3',
        collector_env_num=16,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=None,
    ),
    policy=dict(
        unroll_len=128,
        model=dict(
            encoder_hidden_size_list=[64, 64],
            share_encoder=False,
            activation='tanh',
            orthogonal_init=True,
            init_sigma=1.0,
            mu_bound=1.0,
            obs_norm=True,
        ),
        learn=dict(
            update_per_collect=32,
            batch_size=2,
            learning_rate=0.0003,
            lr_decay_iters=15625,
            discount_factor=0.999,
            lambda_=0.98,
            reward_norm=True,
            adv_norm=True,
            value_weight=0.5,
            entropy_weight=0.01,
            grad_clip_value=0.5,
        ),
        collect=dict(n_sample=16),  # unrolls across 16 envs: 128 steps per env, 2,048 env steps per collection
        # every 320 iterations (20,480 env steps)
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
