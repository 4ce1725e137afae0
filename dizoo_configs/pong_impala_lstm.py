"""IMPALA with an LSTM on Atari Pong (ALE/Pong-v5, the standard preprocessing of pong_impala.py): the IMPALA
paper's shallow agent *with* its LSTM (Espeholt et al. 2018, fig. 3, left: conv 16x8x8/4, conv 32x4x4/2, a 256-unit
layer, then an LSTM of 256 units before the policy and baseline; the paper also feeds the last action and reward to
the LSTM, acframe's core takes the encoder's output only). Needs ``pip install 'acframe[atari]'``.

Everything else is pong_impala.py's (the paper's table G.1 settings, batches of 8 unrolls of 20 steps) but the
optimizer: Adam, lr 2.5e-4 (CleanRL's PPO-LSTM Atari rate), decayed to 0 over the budget. With pong_impala.py's
RMSprop (lr 6e-4, eps 0.01) this LSTM's gates saturated within 3,000 updates (the features grew, the core's output
stopped depending on the screen, the encoder's gradients fell far below RMSprop's eps) and it stayed at -21 for 2.6M
env steps; with Adam the gates stayed in range and seed 0 began to learn at about 1.4M env steps (greedy evaluation
-10.5 at 2.24M, +8.0 at 3.2M where the run was stopped; pong_impala.py's seed 0: -13.8 by 2.5M; seed 1 of this file:
-10.75 at 2.24M, 12.0 at 6.72M, 20.25 on 4 games at 7.36M but 15.98 on the 50-game confirmation, 18.0 at 7.68M, and
solved at 8.64M env steps, confirmed at 20.18 +- 0.84 on 50 fresh games, 4.3 h of a 2-core CPU; seed 2: 18.0 at
5.44M, 17.0-18.0 from 6.40M to 7.04M, solved at 7.36M env steps, confirmed at 20.08 +- 0.27 on 50 fresh games;
seed 0 from scratch: +16.0 at 3.52M, +17.0 at 4.80M, 18.5 at 6.08M, solved at 6.40M env steps, confirmed at
20.72 +- 0.45 on 50 fresh games, 4.9 h in all over three sittings, 365 env steps/s):
docs/recurrent.md, "Pong: the LSTM's gates saturate", measured with bench/recurrent_saturation.py. The actors carry
one LSTM state per env and reset it where a game starts; each unroll keeps the state at its first step and the
learner recomputes the unroll from it. Pong shows the ball's motion in the 4 stacked frames, so the LSTM is not
needed to solve it: this file is the pixel recurrent path at Atari scale, and what a game that needs memory would
start from (``env.atari.frame_stack=1`` leaves the motion to the LSTM).

Budget: 10M env steps (40M frames), as pong_impala.py. Stop value 20 (confirmed on 50 fresh games), reached by
seeds 0 / 1 / 2 at 6.40M / 8.64M / 7.36M env steps (confirmed 20.72 / 20.18 / 20.08; 4-5 hours of a 2-core CPU
per seed, run with ``acframe -c pong_impala_lstm.py -s SEED env.manager=envpool``), all within the budget, the
slowest with 1.36M env steps to spare. Its speed (``acframe -c pong_impala_lstm.py -s 0 --max-env-step 24000 env.manager=envpool
env.stop_value=None`` with evaluation off, interleaved twice with pong_impala.py, 2026-11-28, 2-core CPU, load 3-4):
424 / 342 env steps/s against the feed-forward file's 475 / 514 (0.89x / 0.66x).
"""
main_config = dict(
    exp_name='pong_impala_lstm',  # the run folder is ./pong_impala_lstm_seed<seed>
    env=dict(
        env_id='ALE/Pong-v5',  # the ALE's Pong, v5 (env.atari skips frames, not the emulator)
        # the standard preprocessing (84x84 grey, frame skip 4, 4 frames); no sticky actions
        atari=dict(enable=True, repeat_action_probability=0.0),
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=4,  # evaluation games played at once
        n_evaluator_episode=4,  # games per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=20,  # reached by seeds 0 / 1 / 2 at 6.40M / 8.64M / 7.36M env steps (see above), as pong_impala.py's
    ),
    policy=dict(
        unroll_len=20,  # the paper's Atari unroll length
        # the shallow network (see above): 2 conv layers of the Nature CNN's shape with 16 and 32 channels, then 256
        model=dict(
            encoder='nature_cnn',  # the shallow network's convolutions (pong_impala.py's)
            encoder_channels=[16, 32],  # 16 and 32 channels
            encoder_hidden_size_list=[256],  # then 256 units
            activation='relu',  # ReLU everywhere, as the paper's
            share_encoder=True,  # one encoder and one LSTM for policy and baseline (False: an encoder and a core each)
            rnn=dict(type='lstm', hidden_size=256, num_layers=1),  # the paper's LSTM: 256 units, one layer
        ),
        learn=dict(
            # the serial pipeline learns in a second thread while the collector collects the next segment (both
            # cores busy on a small machine; one more round of policy lag, which V-trace corrects)
            learner_thread=True,
            update_per_collect=1,  # one update per collection of 8 unrolls
            # 8 unrolls per update, not the paper's 32: four times the updates per env step at the same learner cost
            # per env step (with 32, the policy stayed uniform for 1.5M env steps; with 8 it learns from ~1M)
            batch_size=8,
            # the paper's losses are sums over the batch's steps; its gradient clip is set for them
            loss_reduction='sum',
            # Adam, not the paper's RMSprop (lr 6e-4, eps 0.01): under RMSprop this LSTM's gates saturated within 3,000
            # updates and it never learned (docs/recurrent.md, "Pong: the LSTM's gates saturate")
            optim='adam',
            learning_rate=0.00025,  # CleanRL's PPO-LSTM Atari rate
            # decayed linearly to 0 over the budget, as the paper's: 10M env steps / 160 per update
            lr_decay_iters=62_500,
            entropy_weight=0.01,  # the paper's entropy cost
            # the paper's baseline cost 0.5 times its baseline loss 0.5 * sum (v_s - V)^2
            value_weight=0.25,
            discount_factor=0.99,  # gamma
            grad_clip_type='clip_norm',  # clip the global gradient norm
            grad_clip_value=40.0,  # to the paper's 40
        ),
        # 8 unrolls of 20 steps, one per env, per collection: one batch, each unroll trained on once
        collect=dict(n_sample=8),
        # every 2000 updates = 320k env steps
        eval=dict(evaluator=dict(eval_freq=2000)),
        # a FIFO of two batches; each unroll used once
        other=dict(replay_buffer=dict(replay_buffer_size=16, max_use=1)),
    ),
    max_env_step=10_000_000,  # 40M frames, the RL Zoo's budget
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs (env.manager=envpool runs them on EnvPool)
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='impala'),  # acframe/policy/impala.py with policy.model.rnn
)
