"""The seam for a new algorithm: a policy module and a config, nothing in ``entry/``, ``worker/`` or ``config/``.

docs/adding_an_algorithm.md promises that an algorithm is a policy plugin. This file proves it: it defines a
throwaway policy here — REINFORCE with a learned baseline, in a dozen lines on ``Policy``'s shared helpers —
registers it, and trains it end to end, from a config dict, in the serial on-policy pipeline (with a resume)
and in the parallel pipeline (local processes, synchronous rounds).
"""
import json
import os
from typing import Dict

import numpy as np
import pytest
import torch

from acframe import POLICY_REGISTRY
from acframe.entry import serial_pipeline_onpolicy
from acframe.entry.parallel import parallel_pipeline
from acframe.policy import Policy
from acframe.policy.base import build_optimizer
from acframe.rl_utils import nstep_return

NAME = 'reinforce_seam_test'


class ReinforcePolicy(Policy):
    """REINFORCE with a learned baseline: ``−log π(a_t|x_t)·(G_t − V(x_t)) + value_weight·(G_t − V(x_t))²``, with
    ``G_t`` the discounted return to the end of the rollout, bootstrapped there from ``V``."""

    supported_action_spaces = ('discrete', 'continuous')
    on_policy = True
    collect_stats = False  # the learner recomputes π: the collector keeps only the actions

    config = dict(
        learn=dict(
            # (str in {'adam', 'rmsprop'}) Optimizer.
            optim='adam',
            # (float > 0) Step size of the optimizer.
            learning_rate=0.003,
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (float >= 0) Weight of the baseline's squared error.
            value_weight=0.5,
            # (str in {'clip_norm', 'clip_value', 'none'}) Gradient clipping: by global norm, elementwise, or none.
            grad_clip_type='clip_norm',
            # (float >= 0) The norm (clip_norm) or absolute value (clip_value) gradients are clipped to.
            grad_clip_value=1.0,
        ),
        collect=dict(
            # (int >= 1) Transitions per rollout across all collector envs (a multiple of env.collector_env_num).
            n_sample=64,
        ),
        other=dict(
            replay_buffer=dict(
                # (str) On-policy: no replay buffer.
                type='',
            ),
        ),
    )

    def _init_learn(self) -> None:  # (_learn_step steps every parameter of the model: no _params to set)
        self._optimizer = build_optimizer(self._model.parameters(), self._cfg.learn)

    def _forward_learn(self, rollout) -> Dict[str, float]:
        output = self._evaluate(rollout.obs)  # (T+1, B, ...): the last step bootstraps
        values = output['value']
        with torch.no_grad():
            rewards = self._bootstrap_truncation(rollout.reward, rollout.truncated, rollout.final_obs)
            returns = nstep_return(rewards, self._discounts(rollout.terminated, rollout.truncated), values[-1])
        advantages = returns - values[:-1].detach()
        policy_loss = -(self._distribution(output, drop_last=True).log_prob(rollout.action) * advantages).mean()
        value_loss = (returns - values[:-1]).pow(2).mean()
        return self._learn_step(policy_loss + self._cfg.learn.value_weight * value_loss,
                                policy_loss=policy_loss, value_loss=value_loss)

    def _monitor_vars_learn(self):
        return super()._monitor_vars_learn() + ['policy_loss', 'value_loss', 'grad_norm']


@pytest.fixture(autouse=True)
def registered():
    """The policy is in the registry for these tests only (other tests list the registry's policies)."""
    POLICY_REGISTRY.register(NAME, ReinforcePolicy)
    yield
    POLICY_REGISTRY._entries.pop(NAME, None)


def config(**parallel):
    main = dict(
        exp_name='seam_test',
        env=dict(env_id='CartPole-v1', collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=2,
                 n_confirm_episode=0, stop_value=10_000),
        parallel={'actor_num': 2, **parallel},
        policy=dict(collect=dict(n_sample=64), eval=dict(evaluator=dict(eval_freq=10)),
                    learn=dict(learner=dict(log_freq=5))),
        seed=0,
    )
    return main, dict(env=dict(type='gym'), policy=dict(type=NAME))


def read_summary(exp_dir) -> dict:
    with open(os.path.join(exp_dir, 'summary.json')) as f:
        return json.load(f)


def latest_checkpoint(exp_dir) -> dict:
    return torch.load(os.path.join(exp_dir, 'ckpt', 'ckpt_latest.pth'), weights_only=True)


def test_a_new_policy_trains_and_resumes_in_the_serial_on_policy_pipeline(tmp_path):
    exp_dir = str(tmp_path / 'serial')
    first = serial_pipeline_onpolicy(config(), exp_dir=exp_dir, max_env_step=640, progress=False)
    assert isinstance(first, ReinforcePolicy)
    summary = read_summary(exp_dir)
    assert summary['policy'] == NAME and summary['env_steps'] == 640
    assert summary['train_iters'] == 10  # one gradient step per rollout of 64 transitions
    assert summary['last_eval_return'] is not None and os.path.isfile(os.path.join(exp_dir, 'ckpt', 'ckpt_best.pth'))
    state = latest_checkpoint(exp_dir)
    assert state['train_iter'] == 10 and state['env_step'] == 640
    before = {k: v.clone() for k, v in state['policy']['model'].items()}

    serial_pipeline_onpolicy(resume=exp_dir, max_env_step=1280, progress=False)
    summary = read_summary(exp_dir)
    assert summary['env_steps'] == 1280 and summary['train_iters'] == 20
    after = latest_checkpoint(exp_dir)['policy']['model']
    assert any(not torch.equal(before[k], after[k]) for k in before)  # the resumed run trained on
    assert all(torch.isfinite(v).all() for v in after.values() if v.is_floating_point())


