"""The base Policy's checks of a model's outputs against the model contract (docs/custom_policy.md)."""
import pytest
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


class NormedDropoutModel(torch.nn.Module):
    """A user's model with batch norm and dropout on its way to V: one row in train mode is an error in BatchNorm1d,
    and a train-mode dropout draws from the random state."""

    def __init__(self, obs_shape, action_shape, **model_keys):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(int(obs_shape), 16), torch.nn.BatchNorm1d(16),
                                        torch.nn.Dropout(0.5), torch.nn.Tanh())
        self.logit, self.value = torch.nn.Linear(16, int(action_shape)), torch.nn.Linear(16, 1)
        self.critic_modes = []  # the train mode of each compute_critic call

    def forward(self, obs, mode='compute_actor_critic'):
        hidden = self.body(obs)
        out = {'value': self.value(hidden).squeeze(-1)}
        if mode == 'compute_critic':
            if getattr(self, 'fail', False):
                raise RuntimeError('a bug in compute_critic')
            self.critic_modes.append(self.training)
        else:
            out['logit'] = self.logit(hidden)
        return out


def test_the_bootstrap_of_truncations_and_its_first_batch_probe_run_in_eval_mode_and_change_nothing():
    """With no truncation in a batch, compute_critic is still checked once (a wrong shape was found only at the first
    truncation, late in a run): on one row, in eval mode as the bootstrap itself runs (a batch-norm model in train
    mode refused one row; a dropout in train mode drew from the random state, so the run's draws depended on it; a
    few final observations moved batch norm's running statistics), and the model's train mode is put back."""
    import gymnasium as gym
    import numpy as np

    from acframe import MODEL_REGISTRY
    from acframe.config import compile_config
    from acframe.policy import create_policy

    MODEL_REGISTRY.register('normed_dropout_probe_test', NormedDropoutModel)
    try:
        cfg = compile_config((dict(env=dict(env_id='CartPole-v1'),
                                   policy=dict(model=dict(type='normed_dropout_probe_test'))),
                              dict(policy=dict(type='a2c'))), seed=0)
        policy = create_policy(cfg, gym.spaces.Box(-np.inf, np.inf, (4,), dtype=np.float32), gym.spaces.Discrete(2))
    finally:
        MODEL_REGISTRY._entries.pop('normed_dropout_probe_test', None)
    model = policy._model
    model.train()
    reward, truncated, final_obs = torch.ones(5, 3), torch.zeros(5, 3, dtype=torch.bool), torch.randn(5, 3, 4)
    before = torch.get_rng_state()
    assert policy._bootstrap_truncation(reward, truncated, final_obs) is reward
    assert torch.equal(torch.get_rng_state(), before) and model.training and model.critic_modes == [False]
    policy._bootstrap_truncation(reward, truncated, final_obs)  # checked once: not probed again
    assert model.critic_modes == [False]
    # the bootstrap itself, as probed: one truncated row (refused by batch norm in train mode, after the probe had
    # passed), running statistics and random state untouched, train mode put back
    truncated[2, 1] = True
    statistics = [b.clone() for b in model.body[1].buffers()]
    folded = policy._bootstrap_truncation(reward, truncated, final_obs)
    assert folded[2, 1] != 1 and torch.equal(folded[~truncated], reward[~truncated])
    assert all(torch.equal(b, was) for b, was in zip(model.body[1].buffers(), statistics))
    assert torch.equal(torch.get_rng_state(), before) and model.training and model.critic_modes == [False, False]
    model.fail = True  # a model that raises there: its train mode is put back all the same
    with pytest.raises(RuntimeError, match='a bug in compute_critic'):
        policy._bootstrap_truncation(reward, truncated, final_obs)
    assert model.training
