"""ACER with a stochastic dueling network on LunarLanderContinuous-v3 (needs gymnasium[box2d]): no stop value.

ACER's continuous-control recipe (Wang et al. 2017, section 5): 8 envs × 20-step unrolls into an episodic replay
(200k transitions); per collection the on-policy update and up to 4 replayed batches of 16 sub-trajectories (a
Poisson(4) draw capped by ``update_per_collect=5``; from 10k transitions on; ~30,900 updates in 1M env steps), Q_opc
in the policy gradient, truncated importance weights c = 5, the trust region (delta 0.3, average network alpha 0.99),
no entropy bonus, Adam 5e-4, gamma 0.99, rewards × 0.1; separate 64×64 tanh actor and critic, the Gaussian's mean
bounded to the action range, std starting at 0.5, and observation normalization (``model.obs_norm``: without it
ACER had no way to scale the lander's velocities; added to ACER's models for the MuJoCo rows).

MEASURED (2026-11-25, ``python bench/ladder.py --rows lunarlander_continuous --algos acer --seeds 0,1,2``, the whole
1M budget, 10-episode greedy evaluations every ~40k env steps, ~360 s each two at a time): seed 0 best 187 at 932k
(82–187 over the last 300k; hold-out of its best checkpoint 167); seed 1 ≥ 200 from 848k, best 220 at 1M (hold-out of that
checkpoint on 50 fresh episodes 175); seed 2 ≥ 200 from 290k on 7 evaluations, best 212 at 411k, 179–204 late
(hold-out 199). Not the ladder's 200 on 3/3 seeds: no stop value. PPO (``lunarlander_continuous_ppo.py``) solves
this row.

The trust region's delta is what steadied it. With delta 1 (the paper's, the config until 2026-11-25) each seed
peaks early and falls back: seed 0 200 at 290k, then 117–193 and 145 at 1M; seed 1 178 at 248k, then down to 29 at
1M. Delta 0.5: seed 0 175 at 249k, 71 at 1M; delta 0.1: seed 1 best 194 (at 1M, slower). With delta 0.3, tried and
not kept: the learning rate decayed to 0 over the budget (seed 0 best 194, 179–192 from 491k, 131 at 1M; seed 1
201–210 from 408k; seed 2 best 170); batches of 32 (seed 0 best 195). With delta 1, on seed 0: the decay (best 193);
the decay and gamma 0.999 (201 at 492k, 142 at 1M); the decay with 128×128 networks, batches of 32 and Adam 7e-4,
the settings of ``lunarlander_acer.py`` (best 130); the decay with gamma 0.995 (133 by 693k), and with replay ratio
8 too (190 at 257k, then 18–130). On seed 1: the std starting at 1 (best 90); replay ratio 2 (best −28).
"""
main_config = dict(
    exp_name='lunarlander_continuous_acer',
    env=dict(
        env_id='LunarLanderContinuous-v3',
        collector_env_num=8,
        evaluator_env_num=10,
        n_evaluator_episode=10,
        stop_value=None,
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
            trust_region_delta=0.3,
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
