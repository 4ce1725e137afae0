"""PPO on tic-tac-toe without masks (``toy_tictactoe_nomask``): the control of ``tictactoe_ppo_masked.py``.

The same game, settings and budget; the policy sees the board alone and an illegal move ends the game with reward -1.
It learns measurably worse than the masked run early on (docs/masks.md); the stop value is the masked config's.
MEASURED (``python bench/bench_masks.py``, seeds 0 1 2, budget 100k): greedy return 0.58 +- 0.09 at 4k env steps and
0.73 +- 0.08 at 8k (masked: 0.78 +- 0.04, 0.85 +- 0.02); solved at 16,384 / 29,696 / 19,456 env steps.
"""
main_config = dict(
    exp_name='tictactoe_ppo_nomask',  # the run folder is ./tictactoe_ppo_nomask_seed<seed>
    env=dict(
        env_id='toy_tictactoe_nomask',  # acframe/envs/tictactoe.py: the board alone; an illegal move loses
        collector_env_num=8,  # envs stepped at once by the collector
        evaluator_env_num=10,  # evaluation games played at once
        n_evaluator_episode=100,  # games per evaluation (the opponent is random: 100 games for a stable mean)
        stop_value=0.9,  # greedy mean return (+1 win, 0 draw, -1 loss) that solves it
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64]),  # a shared 64x64 tanh body
        learn=dict(
            epoch_per_collect=10,  # passes over each rollout
            batch_size=256,  # transitions per minibatch
            learning_rate=0.001,  # Adam
            discount_factor=0.99,  # gamma
            gae_lambda=0.95,  # GAE lambda
            entropy_weight=0.01,  # a small entropy bonus over the legal moves
        ),
        collect=dict(n_sample=1024),  # transitions per rollout, over all 8 envs (128 steps each)
        eval=dict(evaluator=dict(eval_freq=40)),  # every 40 gradient steps = 1 rollout = 1,024 env steps
    ),
    max_env_step=100_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='toy_tictactoe_nomask'),  # registered in acframe/registry.py
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py
)
