"""Specification of ACER's models: ``acer_q`` (policy + Q heads) and ``acer_sdn`` (Gaussian policy + SDN)."""
import pytest
import torch
import torch.nn.functional as F

from acframe.models.acer import ACERDiscrete, ACERSDN
from acframe.models.recurrent import RecurrentCore
from acframe.registry import MODEL_REGISTRY

N, OBS, A, D = 7, 5, 3, 2


def test_registered_names():
    assert MODEL_REGISTRY.get('acer_q') is ACERDiscrete
    assert MODEL_REGISTRY.get('acer_sdn') is ACERSDN


@pytest.mark.parametrize('share_encoder', [True, False])
def test_discrete_heads_shapes_and_value_is_policy_weighted_q(share_encoder):
    model = ACERDiscrete(OBS, A, encoder_hidden_size_list=[16, 16], share_encoder=share_encoder)
    obs = torch.randn(N, OBS)
    out = model(obs, mode='compute_actor_critic')
    assert out['logit'].shape == (N, A) and out['q_value'].shape == (N, A) and out['value'].shape == (N,)
    torch.testing.assert_close(out['value'], (F.softmax(out['logit'], -1) * out['q_value']).sum(-1))
    torch.testing.assert_close(model(obs, mode='compute_actor')['logit'], out['logit'])
    critic = model(obs, mode='compute_critic')
    torch.testing.assert_close(critic['value'], out['value'])
    assert (model.actor_encoder is model.critic_encoder) == share_encoder


def test_discrete_shared_body_has_fewer_parameters():
    shared = ACERDiscrete(OBS, A, encoder_hidden_size_list=[16], share_encoder=True)
    separate = ACERDiscrete(OBS, A, encoder_hidden_size_list=[16], share_encoder=False)
    body = sum(p.numel() for p in shared.actor_encoder.parameters())
    assert sum(p.numel() for p in separate.parameters()) - sum(p.numel() for p in shared.parameters()) == body


@pytest.mark.parametrize('sigma_type', ['independent', 'conditioned'])
def test_sdn_shapes(sigma_type):
    model = ACERSDN(OBS, D, encoder_hidden_size_list=[16], sigma_type=sigma_type, init_sigma=0.5)
    obs, actions = torch.randn(N, OBS), torch.randn(N, 4, D)
    out = model(obs, mode='compute_actor_critic', actions=actions)
    assert out['mu'].shape == (N, D) and out['sigma'].shape == (N, D) and out['value'].shape == (N,)
    assert out['q_value'].shape == (N, 4)
    torch.testing.assert_close(out['sigma'], torch.full((N, D), 0.5))
    assert 'q_value' not in model(obs, mode='compute_actor_critic')
    torch.testing.assert_close(model(obs, mode='compute_critic')['value'], out['value'])


def test_sdn_q_is_value_plus_advantage_minus_sampled_mean_advantage():
    """Q~(x, a) = V(x) + A(x, a) - 1/n sum_i A(x, a'_i): with the same a'_i, differences of Q~ are differences of A."""
    torch.manual_seed(0)
    model = ACERSDN(OBS, D, encoder_hidden_size_list=[16], n_action_samples=5)
    obs, actions = torch.randn(N, OBS), torch.randn(N, 2, D)
    q = model(obs, mode='compute_actor_critic', actions=actions)['q_value']
    feature = model.critic_encoder(obs)
    adv = torch.stack([model.advantage(torch.cat([feature, actions[:, k]], -1)).squeeze(-1) for k in range(2)], -1)
    torch.testing.assert_close(q[:, 0] - q[:, 1], adv[:, 0] - adv[:, 1])


def test_sdn_q_averages_to_value_under_the_policy():
    """E_{a~pi} Q~(x, a) = V(x) in expectation over a and the a'_i: the SDN's Q and V are consistent by construction.

    (With many a'_i the sampled mean advantage is close to its expectation, so the check is tight.)"""
    torch.manual_seed(1)
    model = ACERSDN(OBS, D, encoder_hidden_size_list=[16], init_sigma=0.7, n_action_samples=4000)
    obs = torch.randn(3, OBS)
    with torch.no_grad():
        actor = model.compute_actor(obs)
        actions = actor['mu'][:, None] + actor['sigma'][:, None] * torch.randn(3, 4000, D)
        out = model(obs, mode='compute_actor_critic', actions=actions)
    torch.testing.assert_close(out['q_value'].mean(1), out['value'], atol=0.03, rtol=0)


