"""Specification of the ACER policy (``acframe.policy.acer``): targets, trust region, average network, learning."""
import copy
import io
import json

import gymnasium as gym
import numpy as np
import pytest
import torch

from acframe import ConfigError, UnsupportedSpaceError
from acframe.cli import main as cli_main
from acframe.config import compile_config
from acframe.data import ttorch
from acframe.entry.serial import serial_pipeline
from acframe.envs import make_env_manager
from acframe.policy import create_policy
from acframe.policy.acer import ACERPolicy
from acframe.models.acer import ACERSDN
from acframe.worker import SampleCollector

CARTPOLE = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32), gym.spaces.Discrete(2)
PENDULUM = gym.spaces.Box(-8.0, 8.0, (3,), np.float32), gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
GAMMA = 0.9


def make_policy(spaces=CARTPOLE, overrides=(), seed: int = 0) -> ACERPolicy:
    torch.manual_seed(seed)
    main = dict(policy=dict(model=dict(encoder_hidden_size_list=[16]), learn=dict(discount_factor=GAMMA)))
    cfg = compile_config((main, dict(policy=dict(type='acer'))), list(overrides))
    return create_policy(cfg, *spaces)


def random_batch(policy: ACERPolicy, steps: int = 5, size: int = 4, seed: int = 0, loc: float = 0.0,
                 scale: float = 1.0) -> ttorch.Tensor:
    """A time-major batch whose actions were sampled by ``policy`` itself (so rho = 1 before any update);
    observations ~ N(loc, scale^2)."""
    gen = torch.Generator().manual_seed(seed)
    obs_dim = 4 if policy._action_space == 'discrete' else 3
    obs = torch.randn(steps + 1, size, obs_dim, generator=gen) * scale + loc
    with torch.no_grad():
        out = policy.collect_mode.forward(obs[:-1].reshape(-1, obs_dim))
    batch = {k: v.reshape((steps, size) + tuple(v.shape[1:])) for k, v in out.items()}
    batch.update(obs=obs, reward=torch.randn(steps, size, generator=gen),
                 terminated=torch.zeros(steps, size, dtype=torch.bool), truncated=torch.zeros(steps, size, dtype=torch.bool),
                 final_obs=torch.zeros(steps, size, obs_dim))
    return ttorch.Tensor(batch)


def critic_value(policy: ACERPolicy, obs: torch.Tensor) -> float:
    with torch.no_grad():
        return policy.model.compute_critic(obs[None])['value'].item()


# ---- targets --------------------------------------------------------------------------------------------


@pytest.mark.parametrize('spaces', [CARTPOLE, PENDULUM], ids=['discrete', 'continuous'])
def test_one_step_q_ret_bootstraps_from_final_obs_at_truncation_and_stops_at_termination(spaces):
    """T = 1: Q_ret = r + gamma V(next obs); at a truncation V(final_obs) (current weights); at a termination r."""
    policy = make_policy(spaces)
    batch = random_batch(policy, steps=1, size=3)
    batch.truncated[0, 1] = True
    batch.terminated[0, 2] = True
    batch.final_obs[0, 1] = torch.randn(batch.obs.shape[-1])
    r = batch.reward[0]
    expected = [r[0].item() + GAMMA * critic_value(policy, batch.obs[1, 0]),
                r[1].item() + GAMMA * critic_value(policy, batch.final_obs[0, 1]),
                r[2].item()]
    for column, want in enumerate(expected):
        single = batch[:, column:column + 1]
        info = make_policy(spaces).learn_mode.forward(single)  # same initial weights for every column
        assert info['mean_q_ret'] == pytest.approx(want, abs=1e-5)


def test_fresh_segment_is_on_policy_rho_one_and_nothing_truncated():
    """The on-policy update trains on data of the current weights: every rho is 1."""
    cfg = compile_config('cartpole_acer.py')
    env = make_env_manager(cfg, 'collector', 2, seed=0)
    policy = create_policy(cfg, env.observation_space, env.action_space)
    segment = SampleCollector(env, policy.collect_mode, 4).collect()  # 2 unrolls of 5 steps from each of the 2 envs
    env.close()
    info = policy.learn_mode.forward(segment)
    assert info['mean_rho'] == pytest.approx(1.0, abs=1e-5) and info['rho_truncated_fraction'] == 0.0
    assert info['kl_to_average'] == pytest.approx(0.0, abs=1e-7), "the average network starts as a copy"


