"""The one env factory (``acframe.envs.make_env_manager``) through the pipelines.

* domain randomization is a source of per-env parameters given to the factory: it trains in the parallel pipeline,
  each actor (and each restart, each re-draw) with its own draw, and its envs are watched by ``env.step_timeout_s``;
* the seam for envs, in the style of tests/test_new_algorithm_seam.py: a user's own env manager and a user's
  already-vectorized env (examples/vector_cartpole.py) are registered by name and run through the serial and the
  parallel pipelines with no edit to acframe.
"""
import json
import os
import sys
import time

import gymnasium as gym
import numpy as np
import pytest

from acframe import ENV_MANAGER_REGISTRY, ENV_REGISTRY, ConfigError
from acframe.config import compile_config
from acframe.entry.parallel import parallel_pipeline
from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy
from acframe.envs import SyncEnvManager, VectorEnvManager, make_env_manager
from acframe.envs.gym_env import make_gym_env
from acframe.envs.randomization import draw_params, parse_params
from acframe.errors import EnvTimeoutError

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'examples')
GRAVITY = dict(gravity=dict(dist='uniform', low=5.0, high=15.0, via='attribute'))


# ---- envs and a manager a user would write ----------------------------------------------------------------------
class ParamLogCartPole(gym.Wrapper):
    """CartPole that appends ``seed gravity pid`` to ``<log_dir>/<pid>.log`` at each seeded reset, and with
    ``hang_at`` > 0 sleeps for an hour in that step."""

    def __init__(self, env, log_dir=None, hang_at=0):
        super().__init__(env)
        self.log_dir, self.hang_at, self.steps = log_dir, hang_at, 0

    def reset(self, *, seed=None, options=None):
        if seed is not None and self.log_dir:
            with open(os.path.join(self.log_dir, f'{os.getpid()}.log'), 'a') as f:
                f.write(f"{seed} {self.env.unwrapped.gravity!r} {os.getpid()}\n")
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        self.steps += 1
        if self.steps == self.hang_at:
            time.sleep(3600)
        return self.env.step(action)


def make_param_log_cartpole(env_cfg, hang_at=0, **overrides):
    kwargs = dict(env_cfg.get('env_kwargs') or {})
    log_dir = kwargs.pop('log_dir', None)
    return ParamLogCartPole(make_gym_env({**env_cfg, 'env_kwargs': kwargs}, **overrides), log_dir, hang_at)


class BuildLogManager(SyncEnvManager):
    """A user's env manager: the sync one, which first notes ``role pid seeds`` in ``env.env_kwargs.build_log``."""

    @classmethod
    def from_config(cls, env_cfg, role, seeds, params=None, wrap=None, watch_sync=False):
        kwargs = dict(env_cfg.get('env_kwargs') or {})
        with open(kwargs.pop('build_log'), 'a') as f:
            f.write(f"{role} {os.getpid()} {' '.join(map(str, seeds))}\n")
        return super().from_config({**env_cfg, 'env_kwargs': kwargs}, role, seeds, params, wrap, watch_sync)


@pytest.fixture(autouse=True, scope='module')
def registered():
    ENV_REGISTRY.register('param_log_cartpole', make_param_log_cartpole)
    ENV_MANAGER_REGISTRY.register('build_log_seam_test', BuildLogManager)
    sys.path.insert(0, EXAMPLES)
    yield
    sys.path.remove(EXAMPLES)
    ENV_REGISTRY._entries.pop('param_log_cartpole', None)
    ENV_MANAGER_REGISTRY._entries.pop('build_log_seam_test', None)


def a2c(env_type='gym', manager='sync', collector_env_num=4, **env):
    main = dict(
        exp_name='env_factory_test',
        env=dict(env_id='CartPole-v1', collector_env_num=collector_env_num, evaluator_env_num=2, n_evaluator_episode=2,
                 n_confirm_episode=0, stop_value=None, **env),
        parallel=dict(actor_num=2),
        policy=dict(collect=dict(n_sample=collector_env_num * 5), eval=dict(evaluator=dict(eval_freq=10))),
        seed=0,
    )
    return main, dict(env=dict(type=env_type), env_manager=dict(type=manager), policy=dict(type='a2c'))


