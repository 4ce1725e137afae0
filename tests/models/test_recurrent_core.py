"""Specification of ``acframe.models.recurrent.RecurrentCore`` and of the recurrent VAC (``policy.model.rnn``).

The learner's ``unroll`` (one call over a sequence; with episode starts inside, the episode fragments side by side in
one padded batch) must give what the actors' ``step`` gives step by step, with the state zeroed before every step
that starts an episode: outputs, fragment-end states and every gradient.
"""
import pytest
import torch

from acframe.models import VAC
from acframe.models.recurrent import RecurrentCore

T, B, D, H = 11, 4, 5, 8


def stepped(core, x, state, starts):
    """The reference: ``step`` once per time step, the state zeroed where an episode starts; the state after every
    step."""
    outs, after = [], []
    for t in range(x.shape[0]):
        state = torch.where(starts[t].view(-1, 1, 1), torch.zeros_like(state), state)
        out, state = core.step(x[t], state)
        outs.append(out)
        after.append(state)
    return torch.stack(outs), torch.stack(after)


@pytest.mark.parametrize('kind, layers', [('lstm', 1), ('lstm', 2), ('gru', 1), ('gru', 3)])
@pytest.mark.parametrize('p_start', [0.0, 0.25, 1.0])
def test_unroll_equals_stepping_with_resets_at_episode_starts(kind, layers, p_start):
    torch.manual_seed(0)
    core = RecurrentCore(D, kind, H, layers).double()
    x = torch.randn(T, B, D, dtype=torch.double)
    state = torch.randn(B, core.state_rows, H, dtype=torch.double)
    starts = torch.rand(T, B) < p_start
    starts[3, 1] = p_start > 0  # a start inside the sequence (with p_start > 0)
    out, ends = core.unroll(x, state, starts)
    ref_out, ref_after = stepped(core, x, state, starts)
    assert torch.allclose(out, ref_out, atol=1e-12)  # (float64: the fused cells and the module agree to rounding)
    # ``ends`` holds the state after each fragment's last step (the next step starts an episode, or the end)
    last = torch.zeros(T, B, dtype=torch.bool)
    last[-1] = True
    last[:-1] = starts[1:]
    assert torch.allclose(ends[last], ref_after[last], atol=1e-12)
    assert (ends[~last] == 0).all()


def test_the_state_given_matters_until_the_first_episode_start():
    torch.manual_seed(0)
    core = RecurrentCore(D, 'lstm', H)
    x = torch.randn(T, B, D)
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[6] = True
    a, _ = core.unroll(x, torch.randn(B, 2, H), starts)
    b, _ = core.unroll(x, torch.zeros(B, 2, H), starts)
    assert (a[:6] - b[:6]).abs().max() > 1e-3  # the start state reaches every step before the reset ...
    assert torch.equal(a[6:], b[6:])  # ... and none after it


@pytest.mark.parametrize('dtype, tol', [(torch.double, 1e-10), (torch.float, 1e-6)])
@pytest.mark.parametrize('kind, layers', [('lstm', 1), ('lstm', 2), ('gru', 1), ('gru', 2)])
def test_gradients_flow_through_the_unroll_as_through_stepping(kind, layers, dtype, tol):
    """Every gradient (inputs, start state, weights) through the outputs and the fragment-end states equals the
    per-step reference's: the padding rows add nothing (float32: to ``tol`` relative to the largest gradient)."""
    torch.manual_seed(0)
    core = RecurrentCore(D, kind, H, layers).to(dtype)
    x = torch.randn(T, B, D, dtype=dtype, requires_grad=True)
    state = torch.randn(B, core.state_rows, H, dtype=dtype, requires_grad=True)
    starts = torch.rand(T, B) < 0.3
    starts[2, 0] = True
    last = torch.zeros(T, B, dtype=torch.bool)
    last[-1] = True
    last[:-1] = starts[1:]
    w_out = torch.randn(T, B, H, dtype=dtype)
    w_ends = torch.randn(T, B, core.state_rows, H, dtype=dtype) * last[..., None, None]
    grads = []
    for run in (lambda: core.unroll(x, state, starts), lambda: stepped(core, x, state, starts)):
        out, after = run()
        loss = (out * w_out).sum() + (after * w_ends).sum()
        grads.append(torch.autograd.grad(loss, [x, state] + list(core.parameters())))
    for got, want in zip(*grads):
        assert torch.allclose(got, want, rtol=0, atol=tol * max(1.0, want.abs().max().item()))


