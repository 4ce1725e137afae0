"""Specification of recurrent ACER (``policy.model.rnn`` with the ``acer_q`` model; docs/recurrent.md).

* every training batch -- the fresh segment and the episodic buffer's replayed windows -- is recomputed from the
  actors' state stored at its first step: with the weights that collected it, the learner's (and the average
  network's) logits are the actors' at collection time, with or without a burn-in, episode starts inside;
* for discrete (``acer_q``) and continuous (``acer_sdn``) actions;
* with the recurrence neutralised (an LSTM that forgets its state at every step) the recurrent learn step equals the
  feed-forward ACER computation on the same batch (with a burn-in: on the batch without its first K steps).
"""
import copy

import numpy as np
import pytest
import torch
import torch.nn as nn

from acframe.config import compile_config
from acframe.data.episodic_buffer import EpisodicReplayBuffer
from acframe.envs import make_env_manager
from acframe.policy import create_policy
from acframe.worker import SampleCollector

B, T, L, LIMIT = 3, 24, 8, 10


def build(rnn, env_id='cartpole_novel', share=True, **learn):
    main = dict(env=dict(env_id=env_id, collector_env_num=B, max_episode_steps=LIMIT),
                policy=dict(model=dict(encoder_hidden_size_list=[16], share_encoder=share, rnn=rnn),
                            learn=dict(learn), collect=dict(n_sample=B),
                            other=dict(replay_buffer=dict(unroll_len=L, replay_start_size=0))))
    cfg = compile_config((main, dict(env=dict(type='gym'), policy=dict(type='acer'))), seed=0)
    env = make_env_manager(cfg, 'collector', B, cfg.seed)
    torch.manual_seed(0)
    return cfg, env, create_policy(cfg, env.observation_space, env.action_space)


def collect_batches(policy, env, windows=32):
    """Three collected segments pushed into an episodic buffer: the last fresh segment and replayed windows."""
    collector = SampleCollector(env, policy.collect_mode, B * T)
    buffer = EpisodicReplayBuffer(10_000, unroll_len=L, replay_start_size=0, seed=0)
    for _ in range(3):
        segment = collector.collect()
        buffer.push(segment)
    env.close()
    return segment, buffer.sample_windows(windows)


# (share=False: the policy and the critic each have an encoder and a core; the state holds both cores' rows)
@pytest.mark.parametrize('kind, burn_in, env_id, share', [
    ('lstm', 0, 'cartpole_novel', True), ('gru', 3, 'cartpole_novel', True), ('gru', 0, 'Pendulum-v1', True),
    ('lstm', 2, 'Pendulum-v1', True), ('lstm', 3, 'cartpole_novel', False), ('gru', 2, 'Pendulum-v1', False)])
def test_the_learner_recomputes_the_actors_statistics_from_the_stored_states(kind, burn_in, env_id, share):
    _, env, policy = build(dict(type=kind, hidden_size=16, burn_in=burn_in), env_id, share)
    assert (policy.model.critic_core is None) == share
    stats = ('logit',) if env_id == 'cartpole_novel' else ('mu', 'sigma')
    segment, windows = collect_batches(policy, env)
    assert segment.rnn_state[0].abs().sum() > 0  # the fresh segment starts mid-episode, from non-zero states
    assert windows.episode_start[1:].any() and windows.truncated.any()  # starts and time limits inside windows
    assert (windows.rnn_state[0].abs().flatten(1).sum(-1) > 0).any()  # windows from the middle of episodes
    weights = copy.deepcopy(policy.model.state_dict())
    for batch in (segment, windows):
        with torch.no_grad():
            kept, out, average = policy._unroll_windows(batch)
        assert kept.reward.shape[0] == batch.reward.shape[0] - burn_in
        for key in stats:  # same weights: the recomputed statistics are the actors' (the average network's too)
            assert torch.equal(kept[key], batch[key][burn_in:])
            assert torch.allclose(out[key][:-1], kept[key], atol=1e-5), key
            assert torch.allclose(average[key], kept[key], atol=1e-5), key
        info = policy.learn_mode.forward(batch)  # rho = pi / mu = 1 on every step, before this step's update
        assert abs(info['mean_rho'] - 1.0) < 1e-5 and info['rho_truncated_fraction'] == 0.0
        policy.model.load_state_dict(weights)  # the collecting weights again for the next batch
        policy._average_model.load_state_dict(weights)