def randomized(main, resample_every=0, **params):
    main['env']['domain_randomization'] = dict(enable=True, params=params or GRAVITY, resample_every=resample_every)
    return main


def read_summary(exp_dir) -> dict:
    with open(os.path.join(exp_dir, 'summary.json')) as f:
        return json.load(f)


def logged_resets(log_dir):
    """``{(seed, gravity)}`` of every seeded reset, and the pids that reset."""
    rows = [line.split() for name in os.listdir(log_dir) for line in open(os.path.join(log_dir, name))]
    return {(int(seed), float(gravity)) for seed, gravity, _ in rows}, {int(pid) for _, _, pid in rows}


# ---- domain randomization through the factory -------------------------------------------------------------------
@pytest.mark.parametrize('pipeline', ['serial', 'parallel'])
def test_a_randomized_env_whose_step_hangs_is_caught_by_the_watchdog(tmp_path, pipeline):
    """Serial: subprocess envs ('async'); parallel (inline backend): in-process envs, watched by SIGALRM."""
    main, create = a2c('param_log_cartpole', 'async' if pipeline == 'serial' else 'sync', step_timeout_s=0.5)
    randomized(main, hang_at=dict(dist='choice', values=[3]))  # a keyword of the env factory, drawn: every env hangs
    start = time.monotonic()
    with pytest.raises(EnvTimeoutError, match=r"collector env 0 \(seed 0\)( \(and 3 more envs\))? did not return from "
                                              r"step within env.step_timeout_s=0.5 s"):
        if pipeline == 'serial':
            serial_pipeline_onpolicy((main, create), exp_dir=str(tmp_path / 'hang'), max_env_step=400, progress=False)
        else:
            parallel_pipeline((main, create), exp_dir=str(tmp_path / 'hang'), backend='inline', max_env_step=400,
                              progress=False)
    assert time.monotonic() - start < 15


def test_domain_randomization_trains_in_the_parallel_pipeline_each_actor_with_its_own_draws(tmp_path):
    """Two actors (local processes) of 4 envs, re-drawing every 3 of their collections; the evaluator is nominal."""
    log_dir = tmp_path / 'resets'
    log_dir.mkdir()
    main, create = a2c('param_log_cartpole', env_kwargs=dict(log_dir=str(log_dir)))
    randomized(main, resample_every=3)
    exp_dir = tmp_path / 'dr'
    parallel_pipeline((main, create), exp_dir=str(exp_dir), backend='local', max_env_step=1200, progress=False)
    summary = read_summary(exp_dir)
    assert summary['env_steps'] == 1200 and summary['train_iters'] == 30 and summary['last_eval_return'] is not None
    resets, pids = logged_resets(log_dir)
    specs = parse_params(GRAVITY)
    for actor in (0, 1):  # env set k = actor (first incarnations): seeds 4k..4k+3, draw k, then its re-draws
        seeds = range(4 * actor, 4 * actor + 4)
        for redraw in (0, 1):
            gravities = [p['gravity'] for p in draw_params(specs, 0, actor, 4, redraw=redraw)]
            assert {(s, g) for s, g in zip(seeds, gravities)} <= resets, (actor, redraw)
    first = draw_params(specs, 0, 0, 4)  # actor 0's first envs are the serial pipeline's first envs
    assert [p['gravity'] for p in draw_params(specs, 0, 0, 4, redraw=0)] == [p['gravity'] for p in first]
    assert {(100_000, 9.8), (100_001, 9.8)} <= resets  # the evaluator keeps the nominal gravity
    assert all(5.0 <= g <= 15.0 for s, g in resets if s < 100_000)
    # two actor processes and the evaluator's (this process only checked one nominal env before the run: check-env)
    assert len(pids - {os.getpid()}) == 3
    with open(exp_dir / 'domain_randomization.json') as f:  # the learner recorded every draw as its segments came
        recorded = json.load(f)['collector']
    assert sorted((d['actor'], d['redraw']) for d in recorded) == [(a, r) for a in (0, 1) for r in range(10)]  # 30 each
    assert all({(s, p['gravity']) for s, p in zip(d['seeds'], d['params'])} <= resets for d in recorded)


