"""PPO on CartPole-v1 (500-step episodes): solved at a deterministic evaluation mean return of 475.

RL-Zoo's PPO settings for CartPole-v1 (8 envs × 32 steps per rollout, one minibatch of 256, 20 epochs,
gamma 0.98, GAE lambda 0.8, lr 1e-3 and clip 0.2 both decayed linearly to 0 over the 100k-step budget).
Measured (2026-11-23, seeds 0 1 2, budget 100k env steps): solved (10-episode greedy mean >= 475) at
10,240 / 11,520 / 23,040 env steps (800 / 900 / 1,800 gradient steps); `python bench/bench_ppo.py`.
With 2 data-parallel learners (`parallel.learner_num=2`, docs/ddp.md; 2026-11-28, seeds 0 1 2): solved at
19,200 / 20,480 / 17,920 env steps; `python bench/bench_ddp.py --solve`.
Hold-out seeds (issue 47; 2026-11-28, ``python bench/stop_values.py --configs cartpole_ppo --seeds 3,4``): seeds 3 /
4 stopped at 475, confirmed, at 15,360 / 17,920 env steps; their best checkpoints held out 499.4 / 500.0 on 50 fresh
episodes (2/2 at or above the ladder's target 475).
"""
main_config = dict(
    exp_name='cartpole_ppo',  # the run folder is ./cartpole_ppo_seed<seed>
    env=dict(
        env_id='CartPole-v1',  # gymnasium's CartPole, 500-step episodes
        collector_env_num=8,  # the Zoo's 8 envs
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=475,  # greedy mean return that solves it (the RL Zoo's threshold): all three measured seeds reach it
    ),
    policy=dict(
        model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False),  # separate 64x64 tanh actor and critic
        learn=dict(
            epoch_per_collect=20,  # the Zoo's 20 epochs over each rollout
            batch_size=256,  # the Zoo's minibatch: the whole rollout, one gradient step per epoch
            learning_rate=0.001,  # Adam, the Zoo's, decayed below
            discount_factor=0.98,  # the Zoo's gamma
            gae_lambda=0.8,  # the Zoo's GAE lambda
            clip_ratio=0.2,  # PPO's clip range, decayed below
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.0,  # no entropy bonus
            # 100k env steps / 256 per rollout * 20 steps per rollout: zero at the budget
            lr_decay_iters=7800,
            clip_ratio_decay_iters=7800,  # the clip range too, as the Zoo's
        ),
        # transitions per rollout, over all 8 envs (32 steps each)
        collect=dict(n_sample=256),
        # every 100 gradient steps = 5 rollouts = 1,280 env steps, greedy actions
        eval=dict(evaluator=dict(eval_freq=100)),
    ),
    max_env_step=100_000,  # the training budget in env steps, the Zoo's 100k
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py
)
