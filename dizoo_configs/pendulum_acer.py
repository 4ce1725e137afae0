"""ACER with a stochastic dueling network on Pendulum-v1 (continuous actions): solved at an evaluation mean of -200.

MEASURED (2026-11-23, ``python bench/ladder.py --rows pendulum --algos acer --seeds 0,1,2 --budget 300000``;
20-episode deterministic evaluations every 200 updates): solved on 3/3 seeds at 47,360 / 33,920 / 34,560 env
steps (evaluations -194 / -198 / -200, confirmed on 50 fresh episodes at -128 / -141 / -133); hold-out of the
best checkpoint on 50 other episodes -151 / -151 / -138. With 8 evaluation episodes (the previous version)
seed 1 stayed at -205..-210 on its 8 fixed start states for 300k steps.
Hold-out seeds (issue 47; 2026-11-28, ``python bench/stop_values.py --configs pendulum_acer --seeds 3,4``): seeds 3
/ 4 stopped at -200, confirmed, at 37,760 / 33,920 env steps; their best checkpoints held out -136.9 / -133.0 on 50
fresh episodes (2/2 at or above the ladder's target -200).
"""
main_config = dict(
    exp_name='pendulum_acer',  # the run folder is ./pendulum_acer_seed<seed>
    env=dict(
        env_id='Pendulum-v1',  # gymnasium's Pendulum, 200-step episodes, continuous torque
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=10,  # evaluation episodes played at once
        # 20 evaluation episodes: 8 fixed start states can hold a hard one that keeps a solved policy at -205..-210
        n_evaluator_episode=20,
        stop_value=-200,  # mean return that solves it (the ladder's): all three measured seeds reach it
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64, 64],  # 64x64 tanh bodies
            advantage_hidden_size_list=[64],  # the SDN's advantage MLP on [critic feature, action]
            share_encoder=False,  # separate actor and critic
            init_sigma=0.5,  # the Gaussian's std starts at 0.5
            mu_bound=2.0,  # the Gaussian's mean squashed into Pendulum's torque range [-2, 2]
            n_action_samples=5,  # actions sampled for the SDN's mean advantage
        ),
        learn=dict(
            update_per_collect=32,  # at most 32 updates per collection: the on-policy one, then the replays due
            batch_size=16,  # sub-trajectories per replayed batch
            learning_rate=0.003,  # Adam (ACER's default optimizer), constant
            discount_factor=0.95,  # gamma
            reward_scale=0.1,  # rewards x 0.1: Pendulum's Q values near 1
            c_clip_ratio=10.0,  # truncated importance weights c = 10 (the paper's)
            use_q_opc=False,  # Q_ret (Retrace) in the policy gradient, not Q_opc
            value_weight=0.5,  # weight of the critic loss
            entropy_weight=0.0,  # no entropy bonus
            trust_region=True,  # the efficient trust region against the average policy network
            trust_region_delta=1.0,  # its bound on the linearised KL (the paper's 1)
            trust_region_alpha=0.99,  # Polyak decay of the average policy network (the paper's 0.99)
        ),
        collect=dict(n_sample=8),  # unrolls across 8 envs: T = 20 steps per env
        # every 200 updates: ~3.6k env steps (~9 updates per 160-step collection), greedy actions
        eval=dict(evaluator=dict(eval_freq=200)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=100000,  # capacity in transitions (whole episodes evicted, oldest first)
            unroll_len=20,  # 20-step sub-trajectories (the paper's k = 20), also the T of each collection
            replay_ratio=8.0,  # Poisson(8) replayed batches per collection (the paper's is 4)
            replay_start_size=2000,  # replay from 2,000 stored transitions on
        )),
    ),
    max_env_step=300_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='acer'),  # acframe/policy/acer.py
)