def test_a_resumed_parallel_run_keeps_its_recorded_draws_and_gives_the_restarted_actors_new_ones(tmp_path):
    main, create = a2c()
    randomized(main)
    exp_dir = str(tmp_path / 'dr_resume')
    parallel_pipeline((main, create), exp_dir=exp_dir, backend='inline', max_env_step=400, progress=False)
    parallel_pipeline(None, resume=exp_dir, backend='inline', max_env_step=800, progress=False)
    with open(os.path.join(exp_dir, 'domain_randomization.json')) as f:
        recorded = json.load(f)['collector']
    # first run: env sets 0 and 1; the resumed actors are incarnation 1: env sets 2 and 3, with their own seeds
    assert [(d['actor'], d['incarnation'], d['draw']) for d in recorded] == [(0, 0, 0), (1, 0, 1), (0, 1, 2), (1, 1, 3)]
    assert recorded[2]['seeds'] == [8, 9, 10, 11]


# ---- the seam: a user's env manager, a user's vectorized env -----------------------------------------------------
@pytest.mark.parametrize('pipeline', ['serial', 'parallel'])
def test_a_user_registered_env_manager_builds_every_env_of_a_run(tmp_path, pipeline):
    build_log = tmp_path / 'builds.log'
    main, create = a2c(manager='build_log_seam_test', env_kwargs=dict(build_log=str(build_log)))
    exp_dir = str(tmp_path / pipeline)
    if pipeline == 'serial':
        serial_pipeline_onpolicy((main, create), exp_dir=exp_dir, max_env_step=400, progress=False)
    else:
        parallel_pipeline((main, create), exp_dir=exp_dir, backend='local', max_env_step=400, progress=False)
    assert read_summary(exp_dir)['env_steps'] == 400
    builds = [line.split() for line in build_log.read_text().splitlines()]
    roles = sorted((role, ' '.join(seeds)) for role, _, *seeds in builds)
    if pipeline == 'serial':
        assert roles == [('collector', '0 1 2 3'), ('evaluator', '100000 100001')]
    else:  # the learner's probe of the spaces, each actor's envs, the evaluator's: each in its process
        assert roles == [('collector', '0'), ('collector', '0 1 2 3'), ('collector', '4 5 6 7'),
                         ('evaluator', '100000 100001')]
        assert len({pid for _, pid, *_ in builds}) == 4


def numpy_cartpole_config(num_envs=64, **overrides):
    from vector_cartpole import config

    main, create = config(num_envs)
    main['env'].update(evaluator_env_num=2, n_evaluator_episode=2, stop_value=None)
    main['policy']['learn'].update(epoch_per_collect=1, batch_size=num_envs * 16)
    main['env'].update(overrides)
    return main, create


@pytest.mark.parametrize('pipeline', ['serial', 'parallel'])
def test_a_users_vectorized_env_trains_through_the_pipelines(tmp_path, pipeline):
    """examples/vector_cartpole.py's numpy CartPole, 64 envs in one ``gymnasium.vector.VectorEnv``, by its name."""
    main, create = numpy_cartpole_config()
    exp_dir = str(tmp_path / pipeline)
    if pipeline == 'serial':
        serial_pipeline_onpolicy((main, create), exp_dir=exp_dir, max_env_step=64 * 16 * 4, progress=False)
    else:
        parallel_pipeline((main, create), exp_dir=exp_dir, backend='local', max_env_step=64 * 16 * 4, progress=False)
    summary = read_summary(exp_dir)
    assert summary['env_steps'] == 64 * 16 * 4 and summary['train_iters'] == 4
    assert summary['last_eval_return'] is not None and summary['last_eval_return'] >= 8  # whole episodes were played
    if pipeline == 'serial':  # the finished run: -m eval and load_policy build its envs by the same name
        from acframe import evaluate_run, load_policy
        result = evaluate_run(exp_dir, episodes=4)
        assert result['episodes'] == 4 and min(result['lengths']) >= 8
        assert load_policy(exp_dir).act(np.zeros(4, np.float32)) in (0, 1)
        with pytest.raises(ConfigError, match="--video: env.manager 'numpy_cartpole' steps envs that cannot be recorded"):
            evaluate_run(exp_dir, episodes=2, video_dir=str(tmp_path / 'video'))


