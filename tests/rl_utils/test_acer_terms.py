"""Specification of ``acframe.rl_utils.acer`` (Wang et al. 2017): Retrace, the truncated policy gradient
with bias correction, and the efficient trust region."""

import math

import pytest
import torch
import torch.nn.functional as F

from acframe.rl_utils import (
    acer_policy_loss_continuous,
    acer_policy_loss_discrete,
    acer_trust_region_loss,
    acer_value_target,
    discrete_kl,
    grad_wrt_stats,
    nstep_return,
    q_opc,
    retrace,
    truncated_trace,
    trust_region_projection,
)

T, B, A = 6, 4, 3
GAMMA = 0.9


def make_segment(seed: int = 0):
    """Random (T, B) Retrace inputs with terminals inside the segment and spread importance weights."""
    gen = torch.Generator().manual_seed(seed)
    done = (torch.rand(T, B, generator=gen) < 0.2).double()
    done[2, 1] = done[3, 2] = 1.0
    rho = torch.exp(1.5 * torch.randn(T, B, generator=gen, dtype=torch.float64))
    return dict(
        rewards=torch.randn(T, B, generator=gen, dtype=torch.float64),
        discounts=GAMMA * (1.0 - done),
        q_taken=torch.randn(T, B, generator=gen, dtype=torch.float64),
        values=torch.randn(T, B, generator=gen, dtype=torch.float64),
        bootstrap_value=torch.randn(B, generator=gen, dtype=torch.float64),
        c=truncated_trace(rho),
    )


