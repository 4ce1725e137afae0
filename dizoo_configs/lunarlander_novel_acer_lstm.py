"""ACER with an LSTM on LunarLander-v3 without its velocities (``lunarlander_novel``: x, y, angle, two leg contacts).

The observation hides the lander's x and y velocities and its angular velocity; an LSTM each for the policy and
the Q network (``policy.model.rnn``, ``share_encoder=False``) infers them from the history. lunarlander_acer.py's
settings (8 envs x 20-step windows into an episodic replay of 100k transitions, replay ratio 4, Retrace with c = 10,
the trust region against the average policy network, Adam 7e-4 decayed linearly to 0 over the 1M budget, gamma
0.995, entropy bonus 0.01, observation normalization) with a 128-unit layer and a 128-unit LSTM each instead of the
128x128 bodies. Every training window -- the fresh segment and each replayed one -- is recomputed with the current
weights from the actors' state stored at its first step, no burn-in (docs/recurrent.md). No stop value: the whole
1M, as lunarlander_novel_ppo_lstm.py.

MEASURED (2026-11-29, an AMD EPYC, one torch thread beside a 2-core Pong run; seed 0 19:33-20:29 UTC, seeds 1 and
2 side by side 22:49-00:02 UTC, 3,316 / 4,315 / 4,347 s; run as ``acframe -c lunarlander_acer.py -s SEED
env.env_id=lunarlander_novel env.stop_value=None env.evaluator_env_num=10 env.n_evaluator_episode=10
policy.model.rnn.type=lstm policy.model.rnn.hidden_size=128 "policy.model.encoder_hidden_size_list=[128]"
policy.model.share_encoder=False policy.learn.torch_threads=1``, whose compiled config is this file's but for its
name), seeds 0 / 1 / 2: best 10-episode greedy evaluation -127 / -105 / -110 (at 388k / 1M / 1M), final -148 / -105
/ -110; the best checkpoint held out on 50 fresh episodes at the ladder's seeds (``acframe -m eval --load
RUN/ckpt/ckpt_best.pth --episodes 50 -s 30000SEED``, i.e. 300000 + SEED) at -119 / -122 / -121 (mean -121), on 50
others (``-s 300000SEED``) at -121 / -135 / -137 (mean -131). Beside it on the ladder's seeds:
sb3-contrib's RecurrentPPO with the RL Zoo's settings -122 / -88 / -173 (mean -128), lunarlander_novel_ppo_lstm.py
-49 / -104 / -118 (mean -90), lunarlander_novel_impala_lstm.py -65 / +26 / -129 (mean -56): ACER's mean is
RecurrentPPO's within the noise of 50 episodes (a standard error of about 6 per seed), its seeds far closer
together, and all far from the ladder's 200. One shared 128-unit core (``share_encoder=True``) held out at -134 /
-221 on seeds 0 / 1 (``-s 300000SEED``). Without the core: not run.
"""
main_config = dict(
    exp_name='lunarlander_novel_acer_lstm',  # the run folder is ./lunarlander_novel_acer_lstm_seed<seed>
    env=dict(
        env_id='lunarlander_novel',  # LunarLander-v3 with its velocities removed (acframe.envs.gym_env.NO_VELOCITY)
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation
        stop_value=None,  # none: the whole 1M (no seed comes near the ladder's 200)
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[128],  # one 128-unit layer before each LSTM
            share_encoder=False,  # separate policy and Q networks: an encoder and an LSTM each (one shared: see above)
            obs_norm=True,  # observations normalized by their running mean and std
            rnn=dict(
                type='lstm',  # the recurrent core: it infers the velocities from the positions it saw
                hidden_size=128,  # units of each LSTM
                num_layers=1,  # one LSTM layer
                burn_in=0,  # every step of a window is learned from (its stored start state is the actors')
            ),
        ),
        learn=dict(
            update_per_collect=16,  # at most 16 updates per collection: the on-policy one, then the replays due
            batch_size=32,  # windows per replayed batch
            learning_rate=0.0007,  # Adam (ACER's default optimizer), decayed below
            discount_factor=0.995,  # gamma, lunarlander_acer.py's
            c_clip_ratio=10.0,  # truncated importance weights c = 10 (the paper's)
            value_weight=0.5,  # weight of the critic loss
            entropy_weight=0.01,  # entropy bonus
            trust_region=True,  # the efficient trust region against the average policy network
            trust_region_delta=1.0,  # its bound on the linearised KL (the paper's 1)
            trust_region_alpha=0.99,  # Polyak decay of the average policy network (the paper's 0.99)
            # the 1M-step budget is ~31,000 updates (6,250 collections x 1 + Poisson(4) replays)
            lr_decay_iters=31000,
        ),
        collect=dict(n_sample=8),  # windows across 8 envs: T = 20 steps per env per collection
        # every 1000 updates: ~32k env steps (~5 updates per 160-step collection), greedy actions
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=100000,  # capacity in transitions (whole episodes evicted, oldest first)
            unroll_len=20,  # 20-step windows, each with the actors' state at its first step (the paper's k = 20)
            replay_ratio=4.0,  # Poisson(4) replayed batches per collection (the paper's 4)
            replay_start_size=5000,  # replay from 5,000 stored transitions on
        )),
    ),
    max_env_step=1_000_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='acer'),  # acframe/policy/acer.py with policy.model.rnn (acer_q)
)