def test_a_vectorized_env_gets_each_envs_drawn_parameters_from_the_factory():
    main, create = numpy_cartpole_config(num_envs=3)
    randomized(main, gravity=dict(dist='uniform', low=5.0, high=15.0))  # a keyword: NumpyCartPole(params=[...])
    cfg = compile_config((main, create))
    params = draw_params(parse_params(dict(cfg.env.domain_randomization.params)), 0, 0, 3)
    with make_env_manager(cfg, 'collector', [0, 1, 2], params=params) as env:
        assert isinstance(env, VectorEnvManager)
        assert env._venv.gravity.tolist() == [p['gravity'] for p in params]
        env.reset()
        result = env.step(np.zeros(3, dtype=np.int64))
        assert result.obs.shape == (3, 4) and result.reward.tolist() == [1.0, 1.0, 1.0]


def test_a_vectorized_env_whose_step_hangs_is_caught_by_the_watchdog():
    """The in-process watchdog of the parallel pipeline's workers (``watch_sync``) covers a vectorized env too."""
    from vector_cartpole import NumpyCartPole

    class HangingCartPole(NumpyCartPole):
        def step(self, actions):
            time.sleep(3600)

    env = VectorEnvManager(HangingCartPole(num_envs=2), [0, 1], role='collector', step_timeout_s=0.3, watch_sync=True)
    env.reset()
    start = time.monotonic()
    with pytest.raises(EnvTimeoutError, match=r"an env \(collector\) did not return from step within env.step_timeout_s=0.3 s"):
        env.step(np.zeros(2, dtype=np.int64))
    env.close()
    assert time.monotonic() - start < 5


def test_the_numpy_cartpole_steps_as_gymnasium_cartpole():
    """The example's batched physics against gymnasium's CartPole-v1, from the same states with the same actions."""
    from vector_cartpole import NumpyCartPole

    venv = NumpyCartPole(num_envs=5)
    obs, _ = venv.reset(seed=[0, 1, 2, 3, 4])
    envs = [gym.make('CartPole-v1') for _ in range(5)]
    for env, start in zip(envs, venv.state):
        env.reset(seed=0)
        env.unwrapped.state = start.copy()
    rng = np.random.default_rng(0)
    alive = np.ones(5, dtype=bool)
    for _ in range(60):
        actions = rng.integers(0, 2, size=5)
        obs, reward, terminated, truncated, info = venv.step(actions)
        for i, env in enumerate(envs):
            if not alive[i]:
                continue
            expected, expected_reward, expected_terminated, _, _ = env.step(int(actions[i]))
            assert terminated[i] == expected_terminated and reward[i] == expected_reward
            got = info['final_obs'][i] if terminated[i] else obs[i]
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
            alive[i] = not expected_terminated
    assert not alive.all()  # episodes ended on the way: their last observations came back in info['final_obs']


def test_a_manager_that_is_not_registered_is_one_config_error_naming_the_key():
    main, create = a2c(manager='numpy_cartpol')
    main['import_names'] = ['vector_cartpole']
    with pytest.raises(ConfigError, match=r"config key 'env.manager': unknown env_manager 'numpy_cartpol'. Did you mean "
                                          r"'numpy_cartpole'\?.*ENV_MANAGER_REGISTRY.register"):
        compile_config((main, create))


def test_an_env_type_that_is_not_registered_or_whose_factory_gives_no_env_is_one_line(tmp_path):
    from acframe import ENV_REGISTRY
    from acframe.envs import make_env_manager

    @ENV_REGISTRY.register('gives_no_env')
    def gives_no_env(env_cfg, **overrides):
        return object()
    try:
        for env_type, message in (('gives_no_ev', "config key 'env.type': unknown env 'gives_no_ev'. Did you mean "
                                                  "'gives_no_env'?"),
                                  ('gives_no_env', "env.type 'gives_no_env': its factory returned a object, not a "
                                                   "gymnasium.Env; make it return an env")):
            cfg = compile_config(a2c(env_type=env_type))
            with pytest.raises(ConfigError) as info:
                make_env_manager(cfg, 'collector', 2, 0)
            assert str(info.value).startswith(message) and '\n' not in str(info.value)
    finally:
        ENV_REGISTRY._entries.pop('gives_no_env', None)


