"""acframe's Adam and RMSprop make the same updates as torch.optim's, without importing torch._dynamo; its
RMSpropTF makes TensorFlow 1.x's RMSprop updates."""
import copy
import math
import subprocess
import sys

import pytest
import torch

from acframe.optim import Adam, RMSprop, RMSpropTF


def _run(optimizer_cls, kwargs, steps=25):
    """Parameters after ``steps`` updates with fixed pseudo-random gradients; the bias skips some steps."""
    generator = torch.Generator().manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(5, 3, generator=generator))
    bias = torch.nn.Parameter(torch.randn(3, generator=generator))
    optimizer = optimizer_cls([weight, bias], **kwargs)
    for step in range(steps):
        optimizer.zero_grad()
        weight.grad = torch.randn(5, 3, generator=generator)
        bias.grad = torch.randn(3, generator=generator) if step % 3 else None
        optimizer.step()
    return weight.detach().clone(), bias.detach().clone(), optimizer


@pytest.mark.parametrize('ours, reference, kwargs', [
    (Adam, torch.optim.Adam, dict(lr=3e-3, eps=1e-8)),
    (Adam, torch.optim.Adam, dict(lr=1e-2, betas=(0.5, 0.9), eps=1e-5)),
    (RMSprop, torch.optim.RMSprop, dict(lr=7e-4, alpha=0.99, eps=1e-5)),
])
def test_updates_match_torch_optim(ours, reference, kwargs):
    mine, theirs = _run(ours, kwargs), _run(reference, kwargs)
    assert torch.allclose(mine[0], theirs[0], atol=1e-6)
    assert torch.allclose(mine[1], theirs[1], atol=1e-6)


def test_rmsprop_tf_matches_tensorflow_update_element_by_element():
    """TF 1.x ``ApplyRMSProp`` (no momentum): ms starts at 1, ``ms ← α ms + (1−α) g²``, ``θ ← θ − lr g / √(ms + eps)``;
    written here per element in plain Python floats."""
    lr, alpha, eps = 7e-4, 0.99, 1e-5
    weight, bias, _ = _run(RMSpropTF, dict(lr=lr, alpha=alpha, eps=eps))
    generator = torch.Generator().manual_seed(0)
    theta = {'w': torch.randn(5, 3, generator=generator).flatten().tolist(), 'b': torch.randn(3, generator=generator).tolist()}
    ms = {'w': [1.0] * 15, 'b': [1.0] * 3}
    for step in range(25):
        grads = {'w': torch.randn(5, 3, generator=generator).flatten().tolist()}
        if step % 3:
            grads['b'] = torch.randn(3, generator=generator).tolist()
        for name, g in grads.items():
            for i, gi in enumerate(g):
                ms[name][i] = alpha * ms[name][i] + (1 - alpha) * gi * gi
                theta[name][i] -= lr * gi / math.sqrt(ms[name][i] + eps)
    assert torch.allclose(weight.flatten(), torch.tensor(theta['w']), atol=1e-6)
    assert torch.allclose(bias, torch.tensor(theta['b']), atol=1e-6)


def test_rmsprop_tf_first_step_is_small_where_torch_rmsprop_jumps():
    """With a tiny gradient, TF's RMSprop moves ~lr·g (ms starts at 1) while PyTorch's moves ~lr/√(1−α)."""
    for cls, expected in ((RMSpropTF, 7e-4 * 1e-4 / math.sqrt(0.99 + 0.01 * 1e-8 + 1e-5)), (RMSprop, 7e-4 * 1e-4 / (math.sqrt(0.01 * 1e-8) + 1e-5))):
        p = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
        optimizer = cls([p], lr=7e-4, alpha=0.99, eps=1e-5)
        p.grad = torch.full((1,), 1e-4, dtype=torch.float64)
        optimizer.step()
        assert abs(-p.item() - expected) < 1e-9 * max(1.0, expected)
    assert 7e-4 * 1e-4 / (math.sqrt(0.01 * 1e-8) + 1e-5) > 100 * 7e-4 * 1e-4


@pytest.mark.parametrize('cls', [Adam, RMSprop, RMSpropTF])
def test_state_dict_roundtrip_continues_identically_for_every_optimizer(cls):
    """A checkpointed optimizer resumes with the same updates (resume relies on it)."""
    _, _, optimizer = _run(cls, dict(lr=1e-2))
    state = copy.deepcopy(optimizer.state_dict())
    clone_params = [torch.nn.Parameter(p.detach().clone()) for group in optimizer.param_groups for p in group['params']]
    clone = cls(clone_params, lr=1e-2)
    clone.load_state_dict(state)
    originals = [p for g in optimizer.param_groups for p in g['params']]
    for p in originals + clone_params:
        p.grad = torch.full_like(p, 0.5)
    optimizer.step()
    clone.step()
    assert all(torch.equal(a, b) for a, b in zip(originals, clone_params))


def test_a_training_step_does_not_import_dynamo():
    code = (
        "import sys, torch\n"
        "from acframe.optim import Adam\n"
        "m = torch.nn.Linear(3, 2); o = Adam(m.parameters())\n"
        "o.zero_grad(); m(torch.ones(1, 3)).sum().backward(); o.step(); o.state_dict()\n"
        "print('torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == 'False'


@pytest.mark.parametrize('scale', [1e-3, 10.0])
def test_clip_grad_norm_is_torch_clip_grad_norm_bit_for_bit(scale):
    # acframe's clip_grad_norm (the learn modes' 'clip_norm') skips torch's per-call grouping of the gradients: the
    # clipped gradients and the returned norm must be torch's to the bit, clipped (scale 10) or not (1e-3)
    from acframe.policy.base import clip_grad_norm, clip_gradients

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))
    grads = [torch.randn_like(p) * scale for p in model.parameters()]
    ours, theirs = [p.detach().clone().requires_grad_() for p in model.parameters()], list(model.parameters())
    for a, b, g in zip(ours, theirs, grads):
        a.grad, b.grad = g.clone(), g.clone()
    norm = clip_grad_norm(ours, 0.5)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 0.5)
    assert norm == float(expected) and (norm > 0.5) == (scale > 1)
    for a, b in zip(ours, theirs):
        assert torch.equal(a.grad, b.grad)
    for a, g in zip(ours, grads):
        a.grad = g.clone()
    assert clip_gradients(ours, 'clip_norm', 0.5) == norm
    assert clip_grad_norm([torch.nn.Parameter(torch.ones(2))], 0.5) == 0.0  # no gradient: nothing to clip
