"""IMPALA on HalfCheetah-v5 (MuJoCo, 6-dim continuous torque; needs the ``mujoco`` extra): stop value 3000.

16 envs × 32-step unrolls (512 env steps per collection), batches of 8 unrolls, 16 updates per collection (each unroll
trained on 8 times, then dropped), V-trace with lambda 0.95 and gamma 0.99, rewards × 0.1, no entropy bonus, value
weight 0.5, Adam 3e-4 decayed linearly to 0 over the 1M-step budget (31,248 iterations), gradient norm 0.5; separate
64×64 tanh actor and critic with orthogonal init, the Gaussian's mean bounded to the action range, std starting at
0.5, observation normalization (``model.obs_norm``).

MEASURED (2026-11-24, ``python bench/ladder.py --rows halfcheetah --algos impala --seeds 0,1,2``, one torch thread;
10-episode greedy evaluations every ~20k env steps): 3000 crossed and confirmed on 50 fresh episodes (3303 / 3418 /
3503) on 3/3 seeds at 267k / 308k / 62k env steps (46 / 74 / 16 s); hold-out of the best checkpoint on 50 other
episodes 3309 / 3408 / 3491. Seed 0 over the whole 1M budget (``env.stop_value=None``, 232 s): 1367 at 57k, 2187 at
88k, 3327 at 272k, 4134 at 472k, best 4730 at 918k. With 4 updates per collection (each unroll trained on twice,
104 s) the same seed rose slowly to a best of 2725; with 8 (each unroll 4 times) it stalled near 1400.
Hold-out seeds (issue 47; 2026-11-28, ``python bench/stop_values.py --configs halfcheetah_impala --seeds 3,4``):
seeds 3 / 4 stopped at 3,000, confirmed, at 266,752 / 205,824 env steps; their best checkpoints held out 3333.0 /
3084.9 on 50 fresh episodes (2/2 at or above the ladder's target 3,000).
"""
main_config = dict(
    exp_name='halfcheetah_impala',  # the run folder is ./halfcheetah_impala_seed<seed>
    env=dict(
        env_id='HalfCheetah-v5',  # gymnasium's MuJoCo HalfCheetah, 1000-step episodes (the 'mujoco' extra)
        collector_env_num=16,  # envs stepped together by the collector
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=3000,  # greedy mean return that solves it (the ladder's): all three measured seeds reach it
    ),
    policy=dict(
        unroll_len=32,  # the unrolls V-trace trains on: 32 steps
        model=dict(
            encoder_hidden_size_list=[64, 64],  # 64x64 bodies
            share_encoder=False,  # separate actor and critic
            activation='tanh',  # tanh hidden layers
            orthogonal_init=True,  # orthogonal weight init
            init_sigma=0.5,  # the Gaussian's std starts at 0.5
            mu_bound=1.0,  # the Gaussian's mean squashed into the action range [-1, 1]
            obs_norm=True,  # observations normalized by their running mean and std
        ),
        learn=dict(
            # 16 updates per collection of 16 unrolls: each unroll trained on 8 times (with 4 or 8 it learned less)
            update_per_collect=16,
            batch_size=8,  # unrolls per training batch
            learning_rate=0.0003,  # Adam (IMPALA's default optimizer), decayed below
            lr_decay_iters=31248,  # linear to 0 at the budget: 1,953 collections of 512 env steps x 16 updates
            discount_factor=0.99,  # gamma
            lambda_=0.95,  # V-trace's trace lambda
            reward_scale=0.1,  # rewards x 0.1
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.0,  # no entropy bonus
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
        ),
        collect=dict(n_sample=16),  # unrolls across 16 envs: 32 steps per env, 512 env steps per collection
        # every 640 iterations (20,480 env steps)
        eval=dict(evaluator=dict(eval_freq=640)),
        # a FIFO of up to 1000 unrolls; each trained on 8 times, then dropped
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=8)),
    ),
    max_env_step=1_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='impala'),  # acframe/policy/impala.py
)