@pytest.mark.parametrize('spaces', [CARTPOLE, PENDULUM], ids=['discrete', 'continuous'])
def test_logs_the_acer_statistics(spaces):
    policy = make_policy(spaces)
    info = policy.learn_mode.forward(random_batch(policy))
    for key in ('policy_loss', 'q_loss', 'entropy', 'kl_to_average', 'mean_rho', 'rho_truncated_fraction'):
        assert np.isfinite(info[key])
    assert ('value_loss' in info) == (spaces is PENDULUM), "the SDN also trains V towards its own target"
    assert set(policy.learn_mode.monitor_vars()) <= set(info)


# ---- trust region and average network ---------------------------------------------------------------------


@pytest.mark.parametrize('spaces', [CARTPOLE, PENDULUM], ids=['discrete', 'continuous'])
def test_trust_region_with_unbounded_delta_is_the_plain_update(spaces):
    """The projection only acts when the linearised KL step exceeds delta; with delta huge it never does."""
    results = []
    for overrides in (['policy.learn.trust_region_delta=1e9'], ['policy.learn.trust_region=False']):
        policy = make_policy(spaces, overrides)
        batch = random_batch(make_policy(spaces), seed=3)
        policy.learn_mode.forward(batch)  # move away from the average network first
        torch.manual_seed(5)
        policy.learn_mode.forward(batch)
        results.append(copy.deepcopy(policy.model.state_dict()))
    for key in results[0]:
        torch.testing.assert_close(results[0][key], results[1][key], atol=1e-6, rtol=1e-5)


def test_tight_trust_region_changes_the_update():
    results = []
    for delta in ('1e9', '1e-4'):
        policy = make_policy(overrides=[f'policy.learn.trust_region_delta={delta}'])
        batch = random_batch(policy, seed=3)
        for _ in range(2):
            policy.learn_mode.forward(batch)
        results.append(policy.model.policy_head.weight.detach().clone())
    assert not torch.allclose(results[0], results[1])


def test_average_network_follows_by_polyak_averaging():
    """theta_avg <- alpha theta_avg + (1 - alpha) theta after every update."""
    policy = make_policy(overrides=['policy.learn.trust_region_alpha=0.9'])
    batch = random_batch(policy)
    policy.learn_mode.forward(batch)
    before = copy.deepcopy(policy._average_model.state_dict())
    policy.learn_mode.forward(batch)
    after, current = policy._average_model.state_dict(), policy.model.state_dict()
    for key in before:
        torch.testing.assert_close(after[key], 0.9 * before[key] + 0.1 * current[key])


def test_checkpoint_holds_and_restores_the_average_network():
    policy = make_policy()
    batch = random_batch(policy)
    for _ in range(3):
        policy.learn_mode.forward(batch)
    state = policy.learn_mode.state_dict()
    assert 'average_model' in state
    restored = make_policy(seed=1)
    restored.learn_mode.load_state_dict(state)
    for key, value in state['average_model'].items():
        assert torch.equal(restored._average_model.state_dict()[key], value)
    assert not torch.equal(state['average_model']['policy_head.weight'], state['model']['policy_head.weight'])
    old_style = {k: v for k, v in state.items() if k != 'average_model'}
    restored.learn_mode.load_state_dict(old_style)  # a checkpoint without it: the average restarts at the weights
    assert torch.equal(restored._average_model.policy_head.weight, restored.model.policy_head.weight)


# ---- observation normalization ----------------------------------------------------------------------------


