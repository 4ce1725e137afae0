"""Specification of ``acframe.models.VAC``: output shapes per action space, shared vs separate bodies."""
import pytest
import torch

from acframe.models import VAC, make_distribution
from acframe.registry import MODEL_REGISTRY

B, OBS = 5, 6


def test_registered_as_vac():
    assert MODEL_REGISTRY.get('vac') is VAC


def test_discrete_shapes():
    model = VAC(OBS, 3, 'discrete')
    obs = torch.randn(B, OBS)
    assert model(obs, mode='compute_actor')['logit'].shape == (B, 3)
    assert model(obs, mode='compute_critic')['value'].shape == (B,)
    both = model(obs, mode='compute_actor_critic')
    assert both['logit'].shape == (B, 3) and both['value'].shape == (B,)
    assert make_distribution(both, 'discrete').sample().shape == (B,)


@pytest.mark.parametrize('sigma_type', ['independent', 'conditioned'])
def test_continuous_shapes_and_initial_sigma(sigma_type):
    model = VAC(OBS, 2, 'continuous', sigma_type=sigma_type, init_sigma=0.5)
    out = model(torch.randn(B, OBS), mode='compute_actor_critic')
    assert out['mu'].shape == (B, 2) and out['sigma'].shape == (B, 2) and out['value'].shape == (B,)
    assert torch.allclose(out['sigma'], torch.full((B, 2), 0.5))
    assert make_distribution(out, 'continuous').sample().shape == (B, 2)


def test_mu_bound_keeps_the_gaussian_mean_inside_the_action_bounds():
    model = VAC(OBS, 2, 'continuous', mu_bound=2.0, orthogonal_init=False)
    with torch.no_grad():
        model.actor_out.bias.fill_(50.0)  # a raw mean far outside the bounds
    mu = model(torch.randn(B, OBS), mode='compute_actor')['mu']
    assert (mu <= 2.0).all() and (mu > 1.9).all()
    small = VAC(OBS, 2, 'continuous', mu_bound=2.0)
    unbounded = VAC(OBS, 2, 'continuous')
    unbounded.load_state_dict(small.state_dict())
    obs = torch.randn(B, OBS)
    # near zero the bound is (almost) the identity: it does not change a freshly initialised policy
    torch.testing.assert_close(small(obs)['mu'], unbounded(obs)['mu'], atol=1e-4, rtol=1e-3)


def test_multi_discrete_shapes():
    model = VAC(OBS, [3, 2, 4], 'multi_discrete')
    out = model(torch.randn(B, OBS), mode='compute_actor')
    assert out['logit'].shape == (B, 9)
    action = make_distribution(out, 'multi_discrete', model.nvec).sample()
    assert action.shape == (B, 3)
    assert (action < torch.tensor([3, 2, 4])).all()


def test_time_major_inputs_keep_their_leading_dims():
    model = VAC(OBS, 2, 'discrete')
    out = model(torch.randn(7, B, OBS))
    assert out['logit'].shape == (7, B, 2) and out['value'].shape == (7, B)


def test_shared_encoder_is_one_body():
    model = VAC(OBS, 2, 'discrete', share_encoder=True)
    assert model.actor_encoder is model.critic_encoder
    # the value loss moves the actor's features too
    model.compute_critic(torch.randn(B, OBS))['value'].sum().backward()
    assert model.actor_encoder[0].weight.grad is not None


def test_separate_bodies_do_not_share_parameters():
    model = VAC(OBS, 2, 'discrete', share_encoder=False, encoder_hidden_size_list=[16, 16])
    assert model.actor_encoder is not model.critic_encoder
    model.compute_critic(torch.randn(B, OBS))['value'].sum().backward()
    assert model.actor_encoder[0].weight.grad is None
    assert model.critic_encoder[0].weight.grad is not None
    shared = VAC(OBS, 2, 'discrete', share_encoder=True, encoder_hidden_size_list=[16, 16])
    count = lambda m: sum(p.numel() for p in m.parameters())
    assert count(model) - count(shared) == count(model.critic_encoder)


def test_head_hidden_layers_and_activation():
    model = VAC(OBS, 2, 'discrete', actor_head_hidden_size=8, critic_head_hidden_size=4, activation='relu')
    out = model(torch.randn(B, OBS))
    assert out['logit'].shape == (B, 2) and out['value'].shape == (B,)
    hidden_sizes = {m.out_features for m in model.modules() if isinstance(m, torch.nn.Linear)}
    assert {8, 4} <= hidden_sizes
    assert any(isinstance(m, torch.nn.ReLU) for m in model.modules())


