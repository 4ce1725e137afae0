"""Specification of ``acframe -m export --load RUN_DIR_OR_CKPT --out FILE``: the exported model acts as load_policy."""
import warnings

import numpy as np
import pytest
import torch

import acframe
from acframe import POLICY_REGISTRY
from acframe.cli import main
from acframe.policy.a2c import A2CPolicy


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
        model = torch.jit.load(str(out))
        exported = model(torch.from_numpy(obs)).numpy()
        as_numpy_gives = model(torch.from_numpy(obs.astype(np.float64))).numpy()  # numpy's default dtype, as act takes
    np.testing.assert_array_equal(exported, policy.act(obs))
    np.testing.assert_array_equal(as_numpy_gives, exported)
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


def test_export_refuses_a_stochastic_eval_override_it_would_not_apply(trained_run, tmp_path, capsys):
    """It was accepted and the greedy actor written, as if the override had not been given."""
    out = tmp_path / 'policy.pt'
    assert main(['-m', 'export', '--load', str(trained_run), '--out', str(out), 'policy.eval.deterministic=False']) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["acframe: error: policy.eval.deterministic=False: an exported policy is the deterministic actor (the "
                   "most likely action; ONNX and TorchScript hold no sampler); drop the override, and sample from the "
                   "model's outputs yourself if you need a stochastic policy"] and not out.exists()


def test_a_run_that_evaluated_by_sampling_is_exported_greedy_with_a_warning(trained_run, tmp_path):
    """The run's own policy.eval.deterministic=False (as breakout_a2c.py ships it) was exported as the greedy actor
    without a word, while the same value as an override is refused."""
    import json
    import shutil

    from acframe import export_policy
    from acframe.errors import ConfigWarning

    run = tmp_path / 'sampling_run'
    shutil.copytree(trained_run, run, ignore=shutil.ignore_patterns('eval'))
    record = json.loads((run / 'config.json').read_text())
    record['config']['policy']['eval']['deterministic'] = False
    (run / 'config.json').write_text(json.dumps(record))
    with pytest.warns(ConfigWarning, match=r"sampling_run evaluated with sampled actions \(its "
                                           r"policy.eval.deterministic=False\); the exported file holds the greedy "
                                           r"actor \(the most likely action\), which its evaluations did not play"):
        export_policy(str(run), str(tmp_path / 'policy.pt'))
    assert (tmp_path / 'policy.pt').is_file()


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


def test_act_refuses_a_scaled_float_image_for_a_uint8_policy(pixel_goal_run):
    """The model scales uint8 images itself: an image already scaled to [0, 1] would be scaled again (a black
    image, silently); whole values 0-255 in another dtype are the same image."""
    policy = acframe.load_policy(pixel_goal_run)
    obs = goal_observations(8)
    as_floats = {**obs, 'image': obs['image'].astype(np.float32)}
    np.testing.assert_array_equal(policy.act(as_floats), policy.act(obs))
    with pytest.raises(ValueError, match=r"is a uint8 image \(0-255, as the env gives it; the model scales it\), got "
                                         r"float32 values in \[0, 1\]; pass the env's observation unscaled"):
        policy.act({**obs, 'image': obs['image'].astype(np.float32) / 255})
    two_level = {**obs, 'image': np.where(obs['image'] > 127, 255, 0).astype(np.uint8)}  # (the toy pixel envs' frames)
    with pytest.raises(ValueError, match=r"got float32 values in \[0, 1\]; pass the env's observation unscaled"):
        policy.act({**two_level, 'image': two_level['image'].astype(np.float32) / 255})  # (whole numbers: it passed)


def test_a_bool_action_mask_is_not_taken_for_a_scaled_image():
    """masks.md's stored form gives the mask as bools; the mask's space is uint8 but it is no image."""
    import gymnasium as gym
    from acframe.inference import _batch_of
    mask_space = gym.spaces.Box(0, 1, (3,), np.uint8)
    batch, single = _batch_of(np.array([True, False, True]), mask_space, "observation 'action_mask'")
    assert single and batch.dtype == torch.uint8 and batch.tolist() == [[1, 0, 1]]
    image_space = gym.spaces.Box(0, 255, (1, 2, 2), np.uint8)
    assert _batch_of(np.ones((1, 2, 2), dtype=bool), image_space, 'observation')[0].dtype == torch.uint8


