"""PPO with invalid-action masks on 5x5 tic-tac-toe, four in a row wins, against a random opponent (docs/masks.md).

The harder board of the masked benchmark: the agent (X, first to move) sees the board and the mask of empty cells
(``toy_tictactoe`` with ``env_kwargs=dict(size=5, win=4)``); its logits of taken cells are masked, so it never plays
one (the env raises on an illegal move). Solved at a greedy mean return of 0.95 over 100 games, confirmed on 50 fresh
games. MEASURED (``python bench/bench_masks.py --board 5x5``, seeds 0 1 2, budget 250k): solved on 3/3 seeds at
28,672 / 33,792 / 25,600 env steps (median 28,672; the budget is 7x the slowest seed); sb3-contrib's MaskablePPO
with these settings: 53,248 / 36,864 / 30,720. Without masks (``tictactoe5x5_ppo_nomask.py``): 55,296 / 71,680 /
103,424.
"""
main_config = dict(
    exp_name='tictactoe5x5_ppo_masked',  # the run folder is ./tictactoe5x5_ppo_masked_seed<seed>
    env=dict(
        env_id='toy_tictactoe',  # acframe/envs/tictactoe.py: a Dict observation with an 'action_mask'
        env_kwargs=dict(size=5, win=4),  # a 5x5 board, four in a row wins (up to 13 moves of X)
        collector_env_num=8,  # envs stepped at once by the collector
        evaluator_env_num=10,  # evaluation games played at once
        n_evaluator_episode=100,  # games per evaluation (the opponent is random: 100 games for a stable mean)
        stop_value=0.95,  # greedy mean return (+1 win, 0 draw, -1 loss) that solves it
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64, 64],  # 64x64 tanh bodies
            share_encoder=False,  # one body for the actor, one for the critic (as MaskablePPO's MlpPolicy)
        ),
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
    max_env_step=250_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='toy_tictactoe'),  # registered in acframe/registry.py
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py
)
