"""Specification of gSDE (``acframe.models.sde``, ``VAC(use_sde=True)`` and the policies' collect mode):
the std and the noise against per-element references from the paper, the exploration matrix held for
``sde_sample_freq`` env steps, deterministic evaluation at the mean, and runs in the serial and parallel pipelines.
"""
import json
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from acframe.config import compile_config
from acframe.errors import ConfigError
from acframe.models import VAC, make_distribution
from acframe.models.sde import SDE_EPS, StateDependentNoise, sde_noise, sde_std
from acframe.policy import create_policy

N, L, D, OBS = 5, 4, 3, 3


def test_sde_std_is_the_root_of_the_summed_variances_of_phi_times_w_per_element():
    gen = torch.Generator().manual_seed(0)
    latent, log_std = torch.randn(N, L, generator=gen), torch.randn(L, D, generator=gen) * 0.5
    expected = torch.empty(N, D)
    for n in range(N):
        for j in range(D):
            expected[n, j] = math.sqrt(sum(latent[n, i].item() ** 2 * math.exp(log_std[i, j].item()) ** 2
                                           for i in range(L)) + SDE_EPS)
    assert torch.allclose(sde_std(latent, log_std), expected, rtol=1e-5)


def test_sde_noise_is_phi_transposed_times_each_rows_own_matrix_per_element():
    gen = torch.Generator().manual_seed(1)
    latent, weights = torch.randn(N, L, generator=gen), torch.randn(N, L, D, generator=gen)
    expected = torch.tensor([[sum(latent[n, i].item() * weights[n, i, j].item() for i in range(L)) for j in range(D)]
                             for n in range(N)])
    assert torch.allclose(sde_noise(latent, weights), expected, atol=1e-6)


class FakeModel(torch.nn.Module):
    def __init__(self, log_std):
        super().__init__()
        self.sde_log_std = torch.nn.Parameter(log_std)


def test_the_noise_of_many_drawn_matrices_has_the_variance_sde_std_gives():
    torch.manual_seed(0)
    log_std = torch.tensor([[0.0, -1.0], [0.5, -2.0], [-0.5, 0.3]])
    noise = StateDependentNoise(FakeModel(log_std), sample_freq=1)
    latent = torch.tensor([[0.3, -1.2, 0.8]]).expand(20_000, 3)  # one state, 20k envs: 20k independent W
    eps = noise(latent)
    assert torch.allclose(eps.mean(0), torch.zeros(2), atol=0.05)
    assert torch.allclose(eps.std(0), sde_std(latent[:1], log_std)[0], rtol=0.03)


def test_the_exploration_matrix_is_held_for_sample_freq_steps_and_redrawn_on_reset_or_new_env_count():
    torch.manual_seed(0)
    noise = StateDependentNoise(FakeModel(torch.zeros(L, D)), sample_freq=3)
    latent = torch.randn(2, L)
    draws = [noise(latent) for _ in range(7)]
    assert torch.equal(draws[0], draws[1]) and torch.equal(draws[1], draws[2])
    assert not torch.equal(draws[2], draws[3]) and torch.equal(draws[3], draws[5])
    assert not torch.equal(draws[5], draws[6])
    held = noise(latent)
    noise.reset()
    assert not torch.equal(noise(latent), held)
    assert noise(torch.randn(4, L)).shape == (4, D) and noise.weights.shape == (4, L, D)


def test_vac_with_sde_has_a_state_dependent_std_whose_gradient_reaches_log_std_not_the_encoder():
    torch.manual_seed(0)
    model = VAC(OBS, 2, 'continuous', use_sde=True, init_sigma=0.5, encoder_hidden_size_list=[8, 8])
    assert model.sde_log_std.shape == (8, 2) and torch.allclose(model.sde_log_std, torch.full((8, 2), math.log(0.5)))
    obs = torch.randn(N, OBS)
    out = model(obs, mode='compute_actor_critic')
    assert torch.allclose(out['sigma'], sde_std(out['sde_latent'], model.sde_log_std))
    assert not torch.allclose(out['sigma'][0], out['sigma'][1])  # depends on the state
    out['sigma'].sum().backward()  # φ(s) enters σ without gradient (SB3's learn_features=False)
    assert model.sde_log_std.grad.abs().sum() > 0
    assert all(p.grad is None for p in model.actor_encoder.parameters())
    log_prob = make_distribution(model(obs, mode='compute_actor'), 'continuous').log_prob(torch.zeros(N, 2))
    reference = torch.distributions.Normal(out['mu'], out['sigma']).log_prob(torch.zeros(N, 2)).sum(-1)
    assert torch.allclose(log_prob, reference.detach(), atol=1e-5)


