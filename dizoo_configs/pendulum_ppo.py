"""PPO on Pendulum-v1 (continuous torque, Gaussian policy explored with gSDE): trains its whole 100k env steps (no stop value).

RL-Zoo's PPO settings for Pendulum-v1 (4 envs × 1024 steps per rollout, minibatches of 64, 10 epochs,
gamma 0.9, GAE lambda 0.95, lr 1e-3, clip 0.2, no entropy bonus, gSDE with the exploration matrix redrawn
every 4 steps, ``policy.model.use_sde`` / ``policy.collect.sde_sample_freq``), with the learning rate decayed
linearly to 0 over the 100k-step budget (15,630 gradient steps) and evaluations of 50 episodes (a handful of
fixed start states cannot hold the mean back: with 10 they read -218 to -235 for policies whose 50-episode
hold-out is -165 to -184).

MEASURED (2026-11-25, ``python bench/ladder.py --rows pendulum --algos ppo --seeds 0,1,2 --budget 100000``, 32 s
each): best 50-episode evaluation -167 / -162 / -178 (the ladder's target: -200), hold-out of that checkpoint on 50
fresh episodes -165 / -160 / -160.

Why no stop value: stopped at the first confirmed -200 (2026-11-23 and again 2026-11-25; a confirmation of 50,
100 or 200 fresh episodes alike) the runs ended at 24,576 / 24,576 / 32,768 env steps with hold-outs of -176 /
-205 / -173 — seed 1's young policy stays stuck at -1491 from one start state in 50. With stop -170 seeds 0 and 1
stop at 98k / 33k (hold-out -165 / -164) and seed 2 never gets there (best -178). The whole 100k (36 s) is the
policy to ship. Without gSDE (the previous version) the best evaluations by 100k were -221 / -234 / -239.
"""
main_config = dict(
    exp_name='pendulum_ppo',  # the run folder is ./pendulum_ppo_seed<seed>
    env=dict(
        env_id='Pendulum-v1',  # gymnasium's Pendulum, 200-step episodes, continuous torque
        collector_env_num=4,  # the Zoo's 4 envs
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=50,  # episodes per evaluation: with 10, a few fixed start states hold the mean back
        stop_value=None,  # none: the whole 100k is the policy to ship (see above)
    ),
    policy=dict(
        # separate 64x64 tanh actor and critic; gSDE exploration, the Zoo's, its noise scale starting at 1
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False, init_sigma=1.0, use_sde=True),
        learn=dict(
            epoch_per_collect=10,  # the Zoo's 10 epochs over each rollout
            batch_size=64,  # the Zoo's minibatch size: 640 gradient steps per rollout
            learning_rate=0.001,  # Adam, the Zoo's, decayed below
            discount_factor=0.9,  # the Zoo's gamma
            gae_lambda=0.95,  # the Zoo's GAE lambda
            clip_ratio=0.2,  # PPO's clip range, the Zoo's, constant
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.0,  # the Zoo's: no entropy bonus
            # linear to 0 at 100k env steps: 24.4 rollouts x 640 gradient steps
            lr_decay_iters=15630,
        ),
        # transitions per rollout, over all 4 envs (1024 steps each); gSDE redraws its noise every 4 steps
        collect=dict(n_sample=4096, sde_sample_freq=4),
        # every 2 rollouts (640 gradient steps each)
        eval=dict(evaluator=dict(eval_freq=1280)),
    ),
    max_env_step=100_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py
)