def test_sdn_sampled_actions_carry_no_gradient_to_the_policy():
    model = ACERSDN(OBS, D, encoder_hidden_size_list=[16], share_encoder=False)
    out = model(torch.randn(N, OBS), mode='compute_actor_critic', actions=torch.randn(N, 1, D))
    out['q_value'].sum().backward()
    assert model.mu_head.weight.grad is None and model.log_sigma.grad is None
    assert model.advantage[-1].weight.grad is not None and model.value_head.weight.grad is not None


def test_models_refuse_the_other_action_space():
    with pytest.raises(ValueError, match='acer_sdn'):
        ACERDiscrete(OBS, D, action_space='continuous')
    with pytest.raises(ValueError, match='acer_q'):
        ACERSDN(OBS, A, action_space='discrete')
    with pytest.raises(ValueError, match='actions must be'):
        ACERSDN(OBS, D)(torch.randn(N, OBS), actions=torch.randn(N, D))


def test_separate_recurrent_cores_are_two_shared_core_models_side_by_side():
    """``acer_q`` with ``rnn`` and ``share_encoder=False``: the policy (encoder, core, policy head) and the critic
    (encoder, core, Q head) compute what shared-core models with their weights compute, stepped and unrolled over
    episode starts, from one state ``(B, 2R, H)`` (the policy core's rows first); ``value`` is ``pi . Q`` of the two."""
    torch.manual_seed(0)
    kwargs = dict(encoder_hidden_size_list=[16], rnn=dict(type='lstm', hidden_size=8))
    split = ACERDiscrete(OBS, A, share_encoder=False, **kwargs)
    actor, critic = ACERDiscrete(OBS, A, share_encoder=True, **kwargs), ACERDiscrete(OBS, A, share_encoder=True, **kwargs)
    for name in ('actor_encoder', 'core', 'policy_head'):
        getattr(actor, name).load_state_dict(getattr(split, name).state_dict())
    critic.actor_encoder.load_state_dict(split.critic_encoder.state_dict())
    critic.core.load_state_dict(split.critic_core.state_dict())
    critic.q_head.load_state_dict(split.q_head.state_dict())
    batch, steps = 4, 5
    state = torch.randn(batch, 4, 8)
    assert split.initial_state(batch).shape == (batch, 4, 8)
    obs = torch.randn(batch, OBS)
    out = split.compute_actor_critic(obs, state)
    a, c = actor.compute_actor_critic(obs, state[:, :2]), critic.compute_actor_critic(obs, state[:, 2:])
    torch.testing.assert_close(out['logit'], a['logit'])
    torch.testing.assert_close(out['q_value'], c['q_value'])
    torch.testing.assert_close(out['value'], (torch.softmax(a['logit'], -1) * c['q_value']).sum(-1))
    torch.testing.assert_close(out['state'], torch.cat([a['state'], c['state']], 1))
    torch.testing.assert_close(split.compute_actor(obs, state)['state'], out['state'])  # both cores step
    seq, starts = torch.randn(steps * batch, OBS), torch.zeros(steps, batch, dtype=torch.bool)
    starts[2, 0] = starts[3, 2] = True
    got, ref_a, ref_c = split.unroll(seq, state, starts), actor.unroll(seq, state[:, :2], starts), \
        critic.unroll(seq, state[:, 2:], starts)
    torch.testing.assert_close(got['logit'], ref_a['logit'])
    torch.testing.assert_close(got['q_value'], ref_c['q_value'])
    torch.testing.assert_close(got['ends'], torch.cat([ref_a['ends'], ref_c['ends']], 1))


