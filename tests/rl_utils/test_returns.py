"""Specification of ``acframe.rl_utils.returns``: n-step returns, GAE and time-limit folding."""

import math

import pytest
import torch

from acframe.rl_utils import fold_truncation, gae, normalize_advantages, nstep_return, vtrace

T, B = 7, 5
GAMMA = 0.95


def make_segment(seed: int = 0):
    """Random (T, B) segment with terminals strictly inside it."""
    gen = torch.Generator().manual_seed(seed)
    done = (torch.rand(T, B, generator=gen) < 0.2).double()
    done[2, 1] = done[4, 3] = 1.0
    return dict(
        rewards=torch.randn(T, B, generator=gen, dtype=torch.float64),
        values=torch.randn(T, B, generator=gen, dtype=torch.float64),
        bootstrap_value=torch.randn(B, generator=gen, dtype=torch.float64),
        discounts=GAMMA * (1.0 - done),
    )


def reference_nstep_return(rewards, discounts, bootstrap_value):
    """R_t = sum_{k=t}^{T-1} (prod_{i=t}^{k-1} gamma_i) r_k + (prod_{i=t}^{T-1} gamma_i) V(x_T), per element."""
    r, g, bv = rewards.tolist(), discounts.tolist(), bootstrap_value.tolist()
    n_t, n_b = len(r), len(bv)
    out = [[0.0] * n_b for _ in range(n_t)]
    for b in range(n_b):
        for t in range(n_t):
            total, weight = 0.0, 1.0
            for k in range(t, n_t):
                total += weight * r[k][b]
                weight *= g[k][b]
            out[t][b] = total + weight * bv[b]
    return torch.tensor(out, dtype=torch.float64)


def reference_gae(rewards, values, bootstrap_value, discounts, lambda_):
    """A_t = sum_{k>=t} (prod_{i=t}^{k-1} gamma_i lambda) delta_k, per element."""
    r, v, g, bv = rewards.tolist(), values.tolist(), discounts.tolist(), bootstrap_value.tolist()
    n_t, n_b = len(r), len(bv)
    out = [[0.0] * n_b for _ in range(n_t)]
    for b in range(n_b):
        value = [v[t][b] for t in range(n_t)] + [bv[b]]
        delta = [r[t][b] + g[t][b] * value[t + 1] - value[t] for t in range(n_t)]
        for t in range(n_t):
            total, weight = 0.0, 1.0
            for k in range(t, n_t):
                total += weight * delta[k]
                weight *= g[k][b] * lambda_
            out[t][b] = total
    return torch.tensor(out, dtype=torch.float64)


def test_nstep_return_matches_the_discounted_sum():
    """Each step's return sums its discounted rewards to the segment end plus the discounted bootstrap."""
    s = make_segment(seed=1)
    out = nstep_return(s["rewards"], s["discounts"], s["bootstrap_value"])
    assert out.shape == (T, B)
    torch.testing.assert_close(out, reference_nstep_return(s["rewards"], s["discounts"], s["bootstrap_value"]))


@pytest.mark.parametrize("lambda_", [0.0, 0.7, 0.95, 1.0])
def test_gae_matches_the_sum_of_discounted_td_errors(lambda_):
    """A_t equals the (gamma_t lambda)-discounted sum of TD errors, terminals included."""
    s = make_segment(seed=2)
    out = gae(s["rewards"], s["values"], s["bootstrap_value"], s["discounts"], lambda_)
    torch.testing.assert_close(out, reference_gae(**s, lambda_=lambda_))


def test_gae_with_lambda_one_is_nstep_return_minus_values():
    """lambda = 1 turns GAE into the Monte-Carlo (n-step) advantage R_t - V(x_t)."""
    s = make_segment(seed=3)
    out = gae(s["rewards"], s["values"], s["bootstrap_value"], s["discounts"], 1.0)
    torch.testing.assert_close(out, nstep_return(s["rewards"], s["discounts"], s["bootstrap_value"]) - s["values"])


def test_gae_with_lambda_zero_is_the_one_step_td_error():
    """lambda = 0 gives delta_t = r_t + gamma_t V(x_{t+1}) - V(x_t)."""
    s = make_segment(seed=4)
    values_next = torch.cat([s["values"][1:], s["bootstrap_value"][None]])
    expected = s["rewards"] + s["discounts"] * values_next - s["values"]
    torch.testing.assert_close(gae(s["rewards"], s["values"], s["bootstrap_value"], s["discounts"], 0.0), expected)


