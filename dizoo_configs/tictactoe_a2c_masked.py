"""A2C with invalid-action masks on tic-tac-toe against a random opponent (``toy_tictactoe``, docs/masks.md).

The second algorithm of the masked benchmark (``python bench/bench_masks.py``): the same env, stop value and budget
as ``tictactoe_ppo_masked.py``. MEASURED (``python bench/bench_masks.py``, seeds 0 1 2, budget 100k): solved and confirmed on 50 fresh games on
3/3 seeds at 22,528 / 43,008 / 56,320 env steps.
"""
main_config = dict(
    exp_name='tictactoe_a2c_masked',  # the run folder is ./tictactoe_a2c_masked_seed<seed>
    env=dict(
        env_id='toy_tictactoe',  # acframe/envs/tictactoe.py: a Dict observation with an 'action_mask'
        collector_env_num=8,  # envs stepped at once by the collector
        evaluator_env_num=10,  # evaluation games played at once
        n_evaluator_episode=100,  # games per evaluation (the opponent is random: 100 games for a stable mean)
        stop_value=0.9,  # greedy mean return (+1 win, 0 draw, -1 loss) that solves it
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64]),  # a shared 64x64 tanh body
        learn=dict(
            optim='rmsprop',  # RMSprop, A2C's usual optimizer
            learning_rate=0.001,  # RMSprop's step size, constant
            discount_factor=0.99,  # gamma
            gae_lambda=1.0,  # plain n-step returns, as A2C
            entropy_weight=0.01,  # a small entropy bonus over the legal moves
        ),
        collect=dict(n_sample=64),  # 8 envs x 8 steps per update
        eval=dict(evaluator=dict(eval_freq=16)),  # every 16 updates = 1,024 env steps, greedy actions
    ),
    max_env_step=100_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='toy_tictactoe'),  # registered in acframe/registry.py
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='a2c'),  # acframe/policy/a2c.py
)
