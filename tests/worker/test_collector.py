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
from acframe.policy import create_policy
from acframe.rl_utils import vtrace
from acframe.worker import SampleCollector

T, B, LIMIT = 8, 3, 5


def make_cfg(**env):
    main = dict(env=dict(env_id='CartPole-v1', collector_env_num=B, max_episode_steps=LIMIT, **env),
                policy=dict(unroll_len=4, collect=dict(n_sample=T)))
    return compile_config((main, dict(policy=dict(type='impala'))), seed=0)


@pytest.fixture
def collector():
    cfg = make_cfg()
    env = make_env_manager(cfg, 'collector', B, cfg.seed)
    policy = create_policy(cfg, env.observation_space, env.action_space)
    yield SampleCollector(env, policy.collect_mode, T), policy
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
                policy=dict(unroll_len=4, collect=dict(n_sample=T), learn=dict(batch_size=2),
                            model=dict(encoder='impala_resnet', encoder_channels=[4], encoder_hidden_size_list=[16])))
    cfg = compile_config((main, dict(env=dict(type='toy_pixel_dot'), policy=dict(type='impala'))), seed=0)
    with make_env_manager(cfg, 'collector', B, cfg.seed) as env:
        policy = create_policy(cfg, env.observation_space, env.action_space)
        segment = SampleCollector(env, policy.collect_mode, T).collect()
    assert segment.obs.dtype == torch.uint8 and segment.obs.shape == (T + 1, B, 2, 16, 16)
    assert segment.final_obs.dtype == torch.uint8 and segment.truncated.any()
    assert (segment.final_obs[segment.truncated].flatten(1).sum(-1) == 2 * 255).all()  # a dot in each of 2 frames
    batch = policy.collect_mode.get_train_sample(segment)[:2].transpose(0, 1)
    info = policy.learn_mode.forward(batch)
    assert np.isfinite(info['total_loss'])
