"""PPO on HalfCheetah-v5 (MuJoCo, 6-dim continuous torque; needs the ``mujoco`` extra): solved at 3000.

RL-Zoo's PPO settings for HalfCheetah (one env × 512 steps per rollout, minibatches of 64, 20 epochs,
gamma 0.98, GAE lambda 0.92, lr 2.0633e-5, clip 0.1, entropy 4.0e-4, value weight 0.581, gradient norm 0.8,
separate 256×256 ReLU actor and critic, log-std initialised at −2, no orthogonal init) with VecNormalize's
observation and reward normalization as policy state (``model.obs_norm``, ``learn.reward_norm``).
Measured (2026-11-23, seeds 0 1 2, ``python bench/ladder.py --rows halfcheetah --algos ppo --seeds 0,1,2``, after
PPO began merging a rollout's observations into the statistics after its last gradient step):
3000 crossed and confirmed on 50 fresh episodes at 76,800 / 307,200 / 153,600 env steps (of the 1M budget);
hold-out of 50 fresh episodes of the best checkpoint 3118 / 3148 / 3165; 104 / 416 / 191 s, one torch thread.
(Before that change: 76,800 / 204,800 / 128,000 env steps, hold-out 3047 / 3043 / 3113.)
Over the whole 1M budget (seed 0, ``acframe -c halfcheetah_ppo.py -s 0 env.stop_value=None``, 1,104 s): evaluations
3688 at 102k, 5248 at 486k, best and final 6812 at 1M; hold-out of those weights on 50 fresh episodes 6347 ± 1608
(some episodes flip the cheetah). SB3's PPO with the same Zoo settings, side by side (2026-11-26, seed 0, ``python bench/ladder.py --rows
halfcheetah --algos none --sb3 ppo --seeds 0``): best 6907, hold-out 6743, in 1,485 s.
Hold-out seeds (issue 47; 2026-11-28, ``python bench/stop_values.py --configs halfcheetah_ppo --seeds 3,4``): seeds
3 / 4 stopped at 3,000, confirmed, at 102,400 / 102,400 env steps; their best checkpoints held out 3278.2 / 3044.1
on 50 fresh episodes (2/2 at or above the ladder's target 3,000).
"""
import math

main_config = dict(
    exp_name='halfcheetah_ppo',  # the run folder is ./halfcheetah_ppo_seed<seed>
    env=dict(
        env_id='HalfCheetah-v5',  # gymnasium's MuJoCo HalfCheetah, 1000-step episodes (the 'mujoco' extra)
        collector_env_num=1,  # the Zoo's one env
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=3000,  # greedy mean return that solves it (the ladder's): all three measured seeds reach it
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[256, 256],  # the Zoo's 256x256 bodies
            share_encoder=False,  # separate actor and critic
            activation='relu',  # the Zoo's ReLU
            init_sigma=math.exp(-2),  # log-std starts at -2, the Zoo's
            orthogonal_init=False,  # no orthogonal init, as the Zoo's
            obs_norm=True,  # observations normalized by their running mean and std (VecNormalize's)
        ),
        learn=dict(
            epoch_per_collect=20,  # the Zoo's 20 epochs over each rollout
            batch_size=64,  # the Zoo's minibatch size: 160 gradient steps per rollout
            learning_rate=2.0633e-05,  # Adam, the Zoo's, constant
            discount_factor=0.98,  # the Zoo's gamma
            gae_lambda=0.92,  # the Zoo's GAE lambda
            clip_ratio=0.1,  # PPO's clip range, the Zoo's, constant
            value_weight=0.58096,  # the Zoo's value-loss coefficient
            entropy_weight=0.000401762,  # the Zoo's entropy bonus
            grad_clip_value=0.8,  # clip the global gradient norm to the Zoo's 0.8
            reward_norm=True,  # rewards divided by the running std of the return (VecNormalize's)
        ),
        # one env × 512 steps per rollout
        collect=dict(n_sample=512),
        # every 50 rollouts (25,600 env steps; 160 gradient steps a rollout)
        eval=dict(evaluator=dict(eval_freq=8000)),
    ),
    max_env_step=1_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py
)
