"""ACER with a GRU on the cue-memory task (``toy_cue_memory``): a cue seen on the first step decides the rewarded
action ``delay`` steps later.

A feed-forward policy cannot beat chance here (0.5 per episode with 2 cues: the last observation is the same for
both cues); the GRU (``policy.model.rnn``) keeps the cue. Every training batch -- the fresh segment and each replayed
16-step window of the episodic buffer -- is recomputed with the current weights from the actors' state stored at its
first step, the average policy network the same way (docs/recurrent.md); episodes are ``delay + 1 = 9`` steps, so
every window holds an episode start inside it, where the state is zeroed. cartpole_novel_acer_lstm.py's settings
with cue_memory_ppo_gru.py's model (32-unit encoder, 32-unit GRU), gamma 0.99 and unscaled rewards (0 or 1).
MEASURED (2026-11-28, one CPU thread, ``acframe -c cue_memory_acer_gru.py -s SEED``, budget 50k env steps): seeds
0-5 solved (20 greedy episodes all rewarded, confirmed 1.0 on 50 fresh episodes) at 9,984 / 9,728 / 8,192 / 8,576 /
9,984 / 10,496 env steps (3.3 s or less each). The same file without the core (``policy.model.rnn.type=None``) spent
the whole 50k on seeds 0 / 1 / 2 at chance: best evaluation 0.50 / 0.60 / 0.55.
The parallel pipeline (``-m parallel --backend inline``, 2 actors) solved seeds 0 / 1 / 2 at 7,424 / 8,704 / 13,056
env steps, ``--backend local`` seed 0 at 8,576 (each confirmed on 50 fresh episodes).
Hold-out of the best checkpoint (``-m eval --load RUN_DIR --episodes 50 -s 1000``) on seeds 0 / 1 / 2: 1.0 on all.
"""
main_config = dict(
    exp_name='cue_memory_acer_gru',  # the run folder is ./cue_memory_acer_gru_seed<seed>
    env=dict(
        env_id='toy_cue_memory',  # acframe.envs.toy.CueMemoryEnv
        env_kwargs=dict(n_cues=2, delay=8),  # 2 cues, the decision 8 steps after the cue
        collector_env_num=8,  # envs stepped together
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=20,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=1.0,  # every evaluation episode rewarded: the cue was remembered every time
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[32],  # one 32-unit layer before the GRU
            share_encoder=True,  # one encoder and one GRU for the policy and Q heads (False: an encoder and a core each)
            rnn=dict(
                type='gru',  # the recurrent core
                hidden_size=32,  # GRU units
                num_layers=1,  # one GRU layer
                burn_in=0,  # every step of a window is learned from (its stored start state is the actors')
            ),
        ),
        learn=dict(
            update_per_collect=16,  # at most 16 updates per collection: the on-policy one, then the replays due
            batch_size=16,  # windows per replayed batch
            learning_rate=0.001,  # Adam, constant
            discount_factor=0.99,  # the reward comes 8 steps after the cue
            c_clip_ratio=10.0,  # truncated importance weights c = 10 (the paper's)
            value_weight=0.5,  # weight of the critic loss
            entropy_weight=0.01,  # keeps both actions tried until the cue is used
            trust_region=True,  # the efficient trust region against the average policy network
            trust_region_delta=1.0,  # its bound on the linearised KL (the paper's 1)
            trust_region_alpha=0.99,  # Polyak decay of the average policy network (the paper's 0.99)
        ),
        collect=dict(n_sample=8),  # windows across 8 envs: T = 16 steps per env per collection
        eval=dict(evaluator=dict(eval_freq=20)),  # every 20 updates (about 512 env steps), greedy actions
        other=dict(replay_buffer=dict(
            replay_buffer_size=50000,  # capacity in transitions (whole episodes evicted, oldest first)
            unroll_len=16,  # 16-step windows, each with the actors' state at its first step
            replay_ratio=4.0,  # Poisson(4) replayed batches per collection (the paper's 4)
            replay_start_size=1000,  # replay from 1,000 stored transitions on
        )),
    ),
    max_env_step=50_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='toy_cue_memory'),  # acframe/envs/toy.py
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='acer'),  # acframe/policy/acer.py with policy.model.rnn (acer_q)
)
