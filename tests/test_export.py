"""Specification of ``acframe -m export --load RUN_DIR_OR_CKPT --out FILE``: the exported model acts as load_policy."""
import warnings

import numpy as np
import pytest
import torch

import acframe
from acframe.cli import main


def random_observations(policy, n=100):
    rng = np.random.default_rng(0)
    low = np.maximum(policy.observation_space.low, -5.0)
    high = np.minimum(policy.observation_space.high, 5.0)
    return rng.uniform(low, high, size=(n, *policy.observation_space.shape)).astype(np.float32)


@pytest.fixture(scope='module')
def pendulum_run(tmp_path_factory):
    """Two updates of Pendulum A2C: a continuous policy whose actions must be clipped to [-2, 2]."""
    run_dir = tmp_path_factory.mktemp('pendulum') / 'run'
    assert main(['-c', 'pendulum_a2c.py', '--exp-dir', str(run_dir), '--max-train-iter', '2', '-q', 'env.collector_env_num=2',
                 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1', 'policy.model.init_sigma=3.0']) == 0
    return run_dir


@pytest.mark.parametrize('run', ['trained_run', 'pendulum_run'])
def test_torchscript_export_equals_load_policy(run, request, tmp_path, capsys):
    run_dir = request.getfixturevalue(run)
    out = tmp_path / 'policy.pt'
    assert main(['-m', 'export', '--load', str(run_dir), '--out', str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith('[export] torchscript model of ckpt_best.pth')
    policy = acframe.load_policy(run_dir)
    obs = random_observations(policy)
    with warnings.catch_warnings():  # torch 2.13 marks torch.jit deprecated; TorchScript files still load and run
        warnings.simplefilter('ignore', DeprecationWarning)
        exported = torch.jit.load(str(out))(torch.from_numpy(obs)).numpy()
    np.testing.assert_array_equal(exported, policy.act(obs))
    if run == 'pendulum_run':
        assert exported.shape == (100, 1) and np.all(np.abs(exported) <= 2.0)


def test_onnx_export_equals_load_policy(trained_run, pendulum_run, tmp_path):
    pytest.importorskip('onnxscript', reason='ONNX export needs the onnx extra (pip install acframe[onnx])')
    ort = pytest.importorskip('onnxruntime', reason='running the ONNX model needs the onnx extra (onnxruntime)')
    for run_dir in (trained_run, pendulum_run):
        out = tmp_path / f'{run_dir.parent.name}.onnx'
        assert main(['-m', 'export', '--load', str(run_dir / 'ckpt' / 'ckpt_latest.pth'), '--out', str(out), '-q']) == 0
        policy = acframe.load_policy(run_dir / 'ckpt' / 'ckpt_latest.pth')
        obs = random_observations(policy)
        session = ort.InferenceSession(str(out), providers=['CPUExecutionProvider'])
        (exported,) = session.run(['action'], {'obs': obs})
        expected = policy.act(obs)
        if expected.dtype == np.int64:
            np.testing.assert_array_equal(exported, expected)
        else:
            np.testing.assert_allclose(exported, expected, rtol=1e-5, atol=1e-6)


def test_export_needs_a_known_suffix(trained_run, tmp_path, capsys):
    assert main(['-m', 'export', '--load', str(trained_run), '--out', str(tmp_path / 'policy.bin')]) == 2
    assert 'must end in .pt (TorchScript) or .onnx (ONNX)' in capsys.readouterr().err
    assert main(['-m', 'export', '--load', str(trained_run)]) == 2
    assert '-m export needs --out FILE.pt' in capsys.readouterr().err


@pytest.fixture(scope='module')
def pixel_goal_run(tmp_path_factory):
    """Two updates of pixel_goal_impala.py: a Dict observation (uint8 image + float vector)."""
    run_dir = tmp_path_factory.mktemp('goal') / 'run'
    assert main(['-c', 'pixel_goal_impala.py', '--exp-dir', str(run_dir), '--max-train-iter', '2', '-q',
                 'env.collector_env_num=2', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1']) == 0
    return run_dir


def goal_observations(n=50):
    rng = np.random.default_rng(0)
    return {'image': rng.integers(0, 256, (n, 1, 8, 8)).astype(np.uint8), 'target': rng.random((n, 2), dtype=np.float32)}


def test_a_dict_observation_model_exports_with_one_input_per_key(pixel_goal_run, tmp_path, capsys):
    policy = acframe.load_policy(pixel_goal_run)
    obs = goal_observations()
    expected = policy.act(obs)
    out = tmp_path / 'goal.pt'
    assert main(['-m', 'export', '--load', str(pixel_goal_run), '--out', str(out)]) == 0
    assert "obs {'image': (1, 8, 8), 'target': (2,)}" in capsys.readouterr().out
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        exported = torch.jit.load(str(out))({k: torch.from_numpy(v) for k, v in obs.items()}).numpy()
    np.testing.assert_array_equal(exported, expected)
    pytest.importorskip('onnxscript', reason='ONNX export needs the onnx extra (pip install acframe[onnx])')
    ort = pytest.importorskip('onnxruntime', reason='running the ONNX model needs the onnx extra (onnxruntime)')
    assert main(['-m', 'export', '--load', str(pixel_goal_run), '--out', str(tmp_path / 'goal.onnx'), '-q']) == 0
    session = ort.InferenceSession(str(tmp_path / 'goal.onnx'), providers=['CPUExecutionProvider'])
    assert [i.name for i in session.get_inputs()] == ['image', 'target']
    np.testing.assert_array_equal(session.run(['action'], obs)[0], expected)
