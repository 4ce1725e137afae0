"""Specification of ``acframe.rl_utils.ppo``: the clipped surrogate and the (clipped) value loss, per element."""

import math

import pytest
import torch

from acframe.rl_utils import ppo_policy_loss, ppo_value_loss

N = 64
EPS = 0.2


def make_minibatch(seed: int = 0):
    """Ratios spread well beyond [1 - eps, 1 + eps] on both sides, advantages of both signs."""
    gen = torch.Generator().manual_seed(seed)
    log_prob_old = torch.randn(N, generator=gen, dtype=torch.float64) - 1.0
    log_prob = log_prob_old + 0.6 * torch.randn(N, generator=gen, dtype=torch.float64)
    advantages = torch.randn(N, generator=gen, dtype=torch.float64)
    return log_prob, log_prob_old, advantages


def reference_clip_objective(log_prob, log_prob_old, advantages, eps):
    """L^CLIP = mean_t min(r_t A_t, clip(r_t, 1 - eps, 1 + eps) A_t), r_t = pi / pi_old (eq. 7), one element at a time."""
    total = 0.0
    for lp, lpo, adv in zip(log_prob.tolist(), log_prob_old.tolist(), advantages.tolist()):
        ratio = math.exp(lp) / math.exp(lpo)
        clipped = min(max(ratio, 1.0 - eps), 1.0 + eps)
        total += min(ratio * adv, clipped * adv)
    return total / len(advantages)


def reference_clipped_value_loss(values, values_old, returns, eps_v):
    """mean_t max((V - R)^2, (V_old + clip(V - V_old, -eps_v, eps_v) - R)^2), one element at a time."""
    total = 0.0
    for v, vo, r in zip(values.tolist(), values_old.tolist(), returns.tolist()):
        clipped = vo + min(max(v - vo, -eps_v), eps_v)
        total += max((v - r) ** 2, (clipped - r) ** 2)
    return total / len(values)


def test_the_loss_is_the_negated_clipped_surrogate_of_the_paper():
    log_prob, log_prob_old, advantages = make_minibatch()
    ratio = (log_prob - log_prob_old).exp()
    assert (ratio > 1 + EPS).any() and (ratio < 1 - EPS).any()  # both clips are exercised
    out = ppo_policy_loss(log_prob, log_prob_old, advantages, EPS)
    assert out.loss.item() == pytest.approx(-reference_clip_objective(log_prob, log_prob_old, advantages, EPS), abs=1e-12)


def test_the_gradient_vanishes_exactly_where_the_clip_binds():
    """d(-L^CLIP)/d log pi_t = -r_t A_t / N where the unclipped term is the min, 0 where the clipped one is."""
    log_prob, log_prob_old, advantages = make_minibatch(1)
    log_prob.requires_grad_(True)
    ppo_policy_loss(log_prob, log_prob_old, advantages, EPS).loss.backward()
    for lp, lpo, adv, grad in zip(log_prob.tolist(), log_prob_old.tolist(), advantages.tolist(), log_prob.grad.tolist()):
        ratio = math.exp(lp - lpo)
        clipped_binds = (adv > 0 and ratio > 1 + EPS) or (adv < 0 and ratio < 1 - EPS)
        expected = 0.0 if clipped_binds else -ratio * adv / N
        assert grad == pytest.approx(expected, abs=1e-12)


def test_the_diagnostics_are_the_k3_kl_and_the_clipped_fraction():
    log_prob, log_prob_old, advantages = make_minibatch(2)
    out = ppo_policy_loss(log_prob, log_prob_old, advantages, EPS)
    ratios = [math.exp(lp - lpo) for lp, lpo in zip(log_prob.tolist(), log_prob_old.tolist())]
    assert out.approx_kl.item() == pytest.approx(sum((r - 1) - math.log(r) for r in ratios) / N, abs=1e-12)
    assert out.clip_fraction.item() == pytest.approx(sum(abs(r - 1) > EPS for r in ratios) / N)
    assert not out.approx_kl.requires_grad


def test_at_the_old_policy_the_loss_is_minus_the_mean_advantage():
    _, log_prob_old, advantages = make_minibatch(3)
    out = ppo_policy_loss(log_prob_old.clone(), log_prob_old, advantages, EPS)
    assert out.loss.item() == pytest.approx(-advantages.mean().item(), abs=1e-12)
    assert out.approx_kl.item() == 0.0 and out.clip_fraction.item() == 0.0


def test_the_value_loss_without_clipping_is_the_mean_squared_error():
    gen = torch.Generator().manual_seed(4)
    values, values_old, returns = (torch.randn(N, generator=gen, dtype=torch.float64) for _ in range(3))
    expected = sum((v - r) ** 2 for v, r in zip(values.tolist(), returns.tolist())) / N
    assert ppo_value_loss(values, values_old, returns).item() == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize('eps_v', [0.05, 0.5, 5.0])
def test_value_clipping_takes_the_larger_of_the_clipped_and_unclipped_errors(eps_v):
    gen = torch.Generator().manual_seed(5)
    values_old = torch.randn(N, generator=gen, dtype=torch.float64)
    values = values_old + torch.randn(N, generator=gen, dtype=torch.float64)
    returns = torch.randn(N, generator=gen, dtype=torch.float64)
    loss = ppo_value_loss(values, values_old, returns, eps_v)
    assert loss.item() == pytest.approx(reference_clipped_value_loss(values, values_old, returns, eps_v), abs=1e-12)
    if eps_v == 5.0:  # no value moved that far: clipping changes nothing
        assert loss.item() == pytest.approx(ppo_value_loss(values, values_old, returns).item(), abs=1e-12)
