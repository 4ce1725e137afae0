"""ACER with a stochastic dueling network on Hopper-v5 (MuJoCo; needs the ``mujoco`` extra): stop value 2500.

ACER's continuous-control recipe (Wang et al. 2017, section 5): 8 envs × 20-step unrolls into an episodic replay
(200k transitions); per collection the on-policy update and up to 4 replayed batches of 16 sub-trajectories (a
Poisson(4) draw capped by ``update_per_collect=5``; from 10k transitions on; ~30,900 updates in 1M env steps), Q_opc
in the policy gradient, truncated importance weights c = 5, the trust region (delta 1, average network alpha 0.99),
no entropy bonus, Adam 5e-4, gamma 0.99, rewards × 0.1; separate 64×64 tanh actor and critic, the Gaussian's mean
bounded to the action range, std starting at 0.5, and observation normalization (``model.obs_norm``: without it
ACER had no way to scale MuJoCo's velocities; added to ACER's models for these rows).

MEASURED (2026-11-24, ``python bench/ladder.py --rows hopper --algos acer --seeds 0,1,2``, one torch thread;
10-episode greedy evaluations every 1250 updates, ~40k env steps): 2500 crossed and confirmed on 50 fresh episodes
(2745 / 2916 / 2781) on 3/3 seeds at 411k / 409k / 371k env steps (108–126 s; seed 1 confirmed 2206 at 369k first);
hold-out of the best checkpoint on 50 other episodes 2773 / 2868 / 2947. The stop value is 2500, not the ladder's
2000, as in ``hopper_ppo.py``: a hop that falls now and then costs an episode most of its return. Seed 0 over the
whole 1M budget (``env.stop_value=None``, 280 s): 1644 at 169k, 2215 at 209k, two falls to ~220 near 300k, 2954 at
411k, 3164–3242 from 572k to 1M (best 3242).
"""
main_config = dict(
    exp_name='hopper_acer',
    env=dict(
        env_id='Hopper-v5',
        collector_env_num=8,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=2500,
    ),
    policy=dict(
        model=dict(
            encoder_hidden_size_list=[64, 64],
            advantage_hidden_size_list=[64],
            share_encoder=False,
            init_sigma=0.5,
            mu_bound=1.0,
            n_action_samples=5,
            obs_norm=True,
        ),
        learn=dict(
            update_per_collect=5,
            batch_size=16,
            learning_rate=0.0005,
            discount_factor=0.99,
            reward_scale=0.1,
            c_clip_ratio=5.0,
            use_q_opc=True,
            value_weight=0.5,
            entropy_weight=0.0,
            trust_region=True,
            trust_region_delta=1.0,
            trust_region_alpha=0.99,
        ),
        collect=dict(n_sample=8),  # unrolls across 8 envs: T = 20 steps per env, 160 env steps per collection
        # every 1250 updates (about 50k env steps)
        eval=dict(evaluator=dict(eval_freq=1250)),
        other=dict(replay_buffer=dict(
            replay_buffer_size=200000,
            unroll_len=20,
            replay_ratio=4.0,
            replay_start_size=10000,
        )),
    ),
    max_env_step=1_000_000,
)
create_config = dict(
    env=dict(type='gym'),
    env_manager=dict(type='sync'),
    policy=dict(type='acer'),
)
