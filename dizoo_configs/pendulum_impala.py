"""IMPALA on Pendulum-v1 (continuous torque, Gaussian policy explored with gSDE): solved at -200.

The settings of ``pendulum_a2c.py`` (the RL Zoo's A2C for Pendulum) as IMPALA runs them, with replay: 8 envs × 8-step
unrolls, batches of 8 unrolls, 4 updates per collection (each unroll trained on 4 times, then dropped), V-trace with
gamma 0.9 and lambda 0.9, RMSprop (alpha 0.99, eps 1e-5) at 7e-4 decayed linearly to 0 over the 1M-step budget
(62,500 iterations), value weight 0.4, no entropy bonus, gradient norm 0.5, separate 64×64 tanh actor and critic,
gSDE (log-std initialised at −1, the exploration matrices redrawn every 8 steps), observation normalization and
reward normalization by the running return std (``learn.reward_norm``). Evaluations average 50 episodes
(Pendulum's return depends strongly on the start angle).

MEASURED (2026-11-27, on a Sapphire Rapids CPU, ``python bench/ladder.py --rows pendulum --algos impala --seeds
0,1,2``, one torch thread, seeds one after the other beside one other run): solved and confirmed on 50 fresh episodes
(−177 / −198 / −174) at 104k / 72k / 144k env steps (47 / 34 / 67 s); hold-out of the solving checkpoint on 50 other
episodes −162 / −189 / −148. Eight seeds of the test's call (``tests/policy/test_impala.py``) run to 150k end at −195 to
−310 from −1156 to −1380 (at the test's 100k: −212 to −672).
With gSDE's log-std at −2 (pendulum_a2c.py's; measured 2026-11-25 on another CPU: solved at 176k / 96k / 96k) the
same seeds on this CPU took 512k (seed 0) and 250k+ (seed 2, still at −884 when stopped): they sat at the random
policy's ~−1200 for 200k steps before the swing-up began. Each unroll trained on once (1 update per collection, log-std
−2) solved seeds 1 and 2 at 320k / 448k but seed 0 stayed at −720 (it never swung up from every start); twice (2
updates) solved seed 0 at 448k; RMSprop at 1e-3 once per unroll did not solve seed 0 in 1M (best −209). With
``reward_scale=0.1`` instead of ``reward_norm`` seed 0 stayed near −720 as well. The previous config (Adam 1e-3,
bounded mean, 8 updates per collection, each unroll replayed up to 16 times, no gSDE) reached −804 / −300 / −267 in
500k and collapsed on two seeds.
Hold-out seeds (issue 47; 2026-11-28, ``python bench/stop_values.py --configs pendulum_impala --seeds 3,4``): seeds
3 / 4 stopped at -200, confirmed, at 88,000 / 80,000 env steps; their best checkpoints held out -163.8 / -170.4 on
50 fresh episodes (2/2 at or above the ladder's target -200).
"""
import math

main_config = dict(
    exp_name='pendulum_impala',  # the run folder is ./pendulum_impala_seed<seed>
    env=dict(
        env_id='Pendulum-v1',  # gymnasium's Pendulum, 200-step episodes, continuous torque
        collector_env_num=8,  # 8 envs, as pendulum_a2c.py's
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=50,  # episodes per evaluation: the return depends strongly on the start angle
        stop_value=-200,  # mean return that solves it (the ladder's): all three measured seeds reach it
    ),
    policy=dict(
        unroll_len=8,  # the unrolls V-trace trains on: 8 steps, as pendulum_a2c.py's rollouts
        model=dict(
            encoder_hidden_size_list=[64, 64],  # 64x64 bodies
            share_encoder=False,  # separate actor and critic
            activation='tanh',  # tanh hidden layers
            init_sigma=math.exp(-1),  # gSDE's log-std starts at -1 (at pendulum_a2c.py's -2 the swing-up starts late)
            orthogonal_init=False,  # no orthogonal init, as pendulum_a2c.py's
            use_sde=True,  # gSDE: state-dependent exploration noise, pendulum_a2c.py's
            obs_norm=True,  # observations normalized by their running mean and std (VecNormalize's)
        ),
        learn=dict(
            update_per_collect=4,  # 4 updates per collection of 8 unrolls: each unroll trained on 4 times
            batch_size=8,  # unrolls per training batch
            optim='rmsprop',  # RMSprop, as pendulum_a2c.py's
            learning_rate=0.0007,  # pendulum_a2c.py's, decayed below
            rms_alpha=0.99,  # RMSprop's smoothing constant
            rms_eps=0.00001,  # RMSprop's epsilon
            discount_factor=0.9,  # gamma, pendulum_a2c.py's
            lambda_=0.9,  # V-trace's trace lambda, pendulum_a2c.py's GAE lambda
            # rewards divided by the running std of the return (with reward_scale=0.1 seed 0 stayed near -720)
            reward_norm=True,
            value_weight=0.4,  # value-loss coefficient, pendulum_a2c.py's
            entropy_weight=0.0,  # no entropy bonus
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
            lr_decay_iters=62500,  # linear to 0 at the budget: 15,625 collections of 64 env steps x 4 updates
        ),
        # 8 unrolls across 8 envs: 8 steps per env; gSDE's exploration matrices redrawn every 8 steps
        collect=dict(n_sample=8, sde_sample_freq=8),
        # every 500 iterations (8,000 env steps)
        eval=dict(evaluator=dict(eval_freq=500)),
        # each unroll trained on 4 times
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=4)),
    ),
    max_env_step=1_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='impala'),  # acframe/policy/impala.py
)