@pytest.mark.parametrize('spaces', [CARTPOLE, PENDULUM], ids=['discrete', 'continuous'])
def test_obs_norm_is_learned_from_every_batch_frozen_when_acting_and_shared_by_the_average_policy(spaces):
    policy = make_policy(spaces, ['policy.model.obs_norm=True'])
    normalizer = policy.model.obs_normalizer
    assert policy._average_model.obs_normalizer is normalizer  # pi_avg's KL term sees the x pi sees
    obs = torch.randn(16, spaces[0].shape[0]) * 4 + 10
    policy.collect_mode.forward(obs)
    policy.eval_mode.forward(obs)
    assert normalizer.count.item() == pytest.approx(1e-4)  # acting never updates the statistics
    batches = [random_batch(policy, seed=seed, loc=10.0, scale=4.0) for seed in range(2)]
    for batch in batches:  # a fresh segment, then the same sub-trajectories replayed: each use counts
        policy.learn_mode.forward(batch)
    seen = torch.cat([batch.obs[:-1].reshape(-1, obs.shape[1]) for batch in batches]).double().numpy()
    np.testing.assert_allclose(normalizer.mean.numpy(), seen.mean(0), rtol=1e-4)
    np.testing.assert_allclose(normalizer.var.numpy(), seen.var(0), rtol=1e-3)
    assert normalizer.count.item() == pytest.approx(2 * 5 * 4, abs=1e-3)
    with torch.no_grad():  # the model acts on normalized observations: far from raw obs of mean 10
        raw = make_policy(spaces, ['policy.model.obs_norm=True'])
        raw.model.load_state_dict({k: v for k, v in policy.model.state_dict().items() if 'obs_normalizer' not in k},
                                  strict=False)
        assert not torch.allclose(raw.model.compute_critic(obs)['value'], policy.model.compute_critic(obs)['value'])


