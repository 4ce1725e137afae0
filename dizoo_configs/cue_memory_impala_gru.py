"""IMPALA with a GRU on the cue-memory task (``toy_cue_memory``): a cue seen on the first step decides the rewarded
action ``delay`` steps later.

A feed-forward policy cannot beat chance here (0.5 per episode with 2 cues: the last observation is the same for
both cues); the GRU (``policy.model.rnn``) keeps the cue. Episodes are ``delay + 1 = 9`` steps, so every 16-step
unroll holds an episode start inside it, where the learner zeroes the state; each unroll keeps the actors' state at
its first step (the IMPALA paper's) and the learner recomputes it from there (docs/recurrent.md).
cartpole_novel_impala_lstm.py's unroll and replay settings (unroll_len 16, 8 unrolls per collection, 4 updates of 16
unrolls, a FIFO of 1000 with max_use 16) with cue_memory_ppo_gru.py's model (32-unit encoder, 32-unit GRU), a
learning rate of 1e-3, the default entropy bonus 0.01 and gamma 0.99; rewards unscaled (they are 0 or 1).
MEASURED (2026-11-28, one CPU thread, ``acframe -c cue_memory_impala_gru.py -s SEED``, budget 50k env steps): seeds
0-5 solved (20 greedy episodes all rewarded, confirmed 1.0 on 50 fresh episodes) at 20,608 / 18,048 / 12,928 /
12,928 / 10,368 / 13,952 env steps (4.2 s or less each). The same file without the core
(``policy.model.rnn.type=None``) spent the whole 50k on seeds 0 / 1 / 2 at chance: best evaluation 0.50 / 0.60 / 0.55.
The parallel pipeline (``-m parallel --backend inline``, 2 actors) solved seeds 0 / 1 / 2 at 11,520 / 13,056 / 16,128
env steps, ``--backend local`` seed 0 at 16,896 (each confirmed on 50 fresh episodes).
Hold-out of the best checkpoint (``-m eval --load RUN_DIR --episodes 50 -s 1000``) on seeds 0 / 1 / 2: 1.0 on all.
"""
main_config = dict(
    exp_name='cue_memory_impala_gru',  # the run folder is ./cue_memory_impala_gru_seed<seed>
    env=dict(
        env_id='toy_cue_memory',  # acframe.envs.toy.CueMemoryEnv
        env_kwargs=dict(n_cues=2, delay=8),  # 2 cues, the decision 8 steps after the cue
        collector_env_num=8,  # envs stepped together
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=20,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=1.0,  # every evaluation episode rewarded: the cue was remembered every time
    ),
    policy=dict(
        unroll_len=16,  # the unrolls V-trace trains on: 16 steps, each with the state at its first step
        model=dict(
            encoder_hidden_size_list=[32],  # one 32-unit layer before the GRU
            share_encoder=True,  # one encoder and one GRU for actor and critic (False: an encoder and a core each)
            rnn=dict(
                type='gru',  # the recurrent core
                hidden_size=32,  # GRU units
                num_layers=1,  # one GRU layer
            ),
        ),
        learn=dict(
            update_per_collect=4,  # 4 updates per collection of 8 unrolls
            batch_size=16,  # unrolls per training batch
            learning_rate=0.001,  # Adam, constant
            entropy_weight=0.01,  # keeps both actions tried until the cue is used
            value_weight=0.5,  # value-loss coefficient
            discount_factor=0.99,  # the reward comes 8 steps after the cue
        ),
        collect=dict(n_sample=8),  # unrolls across 8 envs: 16 steps per env
        eval=dict(evaluator=dict(eval_freq=16)),  # every 16 updates = 4 collections = 512 env steps, greedy actions
        # a FIFO of up to 1000 unrolls, each trained on at most 16 times
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=16)),
    ),
    max_env_step=50_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='toy_cue_memory'),  # acframe/envs/toy.py
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='impala'),  # acframe/policy/impala.py with policy.model.rnn
)