def test_the_same_policy_trains_in_the_parallel_pipeline(tmp_path):
    exp_dir = str(tmp_path / 'parallel')
    policy = parallel_pipeline(config(), exp_dir=exp_dir, max_env_step=1280, backend='local', progress=False)
    assert isinstance(policy, ReinforcePolicy)
    summary = read_summary(exp_dir)
    assert summary['policy'] == NAME and summary['backend'] == 'local' and summary['sync_mode'] == 'sync'
    assert summary['env_steps'] == 1280 and summary['segments'] == 20  # 10 rounds of one 64-step segment per actor
    assert summary['train_iters'] == 10  # one gradient step per round: both actors' segments side by side
    assert summary['samples_trained'] == 1280 and summary['discarded_segments'] == 0
    assert summary['last_eval_return'] is not None
    state = latest_checkpoint(exp_dir)
    assert state['train_iter'] == 10 and state['parallel']['actor_num'] == 2


def test_the_serial_run_is_the_same_from_the_same_seed(tmp_path):
    runs = []
    for name in ('a', 'b'):
        serial_pipeline_onpolicy(config(), exp_dir=str(tmp_path / name), max_env_step=320, progress=False)
        runs.append(latest_checkpoint(str(tmp_path / name))['policy']['model'])
    assert all(torch.equal(runs[0][k], runs[1][k]) for k in runs[0])


# ---- a user's subclass of a built-in policy, from the CLI with import_names ---------------------------------------
SUBCLASS_MODULE = '''
from acframe import POLICY_REGISTRY
from acframe.policy.a2c import A2CPolicy


@POLICY_REGISTRY.register('a2c_with_a_key')
class A2CWithAKey(A2CPolicy):
    """A2C plus one declared key, whose default is an expression (not a literal)."""
    config = dict(
        learn=dict(
            # (float > 0) A threshold of the user's own (declared, checked, unused here).
            huber_delta=1.0 * 2,
        ),
    )
'''
SUBCLASS_CONFIG = ("from dizoo_configs.cartpole_a2c import main_config\n"
                   "create_config = dict(policy=dict(type='a2c_with_a_key'), import_names=['a2c_with_a_key'])\n")


def test_a_subclass_of_a_builtin_policy_keeps_its_keys_and_rules_and_declares_its_own_with_expressions(tmp_path):
    """A subclass that declares only its new key keeps every key, default and rule of the class it extends (its
    replay-less on-policy buffer too), and its own key's rule holds though its default is an expression."""
    import subprocess
    import sys

    (tmp_path / 'a2c_with_a_key.py').write_text(SUBCLASS_MODULE)
    (tmp_path / 'cfg.py').write_text(SUBCLASS_CONFIG)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get('PYTHONPATH', '')]),
               OMP_NUM_THREADS='1')

    def acframe(*args):
        return subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cfg.py', '-q', *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300)

    for bad, key in (('policy.learn.huber_delta=-5', 'policy.learn.huber_delta'),
                     ('policy.learn.discount_factor=1.5', 'policy.learn.discount_factor')):
        refused = acframe('--exp-dir', 'bad', bad)
        assert refused.returncode == 2 and refused.stderr.count('\n') == 1 and key in refused.stderr, refused.stderr
        assert not (tmp_path / 'bad').exists()
    done = acframe('--exp-dir', 'run', '--max-env-step', '200', 'policy.learn.learning_rate=0.001')
    assert done.returncode == 0, done.stderr
    cfg = json.loads((tmp_path / 'run' / 'config.json').read_text())['config']
    learn = cfg['policy']['learn']
    assert learn['huber_delta'] == 2.0 and learn['learning_rate'] == 0.001 and learn['gae_lambda'] == 1.0
    assert cfg['policy']['other']['replay_buffer']['type'] == ''  # A2C's: on-policy, no buffer


@pytest.mark.parametrize('how', [['--import', 'a2c_with_a_key'], ["import_names=['a2c_with_a_key']"]])
def test_a_config_file_naming_a_policy_that_the_command_line_imports_runs(tmp_path, how):
    """The file names the policy and nothing imports it but ``--import`` (or an ``import_names=`` override)."""
    import subprocess
    import sys

    (tmp_path / 'a2c_with_a_key.py').write_text(SUBCLASS_MODULE)
    (tmp_path / 'cfg.py').write_text("from dizoo_configs.cartpole_a2c import main_config\n"
                                     "create_config = dict(policy=dict(type='a2c_with_a_key'))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get('PYTHONPATH', '')]),
               OMP_NUM_THREADS='1')
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cfg.py', '-q', '--exp-dir', 'run',
                           '--max-env-step', '200', *how], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    cfg = json.loads((tmp_path / 'run' / 'config.json').read_text())['config']
    assert cfg['policy']['type'] == 'a2c_with_a_key' and cfg['import_names'] == ['a2c_with_a_key']


# ---- a user's model that keeps to the documented forward(obs, mode=...) contract alone ----------------------------
class ForwardOnlyModel(torch.nn.Module):
    """docs/custom_policy.md's model contract and nothing more: ``forward(obs, mode=...)``, no compute_* methods."""

    def __init__(self, obs_shape, action_shape, **model_keys):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(int(obs_shape), 32), torch.nn.Tanh())
        self.logit, self.value = torch.nn.Linear(32, int(action_shape)), torch.nn.Linear(32, 1)
        self.calls = set()

    def forward(self, obs, mode='compute_actor_critic'):
        self.calls.add(mode)
        hidden = self.body(obs)
        out = {} if mode == 'compute_critic' else {'logit': self.logit(hidden)}
        if mode != 'compute_actor':
            out['value'] = self.value(hidden).squeeze(-1)
        return out


