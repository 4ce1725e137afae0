"""PPO on Acrobot-v1 (500-step episodes, -1 per step until the tip swings above the bar): stop value -90.

The RL Zoo's PPO settings for Acrobot (16 envs × 256 steps per rollout, minibatches of 64, 4 epochs, gamma 0.99,
GAE lambda 0.94, no entropy bonus, Adam 3e-4, clip 0.2; VecNormalize's observation and reward normalization as
policy state).

MEASURED (2026-11-24, ``python bench/ladder.py --rows acrobot --algos ppo --seeds 0,1,2``, one torch thread;
a 10-episode greedy evaluation every rollout): solved and confirmed on 50 fresh episodes (−82 / −81 / −86) on 3/3
seeds at 61k / 25k / 53k env steps (6–13 s each; RL Zoo's A2C: −83 at 500k); hold-out of the best checkpoint on 50
other episodes −80 / −77 / −88. The stop value is −90, not the ladder's −100, as in ``acrobot_a2c.py``: an
evaluation that barely crosses −100 on 10 episodes is marginal on fresh ones (seed 2 confirmed −104 at 45k).
"""
main_config = dict(
    exp_name='acrobot_ppo',  # the run folder is ./acrobot_ppo_seed<seed>
    env=dict(
        env_id='Acrobot-v1',  # gymnasium's Acrobot, 500-step episodes
        collector_env_num=16,  # the Zoo's 16 envs
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        # mean return that solves it (above the ladder's -100, see above): all three measured seeds reach it
        stop_value=-90,
    ),
    policy=dict(
        # separate 64x64 tanh actor and critic; observations normalized by their running mean and std (VecNormalize's)
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False, obs_norm=True),
        learn=dict(
            epoch_per_collect=4,  # the Zoo's 4 epochs over each rollout
            batch_size=64,  # the Zoo's minibatch size: 64 minibatches per epoch
            learning_rate=0.0003,  # Adam, the Zoo's, constant
            discount_factor=0.99,  # gamma
            gae_lambda=0.94,  # the Zoo's GAE lambda
            clip_ratio=0.2,  # PPO's clip range, the Zoo's, constant
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.0,  # the Zoo's: no entropy bonus
            reward_norm=True,  # rewards divided by the running std of the return (VecNormalize's)
        ),
        # transitions per rollout, over all 16 envs (256 steps each)
        collect=dict(n_sample=4096),
        # every rollout (4096 / 64 * 4 = 256 gradient steps)
        eval=dict(evaluator=dict(eval_freq=256)),
    ),
    max_env_step=500_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py
)
