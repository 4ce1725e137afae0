"""Specification of the EnvPool env manager (``env.manager='envpool'``) against the gymnasium managers.

EnvPool's random generators are its own, so the same seed gives the same observations across EnvPool runs
(not the same as gymnasium's, except for Atari frames where nothing is drawn at random); truncation flags,
SAME_STEP resets, final observations, episode statistics, spaces and dtypes are the gymnasium managers'.
"""
import numpy as np
import pytest

envpool = pytest.importorskip('envpool', reason="env.manager='envpool' needs the 'envpool' extra")

from acframe.config import compile_config  # noqa: E402
from acframe.envs import make_env_manager  # noqa: E402
from acframe.errors import ConfigError  # noqa: E402

LIMIT = 7


def pendulum_cfg(env_id='Pendulum-v1'):
    main = dict(env=dict(env_id=env_id, max_episode_steps=LIMIT))
    return compile_config((main, dict(policy=dict(type='a2c'), env_manager=dict(type='envpool'))), seed=0)


def test_same_seeds_give_the_same_observations_and_reset_replays_them():
    cfg = pendulum_cfg()
    actions = np.random.default_rng(0).uniform(-2, 2, (12, 3, 1)).astype(np.float32)

    def rollout(env):
        seen = [env.reset()]
        seen += [env.step(a).obs for a in actions]
        return np.stack(seen)

    with make_env_manager(cfg, 'collector', 3, 5) as one, make_env_manager(cfg, 'collector', 3, 5) as two:
        first = rollout(one)
        np.testing.assert_array_equal(first, rollout(two))
        np.testing.assert_array_equal(first, rollout(one))  # reset rebuilds the pool with the same seeds
    with make_env_manager(cfg, 'collector', 3, 6) as other:
        assert not np.array_equal(first, rollout(other))
    assert len({tuple(row) for row in first[0]}) == 3  # every env has its own seed


def test_truncation_flags_final_obs_and_episode_statistics_match_the_gymnasium_manager():
    cfg = pendulum_cfg()
    with make_env_manager(cfg, 'collector', 3, 0) as pool, make_env_manager(cfg, 'collector', 3, 0, 'sync') as gym_env:
        assert pool.observation_space == gym_env.observation_space and pool.action_space == gym_env.action_space
        obs, gym_obs = pool.reset(), gym_env.reset()
        assert obs.dtype == gym_obs.dtype and obs.shape == gym_obs.shape
        for t in range(3 * LIMIT):
            action = np.full((3, 1), 5.0, dtype=np.float32)  # beyond the bounds: both clip to 2
            step, gym_step = pool.step(action), gym_env.step(action)
            np.testing.assert_array_equal(step.truncated, gym_step.truncated)
            np.testing.assert_array_equal(step.terminated, gym_step.terminated)
            np.testing.assert_array_equal(step.done_index, gym_step.done_index)
            if (t + 1) % LIMIT == 0:
                assert step.truncated.all() and step.final_obs.shape == (3, 3)
                # SAME_STEP: the returned observation already starts the next episode
                assert not np.allclose(step.final_obs, step.obs)
            else:
                assert step.final_obs is None and not step.truncated.any()
        returns, lengths, envs = pool.pop_finished()
        gym_returns, gym_lengths, gym_envs = gym_env.pop_finished()
        assert lengths == gym_lengths and envs == gym_envs and all(r < 0 for r in returns)


class _Reversed:
    """An EnvPool pool whose step answers in reverse env order (EnvPool reports the order in info['env_id'])."""

    def __init__(self, pool):
        self.pool = pool

    def __getattr__(self, name):
        return getattr(self.pool, name)

    def step(self, actions, env_id=None):
        obs, reward, terminated, truncated, info = self.pool.step(actions, env_id)
        info = dict(info, env_id=np.asarray(info['env_id'])[::-1])
        return obs[::-1], reward[::-1], terminated[::-1], truncated[::-1], info