@pytest.mark.parametrize('kwargs, message', [
    (dict(action_space='box'), "policy.model.action_space 'box'"),
    (dict(sigma_type='learned'), "policy.model.sigma_type 'learned'"),
    (dict(activation='gelu'), "policy.model.activation 'gelu'"),
])
def test_bad_arguments_name_the_config_key(kwargs, message):
    with pytest.raises(ValueError, match=message):
        VAC(OBS, 2, **kwargs)


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match='unknown mode'):
        VAC(OBS, 2)(torch.randn(B, OBS), mode='compute_q')


@pytest.mark.parametrize('kind, layers', [('lstm', 1), ('gru', 2)])
def test_separate_recurrent_cores_are_two_shared_core_models_side_by_side(kind, layers):
    """``rnn`` with ``share_encoder=False``: the actor (encoder, core, actor head) and the critic (encoder, core, value
    head) each compute what a shared-core VAC with the same weights computes, one step at a time and over a sequence
    with episode starts inside (both unroll paths), from one state ``(B, 2R, H)``: the actor core's rows first."""
    torch.manual_seed(0)
    rnn = dict(type=kind, hidden_size=8, num_layers=layers)
    kwargs = dict(obs_shape=5, action_shape=3, encoder_hidden_size_list=[16], rnn=rnn, critic_head_hidden_size=8)
    split = VAC(share_encoder=False, **kwargs)
    actor, critic = VAC(share_encoder=True, **kwargs), VAC(share_encoder=True, **kwargs)
    actor.actor_encoder.load_state_dict(split.actor_encoder.state_dict())
    actor.core.load_state_dict(split.core.state_dict())
    actor.actor_out.load_state_dict(split.actor_out.state_dict())
    critic.actor_encoder.load_state_dict(split.critic_encoder.state_dict())
    critic.core.load_state_dict(split.critic_core.state_dict())
    critic.critic_head.load_state_dict(split.critic_head.state_dict())
    assert not set(map(id, split.core.parameters())) & set(map(id, split.critic_core.parameters()))
    batch, steps, rows = 4, 6, actor.initial_state(1).shape[1]
    state = torch.randn(batch, 2 * rows, 8)
    assert split.initial_state(batch).shape == (batch, 2 * rows, 8)
    obs = torch.randn(batch, 5)
    out = split.compute_actor_critic(obs, state)
    a, c = actor.compute_actor(obs, state[:, :rows]), critic.compute_critic(obs, state[:, rows:])
    assert torch.allclose(out['logit'], a['logit'], atol=1e-6) and torch.allclose(out['value'], c['value'], atol=1e-6)
    assert torch.allclose(out['state'], torch.cat([a['state'], c['state']], 1), atol=1e-6)
    for mode in ('compute_actor', 'compute_critic'):  # each steps both cores: the state stays whole
        assert torch.allclose(split(obs, mode, state)['state'], out['state'], atol=1e-6)
    seq = torch.randn(steps * batch, 5)
    starts = torch.zeros(steps, batch, dtype=torch.bool)
    starts[2, 1] = starts[4, 1] = starts[3, 2] = starts[0, 3] = True
    for ends in (True, False):
        got = split.unroll(seq, state, starts, ends=ends)
        ref_a, ref_c = actor.unroll(seq, state[:, :rows], starts, ends=ends), critic.unroll(seq, state[:, rows:], starts, ends=ends)
        assert torch.allclose(got['logit'], ref_a['logit'], atol=1e-5)
        assert torch.allclose(got['value'], ref_c['value'], atol=1e-5)
        if ends:
            assert torch.allclose(got['ends'], torch.cat([ref_a['ends'], ref_c['ends']], 1), atol=1e-5)
    # and the sequence equals stepping it, resetting the state where an episode starts
    step_state, logits, values = state, [], []
    for t in range(steps):
        step_state = torch.where(starts[t].view(batch, 1, 1), torch.zeros_like(step_state), step_state)
        step = split.compute_actor_critic(seq[t * batch:(t + 1) * batch], step_state)
        step_state = step['state']
        logits.append(step['logit'])
        values.append(step['value'])
    got = split.unroll(seq, state, starts, ends=False)
    assert torch.allclose(got['logit'], torch.cat(logits), atol=1e-5)
    assert torch.allclose(got['value'], torch.cat(values), atol=1e-5)
