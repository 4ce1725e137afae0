"""PPO on Hopper-v5 (MuJoCo, 3-dim continuous torque; needs the ``mujoco`` extra): does NOT reach 2000; no stop value.

RL-Zoo's PPO settings for Hopper (one env × 512 steps per rollout, minibatches of 32, 5 epochs, gamma 0.999,
GAE lambda 0.99, lr 9.80828e-5, clip 0.2, entropy 2.295e-3, value weight 0.836, gradient norm 0.7, separate
256×256 ReLU actor and critic, log-std initialised at −2, no orthogonal init) with VecNormalize's observation
and reward normalization as policy state (``model.obs_norm``, ``learn.reward_norm``).
Measured (2026-11-23, ``python bench/ladder.py --rows hopper --algos ppo --seeds 0,1,2``, 1M env steps each): the
hopper learns to stand still until the 1000-step time limit (return ≈ 1000 from 13k–25k env steps on) and never
hops forward: best evaluation 1049 / 1055 / 998, hold-out of the best checkpoint 1049 / 1055 / 998 (RL Zoo's
SB3 PPO: about 2400 at 1M on Hopper-v3). Not yet understood; see docs/algorithms/ppo.md.
"""
import math

main_config = dict(
    exp_name='hopper_ppo',
    env=dict(
        env_id='Hopper-v5',
        collector_env_num=1,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        # no stop value: 2000 was not reached on any of 3 seeds (see above)
        stop_value=None,
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[256, 256],
            share_encoder=False,
            activation='relu',
            init_sigma=math.exp(-2),
            orthogonal_init=False,
            obs_norm=True,
        ),
        learn=dict(
            epoch_per_collect=5,
            batch_size=32,
            learning_rate=9.80828e-05,
            discount_factor=0.999,
            gae_lambda=0.99,
            clip_ratio=0.2,
            value_weight=0.835671,
            entropy_weight=0.00229519,
            grad_clip_value=0.7,
            reward_norm=True,
        ),
        # one env × 512 steps per rollout
        collect=dict(n_sample=512),
        # every 25 rollouts (12,800 env steps; 80 gradient steps a rollout)
        eval=dict(evaluator=dict(eval_freq=2000)),
    ),
    max_env_step=1_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='ppo'),
)
