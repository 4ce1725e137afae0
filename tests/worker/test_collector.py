"""Specification of ``acframe.worker.SampleCollector`` and of how a collected truncation is learned from.

A segment is time-major with one extra observation; an episode cut by its time limit keeps its last
observation in ``final_obs``, and IMPALA's learner bootstraps that step from V(final_obs) — not from the next
entry of ``obs``, which is already the reset observation of a new episode.
"""
import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from acframe.config import compile_config
from acframe.data import ttorch
from acframe.envs import make_env_manager
from acframe.errors import ConfigError
from acframe.policy import create_policy, env_steps_per_collection
from acframe.rl_utils import vtrace
from acframe.worker import SampleCollector, steps_per_env

T, B, LIMIT = 8, 3, 5
UNROLL = 4
N_SAMPLE = B * T // UNROLL  # unrolls across all envs (DI-engine's n_sample): T steps per env


def make_cfg(**env):
    main = dict(env=dict(env_id='CartPole-v1', collector_env_num=B, max_episode_steps=LIMIT, **env),
                policy=dict(unroll_len=UNROLL, collect=dict(n_sample=N_SAMPLE)))
    return compile_config((main, dict(policy=dict(type='impala'))), seed=0)


@pytest.fixture
def collector():
    cfg = make_cfg()
    env = make_env_manager(cfg, 'collector', B, cfg.seed)
    policy = create_policy(cfg, env.observation_space, env.action_space)
    yield SampleCollector(env, policy.collect_mode, N_SAMPLE), policy
    env.close()


def test_segment_is_time_major_with_one_extra_observation(collector):
    collector, _ = collector
    segment = collector.collect()
    assert segment.obs.shape == (T + 1, B, 4)
    assert segment.action.shape == (T, B)
    assert segment.reward.shape == (T, B) and segment.reward.dtype == torch.float32
    assert segment.terminated.shape == (T, B) and segment.terminated.dtype == torch.bool
    assert segment.truncated.shape == (T, B) and segment.truncated.dtype == torch.bool
    assert segment.final_obs.shape == (T, B, 4)
    assert segment.logit.shape == (T, B, 2)  # what IMPALA's collect forward returned (the behaviour policy)
    following = collector.collect()
    assert torch.equal(following.obs[0], segment.obs[T])  # segments continue each other


def test_a_truncated_step_stores_its_final_observation(collector):
    collector, _ = collector
    segment = collector.collect()
    # CartPole cannot fail within 5 steps: every env hits its time limit at step index 4
    assert segment.truncated[LIMIT - 1].all() and not segment.terminated.any()
    assert segment.truncated.sum() == B
    final = segment.final_obs[LIMIT - 1]
    assert final.abs().sum(-1).gt(0).all()
    assert not torch.allclose(final, segment.obs[LIMIT])  # the next obs is a new episode's first
    others = torch.ones(T, dtype=torch.bool)
    others[LIMIT - 1] = False
    assert segment.final_obs[others].eq(0).all()  # zeros where no episode ended


def test_env_steps_and_episode_statistics_are_counted(collector):
    collector, _ = collector
    collector.collect()
    collector.collect()
    assert collector.env_step == 2 * T * B
    stats = collector.pop_episode_stats()
    assert stats['lengths'] == [LIMIT] * (3 * B)  # episodes ended at steps 5, 10 and 15
    assert stats['returns'] == [float(LIMIT)] * (3 * B)
    assert collector.pop_episode_stats() == {'returns': [], 'lengths': []}


# ---- n_sample: samples across all envs, as in DI-engine ---------------------------------------------
def test_steps_per_env_divides_n_sample_over_the_envs_and_counts_unrolls_in_steps():
    assert steps_per_env(40, 8) == 5                    # A2C: 40 transitions from 8 envs
    assert steps_per_env(16, 8, unroll_len=32) == 64    # DI-engine's cartpole_impala: 16 unrolls of 32 steps
    assert steps_per_env(8, 8, unroll_len=16) == 16


@pytest.mark.parametrize('n_sample, hint', [(12, 'e.g. 8 or 16'), (3, 'e.g. 8 or 16'), (0, 'e.g. 8 or 16'), (20, 'e.g. 16 or 24')])
def test_an_n_sample_that_does_not_split_over_the_envs_is_one_clear_error(n_sample, hint):
    with pytest.raises(ConfigError) as err:
        steps_per_env(n_sample, 8, unroll_len=4)
    message = str(err.value)
    assert '\n' not in message and f'policy.collect.n_sample ({n_sample}) must be a multiple of env.collector_env_num (8)' in message
    assert 'across all collector envs' in message and hint in message


def test_compile_refuses_an_n_sample_that_does_not_split_over_the_envs():
    with pytest.raises(ConfigError, match=r'n_sample \(7\) must be a multiple of env.collector_env_num \(3\)'):
        make_cfg_with(n_sample=7)