def test_a_step_answered_out_of_env_order_is_put_back_in_order_rewards_and_flags_too():
    cfg = pendulum_cfg()
    actions = np.random.default_rng(1).uniform(-2, 2, (2 * LIMIT, 3, 1)).astype(np.float32)
    with make_env_manager(cfg, 'collector', 3, 0) as plain, make_env_manager(cfg, 'collector', 3, 0) as shuffled:
        plain.reset(), shuffled.reset()
        shuffled._venv = _Reversed(shuffled._venv)
        for action in actions:
            a, b = plain.step(action), shuffled.step(action)
            for field in ('obs', 'reward', 'terminated', 'truncated', 'done_index'):
                np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
        assert plain.pop_finished() == shuffled.pop_finished()


def test_atari_through_envpool_has_the_gymnasium_chains_spaces_and_dtypes():
    pytest.importorskip('ale_py', reason="the gymnasium Atari chain needs the 'atari' extra")
    cfg = compile_config('pong_impala.py', overrides=['env.manager=envpool'])
    with make_env_manager(cfg, 'collector', 2, 0) as pool, make_env_manager(cfg, 'collector', 2, 0, 'sync') as gym_env:
        assert pool.observation_space == gym_env.observation_space and pool.action_space == gym_env.action_space
        obs = pool.reset()
        assert obs.shape == (2, 4, 84, 84) and obs.dtype == np.uint8
        step = pool.step(np.zeros(2, dtype=np.int64))
        assert step.obs.dtype == np.uint8 and step.reward.dtype == np.float32
    assert pool.task_id == 'Pong-v5'


@pytest.mark.parametrize('env_id', ['ALE/Breakout-v5', 'ALE/Pong-v5'])
def test_atari_frames_are_envpools_pixel_for_pixel_on_the_same_actions(env_id):
    """Same preprocessing both ways: each action repeated for 4 frames, the last two max-pooled, resized to 84x84
    grey, 4 stacked. One no-op frame after the reset and no FIRE on reset (the two draw those their own ways)."""
    pytest.importorskip('ale_py', reason="the gymnasium Atari chain needs the 'atari' extra")
    main = dict(env=dict(env_id=env_id, atari=dict(enable=True, repeat_action_probability=0.0, noop_max=1,
                                                       fire_reset=False)))
    cfg = compile_config((main, dict(policy=dict(type='a2c'))), seed=0)
    with make_env_manager(cfg, 'evaluator', 2, 0, 'envpool') as pool, \
            make_env_manager(cfg, 'evaluator', 2, 0, 'sync') as gym_env:
        np.testing.assert_array_equal(pool.reset(), gym_env.reset())
        actions = np.random.default_rng(0).integers(pool.action_space.n, size=(150, 2))
        moving = 0
        for step, action in enumerate(actions):
            a, b = pool.step(action), gym_env.step(action)
            if len(a.done_index) or len(b.done_index):  # (a whole game: not over in 150 steps of these games)
                break
            np.testing.assert_array_equal(a.obs, b.obs, err_msg=f'step {step}')
            np.testing.assert_array_equal(a.reward, b.reward)
            moving += int((a.obs[:, -1] != a.obs[:, -2]).any())
        assert step == len(actions) - 1 and moving > 100  # the frames moved, and all of them agreed


def breakout_cfg(**atari):
    main = dict(env=dict(env_id='ALE/Breakout-v5', atari=dict(enable=True, repeat_action_probability=0.0, noop_max=1,
                                                              **atari)))
    return compile_config((main, dict(policy=dict(type='a2c'))), seed=0)


@pytest.mark.parametrize('manager', ['envpool', 'sync'])
def test_a_lost_life_ends_a_training_episode_and_the_next_one_goes_on_with_the_same_game(manager):
    """Breakout with NOOP: the served ball is missed every time. Each lost life ends a training episode; the next
    episode continues that game (its first frame shows one life fewer) until the fifth ends it and a new game
    starts with the first frame of the first one (EnvPool's reset(env_id) would start a new game every time)."""
    pytest.importorskip('ale_py', reason="the gymnasium Atari chain needs the 'atari' extra")
    with make_env_manager(breakout_cfg(), 'collector', 2, 0, manager) as env:
        first = env.reset()
        starts = []
        for _ in range(2000):
            step = env.step(np.zeros(2, dtype=np.int64))
            if len(step.done_index):
                assert step.terminated.all() and not step.truncated.any()
                starts.append([np.array_equal(step.obs[i], first[i]) for i in range(2)])
                if len(starts) == 6:
                    break
        assert starts == [[False] * 2] * 4 + [[True] * 2] + [[False] * 2]
        assert len(env.pop_finished()[0]) == 12  # twelve training episodes: lives, not games


