"""PPO with a GRU on the cue-memory task (``toy_cue_memory``): a cue seen on the first step decides the rewarded
action ``delay`` steps later.

A feed-forward policy cannot beat chance here (0.5 per episode with 2 cues: the last observation is the same for
both cues); the GRU (``policy.model.rnn``) keeps the cue. Episodes are ``delay + 1 = 9`` steps, so every rollout
sequence holds episode starts inside it, where the learner zeroes the state.
Measured (2026-11-28, one CPU thread, `acframe -c cue_memory_ppo_gru.py -s SEED`, budget 50k env steps): seeds
0-5 solved (20 greedy episodes all rewarded, confirmed 1.0 on 50 fresh episodes) at 9,216 / 10,240 / 9,216 / 6,144 /
7,168 / 6,656 env steps (2 s or less each) -- re-run on the same day after the padded fused unroll of
docs/recurrent.md (one call per layer where episodes start inside a sequence): the same numbers on all six seeds.
The same file without the core (``policy.model.rnn.type=None``) spent the whole 50k on seeds 0 / 1 / 2 at chance:
best evaluation 0.50 / 0.60 / 0.55.
"""
main_config = dict(
    exp_name='cue_memory_ppo_gru',  # the run folder is ./cue_memory_ppo_gru_seed<seed>
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
            share_encoder=True,  # one encoder and one GRU for actor and critic (False: an encoder and a core each)
            rnn=dict(
                type='gru',  # the recurrent core
                hidden_size=32,  # GRU units
                num_layers=1,  # one GRU layer
                seq_len=0,  # whole rollout columns: 8 sequences of 32 steps from their stored start states
            ),
        ),
        learn=dict(
            epoch_per_collect=4,  # passes over each rollout
            batch_size=64,  # 2 sequences of 32 steps per minibatch: 4 gradient steps per epoch
            learning_rate=0.001,  # Adam
            discount_factor=0.99,  # the reward comes 8 steps after the cue
            gae_lambda=0.95,  # GAE lambda
            clip_ratio=0.2,  # PPO's clip range
            entropy_weight=0.01,  # keeps both actions tried until the cue is used
        ),
        # transitions per rollout, over all 8 envs (32 steps each)
        collect=dict(n_sample=256),
        # every 32 gradient steps = 2 rollouts = 512 env steps, greedy actions
        eval=dict(evaluator=dict(eval_freq=32)),
    ),
    max_env_step=50_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='toy_cue_memory'),  # acframe/envs/toy.py
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py with policy.model.rnn
)
