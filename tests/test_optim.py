"""acframe's Adam and RMSprop make the same updates as torch.optim's, without importing torch._dynamo."""
import copy
import subprocess
import sys

import pytest
import torch

from acframe.optim import Adam, RMSprop


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


def test_state_dict_roundtrip_continues_identically():
    """A checkpointed optimizer resumes with the same updates (resume relies on it)."""
    _, _, optimizer = _run(Adam, dict(lr=1e-2))
    state = copy.deepcopy(optimizer.state_dict())  # as a save and load through a file would give
    clone_params = [torch.nn.Parameter(p.detach().clone()) for group in optimizer.param_groups for p in group['params']]
    clone = Adam(clone_params, lr=1e-2)
    clone.load_state_dict(state)
    for params in ([p for g in optimizer.param_groups for p in g['params']], clone_params):
        for p in params:
            p.grad = torch.ones_like(p)
    optimizer.step()
    clone.step()
    originals = [p for g in optimizer.param_groups for p in g['params']]
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