def test_with_data_parallel_learners_the_n_sample_fix_says_the_envs_must_split_over_the_ranks_too():
    """Its suggested n_sample (a multiple of 3 envs) was refused next: 3 envs do not split over 2 ranks."""
    from acframe.config import compile_config

    with pytest.raises(ConfigError, match=r"set it to e.g. 255 or 258 \(with parallel.learner_num=2, the serial "
                                          r"pipelines also split env.collector_env_num over the ranks: a multiple of 2, "
                                          r"e.g. 4, with n_sample a multiple of that\)$"):
        compile_config('cartpole_ppo.py', ['parallel.learner_num=2', 'env.collector_env_num=3'])
    with pytest.raises(ConfigError, match=r"set it to e.g. 255 or 258$"):  # (one learner: no word of ranks)
        compile_config('cartpole_ppo.py', ['env.collector_env_num=3'])


def make_cfg_with(n_sample, policy='impala', **policy_cfg):
    main = dict(env=dict(env_id='CartPole-v1', collector_env_num=B), policy=dict(collect=dict(n_sample=n_sample), **policy_cfg))
    return compile_config((main, dict(policy=dict(type=policy))), seed=0)


@pytest.mark.parametrize('policy, policy_cfg, n_sample, steps, samples', [
    ('a2c', {}, 12, 4, (4, B)),                                          # 12 transitions: 4 steps of 3 envs
    ('impala', dict(unroll_len=4), 6, 8, (6, 4)),                         # 6 unrolls of 4 steps, 2 per env
    ('acer', dict(other=dict(replay_buffer=dict(unroll_len=2))), 3, 2, (2, B)),  # 3 windows of 2: T = 2 per env
])
def test_a_collection_holds_n_sample_train_samples_across_all_envs(policy, policy_cfg, n_sample, steps, samples):
    cfg = make_cfg_with(n_sample, policy, **policy_cfg)
    env = make_env_manager(cfg, 'collector', B, cfg.seed)
    try:
        mode = create_policy(cfg, env.observation_space, env.action_space).collect_mode
        collector = SampleCollector(env, mode, cfg.policy.collect.n_sample)
        segment = collector.collect()
    finally:
        env.close()
    assert segment.reward.shape == (steps, B) and collector.env_step == steps * B == env_steps_per_collection(cfg)
    train = mode.get_train_sample(segment)
    assert tuple(train.reward.shape) == samples  # the segment itself (A2C, ACER) or item-major unrolls (IMPALA)


# ---- learning from a truncation -------------------------------------------------------------------
def truncation_batch(truncated: bool, final_value_obs: float):
    """A 3-step, 2-column batch; column 0 ends its episode at step 1 (truncated or terminated)."""
    steps, batch = 3, 2
    gen = torch.Generator().manual_seed(0)
    obs = torch.randn(steps + 1, batch, 4, generator=gen) * 0.1
    end = torch.zeros(steps, batch, dtype=torch.bool)
    end[1, 0] = True
    final_obs = torch.zeros(steps, batch, 4)
    final_obs[1, 0] = final_value_obs
    return dict(obs=obs, reward=torch.ones(steps, batch), action=torch.zeros(steps, batch, dtype=torch.long),
                logit=torch.zeros(steps, batch, 2), final_obs=final_obs,
                truncated=end if truncated else torch.zeros_like(end), terminated=torch.zeros_like(end) if truncated else end)


def impala_policy():
    cfg = make_cfg()
    torch.manual_seed(0)
    obs_space = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)
    return create_policy(cfg, obs_space, gym.spaces.Discrete(2)), cfg.policy.learn.discount_factor


def test_truncated_step_is_bootstrapped_from_the_value_of_final_obs():
    policy, gamma = impala_policy()
    batch = truncation_batch(truncated=True, final_value_obs=0.5)
    with torch.no_grad():
        rewards = policy._bootstrap_truncation(batch['reward'], batch['truncated'], batch['final_obs'])
        v_final = policy.model(batch['final_obs'][1, 0:1], mode='compute_critic')['value'][0]
        values = policy.model(batch['obs'], mode='compute_critic')['value']
    expected = batch['reward'].clone()
    expected[1, 0] += gamma * v_final
    torch.testing.assert_close(rewards, expected)

    # with per-step discounts gamma * (1 - (terminated | truncated)) the on-policy target at the cut is exactly
    # r + gamma * V(final_obs), and never touches V(obs[t+1]) — the next episode's first observation
    done = batch['terminated'] | batch['truncated']
    returns = vtrace(torch.zeros(3, 2), gamma * (~done).float(), rewards, values[:-1], values[-1])
    torch.testing.assert_close(returns.vs[1, 0], 1.0 + gamma * v_final)


