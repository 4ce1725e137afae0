"""PPO on Hopper-v5 (MuJoCo, 3-dim continuous torque; needs the ``mujoco`` extra): stop value 2500.

PPO's common MuJoCo settings (Schulman et al. 2017's, as CleanRL's ``ppo_continuous_action`` runs them): one env ×
2048 steps per rollout, 10 epochs of 64-transition minibatches, Adam 3e-4 decayed linearly to 0 over the 1M-step
budget (489 rollouts × 320 gradient steps), gamma 0.99, GAE lambda 0.95, clip 0.2 on the ratio and on the value
(in value units), no entropy bonus, value weight 0.5, gradient norm 0.5, separate 64×64 tanh actor and critic with
orthogonal init, a state-independent log-std starting at 0, and VecNormalize's observation and reward
normalization as policy state (``model.obs_norm``, ``learn.reward_norm``).

Why not the RL Zoo's tuned Hopper settings (512-step rollouts, minibatches of 32, gamma 0.999, lr 9.8e-5,
256×256 ReLU, log-std −2): on Hopper-v5 they learn to stand still until the 1000-step time limit (return ≈ 1000
from ~20k env steps on) and never hop — acframe's PPO 1049 / 1055 / 998 over 1M env steps (seeds 0–2) and, side by
side on this machine, SB3's PPO with the same settings 1051 / 1003 (seeds 0, 1; hold-out 1051 / 1003;
``python bench/ladder.py --rows hopper --algos none --sb3 ppo --seeds 0,1``). With the settings here the return climbs through 1000 by ~290k
and seed 0 evaluated 2725 at 328k and 3171 at 348k.

MEASURED (2026-11-23, ``python bench/ladder.py --rows hopper --algos ppo --seeds 0,1,2``, one torch thread): 2500
crossed and confirmed on 50 fresh episodes (2631 / 3045 / 2856) on 3/3 seeds at 328k / 328k / 307k env steps
(222–246 s each); hold-out of the best checkpoint on 50 other episodes 2664 / 2715 / 2723. The stop value is 2500,
not the ladder's 2000: with 2000, seed 2 stopped at 287k on an evaluation of 2046 and held out 1953. Seed 0 over
the whole 1M budget (``env.stop_value=None``, 744 s): best evaluation 3196 at 471k, hold-out of that checkpoint
3048 ± 495, final evaluation 2467 (hold-out of the final weights 2348 ± 750: a fall now and then costs an episode
most of its return).
"""
main_config = dict(
    exp_name='hopper_ppo',  # the run folder is ./hopper_ppo_seed<seed>
    env=dict(
        env_id='Hopper-v5',  # gymnasium's MuJoCo Hopper, 1000-step episodes (the 'mujoco' extra)
        collector_env_num=1,  # one env, PPO's MuJoCo setting
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        # greedy mean return that solves it (above the ladder's 2000, see above): all three measured seeds reach it
        stop_value=2500,
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64, 64],  # 64x64 bodies
            share_encoder=False,  # separate actor and critic
            activation='tanh',  # tanh hidden layers
            init_sigma=1.0,  # a state-independent std starting at 1 (log-std 0)
            orthogonal_init=True,  # orthogonal weight init
            obs_norm=True,  # observations normalized by their running mean and std (VecNormalize's)
        ),
        learn=dict(
            epoch_per_collect=10,  # 10 epochs over each rollout, PPO's MuJoCo setting
            batch_size=64,  # PPO's MuJoCo minibatch size: 320 gradient steps per rollout
            learning_rate=0.0003,  # Adam, PPO's MuJoCo rate, decayed below
            discount_factor=0.99,  # gamma
            gae_lambda=0.95,  # GAE's lambda, PPO's MuJoCo setting
            clip_ratio=0.2,  # PPO's clip range on the probability ratio, constant
            value_clip_ratio=0.2,  # the value clipped to +-0.2 (value units) around the collecting weights' value
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.0,  # no entropy bonus
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
            reward_norm=True,  # rewards divided by the running std of the return (VecNormalize's)
            # 1M env steps = 489 rollouts of 2048 × 320 gradient steps
            lr_decay_iters=156480,
        ),
        # one env × 2048 steps per rollout
        collect=dict(n_sample=2048),
        # every 10 rollouts (20,480 env steps)
        eval=dict(evaluator=dict(eval_freq=3200)),
    ),
    max_env_step=1_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py
)
