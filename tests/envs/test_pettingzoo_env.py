"""PettingZoo's two-player classic games as single-agent envs (acframe/envs/pettingzoo_env.py, docs/masks.md): the
wrapper's observation, mask, opponent and rewards on connect_four_v3, a whole masked PPO run from the CLI, and the
one-line error when the ``pettingzoo`` extra is missing. The tests that play need pettingzoo (skipped without it)."""
import sys

import numpy as np
import pytest

import acframe
from acframe.cli import main
from acframe.config.defaults import ENV
from acframe.envs import build_env
from acframe.errors import ConfigError, EnvError

C4 = dict(ENV, type='pettingzoo_classic', env_id='connect_four_v3')


def test_without_pettingzoo_the_env_is_one_config_error_naming_the_extra(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, 'pettingzoo', None)  # (importlib finds no such module)
    with pytest.raises(ConfigError, match=r"needs PettingZoo: pip install -e '\.\[pettingzoo\]'"):
        build_env(C4, 0, 0, 'collector')
    run_dir = tmp_path / 'run'
    assert main(['-c', 'connect_four_ppo_masked.py', '--exp-dir', str(run_dir), '-q']) == 2
    assert "pip install -e '.[pettingzoo]'" in capsys.readouterr().err
    assert not run_dir.exists()


def test_connect_four_against_a_fixed_opponent_masks_full_columns_and_scores_the_agents_games():
    pytest.importorskip('pettingzoo', reason="needs the 'pettingzoo' extra (pip install -e .[pettingzoo])")
    with pytest.raises(ConfigError, match="not a game of pettingzoo.classic"):
        build_env(dict(C4, env_id='connect_five_v1'), 0, 0, 'collector')
    with pytest.raises(ConfigError, match="env.env_kwargs.opponent = 'clever'"):
        build_env(dict(C4, env_kwargs=dict(opponent='clever')), 0, 0, 'collector')
    env = build_env(dict(C4, env_kwargs=dict(opponent='first_legal')), 0, 0, 'collector')
    obs, _ = env.reset(seed=0)
    assert set(obs) == {'obs', 'action_mask'} and obs['obs'].shape == (84,) and obs['action_mask'].tolist() == [1] * 7
    # the agent stacks column 3, the first-legal opponent column 0: four in a row for the agent on its 4th move
    rewards = []
    for _ in range(4):
        obs, reward, terminated, truncated, _ = env.step(3)
        rewards.append(reward)
    assert rewards == [0.0, 0.0, 0.0, 1.0] and terminated and not truncated
    # a second game: column 0 stacked by both; once full its mask entry is 0 and playing it raises
    obs, _ = env.reset(seed=1)
    for _ in range(3):
        obs, *_ = env.step(0)  # the agent and the opponent alternate in column 0 (no four of one colour)
    assert obs['action_mask'].tolist() == [0, 1, 1, 1, 1, 1, 1]
    with pytest.raises(EnvError, match=r"illegal action 0 .*action_mask entry is 0"):
        env.step(0)
    # the second seat: the opponent has moved before the first observation; a random opponent only plays legal moves
    second = build_env(dict(C4, env_kwargs=dict(seat='second')), 0, 0, 'collector')
    obs, _ = second.reset(seed=2)
    assert obs['obs'].reshape(6, 7, 2)[..., 1].sum() == 1 and obs['obs'].reshape(6, 7, 2)[..., 0].sum() == 0
    returns = []
    rng = np.random.default_rng(0)
    for episode in range(20):
        obs, _ = second.reset(seed=episode)
        done, total = False, 0.0
        while not done:
            obs, reward, terminated, truncated, _ = second.step(rng.choice(np.flatnonzero(obs['action_mask'])))
            total, done = total + reward, terminated or truncated
        returns.append(total)
    assert set(returns) <= {-1.0, 0.0, 1.0} and -1.0 in returns and 1.0 in returns


def test_a_masked_ppo_run_on_connect_four_takes_no_illegal_move(tmp_path):
    pytest.importorskip('pettingzoo', reason="needs the 'pettingzoo' extra (pip install -e .[pettingzoo])")
    run_dir = tmp_path / 'c4'
    assert main(['-c', 'connect_four_ppo_masked.py', '--exp-dir', str(run_dir), '--max-env-step', '1024', '-q',
                 'policy.collect.n_sample=256', 'policy.learn.epoch_per_collect=2', 'env.n_evaluator_episode=10',
                 'policy.eval.evaluator.eval_freq=4']) == 0
    policy = acframe.load_policy(run_dir)
    raw = build_env(C4, 0, 0, 'test').unwrapped
    for episode in range(10):
        obs, _ = raw.reset(seed=episode)
        done = False
        while not done:
            action = policy.act(obs, deterministic=episode % 2 == 0)
            assert obs['action_mask'][action] == 1
            obs, _, terminated, truncated, _ = raw.step(action)
            done = terminated or truncated
    assert raw.illegal_actions == 0
