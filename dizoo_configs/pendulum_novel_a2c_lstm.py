"""A2C with an LSTM on Pendulum-v1 without its angular velocity (``pendulum_novel``: cos and sin of the angle only).

pendulum_a2c.py's settings (the RL Zoo's A2C for Pendulum: 8 envs x 8 steps, gamma 0.9, GAE lambda 0.9, RMSprop at
7e-4 decayed linearly to 0, value weight 0.4, gradient norm 0.5, gSDE, observation and reward normalization, separate
actor and critic) with a 64-unit layer and a 64-unit LSTM each for actor and critic instead of the 64x64 bodies, and a
budget of 2M env steps (the learning rate decays over it). Each 8-step rollout keeps every env's state at its first
step; the update recomputes the rollout from it, episode starts inside masked (docs/recurrent.md).

MEASURED (2026-11-29 14:17-14:38 UTC, an AMD EPYC, one torch thread per process, two runs side by side beside a
2-core Pong run; run as ``acframe -c pendulum_a2c.py -s SEED env.env_id=pendulum_novel policy.model.rnn.type=lstm
policy.model.rnn.hidden_size=64 "policy.model.encoder_hidden_size_list=[64]" env.stop_value=-250 --max-env-step
2000000 policy.learn.lr_decay_iters=31250 policy.learn.torch_threads=1``, whose compiled config is this file's but for
its name): seeds 0 / 1 / 2 solved at 1,024k / 512k / 800k env steps (777 / 479 / 538 s), confirmed on 50 fresh
episodes at -209.3 / -230.3 / -173.8; the stopping checkpoints held out on 50 other episodes (``acframe -m eval
--load RUN/ckpt/ckpt_best.pth --episodes 50 -s 30000SEED``, the ladder's protocol) at -222.5 / -272.6 / -201.3.
So -250 is reached on every seed but with little margin: Pendulum's 50-episode means spread by about +-30 (a std
of 130-200 per episode), and A2C-LSTM is the weakest recurrent learner here (pendulum_novel_ppo_lstm.py holds out
at -197 / -236 / -170 after 100k, pendulum_novel_acer_lstm.py at -175 / -192 / -170). With the 1M budget and
pendulum_a2c.py's decay (seed 0): best evaluation -226 at 928k, -259 at the end.
The same file without the core (``policy.model.rnn.type=None env.stop_value=None``, seed 0): best -1,029 in 2M.
"""
import math
main_config = dict(
    exp_name='pendulum_novel_a2c_lstm',  # the run folder is ./pendulum_novel_a2c_lstm_seed<seed>
    env=dict(
        env_id='pendulum_novel',  # Pendulum-v1 with its angular velocity removed (acframe.envs.gym_env.NO_VELOCITY)
        collector_env_num=8,  # the Zoo's 8 envs
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=50,  # episodes per evaluation: the return depends strongly on the start angle
        stop_value=-250,  # mean return that solves it: all three measured seeds reach it (not the ladder's -200)
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64],  # one 64-unit layer before each LSTM
            share_encoder=False,  # separate actor and critic: an encoder and an LSTM each
            activation='tanh',  # tanh hidden layers
            init_sigma=math.exp(-2),  # gSDE's log-std starts at -2, the Zoo's
            orthogonal_init=False,  # no orthogonal init, as the Zoo's
            use_sde=True,  # gSDE: state-dependent exploration noise, the Zoo's
            obs_norm=True,  # observations normalized by their running mean and std (VecNormalize's)
            rnn=dict(
                type='lstm',  # the recurrent core: it infers the angular velocity from the angles it saw
                hidden_size=64,  # units of each LSTM
                num_layers=1,  # one LSTM layer
            ),
        ),
        learn=dict(
            optim='rmsprop',  # RMSprop, the Zoo's
            learning_rate=0.0007,  # the Zoo's, decayed below
            rms_alpha=0.99,  # RMSprop's smoothing constant
            rms_eps=0.00001,  # RMSprop's epsilon
            discount_factor=0.9,  # the Zoo's gamma
            gae_lambda=0.9,  # the Zoo's GAE lambda
            reward_norm=True,  # rewards divided by the running std of the return (VecNormalize's)
            value_weight=0.4,  # the Zoo's value-loss coefficient
            entropy_weight=0.0,  # no entropy bonus
            adv_norm=False,  # no advantage normalization, as the Zoo's
            grad_clip_value=0.5,  # clip the global gradient norm to 0.5
            lr_decay_iters=31250,  # linear to 0 at the budget: 2M env steps / 64 per update
        ),
        # 8 envs x 8 steps; gSDE's exploration matrices redrawn every 8 steps (at each rollout's start)
        collect=dict(n_sample=64, sde_sample_freq=8),
        # every 500 updates (32,000 env steps)
        eval=dict(evaluator=dict(eval_freq=500)),
    ),
    max_env_step=2_000_000,  # the training budget in env steps (twice pendulum_a2c.py's: the LSTM learns slower)
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='a2c'),  # acframe/policy/a2c.py
)
