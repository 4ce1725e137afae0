"""A2C on Pendulum-v1 (continuous actions, Gaussian policy): stop value -250.

Rewards are divided by the running std of the discounted return (``learn.reward_norm``, SB3's norm_reward),
the Gaussian mean is bounded to the torque range (``model.mu_bound=2.0``: an unbounded mean drifts past the
bounds and the deterministic policy degenerates to constant extreme torques), and the learning rate decays
linearly to 0 over the 1M-step budget (7813 updates of 16 × 8 steps). The env gets actions clipped to
[-2, 2], the loss the unclipped samples.

MEASURED (seeds 0, 1, 2, full 1M budget with env.stop_value=None, deterministic 8-episode evaluations):
best evaluation −203 / −224 / −205, final −225 / −271 / −212 (training
returns reach about −250 by 250k env steps). With the stop value −250 (bench/ladder.py --rows pendulum
--algos a2c): solved and confirmed on 50 fresh episodes on 3/3 seeds at 154k / 512k / 192k env steps
(confirmation means −157 / −148 / −203; hold-out of the best checkpoint on 50 other episodes −192 / −160 /
−289). It does not reach the ladder's −200 on 3/3 seeds. The previous version (Adam 3e-3, reward_scale 0.1, unbounded mean) reached
best −1007 / −1164 / −210 and claimed −250 it did not reach. The RL Zoo's −163 needs gSDE (not in acframe).
"""
main_config = dict(
    exp_name='pendulum_a2c',
    env=dict(
        env_id='Pendulum-v1',
        collector_env_num=16,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=-250,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False, init_sigma=1.0, mu_bound=2.0),
        learn=dict(
            optim='adam',
            learning_rate=0.003,
            discount_factor=0.9,
            gae_lambda=0.9,
            reward_norm=True,
            value_weight=0.5,
            entropy_weight=0.0,
            grad_clip_value=0.5,
            lr_decay_iters=7813,
        ),
        collect=dict(n_sample=128),  # 16 envs x 8 steps
        eval=dict(evaluator=dict(eval_freq=100)),
    ),
    max_env_step=1_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='a2c'),
)