def test_a_vector_env_without_its_spaces_is_one_line_naming_the_manager():
    from acframe import ENV_MANAGER_REGISTRY
    from acframe.envs import make_env_manager
    from vector_cartpole import NumpyCartPole

    @ENV_MANAGER_REGISTRY.register('spaceless_cartpole')
    class Spaceless(NumpyCartPole):
        def __init__(self, num_envs, **kwargs):
            super().__init__(num_envs, **kwargs)
            del self.single_observation_space
    try:
        main, create = numpy_cartpole_config(num_envs=4)
        cfg = compile_config((main, create), ['env.manager=spaceless_cartpole'])
        with pytest.raises(ConfigError, match=r"^env.manager 'spaceless_cartpole': Spaceless has no "
                                              r"single_observation_space; a gymnasium.vector.VectorEnv sets"):
            make_env_manager(cfg, 'collector', 4, 0)
    finally:
        ENV_MANAGER_REGISTRY._entries.pop('spaceless_cartpole', None)


class MaskedPick(gym.vector.VectorEnv):
    """A user's vectorized masked env: pick the one target action; ``empty_at``: env 1's mask is all zeros at that
    step of its episode (in dimension ``empty_dim`` of a MultiDiscrete space); ``width``: the masks' real width;
    ``bad``: 'drop' (no mask key) or 'two' (a mask entry 2)."""
    metadata = {'autoreset_mode': gym.vector.AutoresetMode.SAME_STEP}

    def __init__(self, num_envs, nvec=(4,), declared=None, width=None, empty_at=None, empty_dim=0, bad=None):
        self.num_envs, self.nvec, self.empty_at, self.empty_dim, self.bad = num_envs, list(nvec), empty_at, empty_dim, bad
        size = sum(self.nvec)
        self.width = size if width is None else width
        self.single_action_space = (gym.spaces.Discrete(nvec[0]) if len(nvec) == 1 else
                                    gym.spaces.MultiDiscrete(self.nvec))
        self.single_observation_space = gym.spaces.Dict({
            'x': gym.spaces.Box(0, 1, (2,), np.float32),
            'action_mask': gym.spaces.Box(0, 1, (size if declared is None else declared,), np.int8)})
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self.t = np.zeros(num_envs, int)

    def _obs(self):
        mask = np.ones((self.num_envs, self.width), np.int8)
        if self.empty_at is not None and self.t[1] == self.empty_at:
            start = sum(self.nvec[:self.empty_dim])
            mask[1, start:start + self.nvec[self.empty_dim]] = 0
        if self.bad == 'two':
            mask[0, 0] = 2
        obs = {'x': np.zeros((self.num_envs, 2), np.float32), 'action_mask': mask}
        if self.bad == 'drop':
            del obs['action_mask']
        return obs

    def reset(self, *, seed=None, options=None):
        self.t[:] = 0
        return self._obs(), {}

    def step(self, actions):
        self.t += 1
        zeros = np.zeros(self.num_envs, bool)
        return self._obs(), np.zeros(self.num_envs), zeros, zeros.copy(), {}