def test_targets_carry_no_gradient():
    """Returns and advantages are constants even when values and bootstrap require grad."""
    s = make_segment(seed=5)
    values = s["values"].requires_grad_()
    bootstrap_value = s["bootstrap_value"].requires_grad_()
    assert not gae(s["rewards"], values, bootstrap_value, s["discounts"], 0.9).requires_grad
    assert not nstep_return(s["rewards"], s["discounts"], bootstrap_value).requires_grad
    truncated = torch.zeros(T, B, dtype=torch.bool)
    assert not fold_truncation(s["rewards"], truncated, values, GAMMA).requires_grad


def truncation_case():
    """One env, T = 4: a time limit cuts the episode at t = 1; t = 2, 3 belong to the next episode.

    The segment's value at t = 2 is V(reset obs) = 100, which must *not* be used to bootstrap step 1;
    V(final_obs_1) = 3 must.
    """
    rewards = torch.tensor([[1.0], [2.0], [0.5], [-1.0]], dtype=torch.float64)
    values = torch.tensor([[0.4], [0.7], [100.0], [50.0]], dtype=torch.float64)
    bootstrap_value = torch.tensor([20.0], dtype=torch.float64)
    terminated = torch.zeros(4, 1, dtype=torch.bool)
    truncated = torch.tensor([[False], [True], [False], [False]])
    final_values = torch.full((4, 1), float("nan"), dtype=torch.float64)  # only read where truncated
    final_values[1, 0] = 3.0
    discounts = GAMMA * (1.0 - (terminated | truncated).double())
    folded = fold_truncation(rewards, truncated, final_values, GAMMA)
    return rewards, values, bootstrap_value, discounts, folded


def test_fold_truncation_adds_gamma_times_final_value_only_at_truncated_steps():
    """rewards + gamma * V(final_obs) where truncated, the reward unchanged (even with NaN final values) elsewhere."""
    rewards, _, _, _, folded = truncation_case()
    expected = rewards.clone()
    expected[1, 0] += GAMMA * 3.0
    torch.testing.assert_close(folded, expected)


def test_folded_truncation_bootstraps_from_the_final_observation():
    """With the fold and a zero discount, the truncated step's targets are exactly r + gamma V(final_obs)."""
    rewards, values, bootstrap_value, discounts, folded = truncation_case()
    one_step_target = 2.0 + GAMMA * 3.0

    returns = nstep_return(folded, discounts, bootstrap_value)
    assert returns[1, 0].item() == pytest.approx(one_step_target)
    assert returns[0, 0].item() == pytest.approx(1.0 + GAMMA * one_step_target)
    assert returns[2, 0].item() == pytest.approx(0.5 + GAMMA * (-1.0 + GAMMA * 20.0))  # the new episode

    for lambda_ in (0.0, 0.9, 1.0):
        advantages = gae(folded, values, bootstrap_value, discounts, lambda_)
        assert advantages[1, 0].item() == pytest.approx(one_step_target - 0.7)
        assert math.isfinite(advantages.sum().item())

    on_policy = vtrace(torch.zeros_like(folded), discounts, folded, values, bootstrap_value)
    assert on_policy.vs[1, 0].item() == pytest.approx(one_step_target)
    assert on_policy.pg_advantages[1, 0].item() == pytest.approx(one_step_target - 0.7)


def test_shape_errors_name_the_argument():
    """Mismatched (T, B) shapes raise ValueError naming the offending argument."""
    s = make_segment()
    with pytest.raises(ValueError, match="discounts"):
        nstep_return(s["rewards"], s["discounts"][:-1], s["bootstrap_value"])


def test_normalize_advantages_matches_the_per_element_standard_score():
    """A'_i = (A_i - mean) / (std + eps), mean and unbiased std over every element, written out element by element."""
    advantages = torch.randn(T, B, generator=torch.Generator().manual_seed(3), dtype=torch.float64) * 4.0 + 2.0
    values = [a for row in advantages.tolist() for a in row]
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((a - mean) ** 2 for a in values) / (n - 1))
    expected = torch.tensor([[(a - mean) / (std + 1e-8) for a in row] for row in advantages.tolist()], dtype=torch.float64)
    normalized = normalize_advantages(advantages)
    assert normalized.shape == (T, B)
    assert torch.allclose(normalized, expected, atol=1e-12)
    assert normalized.mean().abs() < 1e-12 and normalized.std() == pytest.approx(1.0, abs=1e-7)


def test_normalize_advantages_leaves_a_single_element_as_it_is():
    one = torch.tensor([3.5])
    assert torch.equal(normalize_advantages(one), one)
