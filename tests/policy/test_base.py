"""The base Policy's checks of a model's outputs against the model contract (docs/custom_policy.md)."""
import torch


def test_a_models_output_is_checked_against_the_contract_in_words():
    """What each contract break says (None: nothing wrong); NaN/inf only on finite observations (a NaN observation
    is the env's to answer for), a logit's -inf allowed (a mask of the model's own), a one-row sigma broadcast."""
    from acframe.policy.base import all_finite, output_problem

    logit, value = torch.zeros(3, 2), torch.zeros(3)
    assert output_problem({'logit': logit, 'value': value}, 'discrete', 2, ('logit',)) is None
    assert output_problem({'logit': torch.tensor([[0.0, -float('inf')]] * 3)}, 'discrete', 2, ('logit',)) is None
    nan = torch.full((3, 2), float('nan'))
    assert output_problem({'logit': nan}, 'discrete', 2, ('logit',)) == "gave NaN 'logit' on finite observations"
    assert output_problem({'logit': nan}, 'discrete', 2, ('logit',), check_finite=False) is None
    assert output_problem({'logit': logit.long()}, 'discrete', 2, ('logit',)) == \
        "gave 'logit' of dtype torch.int64, not a floating-point tensor"
    assert 'squeeze its last dim' in output_problem({'logit': logit, 'value': value[:, None]}, 'discrete', 2, ('logit',))
    mu, sigma = torch.zeros(3, 1), torch.ones(1)
    assert output_problem({'mu': mu, 'sigma': sigma}, 'continuous', 1, ('mu', 'sigma')) is None  # (broadcast)
    assert output_problem({'mu': mu, 'sigma': -sigma}, 'continuous', 1, ('mu', 'sigma')).startswith(
        "gave a 'sigma' that is not > 0")
    assert output_problem({'mu': mu * float('inf'), 'sigma': sigma}, 'continuous', 1, ('mu', 'sigma')) == \
        "gave non-finite (NaN/inf) 'mu' on finite observations"
    assert all_finite({'a': torch.zeros(2), 'b': torch.ones(2, dtype=torch.uint8)})
    assert not all_finite({'a': torch.tensor([0.0, float('nan')])})