@pytest.mark.parametrize('kind', ['lstm', 'gru'])
def test_float32_outputs_equal_stepping_with_many_episode_starts(kind):
    """The shipped setting (float32, 32 steps of 8 envs, a start in a quarter of the rows): outputs and fragment-end
    states to 1e-6."""
    torch.manual_seed(1)
    core = RecurrentCore(16, kind, 32)
    x = torch.randn(32, 8, 16)
    state = torch.randn(8, core.state_rows, 32)
    starts = torch.rand(32, 8) < 0.05
    out, ends = core.unroll(x, state, starts)
    ref_out, ref_after = stepped(core, x, state, starts)
    last = torch.zeros(32, 8, dtype=torch.bool)
    last[-1] = True
    last[:-1] = starts[1:]
    assert torch.allclose(out, ref_out, rtol=0, atol=1e-6)
    assert torch.allclose(ends[last], ref_after[last], rtol=0, atol=1e-6)


def test_a_vac_without_rnn_is_the_feed_forward_vac_bit_for_bit():
    obs = torch.randn(7, 4)
    torch.manual_seed(3)
    plain = VAC(4, 2)
    torch.manual_seed(3)
    off = VAC(4, 2, rnn=dict(type=None, hidden_size=32, num_layers=2))
    assert off.core is None and not off.recurrent
    for key, value in plain.state_dict().items():
        assert torch.equal(value, off.state_dict()[key])
    assert torch.equal(plain(obs)['logit'], off(obs)['logit']) and torch.equal(plain(obs)['value'], off(obs)['value'])


@pytest.mark.parametrize('action_space, shape', [('discrete', 3), ('continuous', 2)])
def test_a_recurrent_vac_steps_as_it_unrolls(action_space, shape):
    torch.manual_seed(0)
    model = VAC(4, shape, action_space, encoder_hidden_size_list=[16], rnn=dict(type='gru', hidden_size=8))
    obs = torch.randn(T, B, 4)
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[0] = starts[4, 2] = True
    state = model.initial_state(B)
    out = model.unroll(obs.view(T * B, 4), state, starts)
    key = 'logit' if action_space == 'discrete' else 'mu'
    for t in range(T):
        state = torch.where(starts[t].view(-1, 1, 1), torch.zeros_like(state), state)
        step = model.compute_actor_critic(obs[t], state)
        assert torch.allclose(out[key].view(T, B, -1)[t], step[key], atol=1e-6)
        assert torch.allclose(out['value'].view(T, B)[t], step['value'], atol=1e-6)
        state = step['state']


def test_a_recurrent_vac_needs_its_state_with_one_core_or_two():
    for share in (True, False):  # (False: the actor and the critic each have a core, the state both cores' rows)
        model = VAC(4, 2, share_encoder=share, rnn=dict(type='lstm'))
        assert (model.critic_core is None) == share and model.initial_state(3).shape == (3, 2 if share else 4, 64)
        with pytest.raises(ValueError, match='needs its state'):
            model.compute_actor(torch.randn(3, 4))


def _starts_of_every_kind(steps: int, batch: int) -> torch.Tensor:
    """Episode starts at the first row, mid-sequence, on adjacent rows, on the last row, and a column without one."""
    starts = torch.zeros(steps, batch, dtype=torch.bool)
    starts[0, 0] = starts[5, 0] = True  # the first row (the state given is zeroed), then mid-sequence
    starts[3, 1] = starts[4, 1] = starts[5, 1] = True  # adjacent starts (fragments of one step)
    starts[steps - 1, 2] = True  # a start on the last row
    # column 3: no start at all
    starts[1, 4] = starts[steps - 2, 4] = True  # the second row, the one before the last
    return starts