def test_a_model_with_only_the_documented_forward_trains_collects_and_bootstraps(tmp_path):
    from acframe import MODEL_REGISTRY

    MODEL_REGISTRY.register('forward_only_seam_test', ForwardOnlyModel)
    try:
        policy = serial_pipeline_onpolicy('cartpole_a2c.py', max_env_step=400, progress=False, exp_dir=str(tmp_path / 'run'),
                                          overrides=["policy.model.type='forward_only_seam_test'",
                                                     'env.max_episode_steps=15'])  # truncations: V(final obs)
    finally:
        MODEL_REGISTRY._entries.pop('forward_only_seam_test', None)
    assert policy.summary['env_steps'] == 400 and policy.summary['train_iters'] > 0
    assert isinstance(policy._model, ForwardOnlyModel)
    assert policy._model.calls == {'compute_actor', 'compute_critic', 'compute_actor_critic'}


def refused_model(tmp_path, cls, pattern, config_name='cartpole_a2c.py'):
    """``cls`` registered as ``policy.model.type`` for one run of ``config_name``: refused with ``pattern`` (a
    ``PolicyError``), leaving no run folder."""
    from acframe import MODEL_REGISTRY
    from acframe.errors import PolicyError

    name = f'{cls.__name__.lower()}_seam_test'
    MODEL_REGISTRY.register(name, cls)
    try:
        with pytest.raises(PolicyError, match=pattern):
            serial_pipeline_onpolicy(config_name, max_env_step=400, progress=False, exp_dir=str(tmp_path / 'run'),
                                     overrides=[f"policy.model.type='{name}'"])
    finally:
        MODEL_REGISTRY._entries.pop(name, None)
    assert not (tmp_path / 'run').exists()


class WideCriticModel(ForwardOnlyModel):
    """compute_critic's value left (B, 1); the other modes keep to the contract."""

    def forward(self, obs, mode='compute_actor_critic'):
        out = super().forward(obs, mode)
        if mode == 'compute_critic':
            out['value'] = out['value'][:, None]
        return out


@pytest.mark.parametrize('config_name', ['cartpole_a2c.py', 'cartpole_ppo.py'])
def test_a_models_compute_critic_is_checked_at_the_first_update_not_at_the_first_truncation(tmp_path, config_name):
    """No episode is truncated in this budget (500 steps of CartPole): the (B, 1) value was found only at the first
    truncation, late in a run, as a shape error deep in the return's fold (a traceback, and no summary); it fails
    before its first update now."""
    refused_model(tmp_path, WideCriticModel, r"^the model \(test_new_algorithm_seam.WideCriticModel\) compute_critic "
                                             r"gave 'value' of shape \(1, 1\) for 1 observations, not \(1,\) "
                                             r"\(squeeze its last dim\) \(the model contract: docs/custom_policy.md\)",
                  config_name)


class FixedWidthModel(ForwardOnlyModel):
    """Ignores obs_shape: its first layer takes 8 inputs, CartPole gives 4."""

    def __init__(self, obs_shape, action_shape, **model_keys):
        super().__init__(8, action_shape)


def test_a_model_that_raises_in_its_forward_is_one_line_naming_it_and_its_line(tmp_path):
    """It raised inside the first evaluation, and the run ended in torch's traceback naming no model."""
    refused_model(tmp_path, FixedWidthModel, r"^the model \(test_new_algorithm_seam.FixedWidthModel\) raised "
                                             r"RuntimeError: mat1 and mat2 shapes cannot be multiplied .* \(at "
                                             r".*test_new_algorithm_seam.py:\d+ in forward; --debug shows the "
                                             r"traceback\)")


# ---- a user's recurrent form: policy.model.rnn's keys are checked as the built-in policies' are ---------------------
class RecurrentReinforce(ReinforcePolicy):
    """``supports_rnn`` without a ``model.rnn`` block of its own: the recurrent core's keys come with it."""

    supports_rnn = True


def test_a_users_recurrent_policy_takes_the_cores_keys_without_declaring_them_and_refuses_their_typos(tmp_path):
    from acframe.config import compile_config
    from acframe.errors import ConfigError

    POLICY_REGISTRY.register(NAME, RecurrentReinforce, force=True)
    cfg = compile_config(config(), ['policy.model.rnn.type=gru', 'policy.model.rnn.hidden_size=32'])
    assert cfg.policy.model.rnn == dict(type='gru', hidden_size=32, num_layers=1, input_norm=False)
    with pytest.raises(ConfigError, match=r"unknown config key 'policy.model.rnn.num_layerz'; did you mean 'policy.model.rnn.num_layers'"):
        compile_config(config(), ['policy.model.rnn.type=gru', 'policy.model.rnn.num_layerz=2'])
    with pytest.raises(ConfigError, match=r"policy.model.rnn.hidden_size.*4096"):
        compile_config(config(), ['policy.model.rnn.hidden_size=0'])


