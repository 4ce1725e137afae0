"""``policy.learn.compile``: the compiled update equals the eager one, a run learns with it from the CLI, and a value
that cannot work is one line and exit 2 (acframe/policy/compiled.py).

Equality: two policies with the same weights and optimizer state take the same two updates on the same batch, one
eager, one with ``policy.learn.compile='default'`` (inductor, C++ kernels on the CPU); every loss the step reports
agrees to rtol 1e-5 / atol 1e-6, the updated weights to atol 1e-6 (measured: 6e-8 at most). The models are tiny
(one 16-unit layer) and the batches short: the cost of these tests is torch.compile's, once per policy.
"""
import copy
import json

import pytest
import torch

from acframe.cli import main
from acframe.config import compile_config
from acframe.envs import make_env_manager
from acframe.errors import ConfigError
from acframe.policy import create_policy
from acframe.worker.collector import SampleCollector

TINY_MODEL = {'a2c': ['policy.model.encoder_hidden_size_list=[16]'],
              'ppo': ['policy.model.encoder_hidden_size_list=[16]', 'policy.learn.batch_size=16'],
              'impala': ['policy.model.encoder_hidden_size_list=[16]', 'policy.unroll_len=4'],
              'acer': ['policy.model.encoder_hidden_size_list=[16]', 'policy.other.replay_buffer.unroll_len=4']}


def _policies(name: str):
    """Two policies of ``cartpole_<name>`` with the same weights and optimizer state, the second compiled, and a
    segment (4 envs) collected with the first."""
    overrides = TINY_MODEL[name] + ['env.collector_env_num=4', 'policy.collect.n_sample=4' if name in ('impala', 'acer')
                                    else 'policy.collect.n_sample=16']
    cfg = compile_config(f'cartpole_{name}.py', overrides=overrides, seed=0)
    env = make_env_manager(cfg, 'collector', 4, seed=0)
    torch.manual_seed(0)
    eager = create_policy(cfg, env.observation_space, env.action_space)
    compiled_cfg = compile_config(f'cartpole_{name}.py', overrides=overrides + ['policy.learn.compile=default'], seed=0)
    compiled = create_policy(compiled_cfg, env.observation_space, env.action_space, init_weights=eager.get_weights())
    compiled._optimizer.load_state_dict(copy.deepcopy(eager._optimizer.state_dict()))
    steps = 4 if name in ('impala', 'acer') else None  # one unroll / window per env; on-policy: a rollout
    segment = SampleCollector(env, eager.collect_mode, cfg.policy.collect.n_sample).collect(steps)
    env.close()
    return eager, compiled, segment


def _batch(policy, segment):
    mode = policy.learn_mode
    if policy.on_policy:  # the first minibatch of the rollout's plan (PPO: 16 of its 16 transitions)
        return next(iter(mode.minibatches(mode.prepare(segment))))
    return segment  # a time-major (T, B) batch, as the buffer serves it


@pytest.mark.parametrize('name', ['a2c', 'ppo', 'impala', 'acer'])
def test_the_compiled_update_equals_the_eager_update(name):
    eager, compiled, segment = _policies(name)
    assert compiled._forward_learn is not type(compiled)._forward_learn.__get__(compiled)  # the compiled path is on
    before = [w.clone() for w in compiled.get_weights().values()]
    torch.manual_seed(1)
    eager_batch = _batch(eager, segment)
    torch.manual_seed(1)
    compiled_batch = _batch(compiled, segment)
    for step in range(2):  # the second step runs the compiled graphs without compiling
        torch.manual_seed(2 + step)
        expected = eager.learn_mode.forward(eager_batch)
        torch.manual_seed(2 + step)
        got = compiled.learn_mode.forward(compiled_batch)
        assert set(got) == set(expected)
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, rel=1e-5, abs=1e-6), (step, key)
    for (key, a), b in zip(eager.get_weights().items(), compiled.get_weights().values()):
        torch.testing.assert_close(b, a, rtol=0, atol=1e-6, msg=lambda m: f"{key}: {m}")
    assert any((a != b).any() for a, b in zip(before, compiled.get_weights().values()))  # the steps did step


def test_a_run_with_the_compiled_update_from_the_cli(tmp_path, capsys):
    exp_dir = tmp_path / 'run'
    code = main(['-c', 'cartpole_a2c.py', '--exp-dir', str(exp_dir), '--max-env-step', '256', '-q',
                 'env.collector_env_num=4', 'policy.collect.n_sample=16', 'env.evaluator_env_num=1',
                 'env.n_evaluator_episode=1', 'policy.model.encoder_hidden_size_list=[16]',
                 'policy.learn.compile=default'])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((exp_dir / 'summary.json').read_text())
    assert summary['env_steps'] == 256
    assert json.loads((exp_dir / 'config.json').read_text())['config']['policy']['learn']['compile'] == 'default'


@pytest.mark.parametrize('value, says', [
    ('True', "config key 'policy.learn.compile' must be str"),
    ('fast', "config key 'policy.learn.compile' = 'fast' is not one of 'off', 'default'"),
    ('reduce-overhead', "policy.learn.compile = 'reduce-overhead' captures CUDA graphs, which need policy.cuda=True"),
])
def test_a_compile_value_that_cannot_work_is_one_line_and_exit_2(tmp_path, capsys, value, says):
    exp_dir = tmp_path / 'run'
    code = main(['-c', 'cartpole_a2c.py', '--exp-dir', str(exp_dir), f'policy.learn.compile={value}'])
    err = capsys.readouterr().err
    assert code == 2
    assert says in err and len(err.strip().splitlines()) == 1
    assert not exp_dir.exists()


def test_without_a_cpp_compiler_the_cpu_compile_is_refused(monkeypatch):
    cfg = compile_config('cartpole_a2c.py', overrides=['policy.learn.compile=default'])
    monkeypatch.setattr('shutil.which', lambda name: None)
    with pytest.raises(ConfigError, match="no C.. compiler .* set policy.learn.compile='off'"):
        create_policy(cfg)