def test_sdn_with_separate_recurrent_cores_reads_the_policy_core_for_pi_and_the_critic_core_for_v_and_q():
    """``acer_sdn`` with ``rnn`` and ``share_encoder=False``: mu/sigma are a shared-core model's with the policy's
    weights, V and Q~ (same sampled a') one with the critic's; ``unroll``'s ``'feature'`` is the critic core's output,
    from which ``sdn_q`` gives the stepped Q~."""
    torch.manual_seed(0)
    kwargs = dict(encoder_hidden_size_list=[16], rnn=dict(type='gru', hidden_size=8, num_layers=2))
    split = ACERSDN(OBS, D, share_encoder=False, **kwargs)
    actor, critic = ACERSDN(OBS, D, share_encoder=True, **kwargs), ACERSDN(OBS, D, share_encoder=True, **kwargs)
    actor.load_state_dict({k: v for k, v in split.state_dict().items() if not k.startswith('critic_')}, strict=False)
    critic.load_state_dict({k.replace('critic_encoder', 'actor_encoder').replace('critic_core', 'core'): v
                            for k, v in split.state_dict().items()
                            if not k.startswith(('actor_encoder', 'core.'))}, strict=False)
    state, obs, actions = torch.randn(N, 4, 8), torch.randn(N, OBS), torch.randn(N, 3, D)
    torch.manual_seed(1)
    out = split.compute_actor_critic(obs, actions, state)
    a = actor.compute_actor(obs, state[:, :2])
    torch.manual_seed(1)
    c = critic.compute_actor_critic(obs, actions, state[:, 2:])
    torch.testing.assert_close(out['mu'], a['mu'])
    torch.testing.assert_close(out['value'], c['value'])
    # Q~ samples a' ~ pi: the same noise, scaled by each model's own pi; compare with the critic's Q~ at split's pi
    torch.manual_seed(1)
    q = critic.sdn_q(critic._step(obs, state[:, 2:], {})[1], c['value'], out['mu'], out['sigma'], actions)
    torch.testing.assert_close(out['q_value'], q)
    torch.testing.assert_close(out['state'], torch.cat([a['state'], c['state']], 1))
    starts = torch.zeros(3, N, dtype=torch.bool)
    starts[1, 2] = True
    seq = torch.randn(3 * N, OBS)
    got, ref_c = split.unroll(seq, state, starts), critic.unroll(seq, state[:, 2:], starts)
    torch.testing.assert_close(got['feature'], ref_c['feature'])
    torch.testing.assert_close(got['value'], ref_c['value'])
    torch.testing.assert_close(got['mu'], actor.unroll(seq, state[:, :2], starts)['mu'])


@pytest.mark.parametrize('kind', ['lstm', 'gru'])
@pytest.mark.parametrize('share_encoder', [True, False])
@pytest.mark.parametrize('model_cls', [ACERDiscrete, ACERSDN])
def test_unroll_actor_gives_unrolls_action_distribution(model_cls, share_encoder, kind, monkeypatch):
    """``unroll_actor`` (what ACER's average policy network runs: no critic core, no V or Q, no fragment-end states)
    returns ``unroll``'s logits, or mu and sigma, over episode starts inside the sequence and at its first step: a
    GRU's bit for bit (the same padded path), an LSTM's through one lane per column (``_unroll_lanes``), equal to
    float rounding (the fused call runs other lanes; bit for bit on the CPUs measured)."""
    torch.manual_seed(0)
    actions = A if model_cls is ACERDiscrete else D
    model = model_cls(OBS, actions, share_encoder=share_encoder, encoder_hidden_size_list=[16],
                      rnn=dict(type=kind, hidden_size=8, num_layers=2), obs_norm=True)
    lane_calls = []
    one_lane = RecurrentCore._unroll_lanes
    monkeypatch.setattr(RecurrentCore, '_unroll_lanes', lambda *args: lane_calls.append(1) or one_lane(*args))
    steps, batch = 6, 4
    state = torch.randn(batch, model.initial_state(batch).shape[1], 8)
    starts = torch.zeros(steps, batch, dtype=torch.bool)
    starts[0, 1] = starts[2, 0] = starts[3, 2] = starts[4, 0] = True
    seq = torch.randn(steps * batch, OBS)
    full = model.unroll(seq, state, starts)
    assert not lane_calls  # unroll keeps the padded fragments (its fragment-end states value truncated episodes)
    alone = model.unroll_actor(seq, state, starts)
    assert len(lane_calls) == (kind == 'lstm')
    keys = ['logit'] if model_cls is ACERDiscrete else ['mu', 'sigma']
    assert sorted(alone) == sorted(keys)
    for key in keys:
        if kind == 'gru':
            assert torch.equal(alone[key], full[key]), key
        else:
            torch.testing.assert_close(alone[key], full[key], rtol=0, atol=1e-6)