def test_a_key_under_model_rnn_that_no_core_takes_is_refused_for_a_policy_that_passes_the_block_on(tmp_path):
    from acframe.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^unknown config key 'policy.model.rnn.num_layerz'; did you mean "
                                          r"'policy.model.rnn.num_layers'\?$"):
        serial_pipeline_onpolicy(config(), overrides=['policy.model.rnn.num_layerz=8'], exp_dir=str(tmp_path / 'run'),
                                 max_env_step=64, progress=False)
    assert not (tmp_path / 'run').exists()


def test_the_cores_keys_on_a_policy_without_a_recurrent_form_follow_one_rule_warned_and_passed_on():
    """Without ``supports_rnn`` the core's keys pass to the model (which checks their names) and, with no core
    named, are said to configure nothing, as for a built-in policy: the first key was taken silently and a second
    one refused as unknown."""
    import warnings

    from acframe.config import compile_config
    from acframe.errors import ConfigWarning

    POLICY_REGISTRY.register(NAME, ReinforcePolicy, force=True)
    with pytest.warns(ConfigWarning, match=r"policy.model.rnn: hidden_size=32 configures a recurrent core and there "
                                           r"is none \(policy.model.rnn.type=None\): the run is feed-forward"):
        compile_config(config(), ['policy.model.rnn.hidden_size=32'])
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # (a core turned off by name: nothing to say)
        cfg = compile_config(config(), ['policy.model.rnn.type=None', 'policy.model.rnn.hidden_size=32',
                                        'policy.model.rnn.num_layers=2'])
    assert cfg.policy.model.rnn == dict(type=None, hidden_size=32, num_layers=2)
    main, create = config()
    main['policy'].setdefault('model', {})['rnn'] = {'type': None, 'hidden_size': 16}  # (the file sets one, as a
    with warnings.catch_warnings():                                                   # stored run's config does)
        warnings.simplefilter('error')
        cfg = compile_config((main, create), ['policy.model.rnn.num_layers=2'])
    assert cfg.policy.model.rnn == dict(type=None, hidden_size=16, num_layers=2)


def test_a_model_that_takes_rnn_through_kwargs_but_builds_no_core_is_refused(tmp_path):
    from acframe import MODEL_REGISTRY
    from acframe.errors import ConfigError

    POLICY_REGISTRY.register(NAME, RecurrentReinforce, force=True)
    MODEL_REGISTRY.register('forward_only_seam_test', ForwardOnlyModel)
    try:
        with pytest.raises(ConfigError, match=r"^policy.model.rnn.type='lstm': model 'forward_only_seam_test' was built "
                                              r"without a recurrent core \(its 'recurrent' attribute is not True\)"):
            serial_pipeline_onpolicy(config(), overrides=["policy.model.type='forward_only_seam_test'",
                                                          'policy.model.rnn.type=lstm'],
                                     exp_dir=str(tmp_path / 'run'), max_env_step=64, progress=False)
    finally:
        MODEL_REGISTRY._entries.pop('forward_only_seam_test', None)
    assert not (tmp_path / 'run').exists()


# ---- a policy that breaks the contract: one line naming the method and the fix, and no run folder ----------------
class MisspelledLearn(ReinforcePolicy):
    _forward_learning = ReinforcePolicy._forward_learn


MisspelledLearn._forward_learn = Policy._forward_learn  # (the base class's: as if the class never defined it)


class NoOptimizer(ReinforcePolicy):
    def _init_learn(self) -> None:
        self._opt = build_optimizer(self._model.parameters(), self._cfg.learn)


class CollectsWithoutAction(ReinforcePolicy):
    def _forward_collect(self, obs):
        return {'act': super()._forward_collect(obs)['action']}


class CollectsNumpy(ReinforcePolicy):
    def _forward_collect(self, obs):
        return {'action': super()._forward_collect(obs)['action'].numpy()}


class EvalReturnsATensor(ReinforcePolicy):
    def _forward_eval(self, obs):
        return super()._forward_eval(obs)['action']


class LearnInfoNotNumbers(ReinforcePolicy):
    def _forward_learn(self, rollout):
        info = super()._forward_learn(rollout)
        return {**info, 'advantages': rollout.reward}


class LearnBreaksLater(ReinforcePolicy):
    """Its third update breaks the contract: the run has learned by then, and its folder holds that."""

    def _forward_learn(self, rollout):
        info = super()._forward_learn(rollout)
        self.updates = getattr(self, 'updates', 0) + 1
        return {**info, 'advantages': rollout.reward} if self.updates == 3 else info


class PrepareRaises(ReinforcePolicy):
    def _prepare_rollout(self, rollout):
        raise KeyError('oops_prepare')


class TrainSampleRaises(ReinforcePolicy):
    def _get_train_sample(self, segment):
        raise ValueError('oops_sample')


