"""ACER with a stochastic dueling network on Hopper-v5 (MuJoCo; needs the ``mujoco`` extra): stop value 2500.

ACER's continuous-control recipe (Wang et al. 2017, section 5): 8 envs × 20-step unrolls into an episodic replay
(200k transitions); per collection the on-policy update and up to 4 replayed batches of 16 sub-trajectories (a
Poisson(4) draw capped by ``update_per_collect=5``; from 10k transitions on; ~30,900 updates in 1M env steps), Q_opc
in the policy gradient, truncated importance weights c = 5, the trust region (delta 1, average network alpha 0.99),
no entropy bonus, Adam 5e-4, gamma 0.99, rewards × 0.1; separate 64×64 tanh actor and critic, the Gaussian's mean
bounded to the action range, std starting at 0.5, and observation normalization (``model.obs_norm``: without it
ACER had no way to scale MuJoCo's velocities; added to ACER's models for these rows).

MEASURED (2026-11-24, ``python bench/ladder.py --rows hopper --algos acer --seeds 0,1,2``, one torch thread;
10-episode greedy evaluations every 1250 updates, ~40k env steps): 2500 crossed and confirmed on 50 fresh episodes
(2745 / 2916 / 2781) on 3/3 seeds at 411k / 409k / 371k env steps (108–126 s; seed 1 confirmed 2206 at 369k first);
hold-out of the best checkpoint on 50 other episodes 2773 / 2868 / 2947. The stop value is 2500, not the ladder's
2000, as in ``hopper_ppo.py``: a hop that falls now and then costs an episode most of its return. Seed 0 over the
whole 1M budget (``env.stop_value=None``, 280 s): 1644 at 169k, 2215 at 209k, two falls to ~220 near 300k, 2954 at
411k, 3164–3242 from 572k to 1M (best 3242).
"""
main_config = dict(
    exp_name='hopper_acer',  # the run folder is ./hopper_acer_seed<seed>
    env=dict(
        env_id='Hopper-v5',  # gymnasium's MuJoCo Hopper, 1000-step episodes (the 'mujoco' extra)
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        # greedy mean return that solves it (above the ladder's 2000, see above): all three measured seeds reach it
        stop_value=2500,
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64, 64],  # 64x64 tanh bodies
            advantage_hidden_size_list=[64],  # the SDN's advantage MLP on [critic feature, action]
            share_encoder=False,  # separate actor and critic
            init_sigma=0.5,  # the Gaussian's std starts at 0.5
            mu_bound=1.0,  # the Gaussian's mean squashed into the action range [-1, 1]
            n_action_samples=5,  # actions sampled for the SDN's mean advantage
            obs_norm=True,  # observations normalized by their running mean and std (see above)
        ),
        learn=dict(
            update_per_collect=5,  # the on-policy update and at most 4 replays per collection
            batch_size=16,  # sub-trajectories per replayed batch
            learning_rate=0.0005,  # Adam (ACER's default optimizer), constant
            discount_factor=0.99,  # gamma
            reward_scale=0.1,  # rewards x 0.1
            c_clip_ratio=5.0,  # truncated importance weights c = 5, the paper's continuous-control recipe
            use_q_opc=True,  # Q_opc in the policy gradient, the paper's choice for continuous control
            value_weight=0.5,  # weight of the critic loss
            entropy_weight=0.0,  # no entropy bonus
            trust_region=True,  # the efficient trust region against the average policy network
            trust_region_delta=1.0,  # its bound on the linearised KL (the paper's 1)
            trust_region_alpha=0.99,  # Polyak decay of the average policy network (the paper's 0.99)
        ),
        collect=dict(n_sample=8),  # unrolls across 8 envs: T = 20 steps per env, 160 env steps per collection
        # every 1250 updates (about 40k env steps)
        eval=dict(evaluator=dict(eval_freq=1250)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=200000,  # capacity in transitions (whole episodes evicted, oldest first)
            unroll_len=20,  # 20-step sub-trajectories (the paper's k = 20), also the T of each collection
            replay_ratio=4.0,  # Poisson(4) replayed batches per collection (the paper's 4)
            replay_start_size=10000,  # replay from 10,000 stored transitions on
        )),
    ),
    max_env_step=1_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='acer'),  # acframe/policy/acer.py
)