# ---- whole episodes: the exported step, the state fed back, acts as load_policy (issue 47 item 4) ----------------
RECURRENT = ['env.env_id=cartpole_novel', 'env.collector_env_num=2', 'env.evaluator_env_num=1',
             'env.n_evaluator_episode=1', 'env.stop_value=None', 'policy.model.share_encoder=True',
             'policy.model.rnn.hidden_size=16', 'policy.collect.n_sample=32', 'policy.eval.evaluator.eval_freq=1000']


@pytest.fixture(scope='module')
def lstm_run(tmp_path_factory):
    """Six updates of A2C with an LSTM on CartPole without velocities (a discrete recurrent policy)."""
    run_dir = tmp_path_factory.mktemp('lstm') / 'run'
    assert main(['-c', 'cartpole_a2c.py', '--exp-dir', str(run_dir), '--max-train-iter', '6', '-q',
                 'policy.model.rnn.type=lstm', *RECURRENT]) == 0
    return run_dir


@pytest.fixture(scope='module')
def acer_lstm_run(tmp_path_factory):
    """Six updates of ACER (acer_q) with an LSTM on CartPole without velocities, a LayerNorm on its input."""
    run_dir = tmp_path_factory.mktemp('acer_lstm') / 'run'
    assert main(['-c', 'cartpole_acer.py', '--exp-dir', str(run_dir), '--max-train-iter', '6', '-q',
                 'policy.model.rnn.type=lstm', 'policy.model.rnn.input_norm=True', *RECURRENT]) == 0
    return run_dir


@pytest.fixture(scope='module')
def gru_pendulum_run(tmp_path_factory):
    """Two updates of Pendulum A2C with a 2-layer GRU each for the actor and the critic (``share_encoder=False``):
    continuous actions, clipped, from a state of 2 + 2 rows; a LayerNorm on each core's input."""
    run_dir = tmp_path_factory.mktemp('gru') / 'run'
    assert main(['-c', 'pendulum_a2c.py', '--exp-dir', str(run_dir), '--max-train-iter', '2', '-q',
                 'env.collector_env_num=2', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1',
                 'policy.model.init_sigma=3.0', 'policy.model.share_encoder=False', 'policy.model.rnn.type=gru',
                 'policy.model.rnn.hidden_size=8', 'policy.model.rnn.num_layers=2', 'policy.model.rnn.input_norm=True']) == 0
    return run_dir


def play_episodes(policy, exported_step, episodes=3, max_steps=150):
    """Whole episodes of the run's env acted by ``policy.act`` (``reset()`` at each start); at every step the
    exported step (``obs`` batch of one → action, or ``(obs, state) → (action, state)`` with the state fed back,
    zeros at the start) and the explicit form ``policy.act(obs, state)`` must give the same action. Returns the
    number of steps compared and how many of them had a state that differs from zeros."""
    from acframe.envs import build_env

    env = build_env(dict(policy.cfg.env), 0, 100, 'inference')
    compared = nonzero = 0
    for episode in range(episodes):
        obs, _ = env.reset(seed=100 + episode)
        policy.reset()
        state = policy.initial_state(1)  # the exported step's state, (1, R, H)
        own = policy.initial_state()     # the explicit form's state for one observation, (R, H)
        for _ in range(max_steps):
            expected = policy.act(obs)
            action, own = policy.act(obs, own)
            exported, state = exported_step(obs[None].astype(np.float32), state)
            if expected.dtype == np.int64:
                assert exported[0] == expected == action
            else:
                np.testing.assert_allclose(exported[0], expected, rtol=1e-5, atol=1e-6)
                np.testing.assert_array_equal(action, expected)
            np.testing.assert_allclose(state[0], own, rtol=1e-5, atol=1e-6)
            compared += 1
            nonzero += bool(np.abs(own).sum() > 0)
            obs, _, terminated, truncated, _ = env.step(expected)
            if terminated or truncated:
                break
    env.close()
    return compared, nonzero


def torchscript_step(path):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        model = torch.jit.load(str(path))

    def step(obs, state):
        if state.shape[1:] == (0, 0):  # a feed-forward export: obs -> action
            return model(torch.from_numpy(obs)).numpy(), state
        obs = obs.astype(np.float64) if obs.dtype == np.float32 else obs  # numpy's default dtype is taken too
        action, state = model(torch.from_numpy(obs), torch.from_numpy(state))
        return action.numpy(), state.numpy()
    return step


@pytest.fixture(scope='module')
def gru_run(tmp_path_factory):
    """Two updates of A2C with a one-layer GRU on CartPole without velocities: its step returns a view of its output
    as the state (``RecurrentCore.step``), a state of 1 row."""
    run_dir = tmp_path_factory.mktemp('gru1') / 'run'
    assert main(['-c', 'cartpole_a2c.py', '--exp-dir', str(run_dir), '--max-train-iter', '2', '-q',
                 'policy.model.rnn.type=gru', *RECURRENT]) == 0
    return run_dir


