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
    exp_name='cartpole_a2c',  # the run folder is ./cartpole_a2c_seed<seed>
    env=dict(
        env_id='CartPole-v1',  # gymnasium's CartPole, 500-step episodes
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        # mean return that solves it (above the ladder's 475, see above): all three measured seeds reach it
        stop_value=490,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False),  # separate 64x64 tanh actor and critic
        learn=dict(
            optim='rmsprop',  # RMSprop (alpha 0.99, eps 1e-5: the defaults), A2C's usual optimizer
            learning_rate=0.003,  # RMSprop's step size, constant
            discount_factor=0.99,  # gamma
            gae_lambda=1.0,  # plain n-step returns, as A2C
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.0,  # no entropy bonus
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
        ),
        collect=dict(n_sample=40),  # 8 envs x 5 steps
        eval=dict(evaluator=dict(eval_freq=10)),  # every 10 updates = 400 env steps, greedy actions
    ),
    max_env_step=100_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='a2c'),  # acframe/policy/a2c.py
)