@pytest.mark.parametrize('cls, message, folder_kept', [
    (MisspelledLearn, r"\(test_new_algorithm_seam.MisspelledLearn\) does not define _forward_learn \(it defines "
                      r"_forward_learning: a misspelling\?\); a policy's learn mode defines _init_learn and "
                      r"_forward_learn", False),
    (NoOptimizer, r"its _init_learn set no self._optimizer \(a torch optimizer, e.g. build_optimizer", False),
    (CollectsWithoutAction, r"the policy's _forward_collect returned a dict without 'action' \(its keys: act\); it "
                            r"returns a dict of tensors, one row per env, with the actions under 'action'", False),
    (CollectsNumpy, r"the policy's _forward_collect gave 'action' as a numpy.ndarray, not a torch tensor", False),
    (EvalReturnsATensor, r"the policy's _forward_eval returned a torch.Tensor, not a dict", False),
    # (after a collection, before the first gradient step, no checkpoint but the start's: nothing to resume, so no
    # folder either; fixed, the same command runs again, where a kept folder made it write RUN_1)
    (LearnInfoNotNumbers, r"the policy's _forward_learn gave info 'advantages' as a tensor of shape \(16, 4\); its info "
                          r"dict holds numbers", False),
    # what a user's rollout methods raise: one line naming the method and the user's line (it was a traceback)
    (PrepareRaises, r"^the policy's _prepare_rollout raised KeyError: 'oops_prepare' \(at .*test_new_algorithm_seam.py:"
                    r"\d+ in _prepare_rollout", False),
    (TrainSampleRaises, r"^the policy's _get_train_sample raised ValueError: oops_sample \(at "
                        r".*test_new_algorithm_seam.py:\d+ in _get_train_sample", False),
    # once it has learned, its folder is a run to resume
    (LearnBreaksLater, r"the policy's _forward_learn gave info 'advantages' as a tensor", True),
])
def test_a_policy_that_breaks_the_contract_is_one_line_naming_the_method(tmp_path, cls, message, folder_kept):
    from acframe.errors import PolicyError
    POLICY_REGISTRY.register(NAME, cls, force=True)
    exp_dir = tmp_path / 'run'
    with pytest.raises(PolicyError, match=message) as raised:
        serial_pipeline_onpolicy(config(), exp_dir=str(exp_dir), max_env_step=640, progress=False)
    assert '\n' not in str(raised.value)
    assert exp_dir.exists() is folder_kept  # a new run that failed before its first step leaves no folder


class LossNotReduced(ReinforcePolicy):
    def _learn_step(self, total_loss, **terms):
        return super()._learn_step(total_loss * torch.ones(16, 4), **terms)  # (the per-step loss, left unreduced)


class RecurrentPlanWithoutState(ReinforcePolicy):
    supports_rnn = True

    def _forward_learn(self, rollout):
        self._evaluate_rollout(rollout.obs)  # (the observations alone: the stored start states left behind)


class NaNTerm(ReinforcePolicy):
    def _learn_step(self, total_loss, **terms):
        bonus = torch.tensor(float('nan'))
        return super()._learn_step(total_loss + bonus, bonus=bonus, **terms)


@pytest.mark.parametrize('cls, overrides, error, message', [
    # a loss of shape (T, B): torch's 'grad can be implicitly created only for scalar outputs'
    (LossNotReduced, [], 'PolicyError', r"^policy 'reinforce_seam_test': _learn_step\(total_loss\) takes the loss as one "
                                        r"number \(a 0-d tensor\), got \(16, 4\); reduce it \(e.g. .mean\(\) over the batch\)$"),
    # a plan of one's own without the stored states: AttributeError: 'Tensor' object has no attribute 'episode_start'
    (RecurrentPlanWithoutState, ['env.env_id=cartpole_novel', 'policy.model.rnn.type=gru'], 'PolicyError',
     r"^policy 'reinforce_seam_test': _evaluate_rollout was given a batch without rnn_state and episode_start, which a "
     r"recurrent model's sequence is recomputed from; pass the segment as collected"),
    # a NaN term: the loss's NaN named, not the term that made it
    (NaNTerm, [], 'NonFiniteError', r"^the loss is nan \(bonus=nan among its terms\) \(policy 'reinforce_seam_test'\)"),
])
def test_a_learn_step_given_what_it_cannot_use_names_it(tmp_path, cls, overrides, error, message):
    import acframe.errors

    POLICY_REGISTRY.register(NAME, cls, force=True)
    with pytest.raises(getattr(acframe.errors, error), match=message) as raised:
        serial_pipeline_onpolicy(config(), overrides=overrides, exp_dir=str(tmp_path / 'run'), max_env_step=640,
                                 progress=False)
    assert '\n' not in str(raised.value)


def test_batches_without_reward_need_the_policys_own_batch_samples():
    """The parallel learner counts a step's transitions with learn_mode.samples (the default: reward's elements)."""
    from acframe.config import compile_config
    from acframe.errors import PolicyError
    from acframe.policy import create_policy
    import gymnasium as gym
    cfg = compile_config(config())
    policy = create_policy(cfg, gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2), enable_field=('learn',))
    assert policy.learn_mode.samples({'reward': torch.zeros(8, 4)}) == 32
    with pytest.raises(PolicyError, match=r"its learn batches hold no 'reward' tensor, which the default _batch_samples "
                                          r"counts .*; define _batch_samples\(batch\) -> int"):
        policy.learn_mode.samples({'obs': torch.zeros(8, 4, 4), 'returns': torch.zeros(8, 4)})