def test_obs_norm_statistics_survive_a_weights_only_checkpoint_round_trip():
    policy = make_policy(PENDULUM, ['policy.model.obs_norm=True'])
    for seed in range(3):
        policy.learn_mode.forward(random_batch(policy, seed=seed, loc=-3.0, scale=2.0))
    buffer = io.BytesIO()
    torch.save(policy.learn_mode.state_dict(), buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    assert {'obs_normalizer.mean', 'obs_normalizer.var', 'obs_normalizer.count'} <= set(state['model'])
    restored = make_policy(PENDULUM, ['policy.model.obs_norm=True'], seed=1)
    restored.learn_mode.load_state_dict(state)
    assert restored._average_model.obs_normalizer is restored.model.obs_normalizer
    for name in ('mean', 'var', 'count'):
        assert torch.equal(getattr(restored.model.obs_normalizer, name), getattr(policy.model.obs_normalizer, name))
    obs = torch.randn(8, 3) * 2 - 3
    assert torch.equal(policy.eval_mode.forward(obs)['action'], restored.eval_mode.forward(obs)['action'])


# ---- configuration errors -------------------------------------------------------------------------------


def test_rejects_unsupported_spaces_and_bad_settings():
    with pytest.raises(UnsupportedSpaceError, match='acer'):
        make_policy((CARTPOLE[0], gym.spaces.MultiDiscrete([2, 3])))
    with pytest.raises(ConfigError, match='episodic'):
        make_policy(overrides=['policy.other.replay_buffer.type=fifo'])
    with pytest.raises(ConfigError, match='c_clip_ratio'):
        make_policy(overrides=['policy.learn.c_clip_ratio=0.0'])
    with pytest.raises(ConfigError, match='replay_ratio_type'):
        make_policy(overrides=['policy.other.replay_buffer.replay_ratio_type=uniform'])
    with pytest.raises(ConfigError, match='trust_region_alpha'):
        make_policy(overrides=['policy.learn.trust_region_alpha=1.5'])


@pytest.mark.parametrize('spaces, critic', [(CARTPOLE, ('critic_encoder', 'q_head')),
                                             (PENDULUM, ('critic_encoder', 'value_head', 'advantage'))],
                         ids=['discrete', 'continuous'])
def test_a_critic_learning_rate_steps_the_q_network_at_its_own_rate(spaces, critic):
    """``critic_learning_rate`` (DI-engine's ``learning_rate_critic``): the Q network's parameters (critic encoder
    and heads) in a group of their own at that rate, the policy network's at ``learning_rate``; at equal rates the
    update equals the one-group update (same weights, same batch -> the same weights after it)."""
    policy = make_policy(spaces, ['policy.learn.critic_learning_rate=0.003'])
    actor_group, critic_group = policy.learn_mode.optimizers()[0].param_groups
    assert (actor_group['lr'], critic_group['lr']) == (0.0007, 0.003)
    in_critic = {id(p) for name, p in policy.model.named_parameters() if name.split('.')[0] in critic}
    assert {id(p) for p in critic_group['params']} == in_critic
    assert not in_critic & {id(p) for p in actor_group['params']}
    batches = [random_batch(make_policy(spaces), seed=i) for i in range(3)]
    one, two = make_policy(spaces), make_policy(spaces, ['policy.learn.critic_learning_rate=0.0007'])
    for policy in (one, two):
        for i, batch in enumerate(batches):
            torch.manual_seed(i)  # the SDN critic samples actions in its learn step
            policy.learn_mode.forward(batch)
    for (name, a), b in zip(one.model.state_dict().items(), two.model.state_dict().values()):
        assert torch.equal(a, b), name
    with pytest.raises(ConfigError, match='share_encoder=False'):
        make_policy(spaces, ['policy.learn.critic_learning_rate=0.003', 'policy.model.share_encoder=True'])


@pytest.mark.parametrize('spaces', [CARTPOLE, PENDULUM], ids=['discrete', 'continuous'])
def test_a_critic_learning_rate_steps_the_critic_s_own_recurrent_core_at_its_rate(spaces):
    """With ``policy.model.rnn`` and a body each (``share_encoder=False``), the critic's core is the critic's."""
    policy = make_policy(spaces, ['policy.learn.critic_learning_rate=0.003', 'policy.model.rnn.type=lstm',
                                  'policy.model.rnn.hidden_size=8'])
    actor_group, critic_group = policy.learn_mode.optimizers()[0].param_groups
    in_critic = {id(p) for p in critic_group['params']}
    assert {id(p) for p in policy.model.critic_core.parameters()} <= in_critic
    assert not {id(p) for p in policy.model.core.parameters()} & in_critic
    assert {id(p) for p in policy.model.core.parameters()} <= {id(p) for p in actor_group['params']}


@pytest.mark.parametrize('spaces', [CARTPOLE, PENDULUM], ids=['discrete', 'continuous'])
def test_with_a_norm_on_the_cores_input_each_body_keeps_its_own_norm_at_its_own_rate(spaces):
    """``policy.model.rnn.input_norm``: the critic's LayerNorm is the last layer of the critic's encoder (critic rate),
    the policy's of the policy's."""
    policy = make_policy(spaces, ['policy.learn.critic_learning_rate=0.003', 'policy.model.rnn.type=lstm',
                                  'policy.model.rnn.hidden_size=8', 'policy.model.rnn.input_norm=True'])
    actor_group, critic_group = policy.learn_mode.optimizers()[0].param_groups
    actor_norm, critic_norm = policy.model.actor_encoder[-1], policy.model.critic_encoder[-1]
    assert isinstance(actor_norm, torch.nn.LayerNorm) and isinstance(critic_norm, torch.nn.LayerNorm)
    assert {id(p) for p in critic_norm.parameters()} <= {id(p) for p in critic_group['params']}
    assert {id(p) for p in actor_norm.parameters()} <= {id(p) for p in actor_group['params']}


# ---- learning ---------------------------------------------------------------------------------------------


def test_the_pipeline_decays_the_learning_rate_to_zero_at_lr_decay_iters(tmp_path):
    overrides = ['policy.learn.lr_decay_iters=12', 'policy.learn.learning_rate=0.002', 'policy.eval.evaluator.eval_freq=0',
                 'env.n_evaluator_episode=1', 'env.evaluator_env_num=1',
                 'policy.other.replay_buffer.replay_start_size=0']
    policy = serial_pipeline('cartpole_acer.py', seed=0, overrides=overrides, max_train_iter=12,
                             exp_dir=str(tmp_path / 'decay'), progress=False)
    (group,) = policy.learn_mode.optimizers()[0].param_groups
    assert (group['lr'], group['initial_lr']) == (0.0, 0.002)


def test_solves_cartpole_within_budget(tmp_path):
    """cartpole_acer.py on the 500-step CartPole-v1 to 475 (CartPole-v0's 195 an untrained arg-max policy may reach).
    Seeds 0-11 solved at 4.1k, 1.4k, 1.7k, 1.5k, 39.1k, 1.1k, 56.7k, 16.0k, 2.8k, 1.3k, 11.0k and 8.7k env steps
    (2026-11-27): a third of them past 10k, so the budget covers the slowest with room; seed 0 stops at 4.1k."""
    policy = serial_pipeline('cartpole_acer.py', seed=0, max_env_step=100_000, exp_dir=str(tmp_path / 'cartpole'),
                             overrides=['env.env_id=CartPole-v1', 'env.stop_value=475'], progress=False)
    assert policy.summary['solved'], policy.summary


def test_pendulum_improves_in_a_short_run_from_the_cli(tmp_path):
    exp_dir = tmp_path / 'pendulum'
    code = cli_main(['-c', 'pendulum_acer.py', '--exp-dir', str(exp_dir), '--max-env-step', '16000', '-q',
                     'policy.eval.evaluator.eval_freq=100000'])
    assert code == 0
    summary = json.loads((exp_dir / 'summary.json').read_text())
    # the untrained policy evaluates at -1392 (seed 0); random policies score -1200 to -1400
    assert summary['best_eval_return'] > -1100, summary


def test_lunarlander_config_runs_from_the_cli(tmp_path):
    exp_dir = tmp_path / 'lunarlander'
    code = cli_main(['-c', 'lunarlander_acer.py', '--exp-dir', str(exp_dir), '--max-env-step', '1500', '-q',
                     'env.n_evaluator_episode=2', 'env.evaluator_env_num=2', 'env.max_episode_steps=100',
                     'policy.other.replay_buffer.replay_start_size=500'])  # replays within this short budget
    assert code == 0
    assert json.loads((exp_dir / 'summary.json').read_text())['env_steps'] >= 1500


def test_trains_on_dict_observations_through_the_episodic_buffer(tmp_path):
    """toy_pixel_goal's uint8 image + float vector: stored per key, replayed in windows, learned from."""
    main = dict(env=dict(env_id='toy_pixel_goal', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1),
                policy=dict(unroll_len=4, model=dict(encoder='impala_resnet', encoder_channels=[4],
                                                     encoder_hidden_size_list=[16], vector_hidden_size_list=[8]),
                            other=dict(replay_buffer=dict(replay_start_size=0)),
                            eval=dict(evaluator=dict(eval_freq=0))))
    create = dict(env=dict(type='toy_pixel_goal'), policy=dict(type='acer'))
    policy = serial_pipeline((main, create), seed=0, max_env_step=640, exp_dir=str(tmp_path / 'goal'), progress=False)
    assert policy.summary['train_iters'] > 640 // 32, policy.summary  # 20 fresh segments of 4 x 8 steps, then replays
    encoder = policy.model.actor_encoder
    assert encoder.image_keys == ['image'] and encoder.vector_keys == ['target']


def test_acframes_vac_is_refused_but_a_factory_or_a_vac_subclass_of_the_users_is_not_looked_into():
    """ACER learns a Q head: acframe's VAC (none) is one line at start; a registered factory function or a user's
    subclass of VAC (which may add a Q head) is the user's to make right."""
    from acframe.models.acer import ACERDiscrete
    from acframe.models.vac import VAC
    from acframe.policy.acer import ACERPolicy
    from acframe.registry import MODEL_REGISTRY

    @MODEL_REGISTRY.register('acer_factory_test')
    def build(**kwargs):
        return ACERDiscrete(**kwargs)

    @MODEL_REGISTRY.register('vac_with_q_test')
    class VACWithQ(VAC):
        pass
    try:
        with pytest.raises(ConfigError, match="policy.model.type='vac' has no Q head, which policy 'acer' learns"):
            ACERPolicy.check_run_config(compile_config('cartpole_acer.py', ['policy.model.type=vac']))
        for name in ('acer_factory_test', 'vac_with_q_test'):
            ACERPolicy.check_run_config(compile_config('cartpole_acer.py', [f'policy.model.type={name}']))
    finally:
        MODEL_REGISTRY._entries.pop('acer_factory_test', None)
        MODEL_REGISTRY._entries.pop('vac_with_q_test', None)


class GaussianForwardModel(torch.nn.Module):
    """A user's Gaussian actor-critic keeping to the plain model contract (forward(obs, mode=...)), no SDN."""

    def __init__(self, obs_shape, action_shape, **model_keys):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(int(obs_shape), 16), torch.nn.Tanh())
        self.mu, self.v = torch.nn.Linear(16, int(action_shape)), torch.nn.Linear(16, 1)

    def forward(self, obs, mode='compute_actor_critic'):
        hidden = self.body(obs)
        out = {'mu': self.mu(hidden), 'sigma': torch.ones_like(self.mu(hidden))}
        if mode != 'compute_actor':
            out['value'] = self.v(hidden).squeeze(-1)
        return out


