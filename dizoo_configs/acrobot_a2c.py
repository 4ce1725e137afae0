"""A2C on Acrobot-v1 (500-step episodes, -1 per step until the tip swings above the bar): stop value -90.

The RL Zoo's A2C settings (16 envs × 5 steps, RMSprop 7e-4, no entropy bonus, gamma 0.99, observation
normalization and reward scaling as VecNormalize). Measured (2026-11-23, after A2C began learning each rollout
with the observation statistics it was collected with) with
``python bench/ladder.py --rows acrobot --algos a2c --seeds 0,1,2`` (deterministic 10-episode evaluations):
solved and confirmed on 50 fresh episodes on 3/3 seeds at 60k / 40k / 20k env steps (RL Zoo: −83 at 500k), hold-out of
the best checkpoint on 50 other episodes −83 / −84 / −83. The stop value is −90, not the ladder's −100: with −100
the runs stopped at 20k on evaluations of −97 / −100 / −86 and one hold-out read −106 (the same checkpoints
are marginal on fresh episodes). Without reward_norm (observation normalization only) the same settings solved
1 of 3 seeds within 500k (best −91 / −302 / −154; measured before that change).
"""
main_config = dict(
    exp_name='acrobot_a2c',
    env=dict(
        env_id='Acrobot-v1',
        collector_env_num=16,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=-90,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False, obs_norm=True),
        learn=dict(
            optim='rmsprop',
            learning_rate=0.0007,
            discount_factor=0.99,
            gae_lambda=1.0,
            value_weight=0.5,
            entropy_weight=0.0,
            reward_norm=True,
            grad_clip_value=0.5,
        ),
        collect=dict(n_sample=80),  # 16 envs x 5 steps
        eval=dict(evaluator=dict(eval_freq=250)),
    ),
    max_env_step=500_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='a2c'),
)
