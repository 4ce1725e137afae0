"""A2C on CartPole-v1 (500-step episodes): solved at a deterministic evaluation mean return of 490.

The stop value sits above the ladder's 475 so that the best checkpoint holds 475 on fresh episodes: at 475, seed 0
stopped on an evaluation of 480 (confirmed 480 on 50 episodes) whose hold-out on 50 other episodes was 471.
``bench/bench_a2c.py`` times the solve to 475 (``env.stop_value=475``), the RL Zoo's CartPole threshold.

MEASURED (2026-11-25, ``python bench/ladder.py --rows cartpole --algos a2c --seeds 0,1,2``, one torch thread):
solved and confirmed on 50 fresh episodes (500 / 497 / 492) on 3/3 seeds at 3.2k / 1.6k / 10.4k env steps (3–5 s
each; the RL Zoo's A2C: 500 at 500k); hold-out of the best checkpoint on 50 other episodes 500 / 500 / 489 (at stop
475, 2026-11-24: 471 / 500 / 490).
"""
main_config = dict(
    exp_name='cartpole_a2c',
    env=dict(
        env_id='CartPole-v1',
        collector_env_num=8,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=490,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False),
        learn=dict(
            optim='rmsprop',
            learning_rate=0.003,
            discount_factor=0.99,
            gae_lambda=1.0,
            value_weight=0.5,
            entropy_weight=0.0,
            grad_clip_value=0.5,
        ),
        collect=dict(n_sample=40),  # 8 envs x 5 steps
        eval=dict(evaluator=dict(eval_freq=10)),
    ),
    max_env_step=100_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='a2c'),
)