def test_a_policy_defined_where_its_source_cannot_be_read_is_warned_of_its_unchecked_rules(tmp_path):
    """A class defined on stdin: its declared rules (the comments) cannot be read, so its keys are checked by type
    only; the user is told so, not left to train with a value its rule refuses."""
    import subprocess
    import sys
    script = ("import warnings\n"
              "from acframe import POLICY_REGISTRY\n"
              "from acframe.config import compile_config\n"
              "from acframe.policy.a2c import A2CPolicy\n"
              "@POLICY_REGISTRY.register('stdin_policy')\n"
              "class StdinPolicy(A2CPolicy):\n"
              "    config = dict(learn=dict(\n"
              "        # (float > 0) A key of its own.\n"
              "        own_rate=0.5,\n"
              "    ))\n"
              "with warnings.catch_warnings(record=True) as caught:\n"
              "    warnings.simplefilter('always')\n"
              "    cfg = compile_config((dict(env=dict(env_id='CartPole-v1')), dict(policy=dict(type='stdin_policy'))),\n"
              "                         ['policy.learn.own_rate=-1.0'])\n"
              "print(cfg.policy.learn.own_rate, sorted({str(w.message) for w in caught}))\n")
    out = subprocess.run([sys.executable, '-'], input=script, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith('-1.0 ') and ("the rules in the comments above __main__.StdinPolicy's config keys "
                                                "cannot be read") in out.stdout, out.stdout


def test_a_key_other_policies_declare_is_refused_with_the_fix_for_a_policy_of_ones_own():
    from acframe.config import compile_config
    from acframe.errors import ConfigError
    with pytest.raises(ConfigError, match=r"unknown config key 'policy.learn.batch_size': a key of policy .*, not of this "
                                          rf"one; remove it, or declare it in the config of policy '{NAME}' \(a default "
                                          r"with its rule above it, docs/custom_policy.md\)"):
        compile_config(config(), ['policy.learn.batch_size=32'])
    with pytest.raises(ConfigError, match=r"remove it, or use policy.type="):  # a built-in policy: the one that has it
        compile_config('cartpole_a2c.py', ['policy.learn.batch_size=32'])


def test_a_model_whose_forward_takes_no_mode_is_refused_before_the_run_starts(tmp_path):
    from acframe import serial_pipeline
    from acframe.errors import PolicyError
    with pytest.raises(PolicyError, match=r"model=Linear: its forward takes no mode; a policy calls model\(obs, "
                                          r"mode='compute_actor'"):
        serial_pipeline('cartpole_impala.py', model=torch.nn.Linear(4, 2), exp_dir=str(tmp_path / 'run'),
                        max_env_step=200, progress=False)
    assert not (tmp_path / 'run').exists()


# ---- what the contract checks must not refuse -----------------------------------------------------------------
class NoModeNet(torch.nn.Module):
    """A model of one's own whose forward takes no mode: fine for a policy that calls it itself."""

    def __init__(self):
        super().__init__()
        self.actor, self.critic = torch.nn.Linear(4, 2), torch.nn.Linear(4, 1)

    def forward(self, obs):
        return {'logit': self.actor(obs), 'value': self.critic(obs).squeeze(-1)}


class OwnForwards(ReinforcePolicy):
    def _forward_collect(self, obs):
        return {'action': torch.distributions.Categorical(logits=self._model(obs)['logit']).sample(),
                'epsilon': torch.tensor(0.1)}  # (one number for the step: stored (T,))

    def _forward_eval(self, obs):
        return {'action': self._model(obs)['logit'].argmax(-1)}


class OwnCheckpoint(OwnForwards):
    """Two optimizers of its own, saved by its own _state_dict_learn; no self._optimizer."""

    def _init_learn(self) -> None:
        self._actor_opt = build_optimizer(self._model.actor.parameters(), self._cfg.learn)
        self._critic_opt = build_optimizer(self._model.critic.parameters(), self._cfg.learn)

    def _state_dict_learn(self):
        return {'model': self._model.state_dict(), 'actor_opt': self._actor_opt.state_dict(),
                'critic_opt': self._critic_opt.state_dict()}

    def _forward_learn(self, rollout):
        return {'flag': True, 'numpy_scalar': np.asarray(2.0), 'one_element': torch.ones(1)}


class OwnCheckpointDecaying(OwnCheckpoint):
    config = dict(
        learn=dict(
            # (int >= 0) Iterations over which the learning rate decays to 0 (0: constant).
            lr_decay_iters=100,
        ),
    )


def test_valid_setups_the_contract_checks_let_through():
    from acframe.config import compile_config
    from acframe.errors import PolicyError
    from acframe.policy import create_policy
    from acframe.worker.collector import check_action_output
    from acframe.worker.learner import check_info
    import gymnasium as gym

    spaces = (gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2))
    for cls in (OwnForwards, OwnCheckpoint):
        POLICY_REGISTRY.register(NAME, cls, force=True)
        policy = create_policy(compile_config(config()), *spaces, model=NoModeNet())  # (as -m parallel's end does)
        assert isinstance(policy, cls)
    check_action_output(policy.collect_mode.forward(torch.zeros(3, 4)), '_forward_collect', 3)
    info = OwnCheckpoint._forward_learn(policy, None)
    check_info(info)
    assert info == {'flag': True, 'numpy_scalar': 2.0, 'one_element': 1.0}
    # the learning-rate schedule reads self._optimizer: with lr_decay_iters, a class without one is told so
    POLICY_REGISTRY.register(NAME, OwnCheckpointDecaying, force=True)
    with pytest.raises(PolicyError, match=r"set no self._optimizer .* which the base class's _optimizers use"):
        create_policy(compile_config(config()), *spaces, model=NoModeNet())


@pytest.mark.parametrize('inference, who', [('actor', r'actor \d: '), ('server', '')])
def test_a_policy_that_breaks_the_contract_in_a_parallel_actor_stops_the_run_without_restarting_it(tmp_path, inference,
                                                                                                   who):
    """A restarted actor runs the same code and breaks the contract again: the run stops at once, as it does serially
    (it was restarted parallel.max_restarts times first); with an inference server, before the server starts."""
    from acframe.errors import PolicyError

    POLICY_REGISTRY.register(NAME, CollectsWithoutAction, force=True)
    with pytest.raises(PolicyError, match=rf"^{who}the policy's _forward_collect returned a dict without 'action' "
                                          r"\(its keys: act\)"):
        parallel_pipeline(config(inference=inference), exp_dir=str(tmp_path / 'run'), max_env_step=1280,
                          backend='local', progress=False)
    POLICY_REGISTRY.register(NAME, TrainSampleRaises, force=True)  # (a user's bug: it was restarted 10 times)
    with pytest.raises(PolicyError, match=r"the policy's _get_train_sample raised ValueError: oops_sample"):
        parallel_pipeline(config(inference=inference), exp_dir=str(tmp_path / 'run2'), max_env_step=1280,
                          backend='local', progress=False)


