"""A2C on HalfCheetah-v5 (MuJoCo, 6-dim continuous torque; needs the ``mujoco`` extra): no stop value.

The RL Zoo's A2C settings for the MuJoCo tasks (its ``mujoco-defaults``: SB3's A2C defaults with VecNormalize) as its
published HalfCheetah-v3 model ran them (3096): one env × 5 steps per update, RMSprop (alpha 0.99, eps 1e-5) at 7e-4,
here decayed linearly to 0 over the 1M budget, gamma 0.99, no GAE (lambda 1), value weight 0.5, no entropy bonus,
gradient norm 0.5, no advantage normalization, separate 64×64 tanh actor and critic with orthogonal init, a
state-independent log-std starting at 0, observation normalization as policy state and no reward normalization.

MEASURED (2026-11-25, ``python bench/ladder.py --rows halfcheetah --algos a2c --seeds S --budget 1000000 --override
env.stop_value=3000``, 10-episode greedy evaluations every 20k env steps): seed 0 solved at 3000 at 520k (confirmed on
50 fresh episodes, hold-out 3060; over the whole 1M: 2944 at 320k, 3125 at 640k, best 3385 at 960k); seed 2 best
2983, hold-out of that checkpoint 3037; seed 1 stays at about 1000 from 200k to 1M (best 1388, hold-out 1017: the
cheetah runs on its back). One seed of three is the wrong gait, so there is no stop value. With reward normalization
and a constant rate (the config until 2026-11-24) seed 0's best was 1098; without reward normalization but with the
constant rate, 3053 once, then down to −151 at 1M. Tried on seed 1 (2026-11-25): the std starting at 0.5, ~900 by
260k (stopped there); the RL Zoo's gSDE recipe for the PyBullet cheetah, as ``lunarlander_continuous_a2c.py`` runs
it (4 envs × 8 steps, gSDE with log-std −2, lambda 0.9, value weight 0.4, RMSprop 9.6e-4 decayed, reward
normalization), best 1569 at 880k. More envs per update (2026-11-26, the same 5 steps per env, the decay over the same 1M
steps): 4 envs (``env.collector_env_num=4 policy.collect.n_sample=20 policy.learn.lr_decay_iters=50000``) lifts seed 1
(best 4568, hold-out 4620) and keeps seed 0 (best 3847) but seed 2 then stays at ~1500 (best 1528); 2 envs: seed 1
best 3784, seed 2 best 1778; 8 envs: seeds 1 / 2 best 1250 / 1393. Which seed runs on its back changes with the
setting; none tried lands all three. SB3's A2C with the RL Zoo's settings, side by side (seeds 0 / 1 / 2): best
2916 / 2274 / 853, hold-out 2949 / 2198 / 790 — 3000 on no seed. ACER (``halfcheetah_acer.py``), IMPALA and PPO solve this row.
"""
main_config = dict(
    exp_name='halfcheetah_a2c',  # the run folder is ./halfcheetah_a2c_seed<seed>
    env=dict(
        env_id='HalfCheetah-v5',  # gymnasium's MuJoCo HalfCheetah, 1000-step episodes (the 'mujoco' extra)
        collector_env_num=1,  # the Zoo's one env
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation
        # 3000 on one seed of three within 1M (see above): the run uses its whole budget
        stop_value=None,
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64, 64],  # 64x64 bodies
            share_encoder=False,  # separate actor and critic
            activation='tanh',  # tanh hidden layers
            init_sigma=1.0,  # a state-independent std starting at 1 (log-std 0)
            orthogonal_init=True,  # orthogonal weight init, SB3's
            obs_norm=True,  # observations normalized by their running mean and std (VecNormalize's)
        ),
        learn=dict(
            optim='rmsprop',  # RMSprop, the Zoo's
            learning_rate=0.0007,  # the Zoo's, here decayed below
            rms_alpha=0.99,  # RMSprop's smoothing constant
            rms_eps=0.00001,  # RMSprop's epsilon
            discount_factor=0.99,  # gamma
            gae_lambda=1.0,  # no GAE: n-step returns, as the Zoo's
            reward_norm=False,  # no reward normalization, as the Zoo's published HalfCheetah model ran
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.0,  # no entropy bonus
            adv_norm=False,  # no advantage normalization, as the Zoo's
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
            # linear to 0 at 1M env steps (200,000 updates of 5)
            lr_decay_iters=200000,
        ),
        # one env x 5 steps per update
        collect=dict(n_sample=5),
        # every 4000 updates (20,000 env steps)
        eval=dict(evaluator=dict(eval_freq=4000)),
    ),
    max_env_step=1_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='a2c'),  # acframe/policy/a2c.py
)
