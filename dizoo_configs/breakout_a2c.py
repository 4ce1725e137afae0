"""A2C on Atari Breakout (ALE/Breakout-v5, standard preprocessing: 84x84 grey, frame skip 4, 4 stacked frames).

Needs ``pip install 'acframe[atari]'``. The settings of ``pong_a2c.py``: the RL Baselines3 Zoo's Atari A2C (16 envs,
5-step returns, the Nature CNN [512], PyTorch's RMSprop lr 7e-4 eps 1e-5, entropy 0.01, value 0.25, gradient norm
0.5), no sticky actions, episodic life and FIRE on reset; the Zoo reports 279.8 on Breakout after 10M steps.
Evaluated on whole games with sampled actions, as the RL Zoo scores Atari (docs/pixels.md).
Budget: 10M env steps (40M frames). Stop value 250: the value all three seeds reach.
Score measured on the project's 2-core CPU machine (``acframe -c breakout_a2c.py -s <seed> env.manager=envpool
policy.learn.torch_threads=1``, side by side with another training, 550-800 env steps/s; evaluations every 400k env
steps on 4 games, a score at the stop value confirmed on 50 fresh ones; hold-out: ``acframe -m eval --load
RUN/ckpt/ckpt_best.pth -s 30000<seed> --episodes 50 env.manager=envpool``), 2026-11-27: seed 0 solved at 2.8M env
steps (4 games 255.5, confirmed 286.66 +- 95.10, hold-out 291.94 +- 99.94; 5,171 s of training), seed 1 at 2.8M
(315.0, confirmed 285.88 +- 115.72, hold-out 299.76 +- 100.57; 3,836 s), seed 2 at 2.4M (293.5, confirmed 270.18 +-
106.56, hold-out 240.58 +- 103.47; 3,094 s). The 4-game evaluations swing by 100 and more between checkpoints 400k
env steps apart, and a run stops at its first confirmed evaluation, so its hold-out sits near the stop value (50
games give the mean to +-15 here). Before the EnvPool manager's fix of 2026-11-27 (each training episode a fresh
game's first life) the three seeds needed 6.4M / 5.2M / 5.2M env steps (hold-outs 296.38 / 286.46 / 282.00;
docs/pixels.md). IMPALA here (``breakout_impala.py``, shallow network): 50 by 3.52M env steps, 91.5 at 10M.
"""
main_config = dict(
    exp_name='breakout_a2c',  # the run folder is ./breakout_a2c_seed<seed>
    env=dict(
        env_id='ALE/Breakout-v5',  # the ALE's Breakout, v5 (env.atari skips frames, not the emulator)
        atari=dict(enable=True, repeat_action_probability=0.0),  # the standard preprocessing; no sticky actions
        collector_env_num=16,  # the Zoo's 16 envs
        evaluator_env_num=4,  # evaluation games played at once
        n_evaluator_episode=4,  # games per evaluation (a score at the stop value is confirmed on 50 fresh ones)
        stop_value=250,  # mean game score that solves it: all three measured seeds reach it
    ),
    policy=dict(
        model=dict(encoder='nature_cnn', encoder_hidden_size_list=[512], activation='relu'),  # Mnih et al. 2015
        learn=dict(
            optim='rmsprop',  # PyTorch's RMSprop (the Zoo's is TensorFlow's: 'rmsprop_tf')
            learning_rate=0.0007,  # the Zoo's, constant
            rms_alpha=0.99,  # RMSprop's smoothing constant
            rms_eps=0.00001,  # RMSprop's epsilon
            discount_factor=0.99,  # gamma
            gae_lambda=1.0,  # plain n-step returns, as A2C
            value_weight=0.25,  # the Zoo's value-loss coefficient
            entropy_weight=0.01,  # entropy bonus
            grad_clip_type='clip_norm',  # clip the global gradient norm
            grad_clip_value=0.5,  # to 0.5
        ),
        collect=dict(n_sample=80),  # 16 envs x 5 steps
        # every 5000 updates = 400k env steps; whole games scored with sampled actions, as the RL Zoo scores Atari
        eval=dict(deterministic=False, evaluator=dict(eval_freq=5_000)),
    ),
    max_env_step=10_000_000,  # 40M frames, the Zoo's budget
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs (env.manager=envpool runs them on EnvPool)
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='a2c'),  # acframe/policy/a2c.py
)