class GaussianMethodsModel(GaussianForwardModel):
    """The same with the compute_* methods, its compute_actor_critic without actions=."""

    def compute_actor(self, obs):
        return self(obs, 'compute_actor')

    def compute_critic(self, obs):
        return self(obs, 'compute_critic')

    def compute_actor_critic(self, obs):
        return self(obs)


@pytest.mark.parametrize('cls, lacks', [(GaussianForwardModel, 'has no compute_actor, no compute_critic, no '
                                                               'compute_actor_critic'),
                                        (GaussianMethodsModel, 'has a compute_actor_critic that takes no actions=')])
def test_continuous_acer_refuses_a_model_without_q_at_given_actions_in_one_line_before_anything_is_written(
        tmp_path, cls, lacks):
    """It was an AttributeError traceback at the first gradient step, the run's folder left behind."""
    from acframe import MODEL_REGISTRY

    MODEL_REGISTRY.register('gaussian_acer_test', cls)
    try:
        with pytest.raises(ConfigError, match=rf"^policy 'acer' with continuous actions learns Q~ at given actions "
                                              rf"\(a stochastic dueling network\): the model \(test_acer.{cls.__name__}\) "
                                              rf"{lacks}; use policy.model.type='acer_sdn' \(the default\)"):
            serial_pipeline('pendulum_acer.py', max_env_step=400, progress=False, exp_dir=str(tmp_path / 'run'),
                            overrides=["policy.model.type='gaussian_acer_test'"])
    finally:
        MODEL_REGISTRY._entries.pop('gaussian_acer_test', None)
    assert not (tmp_path / 'run').exists()


