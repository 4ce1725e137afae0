"""Specification of ``acframe.load_policy``: a finished run acts in a plain gymnasium loop, one observation or a batch."""
import json

import gymnasium as gym
import numpy as np
import pytest

import acframe
from acframe.entry.evaluate import EVAL_SEED_OFFSET, evaluate_run
from acframe.errors import ConfigError, ConfigWarning


def test_a_plain_gymnasium_loop_reproduces_the_runs_evaluation(trained_run):
    policy = acframe.load_policy(trained_run)
    assert policy.checkpoint.endswith('ckpt_best.pth') and policy.run_dir == str(trained_run)
    report = evaluate_run(str(trained_run))
    # evaluator env i played one episode from seed 100_000 + i: the same episodes, acted by load_policy
    returns = []
    for i in range(4):
        env = gym.make('CartPole-v1')
        obs, _ = env.reset(seed=EVAL_SEED_OFFSET + i)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy.act(obs))
            total += reward
            done = terminated or truncated
        returns.append(total)
    assert sorted(returns) == sorted(report['returns'])  # the evaluator lists episodes in the order they end
    summary = json.loads((trained_run / 'summary.json').read_text())
    assert np.mean(returns) == pytest.approx(summary['best_eval_return'])
    assert summary['best_eval_return'] > 50  # it learned: a random CartPole policy averages about 22


