"""ACER with an LSTM on CartPole-v1 without velocities (``cartpole_novel``: cart position and pole angle only).

The observation hides the cart and pole velocities; the LSTM (``policy.model.rnn``) infers them from the history.
Every training batch -- the fresh segment and each replayed window of the episodic buffer -- is recomputed with the
current weights from the actors' state stored at its first step (R2D2's and ChainerRL's stored states), the average
policy network the same way (docs/recurrent.md).

MEASURED (2026-11-28, one CPU thread, ``acframe -c cartpole_novel_acer_lstm.py -s SEED``): seeds 0 / 1 / 2 solved
(10-episode greedy mean >= 475, confirmed on 50 fresh episodes: 496.6 / 500.0 / 490.5) at 31,616 / 32,000 / 28,288
env steps (22 / 13 / 12 s); hold-out of the best checkpoint (``-m eval --episodes 50 --seed 1000``) 498.9 / 500.0 /
486.6. Seeds 3 / 4: solved at 28,160 / 34,944 env steps (confirmed 487.9 / 500.0). Re-run on the same day after
the padded fused unroll of docs/recurrent.md (one call per layer where episodes start inside a window): seeds 0 / 1 /
2 and 4 gave the same numbers, seed 3 solved at 28,160 instead of 32,128 (confirmed 487.9, was 500.0). The same file
without the core (``policy.model.rnn.type=None``) spent 100k env steps on seeds 0 / 1 / 2 with a best evaluation of
46.7 / 46.8 / 47.7.
With ``policy.model.rnn.burn_in=4`` (re-run after the fused unroll): solved at 31,616 / 22,400 / 50,048 env steps
(confirmed 496.4 / 497.8 / 500, seed 1 after one unconfirmed evaluation; before the fused unroll 38,272 / 22,400 /
37,504) -- no gain on this task, so the default keeps every step.
"""
main_config = dict(
    exp_name='cartpole_novel_acer_lstm',  # the run folder is ./cartpole_novel_acer_lstm_seed<seed>
    env=dict(
        env_id='cartpole_novel',  # CartPole-v1 with its two velocities removed (acframe.envs.gym_env.NO_VELOCITY)
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=475,  # greedy mean return that solves it
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64],  # one 64-unit layer before the LSTM
            share_encoder=True,  # one encoder and one LSTM for the policy and Q heads (False: an encoder and a core each)
            rnn=dict(
                type='lstm',  # the recurrent core
                hidden_size=64,  # units of the LSTM
                num_layers=1,  # one LSTM layer
                burn_in=0,  # every step of a window is learned from (its stored start state is the actors')
            ),
        ),
        learn=dict(
            update_per_collect=16,  # at most 16 updates per collection: the on-policy one, then the replays due
            batch_size=16,  # windows per replayed batch
            learning_rate=0.001,  # Adam, constant
            discount_factor=0.98,  # gamma (the RL Zoo's for CartPoleNoVel)
            reward_scale=0.1,  # rewards x 0.1: small Q targets
            c_clip_ratio=10.0,  # truncated importance weights c = 10 (the paper's)
            value_weight=0.5,  # weight of the critic loss
            entropy_weight=0.01,  # entropy bonus
            trust_region=True,  # the efficient trust region against the average policy network
            trust_region_delta=1.0,  # its bound on the linearised KL (the paper's 1)
            trust_region_alpha=0.99,  # Polyak decay of the average policy network (the paper's 0.99)
        ),
        collect=dict(n_sample=8),  # windows across 8 envs: T = 16 steps per env per collection
        eval=dict(evaluator=dict(eval_freq=50)),  # every 50 updates (about 1,300 env steps), greedy actions
        other=dict(replay_buffer=dict(
            replay_buffer_size=50000,  # capacity in transitions (whole episodes evicted, oldest first)
            unroll_len=16,  # 16-step windows, each with the actors' state at its first step
            replay_ratio=4.0,  # Poisson(4) replayed batches per collection (the paper's 4)
            replay_start_size=1000,  # replay from 1,000 stored transitions on
        )),
    ),
    max_env_step=100_000,  # the training budget in env steps
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='acer'),  # acframe/policy/acer.py with policy.model.rnn (acer_q)
)
