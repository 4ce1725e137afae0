"""PPO with invalid-action masks on PettingZoo's Connect Four against a random opponent (docs/masks.md).

``env.type='pettingzoo_classic'`` (acframe/envs/pettingzoo_env.py; needs ``pip install -e .[pettingzoo]``): the agent
moves first; the opponent plays a uniformly random legal column; a full column is masked (PettingZoo's own
``action_mask``), so the agent never plays one (the wrapper raises on an illegal move). Reward +1 win, -1 loss, 0 draw.
Solved at a greedy mean return of 0.95 over 100 games, confirmed on 50 fresh games. MEASURED (``python
bench/bench_masks.py --board connect4``, seeds 0 1 2, budget 200k): solved on 3/3 seeds at 52,224 / 32,768 / 55,296
env steps (the budget is 3.6x the slowest seed); sb3-contrib's MaskablePPO with these settings: 35,840 / 49,152 /
49,152.
"""
main_config = dict(
    exp_name='connect_four_ppo_masked',  # the run folder is ./connect_four_ppo_masked_seed<seed>
    env=dict(
        env_id='connect_four_v3',  # a game of pettingzoo.classic
        env_kwargs=dict(opponent='random', seat='first'),  # a random legal opponent; the agent moves first
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
    max_env_step=200_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='pettingzoo_classic'),  # a PettingZoo two-player game as a single-agent env (pettingzoo_env.py)
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py
)
