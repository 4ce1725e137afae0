"""A2C on Pendulum-v1 (continuous actions) with gSDE, the RL Zoo's settings: stop value -200.

RL Zoo's A2C for Pendulum: 8 envs × 8 steps, gamma 0.9, GAE lambda 0.9, RMSprop (alpha 0.99, eps 1e-5) at 7e-4
decayed linearly to 0 over the 1M-step budget (15,625 updates), value weight 0.4, no entropy bonus, gradient norm
0.5, no advantage normalization, VecNormalize's observation and reward normalization (``model.obs_norm``,
``learn.reward_norm``), separate 64×64 tanh actor and critic without orthogonal init, and generalized
State-Dependent Exploration (``model.use_sde``, log-std initialised at −2, the exploration matrices redrawn at every
rollout start: ``sde_sample_freq=8``, SB3's −1). Evaluations average 50 episodes: Pendulum's return depends
strongly on the start angle and every evaluation replays the same starts, so a small set reads its own luck (the
best checkpoint of seed 0 scored −219 on the 20 starts of its run's evaluations, −168 and −151 on two other sets
of 20, −160 on 50 fresh episodes).

MEASURED (2026-11-23, ``python bench/ladder.py --rows pendulum --algos a2c --seeds 0,1,2``, one torch thread):
solved and confirmed on 50 fresh episodes (−151 / −157 / −163) on 3/3 seeds at 320k / 352k / 352k env steps
(36–47 s each); hold-out of the best checkpoint on 50 other episodes −180 / −175 / −181. The RL Zoo's −163 at
1M is its 1M figure; SB3's A2C with these settings, side by side (seeds 0, 1, 2, whole 1M budget): best evaluations
−98 / −713 / −107, hold-outs −141 / −752 / −158 (seed 1 never swung up). The previous config (16 × 8, Adam 3e-3, bounded mean, no gSDE) stopped at −250 and held out
−192 / −160 / −289.
"""
import math

main_config = dict(
    exp_name='pendulum_a2c',  # the run folder is ./pendulum_a2c_seed<seed>
    env=dict(
        env_id='Pendulum-v1',  # gymnasium's Pendulum, 200-step episodes, continuous torque
        collector_env_num=8,  # the Zoo's 8 envs
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=50,  # episodes per evaluation: the return depends strongly on the start angle
        stop_value=-200,  # mean return that solves it (the ladder's): all three measured seeds reach it
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64, 64],  # 64x64 bodies
            share_encoder=False,  # separate actor and critic
            activation='tanh',  # tanh hidden layers
            init_sigma=math.exp(-2),  # gSDE's log-std starts at -2, the Zoo's
            orthogonal_init=False,  # no orthogonal init, as the Zoo's
            use_sde=True,  # gSDE: state-dependent exploration noise, the Zoo's
            obs_norm=True,  # observations normalized by their running mean and std (VecNormalize's)
        ),
        learn=dict(
            optim='rmsprop',  # RMSprop, the Zoo's
            learning_rate=0.0007,  # the Zoo's, decayed below
            rms_alpha=0.99,  # RMSprop's smoothing constant
            rms_eps=0.00001,  # RMSprop's epsilon
            discount_factor=0.9,  # the Zoo's gamma
            gae_lambda=0.9,  # the Zoo's GAE lambda
            reward_norm=True,  # rewards divided by the running std of the return (VecNormalize's)
            value_weight=0.4,  # the Zoo's value-loss coefficient
            entropy_weight=0.0,  # no entropy bonus
            adv_norm=False,  # no advantage normalization, as the Zoo's
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
            lr_decay_iters=15625,  # linear to 0 at the budget: 1M env steps / 64 per update
        ),
        # 8 envs x 8 steps; gSDE's exploration matrices redrawn every 8 steps (at each rollout's start)
        collect=dict(n_sample=64, sde_sample_freq=8),
        # every 500 updates (32,000 env steps)
        eval=dict(evaluator=dict(eval_freq=500)),
    ),
    max_env_step=1_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='a2c'),  # acframe/policy/a2c.py
)