def make_ppo(collect=None, model=None, action_space=gym.spaces.Box(-2.0, 2.0, (2,), dtype=np.float32), enable=None):
    torch.manual_seed(0)
    main = dict(env=dict(env_id='Pendulum-v1'),
                policy=dict(model=dict(use_sde=True, **(model or {})), collect=dict(collect or {})))
    cfg = compile_config((main, dict(policy=dict(type='ppo'))), seed=0)
    kwargs = {} if enable is None else dict(enable_field=enable)
    return create_policy(cfg, gym.spaces.Box(-1, 1, (OBS,), dtype=np.float32), action_space, **kwargs)


def test_collect_acts_with_mu_plus_phi_w_held_for_sde_sample_freq_steps_and_eval_takes_the_mean():
    policy = make_ppo(collect=dict(sde_sample_freq=2))
    obs = torch.randn(4, OBS)
    actions = [policy.collect_mode.forward(obs)['action'] for _ in range(4)]
    assert set(policy.collect_mode.forward(obs)) == {'action'}
    assert torch.equal(actions[0], actions[1]) and torch.equal(actions[2], actions[3])
    assert not torch.equal(actions[1], actions[2])
    actor = policy.model.compute_actor(obs)
    weights = policy._sde_noise.weights
    assert torch.allclose(policy.collect_mode.forward(obs)['action'], actor['mu'] + sde_noise(actor['sde_latent'], weights))
    assert torch.equal(policy.eval_mode.forward(obs)['action'], actor['mu'])


@pytest.mark.parametrize('freq', [0, -1, 2.5])
def test_a_bad_sde_sample_freq_is_named(freq):
    with pytest.raises(ConfigError, match='policy.collect.sde_sample_freq'):
        make_ppo(collect=dict(sde_sample_freq=freq))


def test_sde_with_discrete_actions_is_a_clear_error():
    with pytest.raises(ConfigError, match='use_sde'):
        make_ppo(action_space=gym.spaces.Discrete(2))


SHORT = ['env.collector_env_num=2', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1', 'env.stop_value=None',
         'policy.eval.evaluator.eval_freq=1000', 'policy.model.use_sde=True']
ALGO_SHORT = dict(ppo=['policy.collect.n_sample=64', 'policy.learn.epoch_per_collect=2', 'policy.learn.batch_size=32'],
                  a2c=['policy.collect.n_sample=64'],
                  impala=['policy.collect.n_sample=2', 'policy.learn.batch_size=4', 'policy.learn.update_per_collect=1'])


@pytest.mark.parametrize('algo', ['ppo', 'a2c', 'impala'])
def test_sde_runs_in_the_serial_and_the_parallel_pipeline_and_its_log_std_is_checkpointed(tmp_path, algo):
    from acframe.cli import main as cli_main
    serial, parallel = tmp_path / 'serial', tmp_path / 'parallel'
    config, short = f'pendulum_{algo}.py', SHORT + ALGO_SHORT[algo]
    assert cli_main(['-c', config, '--exp-dir', str(serial), '--max-env-step', '256', '-q', *short]) == 0
    state = torch.load(serial / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert any(key.endswith('.sde_log_std') for key in _keys(state)), list(_keys(state))
    assert cli_main(['-c', config, '-m', 'parallel', '--backend', 'inline', '--exp-dir', str(parallel),
                     '--max-env-step', '256', '-q', *short, 'parallel.actor_num=1']) == 0
    assert json.loads((parallel / 'summary.json').read_text())['env_steps'] >= 256


def _keys(tree, prefix=''):
    """Every key path of a nested dict."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield f'{prefix}{key}'
            yield from _keys(value, f'{prefix}{key}.')