def test_a_users_vectorized_masked_env_is_checked_as_a_per_env_masked_env_is():
    """The checks ``build_env`` gives each masked env (docs/masks.md), for a ``VectorEnv`` registered as a manager:
    a mask space of another size is refused at construction, masks of another width and a row with no legal action
    (in any dimension) are one line naming the env, its seed and the step."""
    from acframe.errors import EnvContractError as EnvError  # (not restarted by a parallel run: it would recur)

    with pytest.raises(ConfigError, match=r"^env 'picks: MaskedPick': its 'action_mask' observation is Box\(0, 1, \(5,\)"):
        VectorEnvManager(MaskedPick(2, declared=5), [10, 11], role='collector', name='picks')
    env = VectorEnvManager(MaskedPick(2, width=5), [10, 11], role='collector', name='picks')
    with pytest.raises(EnvError, match=r"^collector envs of 'picks' \(2 of them, a row each\): its observation's 'action_mask' has shape \(2, 5\), but its observation space declares \(2, 4\)"):
        env.reset()
    env.close()
    env = VectorEnvManager(MaskedPick(3, empty_at=3), [10, 11, 12], role='collector', name='picks')
    env.reset()
    for _ in range(2):
        env.step(np.zeros(3, np.int64))
    with pytest.raises(EnvError, match=r"^collector env 1 of 'picks' \(seed 11\) has no legal action at step 3 of its "
                                       r"episode: its observation's 'action_mask' is all zeros"):
        env.step(np.zeros(3, np.int64))
    env.close()
    for bad, problem in (('drop', r"its observation has no 'action_mask' key"),
                         ('two', r"its observation's 'action_mask' holds 2, not 0 or 1")):
        env = VectorEnvManager(MaskedPick(2, bad=bad), [10, 11], role='collector', name='picks')
        with pytest.raises(EnvError, match=r"^collector envs of 'picks' \(2 of them, a row each\): " + problem):
            env.reset()
        env.close()
    env = VectorEnvManager(MaskedPick(2, nvec=(2, 3), empty_at=0, empty_dim=1), [10, 11], role='evaluator', name='md')
    with pytest.raises(EnvError, match=r"^evaluator env 1 of 'md' \(seed 11\) has no legal action in action "
                                       r"dimension 1 at step 0"):
        env.reset()
    env.close()


def test_a_resume_names_the_registered_vectorized_env_whose_state_is_not_kept():
    """A user's VectorEnv keeps no env state: the resume's reason names it as registered, not as the 'vector' kind."""
    env = VectorEnvManager(MaskedPick(2), [10, 11], role='collector', name='picks')
    try:
        env.reset()
        state = env.state_dict()
        assert state['envs'] is None and state['why'] == "env manager 'picks' keeps no env state"
    finally:
        env.close()


def test_check_env_refuses_a_vectorized_env_in_one_line_rather_than_checking_another_env():
    """``-m check-env -c CONFIG`` of a config whose ``env.manager`` is a ``VectorEnv`` checked the config's ``env_id``
    (CartPole-v1) and passed it; its own checks run when a run builds and steps it."""
    from acframe.envs.check import check_env_config

    main, create = numpy_cartpole_config(num_envs=4)
    refused = r"^env.manager 'numpy_cartpole' is a vectorized env \(NumpyCartPole\): check-env checks gymnasium envs"
    with pytest.raises(ConfigError, match=refused):
        check_env_config(None, (main, create), [], [])
    with pytest.raises(ConfigError, match=refused):  # an env named on the command line, the manager by an override
        check_env_config('CartPole-v1', None, ['env.manager=numpy_cartpole'], ['vector_cartpole'])


class EndingPick(MaskedPick):
    """MaskedPick with episodes: 5 steps each, reward 1 for each pick of action 0 (obs 'x' is the step count)."""

    def _obs(self):
        obs = super()._obs()
        obs['x'][:, 0] = self.t / 5
        return obs

    def step(self, actions):
        self.t += 1
        reward = (np.asarray(actions) == 0).astype(np.float64)
        done = self.t >= 5
        last = self._obs()
        final_obs = np.empty(self.num_envs, dtype=object)
        for i in np.flatnonzero(done):
            final_obs[i] = {key: value[i].copy() for key, value in last.items()}
        self.t[done] = 0
        return self._obs(), reward, done, np.zeros(self.num_envs, bool), {'final_obs': final_obs, '_final_obs': done}