class MisnamedLogits(ForwardOnlyModel):
    """Keeps to another output contract: 'logits' where acframe's policies read 'logit'."""

    def forward(self, obs, mode='compute_actor_critic'):
        out = super().forward(obs, mode)
        if 'logit' in out:
            out['logits'] = out.pop('logit')
        return out


def test_a_model_whose_actor_output_lacks_the_distributions_statistics_is_one_line_naming_them(tmp_path):
    refused_model(tmp_path, MisnamedLogits, r"^the model \(test_new_algorithm_seam.MisnamedLogits\) gave no 'logit' "
                                            r"in its actor output \(its keys: logits\); for a discrete action space "
                                            r"a model's actor output holds 'logit' \(docs/custom_policy.md\)$")


class LearnTakesTwo(ReinforcePolicy):
    def _forward_learn(self, rollout, extra):
        return super()._forward_learn(rollout)


class CollectTakesNone(ReinforcePolicy):
    def _forward_collect(self):
        return {}


@pytest.mark.parametrize('cls, message', [
    (LearnTakesTwo, r"its _forward_learn\(self, rollout, extra\) cannot be called as _forward_learn\(self, batch\), as "
                    r"acframe calls it; give it that signature"),
    (CollectTakesNone, r"its _forward_collect\(self\) cannot be called as _forward_collect\(self, obs\)")])
def test_a_mode_method_with_another_signature_is_one_line_before_the_run_starts(tmp_path, cls, message):
    from acframe.errors import PolicyError

    POLICY_REGISTRY.register(NAME, cls, force=True)
    with pytest.raises(PolicyError, match=rf"^policy '{NAME}' \(test_new_algorithm_seam.{cls.__name__}\): {message}"):
        serial_pipeline_onpolicy(config(), exp_dir=str(tmp_path / 'run'), max_env_step=64, progress=False)
    assert not (tmp_path / 'run').exists()


# ---- a model of one's own, registered: its contract checked at its first call ---------------------------------
class _SmallNet(torch.nn.Module):
    """``(obs_shape, action_shape)`` alone, as custom_policy.md describes a model's constructor; ``bug`` breaks it."""

    def __init__(self, obs_shape, action_shape, bug=''):
        super().__init__()
        width = action_shape - 1 if bug == 'narrow' else action_shape
        self.actor, self.critic, self.bug = torch.nn.Linear(obs_shape, width), torch.nn.Linear(obs_shape, 1), bug

    def forward(self, obs, mode):
        logit = self.actor(obs)
        value = self.critic(obs) if self.bug == 'unsqueezed' else self.critic(obs).squeeze(-1)
        if self.bug == 'tuple':
            return logit, value
        return {'logit': logit} if mode == 'compute_actor' else {'logit': logit, 'value': value}


def _small_net_factory(obs_shape, action_shape, width=8):
    """A model registered as a function: its keys are checked as a class's."""
    return _SmallNet(obs_shape, action_shape)


def _own_model_config(policy_type, **model):
    """CartPole-v1 for ``policy_type`` with a model of one's own (no vac keys: the model takes none)."""
    replay = dict(other=dict(replay_buffer=dict(replay_start_size=0))) if policy_type == 'acer' else {}
    return (dict(env=dict(env_id='CartPole-v1', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1,
                          stop_value=1e9), policy=dict(model=dict(type='small_net_seam', **model), **replay)),
            dict(policy=dict(type=policy_type)))


@pytest.mark.parametrize('policy, overrides, message', [
    ('cartpole_ppo.py', ['policy.model.bug=narrow'], r"the model \(.*_SmallNet\) compute_actor gave 'logit' 1 wide; "
                                                     r"the action space needs 2 actions"),
    ('cartpole_ppo.py', ['policy.model.bug=tuple'], r"compute_actor gave a builtins.tuple, not a dict of tensors"),
    ('cartpole_impala.py', ['policy.model.bug=unsqueezed'], r"compute_actor_critic gave 'value' of shape \(\d+, 1\); a "
                                                           r"value is one number per observation"),
    ('cartpole_acer.py', [], r"compute_actor_critic gave no 'q_value' \(its keys: logit, value\); the learn mode of "
                             r"policy 'acer' reads 'q_value', 'value'"),
])
def test_a_registered_model_that_breaks_the_contract_is_one_line_naming_it_and_leaves_no_folder(tmp_path, policy,
                                                                                                  overrides, message):
    """A logit short of the action space trained without a word (its last action never taken); the others were
    tracebacks in a loss, and a failure at the first update left a folder with nothing to resume."""
    from acframe import MODEL_REGISTRY, serial_pipeline
    from acframe.errors import PolicyError

    MODEL_REGISTRY.register('small_net_seam', _SmallNet, force=True)
    policy_type = policy.split('_')[1].split('.')[0]
    run = serial_pipeline if policy_type in ('impala', 'acer') else serial_pipeline_onpolicy
    try:
        with pytest.raises(PolicyError, match=message):
            run(_own_model_config(policy_type), overrides=overrides, exp_dir=str(tmp_path / 'run'), max_env_step=2000,
                progress=False)
        assert not (tmp_path / 'run').exists()
    finally:
        MODEL_REGISTRY._entries.pop('small_net_seam', None)


