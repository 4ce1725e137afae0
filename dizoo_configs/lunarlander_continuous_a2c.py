"""A2C on LunarLanderContinuous-v3 (2-dim continuous throttle; needs gymnasium[box2d]) with gSDE: no stop value.

RL Zoo's A2C for LunarLanderContinuous: 4 envs × 8 steps, gamma 0.99, GAE lambda 0.9, RMSprop (alpha 0.99,
eps 1e-5) at 7e-4 decayed linearly to 0 over the 1M-step budget (31,250 updates; the Zoo decays over its 5M),
value weight 0.4, no entropy bonus, gradient norm 0.5, no advantage normalization, VecNormalize's observation and
reward normalization (``model.obs_norm``, ``learn.reward_norm``), separate 64×64 tanh actor and critic without
orthogonal init, and gSDE (log-std initialised at −2, exploration matrices redrawn at every rollout start).

MEASURED (2026-11-25, ``python bench/ladder.py --rows lunarlander_continuous --algos a2c --seeds 0,1,2``, the whole
1M budget, 10-episode greedy evaluations every 20k env steps, ~205 s each): best −11 / 72 / 16, hold-out of that
checkpoint on 50 fresh episodes −10 / 53 / 35 (seed 0: −984 at 40k, −197 at 120k, −11 at 260k; 2026-11-24, before
the reward normalizer's statistics moved into shared functions, the same seed's best was 1.7 at 180k).
The ladder's 200 within 1M is not met (nor by the RL Zoo's A2C: 84 at 5M); PPO
(``lunarlander_continuous_ppo.py``) solves this row.
"""
import math

main_config = dict(
    exp_name='lunarlander_continuous_a2c',  # the run folder is ./lunarlander_continuous_a2c_seed<seed>
    env=dict(
        env_id='LunarLanderContinuous-v3',  # gymnasium's LunarLander with a 2-dim continuous throttle ('box2d' extra)
        collector_env_num=4,  # the Zoo's 4 envs
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation
        # not reached within 1M (see above): the run uses its whole budget
        stop_value=None,
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
            discount_factor=0.99,  # gamma
            gae_lambda=0.9,  # the Zoo's GAE lambda
            reward_norm=True,  # rewards divided by the running std of the return (VecNormalize's)
            value_weight=0.4,  # the Zoo's value-loss coefficient
            entropy_weight=0.0,  # no entropy bonus
            adv_norm=False,  # no advantage normalization, as the Zoo's
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
            # linear to 0 at the budget: 1M env steps / 32 per update (the Zoo decays over its 5M)
            lr_decay_iters=31250,
        ),
        # 4 envs x 8 steps; gSDE's exploration matrices redrawn every 8 steps (at each rollout's start)
        collect=dict(n_sample=32, sde_sample_freq=8),
        # every 625 updates (20,000 env steps)
        eval=dict(evaluator=dict(eval_freq=625)),
    ),
    max_env_step=1_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='a2c'),  # acframe/policy/a2c.py
)
