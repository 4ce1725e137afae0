"""A2C on Hopper-v5 (MuJoCo, 3-dim continuous torque; needs the ``mujoco`` extra): no stop value.

The RL Zoo's A2C settings for the MuJoCo tasks (its ``mujoco-defaults``: SB3's A2C defaults with VecNormalize): one
env × 5 steps per update, RMSprop (alpha 0.99, eps 1e-5) at 7e-4, gamma 0.99, no GAE (lambda 1), value weight 0.5,
no entropy bonus, gradient norm 0.5, no advantage normalization, separate 64×64 tanh actor and critic with
orthogonal init, a state-independent log-std starting at 0, observation and reward normalization as policy state.

MEASURED (2026-11-24, seed 0, the whole 1M budget, 10-episode greedy evaluations every 20k env steps;
``acframe -c hopper_a2c.py -s 0``, 625 s): 200–600 up to 340k, 1000–1900 from 460k on with falls to ~270
(evaluations 1760 at 460k, 1983 at 680k, best 2297 at 740k, 1150 at 1M). The ladder's 2000 within 1M is crossed
once, not held: no stop value. Without reward normalization (``learn.reward_norm=False``, as the RL Zoo's published
HalfCheetah A2C model ran; 2026-11-25, seed 0, 1M): best 1143, 50–1026 throughout. SB3's A2C with the RL Zoo's
settings, side by side (``python bench/ladder.py --rows hopper --algos none --sb3 a2c --seeds 0 --eval-every 20000``,
1,038 s): the same shape — 1000–1600 from 400k, 2012 at 720k and 2062 at 800k (hold-out of that model 2010), 629
at 1M. All three seeds on this machine (2026-11-25, ``python bench/ladder.py --rows hopper --algos a2c --seeds
0,1,2``, 770–930 s each two at a time): best 568 / 1447 / 1108, hold-out of that checkpoint on 50 fresh episodes
417 / 1449 / 1112 — seed 0 stays at 140–570 all run. The 2026-11-24 run of seed 0 above came from another session's
machine (a different floating-point path: the code's A2C is unchanged since — the first 80k env steps of seed 0
evaluate identically under that day's commit 8f2067e and now); Hopper A2C is that sensitive. ACER
(``hopper_acer.py``), IMPALA (``hopper_impala.py``) and PPO (``hopper_ppo.py``) solve this row.
"""
main_config = dict(
    exp_name='hopper_a2c',  # the run folder is ./hopper_a2c_seed<seed>
    env=dict(
        env_id='Hopper-v5',  # gymnasium's MuJoCo Hopper, 1000-step episodes (the 'mujoco' extra)
        collector_env_num=1,  # the Zoo's one env
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation
        # not reached on 3/3 seeds within 1M (see above): the run uses its whole budget
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
            learning_rate=0.0007,  # the Zoo's, constant
            rms_alpha=0.99,  # RMSprop's smoothing constant
            rms_eps=0.00001,  # RMSprop's epsilon
            discount_factor=0.99,  # gamma
            gae_lambda=1.0,  # no GAE: n-step returns, as the Zoo's
            reward_norm=True,  # rewards divided by the running std of the return (VecNormalize's)
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.0,  # no entropy bonus
            adv_norm=False,  # no advantage normalization, as the Zoo's
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
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
