"""IMPALA on Atari Pong (ALE/Pong-v5, standard preprocessing: 84x84 grey, frame skip 4, 4 stacked frames).

Needs ``pip install 'acframe[atari]'``. Hyper-parameters of the IMPALA paper's Atari runs (Espeholt et al.
2018, table G.1): unrolls of 20, RMSprop (lr 6e-4 decayed linearly to 0 over the budget, eps 0.01), entropy 0.01,
baseline 0.5, gradient-norm clip 40, losses summed over the batch as the paper's are, reward clipping, no sticky
actions — but batches of 8 unrolls instead of 32: four times the updates per env step for the same learner work
per env step. With the paper's 32 the policy stayed uniform (entropy ln 6) for 1.5M env steps, with summed or
averaged losses; with 8 it starts learning at ~1M. Stop value 20 (Pong's maximum is 21).
Network: the paper's *shallow* agent (fig. 3, left; without its LSTM): conv 16x8x8/4, conv 32x4x4/2, a
256-unit layer — the 2013 DQN network A3C used, a third of the Nature CNN's multiply-adds. What it costs:
the paper's deep residual network scores higher across Atari (its fig. 4 and tables), but a CPU learner
update on it takes ~19x longer here (4.45 s vs 0.24 s, docs/benchmarks.md); choose it where a GPU learns
(``policy.model.encoder=impala_resnet policy.model.encoder_channels=None policy.cuda=True``).
Budget: 10M env steps (40M frames). Score measured on the project's 2-core CPU machine (``acframe -c pong_impala.py -s S
env.manager=envpool``): seeds 0, 1 and 2 solved at 5.12M / 5.12M / 4.16M env steps (20.5M / 20.5M / 16.6M frames)
in 54 / 53 / 43 minutes, 50-episode confirmations 20.42 / 20.02 / 20.00, hold-outs of the best checkpoints on 50 more
fresh episodes 20.54 / 20.04 / 20.00 (docs/pixels.md).
On an H200 machine with 16 cores (``-m parallel env.manager=envpool policy.cuda=True parallel.actor_num=15
env.stop_value=18``, seed 0) it ran at 8,206 env steps/s (32.8k frames/s), training on everything collected, and
reached 18: 18.92 confirmed on 50 episodes at 4.28M env steps after 531 s of training, hold-out of that checkpoint on 50
more 19.12 (docs/pixels.md, docs/benchmarks.md). Also faster: EnvPool (``env.manager=envpool``) and the parallel pipeline (``-m parallel``).
"""
main_config = dict(
    exp_name='pong_impala',  # the run folder is ./pong_impala_seed<seed>
    env=dict(
        env_id='ALE/Pong-v5',  # the ALE's Pong, v5 (env.atari skips frames, not the emulator)
        # the standard preprocessing (84x84 grey, frame skip 4, 4 frames); no sticky actions
        atari=dict(enable=True, repeat_action_probability=0.0),
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=4,  # evaluation games played at once
        n_evaluator_episode=4,  # games per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=20,  # mean game score that solves it (Pong's maximum is 21): all three measured seeds reach it
    ),
    policy=dict(
        unroll_len=20,  # the paper's Atari unroll length
        # the shallow network (see above): 2 conv layers of the Nature CNN's shape with 16 and 32 channels, then 256
        model=dict(encoder='nature_cnn', encoder_channels=[16, 32], encoder_hidden_size_list=[256], activation='relu'),
        learn=dict(
            # the serial pipeline learns in a second thread while the collector collects the next segment (both
            # cores busy on a small machine; one more round of policy lag, which V-trace corrects)
            learner_thread=True,
            update_per_collect=1,  # one update per collection of 8 unrolls
            # 8 unrolls per update, not the paper's 32: four times the updates per env step at the same learner cost
            # per env step (with 32, the policy stayed uniform for 1.5M env steps; with 8 it learns from ~1M)
            batch_size=8,
            # the paper's losses are sums over the batch's steps; its RMSprop epsilon and gradient clip are set for them
            loss_reduction='sum',
            optim='rmsprop',  # the paper's optimizer
            learning_rate=0.0006,  # the paper's Atari learning rate
            # decayed linearly to 0 over the budget, as the paper's: 10M env steps / 160 per update
            lr_decay_iters=62_500,
            rms_alpha=0.99,  # RMSprop's smoothing constant (the paper's decay)
            rms_eps=0.01,  # the paper's RMSprop epsilon
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
    policy=dict(type='impala'),  # acframe/policy/impala.py
)
