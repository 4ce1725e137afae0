"""reverse_scan: out_t = inputs_t + coefficients_t * out_{t+1}, out_T = initial."""
import torch

from acframe.rl_utils.scan import reverse_scan


def test_reverse_scan_matches_the_expanded_sum():
    """out_t = sum_{k>=t} (prod_{i=t}^{k-1} c_i) x_k + (prod_{i=t}^{T-1} c_i) initial, per element."""
    generator = torch.Generator().manual_seed(0)
    steps, batch = 7, 5
    inputs = torch.randn(steps, batch, generator=generator)
    coefficients = torch.rand(steps, batch, generator=generator)
    coefficients[3, 1] = 0.0  # an episode boundary cuts the sum
    initial = torch.randn(batch, generator=generator)
    out = reverse_scan(inputs, coefficients, initial)
    for b in range(batch):
        for t in range(steps):
            expected, product = 0.0, 1.0
            for k in range(t, steps):
                expected += product * float(inputs[k, b])
                product *= float(coefficients[k, b])
            expected += product * float(initial[b])
            assert abs(float(out[t, b]) - expected) < 1e-5


def test_reverse_scan_leaves_its_inputs_untouched():
    inputs, coefficients, initial = torch.ones(3, 2), torch.full((3, 2), 0.5), torch.zeros(2)
    reverse_scan(inputs, coefficients, initial)
    assert torch.equal(inputs, torch.ones(3, 2)) and torch.equal(initial, torch.zeros(2))