def make_discrete_batch(seed: int = 0):
    """Random categorical policy pi, behaviour mu (with rare actions, so rho spans both sides of c), Q, Q_ret."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(T, B, A, generator=gen, dtype=torch.float64)
    behaviour_probs = F.softmax(2.5 * torch.randn(T, B, A, generator=gen, dtype=torch.float64), dim=-1)
    actions = torch.multinomial(behaviour_probs.reshape(-1, A), 1, generator=gen).reshape(T, B)
    q_values = torch.randn(T, B, A, generator=gen, dtype=torch.float64)
    values = (F.softmax(logits, -1) * q_values).sum(-1)
    q_ret = torch.randn(T, B, generator=gen, dtype=torch.float64)
    return logits, behaviour_probs, actions, q_values, values, q_ret


# --------------------------------------------------------------------------------------------------------------
# truncated_trace, retrace, q_opc
# --------------------------------------------------------------------------------------------------------------


def test_truncated_trace_is_min_one_rho_and_dth_root_for_continuous_actions():
    """c = min(1, rho) for discrete actions and min(1, rho^(1/d)) for d-dimensional actions."""
    rho = torch.tensor([[0.0, 0.25, 1.0, 4.0]], dtype=torch.float64)
    torch.testing.assert_close(truncated_trace(rho), torch.tensor([[0.0, 0.25, 1.0, 1.0]], dtype=torch.float64))
    torch.testing.assert_close(
        truncated_trace(rho, action_dim=2), torch.tensor([[0.0, 0.5, 1.0, 1.0]], dtype=torch.float64)
    )


def reference_retrace(rewards, discounts, q_taken, values, bootstrap_value, c):
    """Sum form of Q_ret_t = r_t + gamma_t [c_{t+1}(Q_ret_{t+1} - Q_{t+1}) + V_{t+1}], per element:

    Q_ret_t = sum_{k>=t} (prod_{i=t}^{k-1} gamma_i c_{i+1}) (r_k + gamma_k V_{k+1} - gamma_k c_{k+1} Q_{k+1}),
    with V_T = bootstrap_value and c_T = 0 (no trace past the segment end).
    """
    r, g, q, v, bv, cc = (x.tolist() for x in (rewards, discounts, q_taken, values, bootstrap_value, c))
    n_t, n_b = len(r), len(bv)
    out = [[0.0] * n_b for _ in range(n_t)]
    for b in range(n_b):
        value = [v[t][b] for t in range(n_t)] + [bv[b]]
        q_next = [q[t][b] for t in range(n_t)] + [0.0]
        trace = [cc[t][b] for t in range(n_t)] + [0.0]
        for t in range(n_t):
            total, weight = 0.0, 1.0
            for k in range(t, n_t):
                total += weight * (r[k][b] + g[k][b] * value[k + 1] - g[k][b] * trace[k + 1] * q_next[k + 1])
                weight *= g[k][b] * trace[k + 1]
            out[t][b] = total
    return torch.tensor(out, dtype=torch.float64)


def test_retrace_matches_the_expanded_definition():
    """Q_ret equals the per-element expansion of its definition, with terminals and truncated traces."""
    s = make_segment(seed=1)
    assert (s["c"] < 1).any() and (s["c"] == 1).any(), "test data must contain truncated and untruncated traces"
    out = retrace(**s)
    assert out.shape == (T, B)
    torch.testing.assert_close(out, reference_retrace(**s))


def test_retrace_with_rho_one_and_q_equal_v_is_the_nstep_return():
    """On-policy (c = 1) the Q and V terms cancel when Q(x_t, a_t) = V(x_t): Q_ret is the n-step return."""
    s = make_segment(seed=2)
    s["c"] = truncated_trace(torch.ones(T, B, dtype=torch.float64))
    s["q_taken"] = s["values"].clone()
    expected = nstep_return(s["rewards"], s["discounts"], s["bootstrap_value"])
    torch.testing.assert_close(retrace(**s), expected)


def test_retrace_with_c_one_is_nstep_return_minus_discounted_taken_advantages():
    """With c = 1 in general, Q_ret_t = R_t - sum_{k>t} (prod_{i=t}^{k-1} gamma_i)(Q(x_k,a_k) - V(x_k)).

    That is Q_opc, so q_opc must return the same."""
    s = make_segment(seed=3)
    s["c"] = torch.ones(T, B, dtype=torch.float64)
    g, adv = s["discounts"].tolist(), (s["q_taken"] - s["values"]).tolist()
    correction = [[0.0] * B for _ in range(T)]
    for b in range(B):
        for t in range(T):
            weight = 1.0
            for k in range(t + 1, T):
                weight *= g[k - 1][b]
                correction[t][b] += weight * adv[k][b]
    expected = nstep_return(s["rewards"], s["discounts"], s["bootstrap_value"]) - torch.tensor(
        correction, dtype=torch.float64
    )
    torch.testing.assert_close(retrace(**s), expected)
    s.pop("c")
    torch.testing.assert_close(q_opc(**s), expected)


def test_retrace_with_c_zero_is_the_one_step_td_target():
    """c = 0 cuts every trace: Q_ret_t = r_t + gamma_t V(x_{t+1})."""
    s = make_segment(seed=4)
    s["c"] = torch.zeros(T, B, dtype=torch.float64)
    values_next = torch.cat([s["values"][1:], s["bootstrap_value"][None]])
    torch.testing.assert_close(retrace(**s), s["rewards"] + s["discounts"] * values_next)


def test_retrace_target_carries_no_gradient():
    """Q_ret is a constant even if Q, V and the bootstrap require grad."""
    s = make_segment(seed=5)
    for key in ("q_taken", "values", "bootstrap_value"):
        s[key].requires_grad_()
    assert not retrace(**s).requires_grad
    assert not q_opc(**{k: v for k, v in s.items() if k != "c"}).requires_grad


def test_value_target_matches_per_element_definition():
    """V_target_t = min(1, rho_t)(Q_ret_t - Q(x_t, a_t)) + V(x_t), element by element, without gradient."""
    gen = torch.Generator().manual_seed(13)
    rho = torch.exp(1.5 * torch.randn(T, B, generator=gen, dtype=torch.float64))
    q_ret, q_taken, values = (torch.randn(T, B, generator=gen, dtype=torch.float64) for _ in range(3))
    assert (rho > 1).any() and (rho < 1).any()
    q_taken.requires_grad_()
    out = acer_value_target(rho, q_ret, q_taken, values)
    assert not out.requires_grad
    expected = [
        [min(1.0, rho[t, b].item()) * (q_ret[t, b].item() - q_taken[t, b].item()) + values[t, b].item() for b in range(B)]
        for t in range(T)
    ]
    torch.testing.assert_close(out, torch.tensor(expected, dtype=torch.float64))


# --------------------------------------------------------------------------------------------------------------
# discrete policy loss
# --------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("c_bar", [1.0, 10.0])
def test_discrete_loss_matches_per_action_reference(c_bar):
    """Element by element, L = -[min(c, rho_a) log pi(a)(Q_ret - V)
    + sum_b [1 - c/rho_b]_+ pi(b) log pi(b)(Q(b) - V)]."""
    logits, mu, actions, q_values, values, q_ret = make_discrete_batch(seed=1)
    log_probs = F.log_softmax(logits, -1)
    rho = F.softmax(logits, -1) / mu
    assert (rho > c_bar).any() and (rho < c_bar).any(), "test data must activate truncation and correction"

    out = acer_policy_loss_discrete(log_probs, mu, actions, q_values, values, q_ret, c_bar=c_bar)
    lp, m, a, q, v, qr = (x.tolist() for x in (log_probs, mu, actions, q_values, values, q_ret))
    expected = [[0.0] * B for _ in range(T)]
    for t in range(T):
        for b in range(B):
            pi = [math.exp(x) for x in lp[t][b]]
            rho_a = pi[a[t][b]] / m[t][b][a[t][b]]
            total = min(c_bar, rho_a) * lp[t][b][a[t][b]] * (qr[t][b] - v[t][b])
            for action in range(A):
                rho_b = pi[action] / m[t][b][action]
                total += max(0.0, 1.0 - c_bar / rho_b) * pi[action] * lp[t][b][action] * (q[t][b][action] - v[t][b])
            expected[t][b] = -total
    torch.testing.assert_close(out, torch.tensor(expected, dtype=torch.float64))


def test_discrete_bias_correction_equals_brute_force_sum_over_actions():
    """With Q_ret = V the truncated term vanishes; what remains is -sum_b [1 - c/rho_b]_+ pi(b) log pi(b)(Q(b) - V)."""
    c_bar = 1.0
    logits, mu, actions, q_values, values, _ = make_discrete_batch(seed=2)
    log_probs = F.log_softmax(logits, -1)
    out = acer_policy_loss_discrete(log_probs, mu, actions, q_values, values, q_ret=values, c_bar=c_bar)
    expected = torch.zeros(T, B, dtype=torch.float64)
    for action in range(A):  # brute force: one action at a time
        pi_b = log_probs[..., action].exp()
        weight = torch.clamp(1.0 - c_bar / (pi_b / mu[..., action]), min=0.0)
        expected -= weight * pi_b * log_probs[..., action] * (q_values[..., action] - values)
    assert (expected != 0).any()
    torch.testing.assert_close(out, expected)


def test_discrete_loss_gradient_wrt_logits_is_the_acer_estimator():
    """d L / d logits = -[min(c, rho_a)(e_a - pi)(Q_ret - V) + sum_b [1 - c/rho_b]_+ pi_b (e_b - pi)(Q_b - V)]."""
    c_bar = 1.0
    logits, mu, actions, q_values, values, q_ret = make_discrete_batch(seed=3)
    logits = logits.requires_grad_()
    loss = acer_policy_loss_discrete(F.log_softmax(logits, -1), mu, actions, q_values, values, q_ret, c_bar)
    grad = grad_wrt_stats(loss, logits)

    pi = F.softmax(logits, -1).detach()
    one_hot = F.one_hot(actions, A).double()
    rho = pi / mu
    rho_a = (rho * one_hot).sum(-1, keepdim=True)
    expected = -(
        torch.clamp(rho_a, max=c_bar) * (one_hot - pi) * (q_ret - values)[..., None]
        + sum(
            torch.clamp(1 - c_bar / rho[..., b : b + 1], min=0)
            * pi[..., b : b + 1]
            * (F.one_hot(torch.tensor(b), A).double() - pi)
            * (q_values[..., b : b + 1] - values[..., None])
            for b in range(A)
        )
    )
    torch.testing.assert_close(grad, expected)


def test_discrete_loss_without_truncation_is_plain_importance_sampling():
    """c_bar = None: L = -rho_a log pi(a)(Q_ret - V), no correction term."""
    logits, mu, actions, q_values, values, q_ret = make_discrete_batch(seed=4)
    log_probs = F.log_softmax(logits, -1)
    log_prob_a = log_probs.gather(-1, actions[..., None]).squeeze(-1)
    rho_a = log_prob_a.exp() / mu.gather(-1, actions[..., None]).squeeze(-1)
    out = acer_policy_loss_discrete(log_probs, mu, actions, q_values, values, q_ret, c_bar=None)
    torch.testing.assert_close(out, -rho_a * log_prob_a * (q_ret - values))


def test_discrete_loss_sends_no_gradient_to_critic_inputs():
    """Q, V, Q_ret and mu are constants of the policy loss; only the policy log-probs get a gradient."""
    logits, mu, actions, q_values, values, q_ret = make_discrete_batch(seed=5)
    tensors = [t.clone().requires_grad_() for t in (logits, mu, q_values, values, q_ret)]
    logits, mu, q_values, values, q_ret = tensors
    acer_policy_loss_discrete(F.log_softmax(logits, -1), mu, actions, q_values, values, q_ret).sum().backward()
    assert logits.grad is not None
    assert all(t.grad is None for t in (mu, q_values, values, q_ret))


def bandit():
    """A 4-armed bandit: pi, a behaviour mu with a rare arm (rho = 17.5 > 10), deterministic rewards Q."""
    logits = torch.tensor([0.5, -0.3, 1.2, 0.0], dtype=torch.float64)
    mu = torch.tensor([0.5, 0.3, 0.02, 0.18], dtype=torch.float64)
    q = torch.tensor([1.0, -0.5, 2.0, 0.3], dtype=torch.float64)
    return logits, mu, q


def on_policy_gradient(logits, q):
    """Exact sum_a pi(a) grad_logits log pi(a) Q(a) = grad_logits sum_a pi(a) Q(a)."""
    logits = logits.clone().requires_grad_()
    (F.softmax(logits, -1) * q).sum().backward()
    return logits.grad


def per_sample_objective_gradients(logits, mu, q, actions, c_bar):
    """-dL/dlogits for each sampled action (samples laid out as (T = 1, B = N)); Q_ret = Q(a) in a bandit."""
    n = actions.shape[-1]
    stats = logits.expand(1, n, -1).clone().requires_grad_()
    pi = F.softmax(logits, -1)
    loss = acer_policy_loss_discrete(
        F.log_softmax(stats, -1),
        mu.expand(1, n, -1),
        actions,
        q.expand(1, n, -1),
        (pi * q).sum().expand(1, n),
        q[actions],
        c_bar=c_bar,
    )
    return -grad_wrt_stats(loss, stats)[0]  # (N, A)


@pytest.mark.parametrize("c_bar", [0.5, 10.0])
def test_discrete_truncation_with_correction_is_unbiased_in_exact_expectation(c_bar):
    """sum_a mu(a) * estimator(a) equals the on-policy gradient exactly, however small c is."""
    logits, mu, q = bandit()
    all_actions = torch.arange(len(q))[None]  # every arm once
    gradients = per_sample_objective_gradients(logits, mu, q, all_actions, c_bar)
    torch.testing.assert_close((mu[:, None] * gradients).sum(0), on_policy_gradient(logits, q))


@pytest.mark.parametrize("c_bar", [0.5, 10.0])
def test_discrete_truncation_with_correction_is_unbiased_on_sampled_bandit(c_bar):
    """Averaging the estimator over 200k actions drawn from mu recovers sum_a pi(a) grad log pi(a) Q(a)."""
    logits, mu, q = bandit()
    gen = torch.Generator().manual_seed(0)
    actions = torch.multinomial(mu, 200_000, replacement=True, generator=gen)[None]
    estimate = per_sample_objective_gradients(logits, mu, q, actions, c_bar).mean(0)
    torch.testing.assert_close(estimate, on_policy_gradient(logits, q), atol=0.01, rtol=0)


# --------------------------------------------------------------------------------------------------------------
# continuous policy loss
# --------------------------------------------------------------------------------------------------------------


def test_continuous_loss_matches_its_formula():
    """L = -[min(c, rho) log pi(a) A_ret + [1 - c/rho']_+ log pi(a') A'], with rho' = 0 giving no correction."""
    gen = torch.Generator().manual_seed(6)
    lp_a, lp_s, adv_ret, adv_s = (torch.randn(T, B, generator=gen, dtype=torch.float64) for _ in range(4))
    rho_a = torch.exp(1.5 * torch.randn(T, B, generator=gen, dtype=torch.float64))
    rho_s = torch.exp(1.5 * torch.randn(T, B, generator=gen, dtype=torch.float64))
    rho_s[0, 0] = 0.0
    c_bar = 1.0
    out = acer_policy_loss_continuous(lp_a, lp_s, rho_a, rho_s, adv_ret, adv_s, c_bar)
    expected = [
        [
            -(
                min(c_bar, rho_a[t, b].item()) * lp_a[t, b].item() * adv_ret[t, b].item()
                + (max(0.0, 1 - c_bar / rho_s[t, b].item()) if rho_s[t, b] > 0 else 0.0)
                * lp_s[t, b].item()
                * adv_s[t, b].item()
            )
            for b in range(B)
        ]
        for t in range(T)
    ]
    torch.testing.assert_close(out, torch.tensor(expected, dtype=torch.float64))


def test_continuous_truncation_with_sampled_correction_is_unbiased_on_gaussian_bandit():
    """1-D bandit Q(a) = -(a - 1)^2, pi = N(m, s), mu = N(0, 1): the estimator's mean w.r.t. (m, log s)
    is grad E_pi[Q] = (-2 (m - 1), -2 s^2)."""
    m, s, c_bar, n = 0.3, 0.8, 1.0, 400_000
    gen = torch.Generator().manual_seed(0)
    stats = torch.tensor([m, math.log(s)], dtype=torch.float64).expand(1, n, 2).clone().requires_grad_()
    pi = torch.distributions.Normal(stats[..., 0], stats[..., 1].exp())
    mu = torch.distributions.Normal(torch.zeros(1, n, dtype=torch.float64), torch.ones(1, n, dtype=torch.float64))
    taken = torch.randn(1, n, generator=gen, dtype=torch.float64)  # a ~ mu
    sampled = m + s * torch.randn(1, n, generator=gen, dtype=torch.float64)  # a' ~ pi
    value = -((m - 1) ** 2 + s**2)

    def q(a):
        return -((a - 1) ** 2)

    log_prob_taken, log_prob_sampled = pi.log_prob(taken), pi.log_prob(sampled)
    loss = acer_policy_loss_continuous(
        log_prob_taken,
        log_prob_sampled,
        (log_prob_taken - mu.log_prob(taken)).exp(),
        (log_prob_sampled - mu.log_prob(sampled)).exp(),
        q(taken) - value,
        q(sampled) - value,
        c_bar,
    )
    rho = (log_prob_taken - mu.log_prob(taken)).exp()
    assert 0.1 < (rho > c_bar).double().mean() < 0.9, "truncation must be active"
    estimate = -grad_wrt_stats(loss, stats)[0].mean(0)
    expected = torch.tensor([-2 * (m - 1), -2 * s**2], dtype=torch.float64)
    torch.testing.assert_close(estimate, expected, atol=0.03, rtol=0)


# --------------------------------------------------------------------------------------------------------------
# trust region
# --------------------------------------------------------------------------------------------------------------


def test_discrete_kl_and_its_gradient():
    """KL(pi_avg || pi) >= 0, zero at pi = pi_avg, and its gradient w.r.t. logits is pi - pi_avg."""
    gen = torch.Generator().manual_seed(7)
    avg_logits = torch.randn(T, B, A, generator=gen, dtype=torch.float64)
    logits = torch.randn(T, B, A, generator=gen, dtype=torch.float64).requires_grad_()
    kl = discrete_kl(avg_logits, logits)
    assert kl.shape == (T, B) and (kl >= 0).all()
    expected = (F.softmax(avg_logits, -1) * (F.log_softmax(avg_logits, -1) - F.log_softmax(logits, -1))).sum(-1)
    torch.testing.assert_close(kl, expected)
    torch.testing.assert_close(grad_wrt_stats(kl, logits), (F.softmax(logits, -1) - F.softmax(avg_logits, -1)).detach())
    torch.testing.assert_close(discrete_kl(avg_logits, avg_logits), torch.zeros(T, B, dtype=torch.float64))


def test_trust_region_projection_keeps_linearised_kl_below_delta():
    """After projection k.z <= delta everywhere, with equality where the constraint was active (k.g > delta)."""
    gen = torch.Generator().manual_seed(8)
    g = 3 * torch.randn(T, B, A, generator=gen, dtype=torch.float64)
    k = torch.randn(T, B, A, generator=gen, dtype=torch.float64)
    delta = 0.5
    active = (k * g).sum(-1) > delta
    assert active.any() and (~active).any()
    z = trust_region_projection(g, k, delta)
    k_dot_z = (k * z).sum(-1)
    assert (k_dot_z <= delta + 1e-9).all()
    torch.testing.assert_close(k_dot_z[active], torch.full_like(k_dot_z[active], delta))


def test_trust_region_projection_leaves_g_unchanged_when_inside():
    """Where k.g <= delta (or k = 0), z is exactly g."""
    gen = torch.Generator().manual_seed(9)
    g = 3 * torch.randn(T, B, A, generator=gen, dtype=torch.float64)
    k = torch.randn(T, B, A, generator=gen, dtype=torch.float64)
    k[0, 0] = 0.0
    delta = 0.5
    inside = (k * g).sum(-1) <= delta
    z = trust_region_projection(g, k, delta)
    assert torch.equal(z[inside], g[inside]) and torch.equal(z[0, 0], g[0, 0])


def test_trust_region_projection_matches_eq12_per_element():
    """z = g - max(0, (k.g - delta)/||k||^2) k, evaluated element by element with Python floats."""
    gen = torch.Generator().manual_seed(10)
    g = torch.randn(T, B, A, generator=gen, dtype=torch.float64)
    k = torch.randn(T, B, A, generator=gen, dtype=torch.float64)
    delta = 0.1
    z = trust_region_projection(g, k, delta)
    for t in range(T):
        for b in range(B):
            gl, kl = g[t, b].tolist(), k[t, b].tolist()
            scale = max(0.0, (sum(x * y for x, y in zip(kl, gl)) - delta) / sum(x * x for x in kl))
            assert z[t, b].tolist() == pytest.approx([x - scale * y for x, y in zip(gl, kl)])


def test_trust_region_loss_gradient_is_minus_projected_z():
    """d L^TR / d logits = -z with g = -dL/dlogits and k = pi - pi_avg.

    With a huge delta the constraint never binds and L^TR has the plain loss gradient."""
    logits, mu, actions, q_values, values, q_ret = make_discrete_batch(seed=11)
    avg_logits = logits + 0.3 * torch.randn(T, B, A, generator=torch.Generator().manual_seed(12), dtype=torch.float64)
    weight = torch.eye(A, dtype=torch.float64).requires_grad_()  # a one-layer "network" producing the stats
    stats = logits @ weight
    loss = acer_policy_loss_discrete(F.log_softmax(stats, -1), mu, actions, q_values, values, q_ret)
    kl = discrete_kl(avg_logits, stats)

    surrogate = acer_trust_region_loss(loss, kl, stats, delta=0.01)
    g = -grad_wrt_stats(loss, stats)
    k = (F.softmax(logits, -1) - F.softmax(avg_logits, -1)).detach()
    z = trust_region_projection(g, k, 0.01)
    assert not torch.allclose(z, g), "the constraint must be active somewhere"
    torch.testing.assert_close(grad_wrt_stats(surrogate, stats), -z)

    loose_surrogate = acer_trust_region_loss(loss, kl, stats, delta=1e9)
    (loose_grad,) = torch.autograd.grad(loose_surrogate.sum(), weight, retain_graph=True)
    (plain_grad,) = torch.autograd.grad(loss.sum(), weight)
    torch.testing.assert_close(loose_grad, plain_grad)