@pytest.mark.parametrize('manager', ['envpool', 'sync'])
def test_an_evaluators_whole_game_serves_after_each_lost_life_and_ends_with_the_game(manager):
    """A policy that never presses FIRE (NOOP) still plays its five lives to the end of the game in an evaluator
    env: FIRE follows each lost life, as it follows a training env's reset. Without it the game stands still."""
    pytest.importorskip('ale_py', reason="the gymnasium Atari chain needs the 'atari' extra")
    with make_env_manager(breakout_cfg(), 'evaluator', 2, 0, manager) as env:
        first = env.reset()
        for t in range(2000):
            step = env.step(np.zeros(2, dtype=np.int64))
            if len(step.done_index):
                break
        assert step.done_index.tolist() == [0, 1] and step.terminated.all() and not step.truncated.any()
        returns, lengths, _ = env.pop_finished()
        assert lengths == [t + 1] * 2 and t > 100  # five lives of ~24 steps or more, one episode
        np.testing.assert_array_equal(step.obs, first)  # the next game starts
        np.testing.assert_array_equal(step.final_obs[:, :-1], step.final_obs[:, 1:])  # ended on a still screen


def test_envpool_atari_needs_a_no_op_frame_after_reset():
    pytest.importorskip('ale_py', reason="the gymnasium Atari chain needs the 'atari' extra")
    cfg = compile_config('pong_impala.py', overrides=['env.manager=envpool', 'env.atari.noop_max=0'])
    with pytest.raises(ConfigError, match=r"env.atari.noop_max = 0: EnvPool .* needs noop_max >= 1"):
        make_env_manager(cfg, 'collector', 2, 0)


def test_what_envpool_cannot_run_is_a_clear_error():
    with pytest.raises(ConfigError, match='not an EnvPool task'):
        make_env_manager(pendulum_cfg(env_id='Pendulum-v9'), 'collector', 2, 0)
    main = dict(env=dict(env_id='toy_dict'))
    cfg = compile_config((main, dict(policy=dict(type='a2c'), env=dict(type='toy_dict'), env_manager=dict(type='envpool'))))
    with pytest.raises(ConfigError, match="env type 'toy_dict' needs env.manager 'sync' or 'async'"):
        make_env_manager(cfg, 'collector', 2, 0)


def test_the_parallel_pipeline_runs_envpool_actors_in_spawned_processes(tmp_path):
    """A forked child of a process that ran EnvPool crashed (SIGSEGV): 'auto' spawns for env.manager='envpool'."""
    from acframe.entry.parallel import parallel_pipeline
    from acframe.entry.parallel.local import start_method

    main = dict(env=dict(env_id='CartPole-v1', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1,
                         stop_value=None, max_episode_steps=50),
                parallel=dict(actor_num=1), policy=dict(collect=dict(n_sample=4), unroll_len=8))
    create = dict(policy=dict(type='impala'), env_manager=dict(type='envpool'))
    cfg = compile_config((main, create))
    assert start_method(cfg) == 'spawn'
    policy = parallel_pipeline(cfg, exp_dir=str(tmp_path / 'run'), backend='local', progress=False, max_env_step=640)
    assert policy.summary['env_steps'] >= 640


def test_a_run_trained_on_envpool_is_evaluated_on_envpool_from_the_cli(tmp_path):
    """``-m eval`` builds the run's evaluator envs as its evaluator did (here EnvPool), with the seeds it is given."""
    import json
    import subprocess
    import sys

    run = tmp_path / 'run'
    subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_impala.py', '-s', '0', '--exp-dir', str(run),
                    '-q', 'env.manager=envpool', 'max_env_step=2000', 'env.stop_value=None'], check=True, timeout=300)
    results = []
    for _ in range(2):
        out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'eval', '--load', str(run), '-s', '7',
                              '--episodes', '3', '-q'], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        results.append(json.loads((run / 'eval' / 'ckpt_best_seed7_3ep.json').read_text()))  # 3 of the run's 8
    assert len(results[0]['returns']) == 3 and results[0]['returns'] == results[1]['returns']