@pytest.mark.parametrize('dtype, tol', [(torch.double, 1e-12), (torch.float, 1e-6)])
@pytest.mark.parametrize('layers', [1, 2])
def test_an_lstm_unroll_without_fragment_ends_equals_the_padded_one_outputs_and_gradients(layers, dtype, tol):
    """``unroll(..., ends=False)`` (an LSTM: one lane per column, a reset row before each start) gives the padded
    fragments' outputs and every gradient (inputs, start state, weights) with the same weights and batch."""
    torch.manual_seed(0)
    core = RecurrentCore(D, 'lstm', H, layers).to(dtype)
    steps, batch = 9, 5
    starts = _starts_of_every_kind(steps, batch)
    x = torch.randn(steps, batch, D, dtype=dtype, requires_grad=True)
    state = torch.randn(batch, core.state_rows, H, dtype=dtype, requires_grad=True)
    w_out = torch.randn(steps, batch, H, dtype=dtype)
    results = []
    for ends in (True, False):
        out, frag_ends = core.unroll(x, state, starts, ends=ends)
        assert (frag_ends is None) == (not ends)
        grads = torch.autograd.grad((out * w_out).sum(), [x, state] + list(core.parameters()))
        results.append((out, grads))
    (padded, padded_grads), (lanes, lanes_grads) = results
    assert torch.allclose(lanes, padded, rtol=0, atol=tol)
    ref_out, _ = stepped(core, x.detach(), state.detach(), starts)
    assert torch.allclose(lanes, ref_out, rtol=0, atol=tol)
    for got, want in zip(lanes_grads, padded_grads):
        assert torch.isfinite(got).all()
        assert torch.allclose(got, want, rtol=0, atol=tol * max(1.0, want.abs().max().item()))
    state_grad = lanes_grads[1].abs().sum((1, 2))
    assert state_grad[0] == 0 and (state_grad[1:] > 0).all()  # the state given reaches a column until its first start
    assert core.reset_weight.grad is None and 'reset_weight' not in core.state_dict()  # not learned, not saved


@pytest.mark.parametrize('kind', ['lstm', 'gru'])
def test_unroll_without_fragment_ends_returns_none_for_them_on_every_path(kind):
    torch.manual_seed(0)
    core = RecurrentCore(D, kind, H)
    x, state = torch.randn(T, B, D), torch.randn(B, core.state_rows, H)
    for starts in (torch.zeros(T, B, dtype=torch.bool), _starts_of_every_kind(T, B + 1)[:, :B]):
        out, frag_ends = core.unroll(x, state, starts, ends=False)
        assert frag_ends is None
        assert torch.allclose(out, core.unroll(x, state, starts)[0], rtol=0, atol=1e-6)


@pytest.mark.parametrize('obs_kind', ['vector', 'dict'])
@pytest.mark.parametrize('action_space, shape, head', [('discrete', 3, 0), ('continuous', 2, 16)])
@pytest.mark.parametrize('layers', [1, 2])
def test_a_recurrent_vac_unroll_on_its_lanes_equals_the_padded_one_outputs_and_gradients(obs_kind, action_space, shape,
                                                                                         head, layers):
    """``VAC.unroll(..., ends=False)`` of an LSTM with starts inside gathers the observations into the lanes and runs
    the encoder and the heads on the lanes' rows (``RecurrentCore.lanes`` / ``run_lanes``); with the same weights and
    batch its outputs and every gradient (weights, start state) equal the padded fragments' path (``ends=True``), a
    start at step 0 included."""
    torch.manual_seed(0)
    obs_shape = {'a': 3, 'b': 2} if obs_kind == 'dict' else 5
    model = VAC(obs_shape, shape, action_space, encoder_hidden_size_list=[16], actor_head_hidden_size=head,
                critic_head_hidden_size=head, rnn=dict(type='lstm', hidden_size=H, num_layers=layers), obs_norm=True)
    if obs_kind == 'vector':
        model.obs_normalizer.update(torch.randn(64, 5) * 3 + 1)
    steps, batch = 9, 5
    starts = _starts_of_every_kind(steps, batch)
    obs = ({'a': torch.randn(steps * batch, 3), 'b': torch.randn(steps * batch, 2)} if obs_kind == 'dict'
           else torch.randn(steps * batch, 5))
    state = torch.randn(batch, model.core.state_rows, H, requires_grad=True)
    assert model.core.lanes(starts) is not None and model.core.lanes(torch.zeros_like(starts)) is None
    results = []
    for ends in (True, False):
        out = model.unroll(obs, state, starts, ends=ends)
        assert ('ends' in out) == ends
        torch.manual_seed(1)  # (the same weights of the outputs in both: drawn after the outputs, from one seed)
        weights = {k: torch.randn_like(v) for k, v in sorted(out.items()) if k != 'ends'}
        loss = sum((out[k] * w).sum() for k, w in weights.items() if out[k].requires_grad)
        grads = torch.autograd.grad(loss, [state] + [p for p in model.parameters() if p.requires_grad])
        results.append(({k: v for k, v in out.items() if k != 'ends'}, grads))
    (padded, padded_grads), (lanes, lanes_grads) = results
    assert padded.keys() == lanes.keys()
    for key in padded:
        assert lanes[key].shape == padded[key].shape, key
        assert torch.allclose(lanes[key], padded[key], rtol=0, atol=1e-6), key
    for got, want in zip(lanes_grads, padded_grads):
        assert torch.isfinite(got).all()
        assert torch.allclose(got, want, rtol=0, atol=1e-6 * max(1.0, want.abs().max().item()))
    assert lanes_grads[0].abs().sum() > 0  # the state given reaches the columns without a start at step 0


