"""PPO with invalid-action masks on tic-tac-toe against a random opponent (``toy_tictactoe``, docs/masks.md).

The agent (X, first to move) sees the board and the mask of empty cells; its logits of taken cells are masked, so
it never plays one (the env raises on an illegal move). Solved at a greedy mean return of 0.9 over 100 games.
MEASURED (``python bench/bench_masks.py``, seeds 0 1 2, budget 100k): solved and confirmed on 50 fresh games on
3/3 seeds at 10,240 / 16,384 / 41,984 env steps (sb3-contrib's MaskablePPO with these settings: 17,408 / 12,288 /
16,384).
Hold-out seeds (issue 47; 2026-11-28, ``python bench/stop_values.py --configs tictactoe_ppo_masked --seeds 3,4``):
seeds 3 / 4 stopped at 0.9, confirmed, at 17,408 / 16,384 env steps; their best checkpoints held out 1.00 / 0.94 on 50
fresh episodes (2/2 at or above the stop value 0.9).
"""
main_config = dict(
    exp_name='tictactoe_ppo_masked',  # the run folder is ./tictactoe_ppo_masked_seed<seed>
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
    env=dict(type='toy_tictactoe'),  # registered in acframe/registry.py
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py
)
