"""PPO on LunarLander-v3 (discrete actions, needs gymnasium[box2d]): solved at a deterministic evaluation of 220.

RL-Zoo's PPO settings for LunarLander (16 envs × 1024 steps per rollout, minibatches of 64, 4 epochs,
gamma 0.999, GAE lambda 0.98, entropy bonus 0.01, Adam 3e-4, clip 0.2; tanh 64×64 actor and critic), no
normalization, no schedules. Measured (2026-11-23, ``python bench/ladder.py --rows lunarlander --algos ppo
--seeds 0,1,2``; a 10-episode greedy evaluation every rollout): 220 reached and confirmed on 50 fresh episodes
at 606k / 655k / 721k env steps (RL Zoo's PPO: 242 at 1M); hold-out of the best checkpoint on 50 other episodes
227 / 234 / 229. Seed 0 over the whole 1M budget (``env.stop_value=None``): 200 first at 459k, 225 at 606k,
250 at 819k, best 254, final 250 — the stop value 220 stops a run early with a hold-out margin over the
ladder's target of 200.
"""
main_config = dict(
    exp_name='lunarlander_ppo',  # the run folder is ./lunarlander_ppo_seed<seed>
    env=dict(
        env_id='LunarLander-v3',  # gymnasium's LunarLander, discrete actions (the 'box2d' extra)
        collector_env_num=16,  # the Zoo's 16 envs
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        # greedy mean return that solves it (a margin over the ladder's 200): all three measured seeds reach it
        stop_value=220,
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False),  # separate 64x64 tanh actor and critic
        learn=dict(
            epoch_per_collect=4,  # the Zoo's 4 epochs over each rollout
            batch_size=64,  # the Zoo's minibatch size: 256 minibatches per epoch
            learning_rate=0.0003,  # Adam, the Zoo's, constant
            discount_factor=0.999,  # the Zoo's gamma
            gae_lambda=0.98,  # the Zoo's GAE lambda
            clip_ratio=0.2,  # PPO's clip range, the Zoo's, constant
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.01,  # the Zoo's entropy bonus
        ),
        # transitions per rollout, over all 16 envs (1024 steps each)
        collect=dict(n_sample=16384),
        # every rollout (16384 / 64 * 4 = 1024 gradient steps)
        eval=dict(evaluator=dict(eval_freq=1024)),
    ),
    max_env_step=1_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py
)
