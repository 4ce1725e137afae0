"""A2C with a GRU on the cue-memory task (``toy_cue_memory``): a cue seen on the first step decides the rewarded
action ``delay`` steps later.

A feed-forward policy cannot beat chance here (0.5 per episode with 2 cues: the last observation is the same for
both cues); the GRU (``policy.model.rnn``) keeps the cue. Each rollout is recomputed by the learner from the state
stored at its first step, with the state zeroed at the episode starts inside it (docs/recurrent.md).
cue_memory_ppo_gru.py's model (32-unit encoder, 32-unit GRU) with A2C's one gradient step per rollout: Adam at 3e-3,
rollouts of 16 steps per env (so a column can hold a whole 9-step episode), n-step returns, entropy bonus 0.01.
MEASURED (2026-11-28, one CPU thread, ``acframe -c cue_memory_a2c_gru.py -s SEED``, budget 100k env steps): seeds
0-5 solved (20 greedy episodes all rewarded, confirmed 1.0 on 50 fresh episodes) at 31,232 / 34,304 / 25,600 /
31,232 / 33,792 / 24,576 env steps (2.4 s or less each). The same file without the core
(``policy.model.rnn.type=None``) spent the whole 100k on seeds 0 / 1 / 2 at chance: best evaluation 0.50 / 0.60 /
0.55. Variants on seeds 0 / 1 / 2: a learning rate of 1e-3 solved at 88,064 / 96,256 / 55,808 (too near the
budget); cartpole_novel_a2c_lstm.py's 5 steps per env (``policy.collect.n_sample=40``) solved at 33,280 / 47,840 /
41,080, where no rollout holds both the cue and the decision (the cue reaches the decision through the stored start
state).
The parallel pipeline (``-m parallel --backend inline``, 2 actors) solved seeds 0 / 1 / 2 at 39,168 / 49,408 / 75,008
env steps (confirmed on 50 fresh episodes; nearer the budget than the serial runs).
Hold-out of the best checkpoint (``-m eval --load RUN_DIR --episodes 50 -s 1000``) on seeds 0 / 1 / 2: 1.0 on all.
"""
main_config = dict(
    exp_name='cue_memory_a2c_gru',  # the run folder is ./cue_memory_a2c_gru_seed<seed>
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
            ),
        ),
        learn=dict(
            optim='adam',  # Adam
            learning_rate=0.003,  # Adam's step size, constant (1e-3 solved too, at 56k-96k env steps on seeds 0-2)
            discount_factor=0.99,  # gamma
            gae_lambda=1.0,  # plain n-step returns, as A2C
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.01,  # keeps both actions tried until the cue is used
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
        ),
        collect=dict(n_sample=128),  # 8 envs x 16 steps: each rollout column holds a whole 9-step episode
        eval=dict(evaluator=dict(eval_freq=4)),  # every 4 updates = 512 env steps, greedy actions
    ),
    max_env_step=100_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='toy_cue_memory'),  # acframe/envs/toy.py
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='a2c'),  # acframe/policy/a2c.py with policy.model.rnn
)