@pytest.mark.parametrize('run, rows', [('lstm_run', 2), ('acer_lstm_run', 2), ('gru_pendulum_run', 4), ('gru_run', 1),
                                       ('trained_run', 0), ('pendulum_run', 0)])
def test_the_exported_step_acts_as_load_policy_over_whole_episodes(run, rows, request, tmp_path, capsys):
    """Recurrent and feed-forward runs: TorchScript, the state fed back from step to step, equals load_policy's
    stateful act (reset at every episode start) and its explicit form act(obs, state), step by step."""
    run_dir = request.getfixturevalue(run)
    out = tmp_path / 'policy.pt'
    assert main(['-m', 'export', '--load', str(run_dir), '--out', str(out)]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    policy = acframe.load_policy(run_dir)
    assert policy.initial_state().shape[0] == rows
    if rows:
        assert f"state ('B', {rows}, {policy.initial_state().shape[1]}) in and out" in line
        assert policy.initial_state(3).shape == (3, rows, policy.initial_state().shape[1])
        assert not policy.initial_state(3).any()
    compared, nonzero = play_episodes(policy, torchscript_step(out))
    assert compared >= 20
    assert (nonzero > 0) == bool(rows)  # a recurrent run's state moves; a feed-forward one's is empty


def torchscript_refusal(call):
    """The last line of what a TorchScript file raised: the check's own message, not an error inside the graph."""
    with pytest.raises(torch.jit.Error) as caught:
        call()
    return str(caught.value).strip().splitlines()[-1]


def test_a_torchscript_file_names_the_input_of_the_wrong_shape(lstm_run, trained_run, tmp_path):
    """A single observation, a state without its batch axis, a state of another batch: one line naming the input
    and the shape the file takes (a trace alone failed deep in its graph: 'mat1 and mat2 shapes cannot be
    multiplied', 'Expected 1 elements in a list but found 32')."""
    step_file, actor_file = tmp_path / 'step.pt', tmp_path / 'actor.pt'
    assert main(['-m', 'export', '--load', str(lstm_run), '--out', str(step_file), '-q']) == 0
    assert main(['-m', 'export', '--load', str(trained_run), '--out', str(actor_file), '-q']) == 0
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        step, actor = torch.jit.load(str(step_file)), torch.jit.load(str(actor_file))
    obs_size = acframe.load_policy(lstm_run).observation_space.shape[0]
    state = torch.zeros(2, 2, 16)
    action, next_state = step(torch.zeros(2, obs_size), state)
    assert action.shape == (2,) and next_state.shape == state.shape
    assert torchscript_refusal(lambda: step(torch.zeros(obs_size), state[:1])) == (
        f'builtins.ValueError: obs: a batch of shape (B, {obs_size}) is expected, not [{obs_size}] '
        '(one observation is obs[None])')
    assert torchscript_refusal(lambda: step(torch.zeros(1, obs_size), torch.zeros(2, 16))).startswith(
        "builtins.ValueError: state: shape (1, 2, 16) is expected (one per observation; zeros at an episode's first "
        "step")
    assert torchscript_refusal(lambda: step(torch.zeros(3, obs_size), state)).endswith('not [2, 2, 16]')
    assert torchscript_refusal(lambda: step(torch.zeros(2, obs_size + 1), state)).startswith(
        f'builtins.ValueError: obs: a batch of shape (B, {obs_size}) is expected, not [2, {obs_size + 1}]')
    assert actor(torch.zeros(5, 4)).shape == (5,)
    assert torchscript_refusal(lambda: actor(torch.zeros(4))).endswith('not [4] (one observation is obs[None])')


def test_predict_is_stable_baselines3s_form_of_act(lstm_run, trained_run):
    """action, state = policy.predict(obs, state, episode_start) (sb3-contrib's RecurrentPPO call): the explicit
    form with the starting envs' rows zeroed; a feed-forward policy's state is None."""
    feed_forward = acframe.load_policy(trained_run)
    obs = np.zeros((3, 4), dtype=np.float32)
    action, state = feed_forward.predict(obs)
    assert state is None and np.array_equal(action, feed_forward.act(obs))
    policy = acframe.load_policy(lstm_run)
    rng = np.random.default_rng(1)
    observations = rng.normal(size=(5, 3, *policy.observation_space.shape)).astype(np.float32)
    state, reference = None, policy.initial_state(3)
    for i, obs in enumerate(observations):
        starts = np.array([i == 0, i == 3, False])
        reference[starts] = 0.0
        want, reference = policy.act(obs, reference)
        action, state = policy.predict(obs, state, episode_start=starts)
        assert np.array_equal(action, want) and np.array_equal(state, reference)
    one, one_state = policy.predict(observations[0][0])  # one observation: its state is (R, H)
    assert one_state.shape == policy.initial_state().shape and one == policy.act(observations[0][0],
                                                                                  policy.initial_state())[0]
    with pytest.raises(ValueError, match=r'predict: episode_start has shape \(2,\); give one flag per observation'):
        policy.predict(observations[0], state, episode_start=[True, False])


def test_greedy_and_sampled_actions_carry_one_state_through_an_episode(lstm_run):
    """act(obs) and act(obs, deterministic=False) kept a state each: an episode that switched lost what the other way
    had seen (a cue task fell to chance). Either way, the state after a step is the explicit form's next state."""
    policy = acframe.load_policy(lstm_run)
    rng = np.random.default_rng(0)
    observations = rng.normal(size=(6, 2, *policy.observation_space.shape)).astype(np.float32)
    state = policy.initial_state(2)
    policy.reset()
    for i, obs in enumerate(observations):
        greedy = i % 2 == 0
        _, state = policy.act(obs, state, deterministic=True)  # (the next state does not depend on the action drawn)
        policy.act(obs, deterministic=greedy)
        for kept in (policy.policy._eval_states.state, policy.policy._collect_states.state):
            np.testing.assert_allclose(kept.numpy(), state, rtol=1e-5, atol=1e-6)
    policy.reset([1])
    policy.act(observations[0], deterministic=False)
    np.testing.assert_allclose(policy.policy._eval_states.state[1].numpy(),
                               policy.act(observations[0][1], policy.initial_state())[1], rtol=1e-5, atol=1e-6)


def test_the_explicit_batch_form_keeps_one_state_per_env(lstm_run):
    """act(obs (B, ...), state (B, R, H)) over 3 envs, a row zeroed where its env starts an episode, equals the same
    form one env at a time (itself checked against the stateful act above); the explicit form keeps nothing."""
    from acframe.envs import build_env

    policy = acframe.load_policy(lstm_run)
    envs = [build_env(dict(policy.cfg.env), i, 7, 'inference') for i in range(3)]
    obs = np.stack([env.reset(seed=7 + i)[0] for i, env in enumerate(envs)])
    batch_state = policy.initial_state(3)
    singles = [policy.initial_state() for _ in envs]
    starts = 0
    for _ in range(120):
        actions, batch_state = policy.act(obs, batch_state)
        for i, env in enumerate(envs):
            action, singles[i] = policy.act(obs[i], singles[i])
            assert action == actions[i]
            np.testing.assert_allclose(batch_state[i], singles[i], rtol=1e-5, atol=1e-6)
            obs[i], _, terminated, truncated, _ = env.step(actions[i])
            if terminated or truncated:
                obs[i] = env.reset()[0]
                batch_state[i] = 0.0  # a new episode starts from zeros
                singles[i] = policy.initial_state()
                starts += 1
    assert starts > 0
    # one observation with a batch's state of one row: the next state comes back in the shape given (it lost the row)
    action, state = policy.act(obs[0], policy.initial_state(1))
    assert state.shape == policy.initial_state(1).shape and action == policy.act(obs[0], policy.initial_state())[0]
    with pytest.raises(ValueError, match='initial_state'):
        policy.act(obs, policy.initial_state(2))
    with pytest.raises(TypeError, match='by keyword'):
        policy.act(obs, False)


def test_onnx_export_of_a_recurrent_step_acts_as_load_policy_over_whole_episodes(lstm_run, gru_pendulum_run, gru_run,
                                                                                   tmp_path):
    pytest.importorskip('onnxscript', reason='ONNX export needs the onnx extra (pip install acframe[onnx])')
    ort = pytest.importorskip('onnxruntime', reason='running the ONNX model needs the onnx extra (onnxruntime)')
    for run_dir in (lstm_run, gru_pendulum_run, gru_run):
        out = tmp_path / f'{run_dir.parent.name}.onnx'
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            assert main(['-m', 'export', '--load', str(run_dir), '--out', str(out), '-q']) == 0
        assert not [w for w in caught if 'axis name' in str(w.message)]  # the state shares the batch axis on purpose
        session = ort.InferenceSession(str(out), providers=['CPUExecutionProvider'])
        assert [i.name for i in session.get_inputs()] == ['obs', 'state']
        assert [o.name for o in session.get_outputs()] == ['action', 'state_out']

        def step(obs, state):
            return tuple(session.run(['action', 'state_out'], {'obs': obs, 'state': state}))
        compared, nonzero = play_episodes(acframe.load_policy(run_dir), step)
        assert compared >= 20 and nonzero > 0


class StatefulEvalA2C(A2CPolicy):
    """A user's plugin whose eval mode keeps state of its own (not ``policy.model.rnn``): it alternates its actions
    from step to step. A trace bakes the counter in as a constant, so its export would act otherwise."""

    def _reset_eval(self) -> None:
        self._steps = 0

    def _forward_eval(self, obs):
        self._steps = getattr(self, '_steps', 0) + 1
        logit = self._model.compute_actor(obs)['logit']
        return {'action': torch.full(logit.shape[:1], self._steps % 2, dtype=torch.long)}


def test_an_eval_mode_with_state_of_its_own_is_refused_and_nothing_is_written(tmp_path, capsys):
    from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy

    if 'stateful_eval_a2c_test' not in POLICY_REGISTRY:
        POLICY_REGISTRY.register('stateful_eval_a2c_test')(StatefulEvalA2C)
    run_dir = tmp_path / 'run'
    main_cfg = dict(env=dict(env_id='CartPole-v1', collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1,
                             stop_value=None), policy=dict(collect=dict(n_sample=16)))
    serial_pipeline_onpolicy((main_cfg, dict(env=dict(type='gym'), policy=dict(type='stateful_eval_a2c_test'))),
                             seed=0, max_train_iter=1, exp_dir=str(run_dir), progress=False)
    try:
        import onnxscript  # noqa: F401
        outs = (tmp_path / 'policy.pt', tmp_path / 'policy.onnx')
    except ImportError:  # (ONNX export needs the onnx extra)
        outs = (tmp_path / 'policy.pt',)
    for out in outs:
        code = main(['-m', 'export', '--load', str(run_dir), '--out', str(out)])
        err = capsys.readouterr().err
        assert code == 2 and 'acts otherwise than load_policy at step 1' in err and err.count('\n') == 1, err
        assert not out.exists() and not list(tmp_path.glob('policy*'))


class _RowLoopNet(torch.nn.Module):
    """A model whose forward loops over the batch rows in Python: eager it takes any batch, a trace fixes the size."""

    def __init__(self, obs_shape, action_shape):
        super().__init__()
        self.body, self.pi, self.v = torch.nn.Linear(obs_shape, 16), torch.nn.Linear(16, action_shape), torch.nn.Linear(16, 1)

    def forward(self, obs, mode='compute_actor_critic'):
        flat = obs.reshape(-1, obs.shape[-1])
        hidden = torch.stack([torch.tanh(self.body(row)) for row in flat]).reshape(*obs.shape[:-1], -1)
        out = {'logit': self.pi(hidden)} if mode != 'compute_critic' else {}
        if mode != 'compute_actor':
            out['value'] = self.v(hidden).squeeze(-1)
        return out


def test_a_model_whose_trace_fixes_the_batch_size_is_refused_in_one_line_and_nothing_is_written(tmp_path, capsys):
    """The trace runs on a batch of 2 and the check on a batch of 1: a TorchScript traceback, exit 1."""
    from acframe import MODEL_REGISTRY
    from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy

    MODEL_REGISTRY.register('row_loop_export_test', _RowLoopNet, force=True)
    try:
        main_cfg = dict(env=dict(env_id='CartPole-v1', collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1,
                                 stop_value=None), policy=dict(collect=dict(n_sample=16),
                                                               model=dict(type='row_loop_export_test')))
        serial_pipeline_onpolicy((main_cfg, dict(policy=dict(type='a2c'))), seed=0, max_train_iter=1,
                                 exp_dir=str(tmp_path / 'run'), progress=False)
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # (the tracer's own warnings about the loop)
            code = main(['-m', 'export', '--load', str(tmp_path / 'run'), '--out', str(tmp_path / 'policy.pt')])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and err[-1].startswith('acframe: error: ') and 'fails on a batch of one' in err[-1], err
        assert 'fixes the batch size its trace ran with, 2' in err[-1]  # (it runs on the trace's 2 rows)
        assert not (tmp_path / 'policy.pt').exists()
    finally:
        MODEL_REGISTRY._entries.pop('row_loop_export_test', None)