def test_terminated_step_is_not_bootstrapped():
    policy, _ = impala_policy()
    batch = truncation_batch(truncated=False, final_value_obs=0.5)
    rewards = policy._bootstrap_truncation(batch['reward'], batch['truncated'], batch['final_obs'])
    torch.testing.assert_close(rewards, batch['reward'])


@pytest.mark.parametrize('truncated', [True, False])
def test_impala_learn_reads_final_obs_only_for_truncated_steps(truncated):
    """Changing final_obs changes IMPALA's value loss when the step was truncated, and only then."""
    policy, _ = impala_policy()
    twin = copy.deepcopy(policy)
    loss_a = policy.learn_mode.forward(ttorch.Tensor(truncation_batch(truncated, 0.5)))['value_loss']
    loss_b = twin.learn_mode.forward(ttorch.Tensor(truncation_batch(truncated, -3.0)))['value_loss']
    assert (loss_a != pytest.approx(loss_b, rel=1e-6)) == truncated


def test_image_observations_stay_uint8_in_segments_and_are_learned_from():
    """The moving-dot env's uint8 frames are stored as uint8 (obs and final_obs); the model scales them."""
    main = dict(env=dict(env_id='toy_pixel_dot', collector_env_num=B, max_episode_steps=LIMIT),
                policy=dict(unroll_len=UNROLL, collect=dict(n_sample=N_SAMPLE), learn=dict(batch_size=2),
                            model=dict(encoder='impala_resnet', encoder_channels=[4], encoder_hidden_size_list=[16])))
    cfg = compile_config((main, dict(env=dict(type='toy_pixel_dot'), policy=dict(type='impala'))), seed=0)
    with make_env_manager(cfg, 'collector', B, cfg.seed) as env:
        policy = create_policy(cfg, env.observation_space, env.action_space)
        segment = SampleCollector(env, policy.collect_mode, N_SAMPLE).collect()
    assert segment.obs.dtype == torch.uint8 and segment.obs.shape == (T + 1, B, 2, 16, 16)
    assert segment.final_obs.dtype == torch.uint8 and segment.truncated.any()
    assert (segment.final_obs[segment.truncated].flatten(1).sum(-1) == 2 * 255).all()  # a dot in each of 2 frames
    batch = policy.collect_mode.get_train_sample(segment)[:2].transpose(0, 1)
    info = policy.learn_mode.forward(batch)
    assert np.isfinite(info['total_loss'])


GOAL_MODEL = dict(encoder='impala_resnet', encoder_channels=[4], encoder_hidden_size_list=[16], vector_hidden_size_list=[8])


def goal_cfg(algo='impala', **policy):
    main = dict(env=dict(env_id='toy_pixel_goal', collector_env_num=B, max_episode_steps=LIMIT),
                policy=dict(unroll_len=UNROLL, collect=dict(n_sample=N_SAMPLE), learn=dict(batch_size=2),
                            model=dict(GOAL_MODEL), **policy))
    return compile_config((main, dict(env=dict(type='toy_pixel_goal'), policy=dict(type=algo))), seed=0)


