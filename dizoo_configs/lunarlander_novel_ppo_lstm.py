"""PPO with an LSTM on LunarLander-v3 without its velocities (``lunarlander_novel``: x, y, angle, two leg contacts).

The observation hides the lander's x and y velocities and its angular velocity; the LSTM (``policy.model.rnn``)
infers them from the history. The RL Zoo's ``ppo_lstm`` settings for LunarLanderNoVel-v2 (rl-baselines3-zoo
hyperparams/ppo_lstm.yml: 16 envs x 1024 steps per rollout, minibatches of 64 steps, 4 epochs, gamma 0.999, GAE
lambda 0.98, entropy bonus 0.01, no normalization, 1M env steps; RecurrentPPO's defaults for the rest: Adam 3e-4
and clip 0.2 constant), here as sequences of 64 steps (one per minibatch, as RecurrentPPO's minibatch of 64 is a
run of 64 consecutive steps), each recomputed from the actors' state stored at its first step; a 64-unit encoder
and a 64-unit LSTM shared by actor and critic (RecurrentPPO's default is a 256-unit LSTM each, no encoder: measured
below). Not the Zoo's: rewards x 0.01 (``reward_scale``), see below. The budget is the Zoo's 1M.

MEASURED (2026-11-28, one CPU thread, ``python bench/ladder.py --rows lunarlander_novel --algos ppo_lstm --seeds
0,1,2``, 434 / 612 / 535 s for the 1M, beside another job): best 10-episode greedy evaluation -2 / -122 / -63, hold-out
of that checkpoint on 50 fresh episodes -49 / -104 / -118; nowhere near the ladder's 200 (no stop value). With the
Zoo's rewards (``policy.learn.reward_scale=1.0``, seed 0) the greedy policy played one action for most of the 1M
(best -132, hold-out -119); the likely cause, not measured directly: the value loss of returns in the hundreds
drowning the policy's gradient in the shared encoder and LSTM. A core each (``policy.model.share_encoder=False``),
seed 0: best -106, hold-out -141; RecurrentPPO's network (a 256-unit LSTM each, 64x64 tanh heads, no encoder, the Zoo's
rewards), seed 0: best -117, hold-out -107; neither beats the shared core. sb3-contrib's RecurrentPPO with the Zoo's
settings at 1M, seeds 0 / 1 / 2 (2026-11-29): hold-out -122 / -88 / -173 (this file: -49 / -104 / -118). Without
the core (``policy.model.rnn.type=None``) and RecurrentPPO beside it: docs/benchmarks.md (recurrent section).
"""
main_config = dict(
    exp_name='lunarlander_novel_ppo_lstm',  # the run folder is ./lunarlander_novel_ppo_lstm_seed<seed>
    env=dict(
        env_id='lunarlander_novel',  # LunarLander-v3 with its velocities removed (acframe.envs.gym_env.NO_VELOCITY)
        collector_env_num=16,  # the Zoo's 16 envs
        evaluator_env_num=10,  # evaluation episodes played at once
        n_evaluator_episode=10,  # episodes per evaluation
        stop_value=None,  # none: the whole 1M is the policy to ship
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64],  # one 64-unit layer before the LSTM
            share_encoder=True,  # one encoder and one LSTM for actor and critic (False: an encoder and a core each)
            actor_head_hidden_size=64,  # a 64-unit layer after the LSTM in the actor head
            critic_head_hidden_size=64,  # and in the critic head
            rnn=dict(
                type='lstm',  # the recurrent core
                hidden_size=64,  # units of the LSTM
                num_layers=1,  # one LSTM layer
                seq_len=64,  # 16 sequences of 64 steps per env and rollout, each from its stored start state
            ),
        ),
        learn=dict(
            epoch_per_collect=4,  # the Zoo's 4 epochs over each rollout
            batch_size=64,  # the Zoo's minibatch: one 64-step sequence, 1024 gradient steps per rollout
            learning_rate=0.0003,  # Adam, RecurrentPPO's default, constant
            discount_factor=0.999,  # the Zoo's gamma
            gae_lambda=0.98,  # the Zoo's GAE lambda
            clip_ratio=0.2,  # PPO's clip range, RecurrentPPO's default, constant
            # rewards x 0.01 before the targets (returns of about +-2, not +-200): the value loss would otherwise
            # swamp the policy's gradient in the encoder and LSTM that actor and critic share (not the Zoo's)
            reward_scale=0.01,
            value_weight=0.5,  # value-loss coefficient
            entropy_weight=0.01,  # the Zoo's entropy bonus
        ),
        # transitions per rollout, over all 16 envs (1024 steps each)
        collect=dict(n_sample=16384),
        # every rollout (1024 gradient steps)
        eval=dict(evaluator=dict(eval_freq=1024)),
    ),
    max_env_step=1_000_000,  # the training budget in env steps, the Zoo's 1M
)
create_config = dict(
    env=dict(type='gym'),  # gymnasium envs
    env_manager=dict(type='sync'),  # in-process vector env
    policy=dict(type='ppo'),  # acframe/policy/ppo.py with policy.model.rnn
)
