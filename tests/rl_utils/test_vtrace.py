"""Specification of ``acframe.rl_utils.vtrace`` (Espeholt et al. 2018, eq. 1)."""

import math

import pytest
import torch

from acframe.rl_utils import VTraceReturns, nstep_return, vtrace

T, B = 7, 5
GAMMA = 0.9


def make_segment(seed: int = 0, log_rho_scale: float = 1.5):
    """Random (T, B) segment with terminals inside it and widely spread importance weights."""
    gen = torch.Generator().manual_seed(seed)
    done = (torch.rand(T, B, generator=gen) < 0.2).double()
    done[2, 1] = done[4, 3] = 1.0  # at least two terminals strictly inside the segment
    return dict(
        log_rhos=log_rho_scale * torch.randn(T, B, generator=gen, dtype=torch.float64),
        discounts=GAMMA * (1.0 - done),
        rewards=torch.randn(T, B, generator=gen, dtype=torch.float64),
        values=torch.randn(T, B, generator=gen, dtype=torch.float64),
        bootstrap_value=torch.randn(B, generator=gen, dtype=torch.float64),
    )


def reference_vtrace(log_rhos, discounts, rewards, values, bootstrap_value, lambda_, rho_clip, c_clip, pg_rho_clip):
    """Eq. 1 in its *sum* form, element by element with Python floats:
    v_s = V(x_s) + sum_{t>=s} (prod_{i=s}^{t-1} gamma_i c_i) delta_t."""

    def clip(x, bound):
        return x if bound is None else min(bound, x)

    lr, g, r, v, bv = (x.tolist() for x in (log_rhos, discounts, rewards, values, bootstrap_value))
    n_t, n_b = len(r), len(bv)
    vs = [[0.0] * n_b for _ in range(n_t)]
    pg = [[0.0] * n_b for _ in range(n_t)]
    for b in range(n_b):
        value = [v[t][b] for t in range(n_t)] + [bv[b]]  # V(x_0) .. V(x_T)
        rho = [math.exp(lr[t][b]) for t in range(n_t)]
        c = [lambda_ * clip(rho[t], c_clip) for t in range(n_t)]
        delta = [clip(rho[t], rho_clip) * (r[t][b] + g[t][b] * value[t + 1] - value[t]) for t in range(n_t)]
        for s in range(n_t):
            total = 0.0
            for t in range(s, n_t):
                weight = 1.0
                for i in range(s, t):
                    weight *= g[i][b] * c[i]
                total += weight * delta[t]
            vs[s][b] = value[s] + total
        for s in range(n_t):
            vs_next = vs[s + 1][b] if s + 1 < n_t else bv[b]
            pg[s][b] = clip(rho[s], pg_rho_clip) * (r[s][b] + g[s][b] * vs_next - value[s])
    return torch.tensor(vs, dtype=torch.float64), torch.tensor(pg, dtype=torch.float64)


@pytest.mark.parametrize(
    "lambda_, rho_clip, c_clip, pg_rho_clip",
    [
        (1.0, 1.0, 1.0, 1.0),  # IMPALA defaults
        (0.8, 1.5, 0.7, 2.0),  # lambda < 1, distinct clips
        (0.9, None, None, None),  # no clipping (None)
        (1.0, float("inf"), 1.0, float("inf")),  # no clipping (inf)
    ],
)
def test_vtrace_matches_the_sum_form_of_eq1(lambda_, rho_clip, c_clip, pg_rho_clip):
    """vs and pg_advantages equal a per-element evaluation of eq. 1 (sum form), with terminals and clipping."""
    segment = make_segment(seed=1)
    rhos = segment["log_rhos"].exp()
    assert (rhos > 2.0).any() and (rhos < 0.7).any(), "test data must activate every clip"

    out = vtrace(**segment, lambda_=lambda_, rho_clip=rho_clip, c_clip=c_clip, pg_rho_clip=pg_rho_clip)
    expected_vs, expected_pg = reference_vtrace(
        **segment, lambda_=lambda_, rho_clip=rho_clip, c_clip=c_clip, pg_rho_clip=pg_rho_clip
    )
    assert isinstance(out, VTraceReturns)
    assert out.vs.shape == (T, B) and out.pg_advantages.shape == (T, B)
    torch.testing.assert_close(out.vs, expected_vs)
    torch.testing.assert_close(out.pg_advantages, expected_pg)


def test_vtrace_on_policy_with_lambda_one_is_the_nstep_return():
    """With pi = mu (log_rhos = 0) and lambda = 1, v_s is the n-step return bootstrapped at the segment end."""
    segment = make_segment(seed=2)
    segment["log_rhos"] = torch.zeros(T, B, dtype=torch.float64)
    out = vtrace(**segment)
    expected = nstep_return(segment["rewards"], segment["discounts"], segment["bootstrap_value"])
    torch.testing.assert_close(out.vs, expected)


def test_vtrace_terminal_step_cuts_the_recursion():
    """Rewards, values and the bootstrap after a terminal step do not change the targets up to that step."""
    segment = make_segment(seed=3)
    segment["discounts"][:, 0] = GAMMA
    segment["discounts"][3, 0] = 0.0  # env 0 terminates at t = 3
    before = vtrace(**segment)
    changed = {k: v.clone() for k, v in segment.items()}
    changed["rewards"][4:, 0] += 10.0
    changed["values"][4:, 0] -= 5.0
    changed["bootstrap_value"][0] += 7.0
    after = vtrace(**changed)
    torch.testing.assert_close(after.vs[:4, 0], before.vs[:4, 0])
    torch.testing.assert_close(after.pg_advantages[:4, 0], before.pg_advantages[:4, 0])


def test_vtrace_targets_carry_no_gradient():
    """vs and pg_advantages are constants: a value loss (V - vs)^2 differentiates only through V."""
    segment = make_segment(seed=4)
    values = segment.pop("values").requires_grad_()
    log_rhos = segment.pop("log_rhos").requires_grad_()
    bootstrap_value = segment.pop("bootstrap_value").requires_grad_()
    out = vtrace(log_rhos=log_rhos, values=values, bootstrap_value=bootstrap_value, **segment)
    assert not out.vs.requires_grad and not out.pg_advantages.requires_grad

    ((values - out.vs) ** 2).sum().backward()
    torch.testing.assert_close(values.grad, 2 * (values - out.vs).detach())
    assert log_rhos.grad is None and bootstrap_value.grad is None


def test_vtrace_rejects_mismatched_shapes():
    """A (B,) bootstrap value is required; a (T, B) one is an error that names the argument."""
    segment = make_segment(seed=5)
    segment["bootstrap_value"] = torch.zeros(T, B, dtype=torch.float64)
    with pytest.raises(ValueError, match="bootstrap_value"):
        vtrace(**segment)
