"""A2C on Atari Breakout (ALE/Breakout-v5, standard preprocessing: 84x84 grey, frame skip 4, 4 stacked frames).

Needs ``pip install 'acframe[atari]'``. The settings of ``pong_a2c.py``: the RL Baselines3 Zoo's Atari A2C (16 envs,
5-step returns, the Nature CNN [512], PyTorch's RMSprop lr 7e-4 eps 1e-5, entropy 0.01, value 0.25, gradient norm
0.5), no sticky actions, episodic life and FIRE on reset; the Zoo reports 279.8 on Breakout after 10M steps.
Evaluated on whole games with sampled actions, as the RL Zoo scores Atari (docs/pixels.md).
Budget: 10M env steps (40M frames). Stop value 250: the value all three seeds reach.
Score measured on the project's 2-core CPU machine (``acframe -c breakout_a2c.py -s <seed> env.manager=envpool
policy.learn.torch_threads=1``, mostly two runs side by side, ~800 env steps/s each; evaluations every 400k env
steps on 4 games, a score at the stop value confirmed on 50 fresh ones; hold-out: ``acframe -m eval --load
RUN/ckpt/ckpt_best.pth -s 300000 --episodes 50``): seed 0 solved at 6.4M env steps (4 games 284.75, confirmed 310.68
+- 80.69, hold-out 296.38 +- 92.29; 8,456 s of training), seed 1 at 5.2M (325.0, confirmed 282.74 +- 88.69, hold-out
286.46 +- 88.53; 6,949 s), seed 2 at 5.2M (327.75, confirmed 296.96 +- 95.63, hold-out 282.00 +- 112.41; 6,604 s).
The Zoo's 279.8 at 10M is below all three hold-outs. On the way the 4-game evaluations swing by 100 and more between
checkpoints 400k env steps apart (seed 2: 303.25 at 3.6M, 182.25 at 4.4M), and of the eight 4-game scores above 250
three were confirmed on 50 games (confirmations 168-311): a run stops at its first confirmed evaluation, not its best.
IMPALA's best here (``breakout_impala.py``, shallow network): 91.5 at 10M.
These runs trained on EnvPool before 2026-11-27, when each of its training episodes was a fresh game's
first life (docs/pixels.md, the EnvPool manager); the fixed manager trains on whole games' lives.
On the fixed manager (same command, 2026-11-27, side by side with a PPO run) seed 0 solved at 2.8M env steps
instead of 6.4M (4 games 255.5, confirmed 286.66 +- 95.10 on 50, hold-out 291.94 +- 99.94; 5,171 s of training);
seeds 1 and 2 not yet rerun.
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
