"""Specification of ``bench/recurrent_saturation.py``: its written-out LSTM steps as the model's core does, saturated
gates read as saturated, and the command reads a run folder."""
import importlib.util
import os

import pytest
import torch

from acframe.cli import main as cli_main
from acframe.config.compile import compile_config
from acframe.envs import make_env_manager
from acframe.policy import create_policy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope='module')
def saturation():
    spec = importlib.util.spec_from_file_location('recurrent_saturation',
                                                  os.path.join(ROOT, 'bench', 'recurrent_saturation.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lstm_model():
    cfg = compile_config('cartpole_ppo.py', ['env.env_id=cartpole_novel', 'policy.model.rnn.type=lstm',
                                             'policy.model.rnn.hidden_size=8'], seed=0)
    env = make_env_manager(cfg, 'collector', 1, 0)
    torch.manual_seed(0)
    model = create_policy(cfg, env.observation_space, env.action_space).model
    env.close()
    return cfg, model


def test_the_written_out_cell_steps_as_the_cores_fused_cell_and_saturated_gates_read_as_saturated(saturation):
    cfg, model = lstm_model()
    obs = saturation.observations(cfg, steps=12, envs=3, seed=0)
    assert tuple(obs.shape) == (12, 3, 2)
    _, _, written_out = saturation.unroll(model, obs)
    state = model.core.initial_state(3)
    with torch.no_grad():
        for t, x in enumerate(model.actor_encoder(obs.reshape(36, 2)).view(12, 3, -1)):
            stepped, state = model.core.step(x, state)
            torch.testing.assert_close(written_out[t], stepped, rtol=0, atol=1e-6)
    calm = saturation.gate_statistics(model, obs)
    with torch.no_grad():
        model.core.rnn.weight_ih_l0.mul_(300.0)
    flat = saturation.gate_statistics(model, obs)
    assert calm['cell_beyond_3'] < 0.05 < 0.5 < flat['cell_beyond_3']
    assert flat['pre_g'] > 10 * calm['pre_g']


def test_the_command_reads_a_run_folder_and_prints_one_row_per_checkpoint(saturation, tmp_path, capsys):
    run = tmp_path / 'run'
    assert cli_main(['-c', 'cartpole_ppo.py', '--exp-dir', str(run), '--max-env-step', '64', '-q',
                     'env.env_id=cartpole_novel', 'policy.model.rnn.type=lstm', 'policy.model.rnn.hidden_size=8',
                     'env.collector_env_num=2', 'policy.collect.n_sample=32', 'policy.learn.batch_size=32',
                     'env.stop_value=None']) == 0
    capsys.readouterr()
    assert saturation.main([str(run), str(run / 'ckpt' / 'ckpt_latest.pth'), '--steps', '8', '--envs', '2']) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith(f'| {run}')]
    assert len(rows) == 2 and rows[0].split('|')[3:] == rows[1].split('|')[3:]