def test_a_model_taking_obs_shape_and_action_shape_alone_trains_and_a_factorys_keys_are_checked(tmp_path):
    """acframe fills action_space in too: a model that does not take it was refused for a key the user never wrote
    (told to rename it to action_shape); a factory function's keys went unchecked (a bare TypeError)."""
    from acframe import MODEL_REGISTRY
    from acframe.errors import ConfigError

    MODEL_REGISTRY.register('small_net_seam', _SmallNet, force=True)
    MODEL_REGISTRY.register('small_factory_seam', _small_net_factory, force=True)
    try:
        serial_pipeline_onpolicy(_own_model_config('ppo'), exp_dir=str(tmp_path / 'run'), max_env_step=600,
                                 progress=False)
        with open(tmp_path / 'run' / 'summary.json') as f:
            assert json.load(f)['train_iters'] > 0
        with pytest.raises(ConfigError, match=r"unknown config key 'policy.model.widht' for model 'small_factory_seam'; "
                                              r"did you mean 'policy.model.width'\?"):
            serial_pipeline_onpolicy(_own_model_config('ppo'), overrides=['policy.model.type=small_factory_seam',
                                                                          'policy.model.widht=4'],
                                     exp_dir=str(tmp_path / 'other'), max_env_step=600, progress=False)
    finally:
        MODEL_REGISTRY._entries.pop('small_net_seam', None)
        MODEL_REGISTRY._entries.pop('small_factory_seam', None)


class _DropoutNet(_SmallNet):
    """Dropout before both heads, recording each call's ``mode`` with ``self.training``; ACER's ``q_value`` too."""

    def __init__(self, obs_shape, action_shape):
        super().__init__(obs_shape, action_shape)
        self.drop, self.q, self.seen = torch.nn.Dropout(0.5), torch.nn.Linear(obs_shape, action_shape), set()

    def forward(self, obs, mode):
        self.seen.add((mode, self.training, torch.is_grad_enabled()))
        obs = self.drop(obs)
        out = super().forward(obs, mode)
        return out if mode == 'compute_actor' else {**out, 'q_value': self.q(obs)}


@pytest.mark.parametrize('policy_type', ['a2c', 'ppo', 'impala', 'acer'])
def test_a_model_acts_in_evaluation_mode_and_learns_in_training_mode(tmp_path, policy_type):
    """As DI-engine's and SB3's policies switch it: the collect and eval modes run the model in ``eval()`` (dropout
    off: they act as ``-m eval``, ``load_policy`` and export do), and so does the learn mode's ``prepare`` (PPO's
    log pi_old and V_old: the behaviour policy's, as collected); the learn step's differentiated forward runs in
    ``train()``. The model stayed in training mode throughout a run, so the evaluations that chose the best
    checkpoint, and the actions collected, had dropout on."""
    from acframe import MODEL_REGISTRY, serial_pipeline

    MODEL_REGISTRY.register('dropout_net_seam', _DropoutNet, force=True)
    run = serial_pipeline if policy_type in ('impala', 'acer') else serial_pipeline_onpolicy
    try:
        policy = run(_own_model_config(policy_type), overrides=['policy.model.type=dropout_net_seam'],
                     exp_dir=str(tmp_path / 'run'), max_env_step=400, progress=False)
    finally:
        MODEL_REGISTRY._entries.pop('dropout_net_seam', None)
    assert policy.summary['train_iters'] > 0 and policy.summary['last_eval_return'] is not None
    seen = policy._model.seen
    assert {training for mode, training, _ in seen if mode == 'compute_actor'} == {False}  # collection, evaluation
    assert {training for _, training, grad in seen if grad} == {True}  # the learn step's differentiated forward
    if policy_type == 'ppo':  # its prepare: no gradient, the behaviour policy's statistics
        assert ('compute_actor_critic', False, False) in seen
    obs = torch.randn(4, 4)
    assert torch.equal(policy.eval_mode.forward(obs)['action'], policy.eval_mode.forward(obs)['action'])


class _KeywordsNet(_SmallNet):
    """Takes every key through **kwargs, and uses none of them."""

    def __init__(self, obs_shape, action_shape, **options):
        super().__init__(obs_shape, action_shape)


@pytest.mark.parametrize('key, attribute', [('obs_norm', 'an obs_normalizer'), ('use_sde', 'use_sde')])
def test_a_switch_a_keywords_model_drops_is_refused_naming_it(tmp_path, key, attribute):
    """policy.model.obs_norm=True (or use_sde) taken through **kwargs and dropped: the run went on without it."""
    from acframe import MODEL_REGISTRY
    from acframe.errors import ConfigError

    MODEL_REGISTRY.register('small_net_seam', _KeywordsNet, force=True)
    try:
        with pytest.raises(ConfigError, match=rf"policy.model.{key}=True: model 'small_net_seam' was built without "
                                              rf"{attribute}"):
            serial_pipeline_onpolicy(_own_model_config('ppo', **{key: True}), exp_dir=str(tmp_path / 'run'),
                                     max_env_step=600, progress=False)
        assert not (tmp_path / 'run').exists()
    finally:
        MODEL_REGISTRY._entries.pop('small_net_seam', None)