class RecurrentSDNWithoutQ(ACERSDN):
    """acer_sdn with its recurrent core but no sdn_q (a user's recurrent model that gives no Q~ at given actions)."""
    sdn_q = None


class GaussianKwargsModel(GaussianMethodsModel):
    """compute_actor_critic taking its keywords as **kwargs (actions= among them)."""

    def compute_actor_critic(self, obs, **kwargs):
        return self(obs)


def test_continuous_recurrent_acer_refuses_a_model_without_sdn_q_and_a_kwargs_compute_actor_critic_passes(tmp_path):
    from acframe import MODEL_REGISTRY
    from acframe.config import compile_config
    from acframe.policy import create_policy

    MODEL_REGISTRY.register('recurrent_sdn_without_q_test', RecurrentSDNWithoutQ)
    try:
        with pytest.raises(ConfigError, match=r"\(test_acer.RecurrentSDNWithoutQ\) has no sdn_q; use "
                                              r"policy.model.type='acer_sdn' \(the default\), or give the model "
                                              r"sdn_q\(critic_feature, value, mu, sigma, actions\)"):
            serial_pipeline('pendulum_novel_acer_lstm.py', max_env_step=400, progress=False,
                            exp_dir=str(tmp_path / 'run'), overrides=["policy.model.type='recurrent_sdn_without_q_test'"])
    finally:
        MODEL_REGISTRY._entries.pop('recurrent_sdn_without_q_test', None)
    assert not (tmp_path / 'run').exists()
    cfg = compile_config('pendulum_acer.py', seed=0)
    env = gym.make('Pendulum-v1')
    model = GaussianKwargsModel(env.observation_space.shape[0], env.action_space.shape[0])
    create_policy(cfg, env.observation_space, env.action_space, model=model)  # its actions= through **kwargs: taken