def test_dict_observations_are_stored_per_key_images_as_uint8_and_are_learned_from():
    """obs and final_obs are subtrees with a leaf per key: the image uint8, the vector float32."""
    cfg = goal_cfg()
    with make_env_manager(cfg, 'collector', B, cfg.seed) as env:
        policy = create_policy(cfg, env.observation_space, env.action_space)
        segment = SampleCollector(env, policy.collect_mode, N_SAMPLE).collect()
    assert segment.obs.image.dtype == torch.uint8 and segment.obs.image.shape == (T + 1, B, 1, 8, 8)
    assert segment.obs.target.dtype == torch.float32 and segment.obs.target.shape == (T + 1, B, 2)
    assert segment.final_obs.image.dtype == torch.uint8 and segment.final_obs.target.shape == (T, B, 2)
    truncated = segment.truncated
    assert truncated.any() and (segment.final_obs.image[truncated].flatten(1).sum(-1) == 255).all()  # the last dot
    assert (segment.final_obs.image[~truncated] == 0).all()
    samples = policy.collect_mode.get_train_sample(segment)  # unrolls of UNROLL steps with UNROLL + 1 observations
    assert samples.obs.image.shape == (B * T // UNROLL, UNROLL + 1, 1, 8, 8)
    assert torch.equal(samples.obs.target[0], segment.obs.target[:UNROLL + 1, 0])
    info = policy.learn_mode.forward(samples[:2].transpose(0, 1))
    assert np.isfinite(info['total_loss'])


def test_a_nan_in_a_dict_observations_vector_is_an_error_naming_the_key():
    from acframe.envs import EnvManager
    from acframe.envs.toy import DotToTargetEnv
    from acframe.errors import NonFiniteError

    class NaNTarget(gym.ObservationWrapper):
        def __init__(self, env):
            super().__init__(env)
            self.steps = 0

        def observation(self, obs):
            self.steps += 1
            return dict(obs, target=obs['target'] * (np.nan if self.steps == 4 else 1.0))

    cfg = goal_cfg()
    with EnvManager([lambda: NaNTarget(DotToTargetEnv())] * 2, [0, 1]) as env:
        policy = create_policy(cfg, env.observation_space, env.action_space, enable_field=('collect',))
        with pytest.raises(NonFiniteError, match=r"collector env 0 \(seed 0\) returned a NaN/inf observation 'target'"):
            SampleCollector(env, policy.collect_mode, 2).collect(steps=5)


class ScriptedActions:
    """A collect mode whose actions are given: row ``t`` of ``actions`` at step ``t`` (and for ``reset``)."""

    def __init__(self, actions):
        self.actions, self.t = actions, 0

    def reset(self):
        pass

    def forward(self, obs):
        self.t += 1
        return {'action': self.actions[self.t - 1]}


def pendulums(n=2):
    from acframe.envs import EnvManager
    return EnvManager([lambda: gym.make('Pendulum-v1')] * n, list(range(n)))


def test_a_nan_action_is_the_policys_error_not_the_env_it_reached():
    from acframe.errors import NonFiniteError

    actions = torch.zeros(6, 2, 1)
    actions[3, 1] = float('nan')  # Pendulum steps on it and returns a NaN observation: the policy's fault all the same
    with pendulums() as env:
        with pytest.raises(NonFiniteError, match=r"^the policy gave a NaN/inf action to collector env 1 \(seed 1\) at "
                                                 r"env step 6, from a finite observation: its weights or its outputs "
                                                 r"are not finite \(the env is not at fault\)$"):
            SampleCollector(env, ScriptedActions(actions), 2).collect(steps=6)


def test_a_nan_observation_before_any_nan_action_is_the_envs_error():
    from acframe.errors import NonFiniteError

    class NaNAt(gym.ObservationWrapper):
        def __init__(self, env):
            super().__init__(env)
            self.steps = 0

        def observation(self, obs):
            self.steps += 1
            return obs * (np.nan if self.steps == 3 else 1.0)

    actions = torch.zeros(6, 2, 1)
    actions[4:] = float('nan')  # (what a policy gives from a NaN observation)
    from acframe.envs import EnvManager
    with EnvManager([lambda: NaNAt(gym.make('Pendulum-v1'))] * 2, [0, 1]) as env:
        with pytest.raises(NonFiniteError, match=r"^collector env 0 \(seed 0\) returned a NaN/inf observation near env "
                                                 r"step 4; fix the env"):
            SampleCollector(env, ScriptedActions(actions), 2).collect(steps=6)


@pytest.mark.parametrize('shape, space', [((2, 1), 'Discrete(2)'), ((2,), 'Box(-2.0, 2.0, (1,), float32)')])
def test_actions_of_another_shape_than_the_action_space_are_the_policys_error_in_one_line(shape, space):
    from acframe.errors import PolicyError

    discrete = shape == (2, 1)
    env_id = 'CartPole-v1' if discrete else 'Pendulum-v1'
    from acframe.envs import EnvManager
    with EnvManager([lambda: gym.make(env_id)] * 2, [0, 1]) as env:
        actions = torch.zeros((4,) + shape, dtype=torch.long if discrete else torch.float32)
        with pytest.raises(PolicyError, match=rf"^the policy's _forward_collect gave 'action' of shape {re_escape(shape)} "
                                              rf"for 2 envs whose action space is {re_escape(space)}: each env's action "
                                              rf"has shape {re_escape(() if discrete else (1,))}, the space's"):
            SampleCollector(env, ScriptedActions(actions), 2).collect(steps=4)


def re_escape(value):
    import re
    return re.escape(str(value))


def test_a_nan_action_an_env_refuses_is_the_policys_error_too():
    from acframe.envs import EnvManager
    from acframe.errors import NonFiniteError

    class Strict(gym.Wrapper):
        def step(self, action):
            if not np.isfinite(action).all():
                raise ValueError(f'action {action} is not in the action space')
            return self.env.step(action)

    actions = torch.zeros(6, 2, 1)
    actions[2, 0] = float('nan')  # (an inf would be clipped to the Box's bound on its way to the env)
    with EnvManager([lambda: Strict(gym.make('Pendulum-v1'))] * 2, [0, 1]) as env:
        with pytest.raises(NonFiniteError, match=r"^the policy gave a NaN/inf action to collector env 0 \(seed 0\) at "
                                                 r"env step 4, and the env refused it: its weights or its outputs are "
                                                 r"not finite \(the env is not at fault\)$"):
            SampleCollector(env, ScriptedActions(actions), 2).collect(steps=6)
