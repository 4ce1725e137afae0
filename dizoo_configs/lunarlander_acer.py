"""ACER on LunarLander-v3 (discrete actions, needs gymnasium[box2d]): stop value 210.

8 envs × 20-step unrolls into an episodic replay (100k transitions; per collection the on-policy update and on average
4 replayed batches of 32 sub-trajectories, from 5k transitions on), 128×128 bodies, observation normalization
(``model.obs_norm``), Adam 7e-4 decayed linearly to 0 over the 1M-step budget (~31,000 updates), gamma 0.995,
truncated importance weights c = 10, entropy bonus 0.01, the trust region (delta 1).

MEASURED (2026-11-24, ``python bench/ladder.py --rows lunarlander --algos acer --seeds 0,1,2``, one torch thread;
8-episode greedy evaluations every 1000 updates, ~32k env steps): 210 crossed and confirmed on 50 fresh episodes
(222 / 218 / 233) on 3/3 seeds at 963k / 381k / 642k env steps (186 / 76 / 123 s; seed 1's first crossing, 216 at
349k, confirmed 201 and was rejected); hold-out of the best checkpoint on 50 other episodes 231 / 206 / 234 (RL Zoo
v1's ACER: 185). With stop value 220 the same settings solved seeds 1 and 2 (at 576k / 706k, hold-out 232 / 221)
and seed 0's best 8-episode evaluation in 1M was 211 (hold-out 231). With gamma 0.99: 220 on seeds 0 and 2 (772k /
513k), seed 1's best 182, hold-outs 217 / 190 / 235; seed 0 over the whole budget evaluated 241–260 from 772k on.
Without ``obs_norm`` and the decay (the previous version) seed 0's best was 151 at 515k (27 at 1M).
NOT ROBUST (2026-11-27, a Sapphire Rapids CPU): with one torch thread seeds 0 and 1 solved exactly as above (963k /
381k, confirmed 222 / 218), but seed 2 run with ``policy.learn.torch_threads=2`` (another floating-point path) did
not reach 210 in its 1M (best evaluation 200.3, its confirmation 166) — and seed 0 solves with 37k env steps to
spare: a setting that holds 210 on every path is still to be found.
"""
main_config = dict(
    exp_name='lunarlander_acer',  # the run folder is ./lunarlander_acer_seed<seed>
    env=dict(
        env_id='LunarLander-v3',  # gymnasium's LunarLander, discrete actions (the 'box2d' extra)
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=8,  # evaluation episodes played at once
        n_evaluator_episode=8,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=210,  # greedy mean return that solves it (above the ladder's 200): all three measured seeds reach it
    ),
    policy=dict(
        # separate 128x128 tanh policy and Q bodies; observations normalized by their running mean and std
        model=dict(encoder_hidden_size_list=[128, 128], obs_norm=True),
        learn=dict(
            update_per_collect=16,  # at most 16 updates per collection: the on-policy one, then the replays due
            batch_size=32,  # sub-trajectories per replayed batch
            learning_rate=0.0007,  # Adam (ACER's default optimizer), decayed below
            discount_factor=0.995,  # gamma (with 0.99: see above)
            c_clip_ratio=10.0,  # truncated importance weights c = 10 (the paper's)
            value_weight=0.5,  # weight of the critic loss
            entropy_weight=0.01,  # entropy bonus
            trust_region=True,  # the efficient trust region against the average policy network
            trust_region_delta=1.0,  # its bound on the linearised KL (the paper's 1)
            trust_region_alpha=0.99,  # Polyak decay of the average policy network (the paper's 0.99)
            # the 1M-step budget is ~31,000 updates (6,250 collections × 1 + Poisson(4) replays)
            lr_decay_iters=31000,
        ),
        collect=dict(n_sample=8),  # unrolls across 8 envs: T = 20 steps per env
        # every 1000 updates: ~32k env steps (~5 updates per 160-step collection), greedy actions
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=100000,  # capacity in transitions (whole episodes evicted, oldest first)
            unroll_len=20,  # 20-step sub-trajectories (the paper's k = 20), also the T of each collection
            replay_ratio=4.0,  # Poisson(4) replayed batches per collection (the paper's 4)
            replay_start_size=5000,  # replay from 5,000 stored transitions on
        )),
    ),
    max_env_step=1_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='acer'),  # acframe/policy/acer.py
)
