"""IMPALA with an LSTM on CartPole-v1 without velocities (``cartpole_novel``: cart position and pole angle only).

The observation hides the cart and pole velocities; the LSTM (``policy.model.rnn``) infers them from the history.
Each replayed unroll keeps the actors' state at its first step and the learner recomputes the unroll from it
(docs/recurrent.md). cartpole_impala.py's settings but for a learning rate of 1e-3, the default entropy bonus (0.01),
gamma 0.98 and rewards scaled by 0.1 (with cartpole_impala.py's 3e-3, 0.001, 0.99 and unscaled rewards, seeds 0 / 1 / 2
reached 223 / 72 / 448 in 200k env steps: the value loss spiked and the policy collapsed to one action).

MEASURED (2026-11-28, one CPU thread, ``acframe -c cartpole_novel_impala_lstm.py -s SEED``): seeds 0 / 1 / 2 solved
(10-episode greedy mean >= 475, confirmed on 50 fresh episodes: 487.7 / 500.0 / 500.0) at 27,008 / 23,168 / 29,568
env steps (16 / 14 / 18 s); hold-out of the best checkpoint (``-m eval --episodes 50 --seed 1000``) 488.6 / 500.0 /
500.0. Seeds 3 / 4: solved at 34,688 / 18,048 env steps (confirmed 499.6 / 490.1), hold-out 496.7 / 478.3. Re-run on
the same day after the padded fused unroll of docs/recurrent.md (one call per layer where episodes start inside an
unroll): seeds 0 / 1 / 2 and 4 gave the same numbers; seed 3 solved at the same step with 499.6 / 496.7 (was 495.0 /
493.6). The same file without the core (``policy.model.rnn.type=None``) spent 100k env steps on seeds 0 / 1 / 2 with
a best evaluation of 46.2 / 45.7 / 48.1.
"""
main_config = dict(
    exp_name='cartpole_novel_impala_lstm',  # the run folder is ./cartpole_novel_impala_lstm_seed<seed>
    env=dict(
        env_id='cartpole_novel',  # CartPole-v1 with its two velocities removed (acframe.envs.gym_env.NO_VELOCITY)
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=475,  # greedy mean return that solves it
    ),
    policy=dict(
        unroll_len=16,  # the unrolls V-trace trains on: 16 steps, each with the state at its first step
        model=dict(
            encoder_hidden_size_list=[64],  # one 64-unit layer before the LSTM
            share_encoder=True,  # one encoder and one LSTM for actor and critic (False: an encoder and a core each)
            actor_head_hidden_size=64,  # a 64-unit layer after the LSTM in the actor head
            critic_head_hidden_size=64,  # and in the critic head
            rnn=dict(
                type='lstm',  # the recurrent core
                hidden_size=64,  # units of the LSTM
                num_layers=1,  # one LSTM layer
            ),
        ),
        learn=dict(
            update_per_collect=4,  # 4 updates per collection of 8 unrolls
            batch_size=16,  # unrolls per training batch
            learning_rate=0.001,  # Adam, constant
            entropy_weight=0.01,  # the entropy bonus (0.001 let the policy collapse)
            value_weight=0.5,  # value-loss coefficient
            discount_factor=0.98,  # gamma (the RL Zoo's for CartPoleNoVel)
            reward_scale=0.1,  # rewards x 0.1: small value targets (at 1.0 the value loss spiked and the policy collapsed)
        ),
        collect=dict(n_sample=8),  # unrolls across 8 envs: 16 steps per env
        eval=dict(evaluator=dict(eval_freq=40)),  # every 40 updates = 10 collections = 1,280 env steps, greedy actions
        # a FIFO of up to 1000 unrolls, each trained on at most 16 times
        other=dict(replay_buffer=dict(replay_buffer_size=1000, max_use=16)),
    ),
    max_env_step=100_000,  # the training budget in env steps (the and the RL Zoo's 100k; every seed measured solved by 35k)
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='impala'),  # acframe/policy/impala.py with policy.model.rnn
)
