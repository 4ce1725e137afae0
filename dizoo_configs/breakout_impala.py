"""IMPALA on Atari Breakout (ALE/Breakout-v5, standard preprocessing: 84x84 grey, frame skip 4, 4 stacked frames).

Needs ``pip install 'acframe[atari]'``. Hyper-parameters of the IMPALA paper's Atari runs (Espeholt et al.
2018, table G.1): the residual network, unrolls of 20, batches of 32, RMSprop (lr 6e-4, eps 0.01), entropy 0.01,
baseline 0.5, reward clipping, no sticky actions, episodic life and FIRE on reset. Stop value 400
(the IMPALA paper reports 787 for its deep network after 200M frames).
Budget: 10M env steps (40M frames). Score: not yet measured (a Breakout run needs hours of a GPU learner;
see docs/pixels.md). Faster on this machine: ``policy.model.encoder=nature_cnn`` or EnvPool
(``env.manager=envpool``).
"""
main_config = dict(
    exp_name='breakout_impala',
    env=dict(
        env_id='ALE/Breakout-v5',
        atari=dict(enable=True, repeat_action_probability=0.0),
        collector_env_num=8,
        evaluator_env_num=4,
        n_evaluator_episode=4,
        stop_value=400,
    ),
    policy=dict(
        unroll_len=20,
        model=dict(encoder='impala_resnet', encoder_hidden_size_list=[256], activation='relu'),
        learn=dict(
            # the serial pipeline learns in a second thread while the collector collects the next segment (both
            # cores busy on a small machine; one more round of policy lag, which V-trace corrects)
            learner_thread=True,
            update_per_collect=1,
            batch_size=32,
            # the paper's losses are sums over the batch's 32 x 20 steps; its RMSprop epsilon and gradient clip are set for them
            loss_reduction='sum',
            optim='rmsprop',
            learning_rate=0.0006,
            # decayed linearly to 0 over the budget, as the paper's: 10M env steps / 640 per update
            lr_decay_iters=15_625,
            rms_alpha=0.99,
            rms_eps=0.01,
            entropy_weight=0.01,
            # the paper's baseline cost 0.5 times its baseline loss 0.5 * sum (v_s - V)^2
            value_weight=0.25,
            discount_factor=0.99,
            grad_clip_type='clip_norm',
            grad_clip_value=40.0,
        ),
        # 32 unrolls of 20 steps across the 8 envs (80 steps each) per collection: one batch, each unroll trained on once
        collect=dict(n_sample=32),
        eval=dict(evaluator=dict(eval_freq=2000)),
        other=dict(replay_buffer=dict(replay_buffer_size=64, max_use=1)),
    ),
    max_env_step=10_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='impala'),
)
