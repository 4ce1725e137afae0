"""ACER on Acrobot-v1 (500-step episodes, -1 per step until the tip swings above the bar): stop value -90.

8 envs × 20-step unrolls into an episodic replay (50k transitions); per collection the on-policy update and up to 3
replayed batches of 16 sub-trajectories (a Poisson(4) draw capped by ``update_per_collect=4``; from 2k transitions
on), 64×64 bodies, Adam 7e-4, gamma 0.99, truncated
importance weights c = 10, entropy bonus 0.01, the trust region (delta 1).

MEASURED (2026-11-24, ``python bench/ladder.py --rows acrobot --algos acer --seeds 0,1,2``, one torch thread;
a 10-episode greedy evaluation every 100 updates, ~4k env steps): solved and confirmed on 50 fresh episodes
(−85 / −88 / −85) on 3/3 seeds at 78k / 145k / 82k env steps (14–21 s each; RL Zoo's A2C: −83 at 500k); hold-out
of the best checkpoint on 50 other episodes −91 / −89 / −84.
"""
main_config = dict(
    exp_name='acrobot_acer',  # the run folder is ./acrobot_acer_seed<seed>
    env=dict(
        env_id='Acrobot-v1',  # gymnasium's Acrobot, 500-step episodes
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=-90,  # mean return that solves it (above the ladder's -100): all three measured seeds reach it
    ),
    policy=dict(
        # separate 64x64 tanh policy and Q bodies (the acer_q model's defaults)
        model=dict(encoder_hidden_size_list=[64, 64]),
        learn=dict(
            update_per_collect=4,  # the on-policy update and at most 3 replays per collection
            batch_size=16,  # sub-trajectories per replayed batch
            learning_rate=0.0007,  # Adam (ACER's default optimizer), constant
            discount_factor=0.99,  # gamma
            c_clip_ratio=10.0,  # truncated importance weights c = 10 (the paper's)
            value_weight=0.5,  # weight of the critic loss
            entropy_weight=0.01,  # entropy bonus
            trust_region=True,  # the efficient trust region against the average policy network
            trust_region_delta=1.0,  # its bound on the linearised KL (the paper's 1)
            trust_region_alpha=0.99,  # Polyak decay of the average policy network (the paper's 0.99)
        ),
        collect=dict(n_sample=8),  # unrolls across 8 envs: T = 20 steps per env
        # every 100 updates: ~4k env steps (4 updates per 160-step collection)
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=50000,  # capacity in transitions (whole episodes evicted, oldest first)
            unroll_len=20,  # 20-step sub-trajectories (the paper's k = 20), also the T of each collection
            replay_ratio=4.0,  # Poisson(4) replayed batches per collection (the paper's 4)
            replay_start_size=2000,  # replay from 2,000 stored transitions on
        )),
    ),
    max_env_step=500_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='acer'),  # acframe/policy/acer.py
)