def test_a_run_on_a_users_vectorized_env_exports_and_its_policy_builds_no_other_env(tmp_path):
    """-m export checks the traced model over an episode of the run's own env: for a VectorEnv manager, a batch of
    one from the factory (it built env.env_id's default CartPole-v1 and failed with a traceback); load_policy's
    make_env(), which builds one env, refuses in one line (it returned CartPole-v1)."""
    import torch
    from acframe import load_policy
    from acframe.cli import main as cli_main

    ENV_MANAGER_REGISTRY.register('ending_pick_test', EndingPick)
    try:
        run = tmp_path / 'run'
        serial_pipeline_onpolicy((dict(env=dict(manager='ending_pick_test', collector_env_num=4, evaluator_env_num=2,
                                                n_evaluator_episode=2, stop_value=None),
                                       policy=dict(collect=dict(n_sample=64), learn=dict(batch_size=64))),
                                  dict(env=dict(type='gym'), policy=dict(type='ppo'))),
                                 exp_dir=str(run), max_env_step=128, progress=False)
        out = tmp_path / 'pick.pt'
        assert cli_main(['-m', 'export', '--load', str(run), '--out', str(out), '-q']) == 0
        policy = load_policy(run)
        obs = EndingPick(3).reset()[0]
        obs['x'][:, 0] = [0.0, 0.4, 0.8]
        with torch.no_grad():
            exported = torch.jit.load(str(out))({k: torch.as_tensor(v) for k, v in obs.items()}).numpy()
        np.testing.assert_array_equal(exported, policy.act(obs))
        with pytest.raises(ConfigError, match=r"^make_env\(\): env.manager 'ending_pick_test' is a vectorized env "
                                              r"\(EndingPick\), which has no single env to build"):
            policy.make_env()
    finally:
        ENV_MANAGER_REGISTRY._entries.pop('ending_pick_test', None)


MANAGERS_MODULE = '''
from acframe import ENV_MANAGER_REGISTRY
from acframe.envs import SyncEnvManager


@ENV_MANAGER_REGISTRY.register('unlicensed')
class Unlicensed(SyncEnvManager):
    @classmethod
    def from_config(cls, env_cfg, role, seeds, params=None, wrap=None, watch_sync=False):
        raise ValueError('simulator license not found')


@ENV_MANAGER_REGISTRY.register('forgets_to_return')
class ForgetsToReturn(SyncEnvManager):
    @classmethod
    def from_config(cls, env_cfg, role, seeds, params=None, wrap=None, watch_sync=False):
        super().from_config(env_cfg, role, seeds, params, wrap, watch_sync)


@ENV_MANAGER_REGISTRY.register('own_init')
class OwnInit(SyncEnvManager):
    """A first attempt: an __init__ of its own, and EnvManager's from_config left to call it."""

    def __init__(self, env_cfg, role, seeds):
        super().__init__([], seeds, 'sync', role=role)


@ENV_MANAGER_REGISTRY.register('init_bug')
class InitBug(SyncEnvManager):
    """An __init__ that takes EnvManager's arguments, with a TypeError of its own inside."""

    def __init__(self, env_fns, seeds, manager='sync', role='', step_timeout_s=None, watch_sync=False):
        self.label = 'envs: ' + len(seeds)
'''


@pytest.mark.parametrize('manager, line', [
    ('unlicensed', r"^acframe: error: env.manager 'unlicensed': Unlicensed.from_config \(collector envs\) raised "
                   r"ValueError: simulator license not found \(at .*my_managers.py:10 in from_config"),
    ('forgets_to_return', r"^acframe: error: env.manager 'forgets_to_return': ForgetsToReturn.from_config returned "
                          r"NoneType, not an EnvManager; it must return the manager it built"),
    ('own_init', r"^acframe: error: env.manager 'own_init': OwnInit.__init__ does not take EnvManager's arguments "
                 r"\(.*\); a subclass that changes __init__ overrides from_config too"),
    # (a TypeError inside an __init__ that takes the arguments is named where it is, not as a signature mismatch)
    ('init_bug', r"^acframe: error: env.manager 'init_bug': InitBug.from_config \(collector envs\) raised "
                 r"TypeError: can only concatenate str .* \(at .*my_managers.py:\d+ in __init__")])
def test_a_user_managers_from_config_that_raises_or_returns_no_manager_is_one_line_and_nothing_written(
        tmp_path, manager, line):
    import re
    import subprocess

    (tmp_path / 'my_managers.py').write_text(MANAGERS_MODULE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get('PYTHONPATH', '')]))
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_ppo.py', '--import', 'my_managers',
                          f'env.manager={manager}', '--exp-dir', 'run'], capture_output=True, text=True, timeout=300,
                         env=env, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and re.match(line, out.stderr), out.stderr
    assert not (tmp_path / 'run').exists()