class Memoryless(nn.Module):
    """A feed-forward view of a recurrent ``acer_q``: every step from the zero state."""

    def __init__(self, model):
        super().__init__()
        self.inner = model

    def _zero(self, obs):
        return self.inner.initial_state(obs.shape[0])

    def compute_actor(self, obs):
        return {k: v for k, v in self.inner.compute_actor(obs, self._zero(obs)).items() if k != 'state'}

    def compute_critic(self, obs):
        return {k: v for k, v in self.inner.compute_critic(obs, self._zero(obs)).items() if k != 'state'}

    def compute_actor_critic(self, obs, actions=None):
        if actions is None:  # acer_q
            out = self.inner.compute_actor_critic(obs, self._zero(obs))
        else:  # acer_sdn, Q~ at the actions
            out = self.inner.compute_actor_critic(obs, actions, self._zero(obs))
        return {k: v for k, v in out.items() if k != 'state'}

    def forward(self, obs, mode='compute_actor_critic'):
        return getattr(self, mode)(obs)


def forget_everything(model):
    """No recurrent weights and a forget gate shut: the LSTM's output depends on the current input only (each core's,
    the critic's too when it has its own)."""
    with torch.no_grad():
        for core in (model.core, model.critic_core):
            if core is None:
                continue
            rnn = core.rnn
            rnn.weight_hh_l0.zero_()
            hidden = core.hidden_size
            rnn.bias_ih_l0[hidden:2 * hidden] = -1e4  # (gates i, f, g, o): sigmoid(-1e4) = 0 exactly
            rnn.bias_hh_l0[hidden:2 * hidden] = 0.0


@pytest.mark.parametrize('burn_in, env_id, share', [(0, 'cartpole_novel', True), (3, 'cartpole_novel', True),
                                                    (2, 'Pendulum-v1', True), (2, 'Pendulum-v1', False)])
def test_with_the_recurrence_neutralised_the_learn_step_equals_feed_forward_acer(burn_in, env_id, share):
    """(share=False: the policy and the critic each with an encoder and a core, both neutralised; the SDN's Q~ reads
    the critic's core.)"""
    cfg, env, policy = build(dict(type='lstm', hidden_size=16, burn_in=burn_in), env_id, share, grad_clip_type='none')
    forget_everything(policy.model)
    policy._average_model.load_state_dict(policy.model.state_dict())
    _, windows = collect_batches(policy, env)
    assert windows.episode_start[1:].any() and windows.truncated.any() and windows.rnn_state[0].abs().sum() > 0
    ff_cfg = copy.deepcopy(cfg)
    ff_cfg.policy.model.rnn.type = None
    feed_forward = create_policy(ff_cfg, env.observation_space, env.action_space,
                                 model=Memoryless(copy.deepcopy(policy.model)))
    assert not feed_forward._recurrent
    torch.manual_seed(1)  # (continuous actions: the same a' ~ pi and SDN samples in both)
    recurrent_info = policy.learn_mode.forward(windows)
    torch.manual_seed(1)
    plain_info = feed_forward.learn_mode.forward(windows[burn_in:])
    keys = ['total_loss', 'policy_loss', 'q_loss', 'entropy', 'kl_to_average', 'mean_rho', 'mean_q_ret']
    for key in keys + (['value_loss'] if env_id == 'Pendulum-v1' else []):
        assert recurrent_info[key] == pytest.approx(plain_info[key], rel=1e-5, abs=1e-6), key
    # the same gradients but for the recurrent weights (the feed-forward view never feeds a state). (Not the weights
    # after Adam's step: an element whose gradient is near Adam's eps moves by up to lr from a 1e-8 rounding difference
    # of the gradient -- the step runs one fused LSTM call over the windows, the view one cell per step.)
    for (name, a), b in zip(policy.model.named_parameters(), feed_forward.model.inner.parameters()):
        if 'weight_hh' not in name:
            assert a.grad is not None and torch.allclose(a.grad, b.grad, rtol=1e-5, atol=1e-7), name


def test_a_model_that_overrides_unroll_alone_gives_the_average_network_its_unroll():
    """The average network runs ``unroll_actor`` only where the class that defines the model's ``unroll`` defines it
    too: a user's subclass that changes ``unroll`` (here: halved logits) is not bypassed by the inherited one."""
    _, env, policy = build(dict(type='lstm', hidden_size=16))
    _, windows = collect_batches(policy, env)
    assert windows.episode_start[1:].any()
    with torch.no_grad():
        plain = policy._unroll_windows(windows)[2]['logit']

    class Halved(type(policy.model)):
        def unroll(self, obs, state, starts):
            out = super().unroll(obs, state, starts)
            return dict(out, logit=out['logit'] / 2)

    policy._average_model.__class__ = Halved
    with torch.no_grad():
        halved = policy._unroll_windows(windows)[2]['logit']
    torch.testing.assert_close(halved, plain / 2, rtol=0, atol=1e-6)