def test_make_env_builds_the_env_act_expects_even_under_acframes_own_names(trained_run, tmp_path):
    """``make_env()``: the run's env as its evaluator built it, for a loop of one's own: the trained run's evaluation
    again from its seeds; an env known by acframe's name only (``cartpole_novel``, which ``gym.make`` does not know)
    or by its ``env.type`` (``toy_dict``, which names it in the policy's repr, not the unused ``env_id``)."""
    from acframe.cli import main

    policy = acframe.load_policy(trained_run)
    policy.reset([0, 1])  # (a feed-forward policy keeps no state: nothing to reset, for any envs)
    report = evaluate_run(str(trained_run))
    returns = []
    for i in range(4):
        env = policy.make_env()
        obs, _ = env.reset(seed=EVAL_SEED_OFFSET + i)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy.act(obs))
            total, done = total + reward, terminated or truncated
        returns.append(total)
    assert sorted(returns) == sorted(report['returns'])
    for name, extra in (('novel', ['env.env_id=cartpole_novel']), ('dict', ['env.type=toy_dict'])):
        assert main(['-c', 'cartpole_a2c.py', '--exp-dir', str(tmp_path / name), '--max-train-iter', '1', '-q',
                     'env.collector_env_num=2', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1', *extra]) == 0
        loaded = acframe.load_policy(tmp_path / name)
        env = loaded.make_env()
        obs, _ = env.reset(seed=0)
        assert env.observation_space == loaded.observation_space and env.action_space.contains(loaded.act(obs))
    assert env.observation_space.shape == (9,) and 'a2c on toy_dict,' in repr(loaded)
    # a batch of the env's own Dict observations (every key stacked, as a vector env gives them): row by row
    raw = env.unwrapped
    rows = [raw.reset(seed=seed)[0] for seed in range(4)]
    assert len(rows[0]) > 1  # several keys: the batch is flattened row by row, not concatenated whole
    batch = {key: np.stack([row[key] for row in rows]) for key in rows[0]}
    assert loaded.act(batch).tolist() == [int(loaded.act(row)) for row in rows]
    assert loaded.act({key: value[:0] for key, value in batch.items()}).shape == (0,)
    with pytest.raises(gym.error.NameNotFound):
        gym.make('cartpole_novel')


def test_act_takes_one_observation_or_a_batch(trained_run):
    policy = acframe.load_policy(trained_run / 'ckpt' / 'ckpt_latest.pth')
    assert policy.checkpoint.endswith('ckpt_latest.pth')
    batch = np.stack([policy.observation_space.sample() for _ in range(5)])
    actions = policy.act(batch)
    assert actions.shape == (5,) and actions.dtype == np.int64
    assert [policy.act(obs) for obs in batch] == list(actions)
    assert policy.act(batch[0]).shape == ()
    sampled = policy.act(np.repeat(batch[:1], 200, axis=0), deterministic=False)
    assert set(sampled.tolist()) <= {0, 1} and sampled.shape == (200,)
    with pytest.raises(ValueError, match=r'observation of shape \(4,\)'):
        policy.act(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match=r"expected, got a batch of shape \(2, 2\)$"):  # (it said "got (2,)")
        policy.act(np.zeros((2, 2)))
    # a NaN acted on without a word (the exported files do so too: act is where it is said)
    with pytest.raises(ValueError, match=r"^act: an observation holds nan at index 1; observations must be finite"):
        policy.act(np.array([0.0, np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match=r"^act: an observation holds -inf at index \(1, 3\);"):
        policy.act(np.array([[0.0] * 4, [0.0, 0.0, 0.0, -np.inf]]))
    # a config that evaluates by sampling still acts greedily through load_policy (sampling is asked per call); the
    # override that says otherwise is refused (it was set back to True without a word)
    # (said once, and its cfg shows the run's setting, as loaded: it showed True)
    with pytest.warns(ConfigWarning, match=r"ckpt_latest.pth evaluated with sampled actions \(its "
                                           r"policy.eval.deterministic=False\); act\(obs\) takes the greedy action "
                                           r"\(the most likely\), which its evaluations did not play: "
                                           r"act\(obs, deterministic=False\) samples as they did"):
        sampling = acframe.load_policy(trained_run / 'ckpt' / 'ckpt_latest.pth', config=_sampling_config(trained_run))
    assert sampling.cfg.policy.eval.deterministic is False
    assert np.array_equal(sampling.act(np.repeat(batch, 20, axis=0)), np.repeat(actions, 20))
    with pytest.raises(ConfigError, match=r"^policy.eval.deterministic=False: load_policy's act is greedy unless asked "
                                          r"per call; drop the override and sample with act\(obs, deterministic=False\)$"):
        acframe.load_policy(trained_run, overrides=['policy.eval.deterministic=False'])


def _sampling_config(run_dir):
    """The run's config, evaluating by sampling: ``(main, create)`` as a config file gives them."""
    main = json.load(open(run_dir / 'config.json'))['config']
    main['policy']['eval']['deterministic'] = False
    return main


def test_a_loose_checkpoint_needs_its_config(trained_run, tmp_path):
    loose = tmp_path / 'best.pth'
    loose.write_bytes((trained_run / 'ckpt' / 'ckpt_best.pth').read_bytes())
    with pytest.raises(ConfigError, match="not in a run folder's ckpt/; name its config with config=CONFIG"):
        acframe.load_policy(loose)
    policy = acframe.load_policy(loose, config='cartpole_a2c.py')
    obs = np.zeros(4, dtype=np.float32)
    assert policy.act(obs) == acframe.load_policy(trained_run).act(obs)


def test_logger_keys_given_to_load_policy_or_an_export_are_said_to_be_unread(trained_run, tmp_path):
    """Only -m eval reads the logger (its --video uploads); load_policy and an export took one without a word."""
    message = r"^logger\.backends: logger keys are read by training and by -m eval .*; an export or load_policy ignores it$"
    with pytest.warns(ConfigWarning, match=message):
        acframe.load_policy(trained_run, overrides=["logger.backends=['jsonl']"])
    with pytest.warns(ConfigWarning, match=message):
        acframe.export_policy(trained_run, str(tmp_path / 'p.pt'), overrides=["logger.backends=['jsonl']"])


def test_a_folder_that_is_not_a_run_is_refused(tmp_path):
    with pytest.raises(ConfigError, match='not a run folder'):
        acframe.load_policy(tmp_path)
    with pytest.raises(ConfigError, match='no such file or folder'):
        acframe.load_policy(tmp_path / 'missing')


def test_act_takes_a_dict_observation_or_a_batch_of_one_and_names_what_is_wrong(tmp_path):
    from acframe.cli import main
    from acframe.envs import build_env

    run_dir = tmp_path / 'goal'
    assert main(['-c', 'pixel_goal_impala.py', '--exp-dir', str(run_dir), '--max-train-iter', '1', '-q',
                 'env.collector_env_num=2', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1']) == 0
    policy = acframe.load_policy(run_dir)
    obs, _ = build_env(dict(type='toy_pixel_goal', env_id='toy_pixel_goal'), 0, 0, 'x').reset(seed=0)
    action = policy.act(obs)
    assert isinstance(action, np.int64) and 0 <= action < 4
    batch = {k: np.stack([v] * 3) for k, v in obs.items()}
    assert policy.act(batch).tolist() == [action] * 3
    with pytest.raises(ValueError, match=r"act: the observation lacks key\(s\) \['target'\]"):
        policy.act({'image': obs['image']})
    with pytest.raises(ValueError, match=r"act: observation 'target' of shape \(2,\) \(or a batch \(B, 2\)\) expected, got shape \(3,\)"):
        policy.act(dict(obs, target=np.zeros(3, dtype=np.float32)))
    with pytest.raises(ValueError, match="one observation each, or every key a batch"):
        policy.act(dict(batch, target=obs['target']))
    with pytest.raises(ValueError, match="a Dict observation with keys \\['image', 'target'\\] was expected"):
        policy.act(obs['image'])


def test_a_run_trained_on_a_gpu_acts_and_exports_where_there_is_none(trained_run, tmp_path, caplog):
    """policy.cuda=True in a run's config: without CUDA, load_policy, -m eval and -m export run on the CPU (the
    checkpoints hold CPU tensors); with CUDA, load_policy acts on the GPU — the same actions either way."""
    import shutil

    from acframe.export import export_policy

    gpu_run = tmp_path / 'gpu_run'
    shutil.copytree(trained_run, gpu_run)
    config = json.loads((gpu_run / 'config.json').read_text())
    config['config']['policy']['cuda'] = True
    (gpu_run / 'config.json').write_text(json.dumps(config))
    batch = np.stack([gym.spaces.Box(-1, 1, (4,)).sample() for _ in range(16)]).astype(np.float32)
    assert np.array_equal(acframe.load_policy(gpu_run).act(batch), acframe.load_policy(trained_run).act(batch))
    import torch
    if not torch.cuda.is_available():
        assert any('no CUDA here: acting on the CPU' in r.getMessage() for r in caplog.records)
    assert evaluate_run(str(gpu_run))['returns'] == evaluate_run(str(trained_run))['returns']
    export_policy(str(gpu_run), str(tmp_path / 'actor.pt'))
    assert (tmp_path / 'actor.pt').stat().st_size > 0


def test_load_policy_refuses_nan_weights_in_one_line_as_training_does(trained_run, tmp_path):
    import shutil

    import torch

    from acframe.errors import CheckpointError

    run = tmp_path / 'run'
    shutil.copytree(trained_run, run)
    path = run / 'ckpt' / 'ckpt_best.pth'
    state = torch.load(path, weights_only=True)
    next(v for v in state['policy']['model'].values() if v.is_floating_point()).view(-1)[0] = float('nan')
    torch.save(state, path)
    with pytest.raises(CheckpointError, match='hold NaN/inf') as info:
        acframe.load_policy(run)
    assert '\n' not in str(info.value)


def test_a_run_whose_config_imports_a_module_resumes_and_evaluates_only_with_it_named(tmp_path):
    """--import names the module a run folder's config lists; without it the run is refused in one line naming it."""
    import os
    import subprocess
    import sys

    code = tmp_path / 'my_code'
    code.mkdir()
    (code / 'my_marker_module.py').write_text("MARK = 1\n")
    env = dict(os.environ, PYTHONPATH=str(code))
    acframe_cli = [sys.executable, '-m', 'acframe.cli']

    def run(*args):
        return subprocess.run([*acframe_cli, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    done = run('-c', 'cartpole_a2c.py', '--exp-dir', 'run', '--max-env-step', '400', '-q', '--import', 'my_marker_module')
    assert done.returncode == 0, done.stderr
    assert json.load(open(tmp_path / 'run' / 'config.json'))['config']['import_names'] == ['my_marker_module']
    for args in (['--resume', 'run', '--max-env-step', '800', '-q'], ['-m', 'eval', '--load', 'run', '--episodes', '1']):
        refused = run(*args)
        assert refused.returncode == 2 and refused.stderr.count('\n') == 1, refused.stderr
        assert 'my_marker_module' in refused.stderr and '--import' in refused.stderr
        misspelt = run(*args, '--import', 'my_marker_modul')  # the name given is shown beside the one needed
        assert misspelt.returncode == 2 and misspelt.stderr.count('\n') == 1, misspelt.stderr
        assert "(--import named my_marker_modul, which it does not list)" in misspelt.stderr, misspelt.stderr
        named = run(*args, '--import', 'my_marker_module')
        assert named.returncode == 0, named.stderr
    # load_policy in a script: the refusal names its argument, not the command line's flag
    script = "import acframe\ntry:\n    acframe.load_policy('run')\nexcept acframe.ConfigError as exc:\n    print(exc)\n"
    refused = subprocess.run([sys.executable, '-c', script], cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=120)
    assert "named in imports=: add imports=['my_marker_module'] if you trust them" in refused.stdout, refused
    # imports given as one string (as overrides may be): that module, not its letters ("cannot import module 'm'")
    script = ("import acframe\nfor imports in ('my_marker_module', 'my_marker_module,'):\n"
              "    print(acframe.load_policy('run', imports=imports).checkpoint)\n"
              "try:\n    acframe.load_policy('run', imports=[None])\nexcept acframe.ConfigError as exc:\n    print(exc)\n")
    named = subprocess.run([sys.executable, '-c', script], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=120)
    assert named.stdout.splitlines() == [os.path.join('run', 'ckpt', 'ckpt_best.pth')] * 2 + [
        "imports: None is not a module name; pass module names, e.g. imports=['my_envs']"], named.stderr


def test_a_trained_run_given_an_env_of_other_shapes_names_the_run_not_a_key_to_set(trained_run):
    """The fix offered was to set policy.model.obs_shape to the env's, which trained weights cannot take."""
    with pytest.raises(ConfigError, match=r"^the run's model was trained with policy.model.obs_shape = 4, and env "
                                          r"'Acrobot-v1' has observations of shape \(6,\); act on an env that gives "
                                          r"what the run trained on"):
        acframe.load_policy(trained_run, overrides=['env.env_id=Acrobot-v1', 'env.stop_value=None'])