@pytest.mark.parametrize('kind, layers', [('lstm', 1), ('lstm', 2), ('gru', 1), ('gru', 2)])
def test_step_gives_the_fused_cells_numbers_bit_for_bit(kind, layers):
    """``step`` (the collect and eval modes' path; one GRU layer returns a view of its output as the state) equals
    the fused cells of ``torch`` on the module's weights, stacked as ``(B, R, H)``, bit for bit."""
    torch.manual_seed(0)
    core = RecurrentCore(D, kind, H, layers)
    x, state = torch.randn(B, D), torch.randn(B, core.state_rows, H)
    out, new = core.step(x, state)
    weights, hs, cs, inp = core.rnn._flat_weights, [], [], x
    for layer in range(layers):
        w = weights[4 * layer:4 * layer + 4]
        if kind == 'lstm':
            inp, c = torch.lstm_cell(inp, (state[:, layer], state[:, layers + layer]), *w)
            cs.append(c)
        else:
            inp = torch.gru_cell(inp, state[:, layer], *w)
        hs.append(inp)
    assert new.shape == (B, core.state_rows, H)
    assert torch.equal(out, inp) and torch.equal(new, torch.stack(hs + cs, 1))


@pytest.mark.parametrize('kind, layers', [('lstm', 1), ('lstm', 2), ('gru', 1), ('gru', 2)])
def test_every_fused_call_is_given_contiguous_initial_states(monkeypatch, kind, layers):
    """cuDNN refuses an initial state that is not contiguous ('rnn: hx is not contiguous'; the CPU kernels take
    it): every path of ``unroll`` (one call, the padded fragments, the lanes) hands the fused call contiguous
    ``h0`` / ``c0`` (a GPU learner of a recurrent A2C, IMPALA or ACER failed on the padded fragments' strided view)."""
    calls = []

    def checking(fused):
        def call(seq, hx, *args):
            for part in (hx if isinstance(hx, (list, tuple)) else [hx]):
                assert part.is_contiguous(), (fused.__name__, part.shape, part.stride())
            calls.append(fused.__name__)
            return fused(seq, hx, *args)
        return call

    monkeypatch.setattr(torch, 'lstm', checking(torch.lstm))
    monkeypatch.setattr(torch, 'gru', checking(torch.gru))
    torch.manual_seed(0)
    core = RecurrentCore(D, kind, H, layers)
    x, state = torch.randn(T, B, D), torch.randn(B, core.state_rows, H)
    starts = _starts_of_every_kind(T, B + 1)[:, :B]
    for ends in (True, False):
        core.unroll(x, state, starts, ends=ends)
    assert len(calls) == 2 * layers  # the padded fragments, then the lanes (an LSTM) or the fragments again (a GRU)
