"""IMPALA on Atari Breakout (ALE/Breakout-v5, standard preprocessing: 84x84 grey, frame skip 4, 4 stacked frames).

Needs ``pip install 'acframe[atari]'``. The settings of ``pong_impala.py``: the IMPALA paper's Atari runs (Espeholt
et al. 2018, table G.1) with its shallow network, unrolls of 20, RMSprop (lr 6e-4 decayed to 0, eps 0.01), entropy
0.01, baseline 0.5, summed losses, reward clipping, no sticky actions, episodic life and FIRE on reset, and batches
of 8 unrolls instead of 32. The paper's deep network: ``policy.model.encoder=impala_resnet
policy.model.encoder_channels=None`` (~19x the update cost on a CPU).
Evaluated on whole games with sampled actions (see ``eval`` below). Budget: 10M env steps (40M frames). Stop value
50, measured on the 2-core CPU machine with ``env.manager=envpool policy.learn.torch_threads=1``, two runs side by
side at ~1,300 env steps/s each (2026-11-27): seeds 0 / 1 / 2 solved at 2.88M / 3.52M / 2.88M env steps in 2,218 /
2,741 / 1,884 s, confirmed 56.5 / 53.8 / 64.4 on 50 fresh games; hold-outs of the best checkpoints
(``acframe -m eval --load RUN/ckpt/ckpt_best.pth -s 30000<seed> --episodes 50 env.manager=envpool``) 55.2 / 52.0 /
65.1. Over the whole budget (an earlier EnvPool manager that trained on each game's first life only) seeds 0 and 1
scored 91.5 and 60.8 on 50 games (docs/pixels.md). The RL Zoo's A2C and PPO report 279.8 and 398.0 at 10M steps.
"""
main_config = dict(
    exp_name='breakout_impala',  # the run folder is ./breakout_impala_seed<seed>
    env=dict(
        env_id='ALE/Breakout-v5',  # the ALE's Breakout, v5 (env.atari skips frames, not the emulator)
        # the standard preprocessing (84x84 grey, frame skip 4, 4 frames); no sticky actions
        atari=dict(enable=True, repeat_action_probability=0.0),
        collector_env_num=8,  # envs stepped together by the collector
        evaluator_env_num=4,  # evaluation games played at once
        n_evaluator_episode=4,  # games per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=50,  # mean game score that solves it: all three measured seeds reach it
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
        # every 2000 updates = 320k env steps; whole games scored with sampled actions, as the RL Zoo scores Atari
        eval=dict(deterministic=False, evaluator=dict(eval_freq=2000)),
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
