"""``acframe -m check-env`` and the env checks at the start of a run (acframe/envs/check.py).

Every bad env of the reliability catalogue (tests/fixtures/reliability.py: its bad inputs about envs, its injected
env faults, the broken envs of fixtures/faulty_envs.py) is caught by check-env with a line naming the fix; good
envs pass; training refuses a broken env before it writes anything, and the check leaves a run's numbers as they
were.
"""
import contextlib
import io
import os
import shutil
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np
import pytest
import torch

from acframe.cli import main
from acframe.envs.check import EnvChecker, check_env, check_env_config, mask_problems, observation_problems
from fixtures.reliability import BROKEN_ENVS, bad_inputs, faults

FAULTY = ['faulty', '--import', 'fixtures.faulty_envs']


def check_cli(args, cwd):
    """``acframe -m check-env ARGS`` in this process, in ``cwd``: exit code, stdout, stderr lines, files written."""
    out, err = io.StringIO(), io.StringIO()
    before = sorted(os.listdir(cwd))
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(['-m', 'check-env', *args])
    finally:
        os.chdir(here)
    lines = [line for line in err.getvalue().splitlines() if line and not line.startswith('acframe: warning: ')]
    return code, out.getvalue(), lines, sorted(os.listdir(cwd)) != before


# ---- the catalogue ---------------------------------------------------------------------------------------
#: the catalogue's bad inputs about envs (their own command lines, run as -m check-env) -> a fragment of the fix
ENV_INPUTS = {
    'unknown env type': "register your own with @ENV_REGISTRY.register",
    'unknown env id': "Did you mean 'CartPole-v1'",
    'deprecated env id': "Did you mean 'CartPole-v0'",
    'bad env kwarg': "unexpected keyword argument 'gravity'",
    'obs_keys naming a key the env lacks': "keys are ['distractor', 'noise', 'target']",
    'a zero-length episode limit': 'env.max_episode_steps',
    'env.type=[1, 2]': "config key 'env.type' must be str", 'env.env_id=[1, 2]': "config key 'env.env_id' must be str",
    **{f"env {what}": '' for what in BROKEN_ENVS},  # their fixes: FAULT_FIXES below
}
#: the faults of fixtures/faulty_envs.py -> a fragment of check-env's line (what is wrong, and the fix)
FAULT_FIXES = {
    'raise': "ValueError in step 30 (episode 2, step 10): the simulator diverged (at ",
    'nan_obs': 'holds nan (at index 2); NaN/inf observations stop training: find where the env computes it',
    'inf_reward': 'is inf; NaN/inf rewards stop training: find where the env computes it',
    'abort': 'was killed by SIGABRT during step 30',
    'hang': "step 30 (episode 2, step 10) did not return within 1 s: the env hangs there; fix it (in training it "
            "stalls a serial run with env.manager='sync', whose envs step in its own process; env.manager='async' "
            "and -m parallel's workers stop it after env.step_timeout_s",  # (it said "unless env.step_timeout_s is set")
    'hang_close': 'close did not return within 1 s',
    'old_api': 'return 5: obs, reward, terminated, truncated, info',
    'no_seed': 'define reset(self, *, seed=None, options=None) and call super().reset(seed=seed)',
    'wrong_shape': 'has shape (3,), observation_space says (4,); return arrays of shape (4,)',
    'float64_obs': 'is float64, observation_space says float32; return obs.astype(np.float32)',
    'global_rng': 'draw every random number from self.np_random',
    'no_time_limit': 'no time limit: no TimeLimit wrapper and no truncation (no episode ended in 1000 random steps)',
    'bad_mask': "info['action_mask'] at reset has shape (3,); Discrete(2) needs shape (2,)",
    'no_legal_action': 'allows no action (all zeros); every state the env hands the policy needs at least one legal',
}
#: the catalogue's injected env faults -> the fault of fixtures/faulty_envs.py they inject
ENV_FAULTS = {
    'env raises in step (IMPALA)': 'raise', 'env raises in step (A2C)': 'raise', 'async env raises in step': 'raise',
    'env returns NaN observations (IMPALA)': 'nan_obs', 'env returns NaN observations (A2C)': 'nan_obs',
    'env returns inf rewards (IMPALA)': 'inf_reward', 'env returns inf rewards (ACER)': 'inf_reward',
    'async env process dies (os.abort)': 'abort', 'env step hangs (async manager, step_timeout_s=2)': 'hang',
    'env close() hangs (sync and async managers)': 'hang_close',
    'env step never returns, no periodic checkpoint (the watchdog checkpoints first)': 'hang',
}


def test_the_table_covers_every_env_entry_of_the_catalogue():
    inputs = {case.name for case in bad_inputs()}
    env_inputs = {case.name for case in bad_inputs() if any(
        arg.startswith(('env.type=', 'env.env_id=', 'env.env_kwargs.', 'env.obs_keys=', 'env.max_episode_steps='))
        and arg not in ('env.env_id=CartPole-v1', 'env.type=toy_pixel_dot', 'env.env_id=toy_pixel_dot')  # good envs
        for arg in case.args)}
    assert env_inputs <= set(ENV_INPUTS) <= inputs
    env_faults = {name for name in faults() if ' env ' in f" {name} "}
    assert env_faults == set(ENV_FAULTS)
    assert set(BROKEN_ENVS.values()) | set(ENV_FAULTS.values()) <= set(FAULT_FIXES)


@pytest.mark.parametrize('name', sorted(ENV_INPUTS))
def test_check_env_catches_each_bad_env_input_of_the_catalogue(name, tmp_path):
    case = next(case for case in bad_inputs() if case.name == name)
    code, _, lines, wrote = check_cli(case.args, tmp_path)
    fault = next((arg.split('=', 1)[1] for arg in case.args if arg.startswith('env.env_kwargs.fault=')), None)
    fix = FAULT_FIXES[fault] if fault else ENV_INPUTS[name]
    assert code == 2 and not wrote
    assert lines and all(line.startswith('acframe: error: ') for line in lines), lines
    assert any(fix in line for line in lines), lines


@pytest.mark.parametrize('fault', sorted(FAULT_FIXES))
def test_check_env_names_the_fix_for_each_faulty_env(fault, tmp_path):
    """Each fault of fixtures/faulty_envs.py (those the catalogue injects in training runs, and those that break
    the env contract) from step 30 on; a hang or a dying process too (check-env's child process is watched)."""
    code, out, lines, wrote = check_cli([*FAULTY, f'env.env_kwargs.fault={fault}', 'env.env_kwargs.at_step=30',
                                         'env.step_timeout_s=1'], tmp_path)
    assert code == 2 and not wrote and 'problem(s)' in out
    assert all(line.startswith('acframe: error: check-env faulty: [') for line in lines), lines
    assert any(FAULT_FIXES[fault] in line for line in lines), lines
    if fault not in ('nan_obs', 'inf_reward'):
        assert len(lines) == 1, lines  # one problem, one line


# ---- good envs -------------------------------------------------------------------------------------------
class MaskedDictEnv(gym.Env):
    """A Dict observation with an ``action_mask`` (PettingZoo's convention): action i is legal when bit i is set."""

    metadata = {'render_modes': []}

    def __init__(self, mask_in: str = 'observation'):
        self.mask_in = mask_in
        self.action_space = gym.spaces.Discrete(4)
        obs = {'obs': gym.spaces.Box(-1.0, 1.0, (3,), np.float32)}
        if mask_in == 'observation':
            obs['action_mask'] = gym.spaces.Box(0, 1, (4,), np.int8)
        self.observation_space = gym.spaces.Dict(obs)

    def _out(self):
        mask = (self.np_random.random(4) < 0.5).astype(np.int8)
        mask[self.np_random.integers(4)] = 1
        self.mask = mask
        obs = {'obs': self.np_random.uniform(-1, 1, 3).astype(np.float32)}
        if self.mask_in == 'observation':
            return {**obs, 'action_mask': mask}, {}
        return obs, {'action_mask': mask.astype(bool)}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._out()

    def step(self, action):
        assert self.mask[int(action)], 'illegal action taken'  # the checker draws legal actions only
        self.t += 1
        obs, info = self._out()
        return obs, 1.0, False, False, info


@pytest.mark.parametrize('env', ['CartPole-v1', 'pendulum', 'toy_multidiscrete', 'toy_dict', 'toy_cue_memory',
                                 'toy_tictactoe'])  # (its last board is full: a final mask allowing no action)
def test_good_envs_pass(env):
    cfg, policies = check_env_config(env, None, [], [])
    report = check_env(cfg)
    assert report.ok, [f.line() for f in report.findings]
    assert {'spaces', 'reset', 'step', 'seeding', 'time limit', 'close'} <= set(report.checks)
    assert 'time limit' in report.facts and '/step' in report.facts['steps']
    assert report.env == env  # a gymnasium id or a registered env type, by its name only (no unused env.env_id)


@pytest.mark.parametrize('mask_in', ['observation', 'info'])
def test_a_masked_dict_env_passes_and_only_legal_actions_are_stepped(mask_in):
    def make():
        env = gym.wrappers.TimeLimit(MaskedDictEnv(mask_in), 25)
        return env, env.observation_space
    report = EnvChecker(make, 'masked', seed=3).run()
    assert report.ok, [f.line() for f in report.findings]
    assert report.facts['action mask'] == ("observation['action_mask']" if mask_in == 'observation' else
                                           "info['action_mask'], which a run does not read (it would train without "
                                           "it): wrap the env in acframe.envs.masks.InfoActionMask in the factory you "
                                           "register (docs/masks.md)")


def test_a_mask_under_another_name_is_named_by_check_env_and_a_run_on_it_warns(tmp_path):
    """'action_masks' for 'action_mask': the model read it as an observation and the run trained unmasked."""
    code, out, lines, _ = check_cli([*FAULTY, 'env.env_kwargs.fault=misnamed_mask'], tmp_path)
    said = ("the observation's 'action_masks' is not 'action_mask', so a run reads it as an observation, not a mask; "
            "name it 'action_mask' (docs/masks.md)")
    assert code == 0 and not lines and f"action mask: none: {said}" in out, out
    code, text = train(['-c', 'cartpole_ppo.py', '--exp-dir', 'run', '--max-env-step', '64', '-q', 'env.type=faulty',
                        "import_names=['fixtures.faulty_envs']", 'env.env_kwargs.fault=misnamed_mask',
                        'env.stop_value=None'], tmp_path)
    assert code == 0 and f"acframe: warning: env 'faulty' has no action mask: {said}" in text.splitlines(), text
    code, out, lines, _ = check_cli([*FAULTY, 'env.env_kwargs.fault=legal_moves_count'], tmp_path)
    assert code == 0 and 'action mask' not in out, out  # a count of legal moves in [0, 9]: a feature, not a mask


def test_a_mask_under_another_name_is_named_where_the_env_raises_on_an_illegal_action(tmp_path):
    """A board game's env raises on an illegal action: the check's random actions (no mask read) hit the raise first,
    and check-env and the run's start said only that the env raised, never that the mask was misnamed."""
    said = ("has no action mask: the observation's 'action_masks' is not 'action_mask', so a run reads it as an "
            "observation, not a mask; name it 'action_mask' (docs/masks.md)")
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(['-m', 'check-env', *FAULTY, 'env.env_kwargs.fault=misnamed_strict_mask'])
    lines = err.getvalue().splitlines()
    assert code == 2 and len(lines) == 2 and 'illegal action 1' in lines[0], lines
    assert lines[1] == f"acframe: warning: check-env faulty: the env {said}", lines
    code, text = train(['-c', 'cartpole_ppo.py', '--exp-dir', 'run', '--max-env-step', '64', '-q', 'env.type=faulty',
                        "import_names=['fixtures.faulty_envs']", 'env.env_kwargs.fault=misnamed_strict_mask',
                        'env.stop_value=None'], tmp_path)
    assert code == 2 and len(text.strip().splitlines()) == 1, text
    assert 'illegal action 1' in text and f"(note: it {said}: the check's random actions took no mask)" in text, text


def test_the_misnamed_mask_note_is_only_where_the_check_took_no_mask_and_the_env_raised_in_step(tmp_path):
    """A mask in info the check's random actions take, and a wrong observation shape is no illegal action: the note
    that they took no mask was false there, and added to any refusal."""
    code, text = train(['-c', 'cartpole_ppo.py', '--exp-dir', 'run', '--max-env-step', '64', '-q', 'env.type=faulty',
                        "import_names=['fixtures.faulty_envs']", 'env.env_kwargs.fault=info_mask_wrong_shape',
                        'env.stop_value=None'], tmp_path)
    assert code == 2 and len(text.strip().splitlines()) == 1, text
    assert 'has shape (3,)' in text and 'note:' not in text and 'took no mask' not in text, text


def test_a_misnamed_mask_is_said_by_check_env_even_where_the_env_then_crashes_its_process(tmp_path):
    """The child told the mask only with its last message, which an env that kills the child never lets it send."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main(['-m', 'check-env', *FAULTY, 'env.env_kwargs.fault=misnamed_mask_abort', 'env.env_kwargs.at_step=5'])
    lines = err.getvalue().splitlines()
    assert code == 2 and len(lines) == 2 and 'was killed by SIGABRT' in lines[0], lines
    assert lines[-1] == ("acframe: warning: check-env faulty: the env has no action mask: the observation's "
                         "'action_masks' is not 'action_mask', so a run reads it as an observation, not a mask; name "
                         "it 'action_mask' (docs/masks.md)"), lines


def test_a_mask_given_in_info_only_is_checked_and_a_run_on_it_warns_that_it_trains_without_it(tmp_path):
    """check-env found the mask in info and passed; the run then trained unmasked without a word."""
    code, out, lines, _ = check_cli([*FAULTY, 'env.env_kwargs.fault=info_mask'], tmp_path)
    assert code == 0 and not lines and "action mask: info['action_mask'], which a run does not read" in out, out
    code, text = train(['-c', 'cartpole_ppo.py', '--exp-dir', 'run', '--max-env-step', '64', '-q', 'env.type=faulty',
                        "import_names=['fixtures.faulty_envs']", 'env.env_kwargs.fault=info_mask',
                        'env.stop_value=None'], tmp_path)
    assert code == 0, text
    assert ("acframe: warning: env 'faulty' gives its action mask in info['action_mask'], which a run does not read: "
            "it trains without the mask; wrap the env in acframe.envs.masks.InfoActionMask in the factory you register "
            "(docs/masks.md)") in text.splitlines(), text


def test_mask_and_observation_rules():
    assert mask_problems(np.array([1, 0, 1], np.int8), gym.spaces.Discrete(3)) == []
    assert mask_problems(np.array([True, False, False, True, True]), gym.spaces.MultiDiscrete([2, 3])) == []
    assert 'sub-space 1' in mask_problems(np.array([1, 0, 0, 0, 0]), gym.spaces.MultiDiscrete([2, 3]))[0]
    assert 'needs shape (5,)' in mask_problems(np.ones((2, 3)), gym.spaces.MultiDiscrete([2, 3]))[0]
    assert 'other than 0 and 1' in mask_problems(np.array([0.5, 1.0]), gym.spaces.Discrete(2))[0]
    assert 'masks apply to Discrete' in mask_problems(np.ones(2), gym.spaces.Box(-1, 1, (2,)))[0]
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    assert observation_problems(np.zeros(2, np.float32), box) == []
    (message, breaks), = observation_problems(np.array([0.0, 2.0], np.float32), box)
    assert "outside observation_space's bounds: 2.0 at index 1, bounds [-1.0, 1.0]" in message and not breaks
    space = gym.spaces.Dict({'a': box})
    assert 'keys' in observation_problems({'b': np.zeros(2, np.float32)}, space)[0][0]


def test_an_env_that_only_terminates_has_no_time_limit_unless_its_horizon_is_fixed():
    from gymnasium.envs.classic_control import CartPoleEnv

    def make():  # CartPole without its TimeLimit: random play falls, a good policy balances for ever
        env = CartPoleEnv()
        return env, env.observation_space
    report = EnvChecker(make, 'cartpole without a limit').run()
    assert [f.check for f in report.findings] == ['time limit']
    assert 'by termination only' in report.findings[0].message and not report.findings[0].breaks_training


def test_discrete_actions_must_start_at_zero():
    class Shifted(gym.Env):
        observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        action_space = gym.spaces.Discrete(3, start=1)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return np.zeros(2, np.float32), {}

        def step(self, action):
            return np.zeros(2, np.float32), 0.0, False, True, {}

    def make():
        env = Shifted()
        return env, env.observation_space
    report = EnvChecker(make, 'shifted').run()
    assert any('use start=0' in f.message for f in report.findings)


# ---- the command line ------------------------------------------------------------------------------------
def test_the_command_exit_codes(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                       os.environ.get('PYTHONPATH', '')]))
    run = lambda *args: subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'check-env', *args], cwd=tmp_path,
                                       capture_output=True, text=True, timeout=120, env=env)
    good = run('cartpole')
    assert good.returncode == 0 and 'all 10 checks passed' in good.stdout and not good.stderr.strip(), good.stderr
    bad = run(*FAULTY, 'env.env_kwargs.fault=old_api')
    assert bad.returncode == 2 and bad.stderr.count('\n') == 1 and 'the old gym API' in bad.stderr
    assert os.listdir(tmp_path) == []


def test_the_command_takes_a_config_and_refuses_what_is_not_an_env(tmp_path):
    code, out, lines, _ = check_cli(['-c', 'cartpole_ppo.py'], tmp_path)
    assert code == 0 and 'policies: ppo' in out
    code, _, lines, _ = check_cli(['toy_dikt'], tmp_path)
    assert code == 2 and len(lines) == 1 and "Did you mean the env type 'toy_dict'" in lines[0]
    code, _, lines, _ = check_cli(['CartPole-v1', 'pendulum'], tmp_path)
    assert code == 2 and 'one env' in lines[0]
    code, _, lines, _ = check_cli([], tmp_path)
    assert code == 2 and 'check-env needs an env' in lines[0]
    code, _, lines, _ = check_cli(['MyEnvOfMine-v0'], tmp_path)  # registered by a module not imported: the likely cause
    assert code == 2 and len(lines) == 1 and 'needs that module imported: --import MODULE' in lines[0]
    assert 'or ENV_REGISTRY for an env type' in lines[0]  # check-env's ENV may be a factory's name too


def test_a_config_whose_policy_cannot_build_its_model_or_take_the_actions_fails_its_check(tmp_path):
    """check-env -c passed a config whose run was then refused (an image key without policy.model.encoder: "all 10
    checks passed, policies: ppo"); the fix for a policy refusing a MultiDiscrete env ended "use ... a Discrete, Box
    or MultiDiscrete action_space", which the env had. Both are the run's own refusal now, its fix with it."""
    code, out, lines, _ = check_cli(['-c', 'cartpole_ppo.py', 'env.type=toy_pixel_goal'], tmp_path)
    assert code == 2 and len(lines) == 1 and lines[0].startswith(
        "acframe: error: check-env toy_pixel_goal: [spaces] policy.model: cannot build model 'vac': ValueError: "
        "observation 'image' of shape [1, 8, 8] is an image: set policy.model.encoder='nature_cnn' or 'impala_resnet'")
    code, out, lines, _ = check_cli(['-c', 'pixel_goal_impala.py'], tmp_path)  # (its encoder set: passes)
    assert code == 0 and 'policies: impala' in out
    code, out, lines, _ = check_cli(['-c', 'cartpole_impala.py', 'env.type=toy_multidiscrete'], tmp_path)
    assert code == 2 and lines == [
        "acframe: error: check-env toy_multidiscrete: [spaces] policy 'impala' does not support the action space "
        "MultiDiscrete([3 4]) of env 'toy_multidiscrete'; it supports discrete, continuous actions; a2c, ppo take "
        "multi_discrete actions (policy.type)"]


# ---- at the start of a run -------------------------------------------------------------------------------
def train(args, cwd):
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(args)
    finally:
        os.chdir(here)
    return code, out.getvalue() + err.getvalue()


def test_training_refuses_a_broken_env_before_writing_anything(tmp_path):
    code, text = train(['-c', 'cartpole_ppo.py', '--exp-dir', 'run', 'env.type=faulty',
                        "import_names=['fixtures.faulty_envs']", 'env.env_kwargs.fault=old_api'], tmp_path)
    assert code == 2 and os.listdir(tmp_path) == []
    assert 'the old gym API' in text and 'acframe -m check-env faulty --import fixtures.faulty_envs' in text
    assert "env 'faulty' " in text  # not the default config's env_id, which the factory ignores


def test_a_users_manager_that_builds_on_the_factorys_envs_gets_the_start_check_when_it_says_so(tmp_path):
    """A manager overriding from_config skipped the start check (it may build its envs its own way): one that builds
    on super().from_config (a sync manager that logs) failed at its first reset in 'an env raised ...' naming no env;
    with factory_envs = True it is checked at the start as 'sync' is."""
    from acframe import ENV_MANAGER_REGISTRY
    from acframe.envs.manager import SyncEnvManager

    class Logging(SyncEnvManager):
        @classmethod
        def from_config(cls, env_cfg, role, seeds, params=None, wrap=None, watch_sync=False):
            return super().from_config(env_cfg, role, seeds, params, wrap, watch_sync)

    class Checked(Logging):
        factory_envs = True

    ENV_MANAGER_REGISTRY.register('logging_unchecked_test', Logging, force=True)
    ENV_MANAGER_REGISTRY.register('logging_checked_test', Checked, force=True)
    try:
        args = ['-c', 'cartpole_ppo.py', '--exp-dir', 'run', 'env.type=faulty', "import_names=['fixtures.faulty_envs']",
                'env.env_kwargs.fault=old_api']
        code, text = train(args + ['env.manager=logging_checked_test'], tmp_path)
        assert code == 2 and os.listdir(tmp_path) == [] and 'the old gym API' in text, text
        assert 'acframe -m check-env faulty --import fixtures.faulty_envs' in text
        code, text = train(args + ['env.manager=logging_unchecked_test'], tmp_path)
        assert code == 2 and 'acframe -m check-env faulty' not in text, text  # (left to its first reset: unchecked)
        # check-env builds the factory's envs: of a manager building its own, it says which it checked
        for manager, said in (('logging_unchecked_test', True), ('logging_checked_test', False)):
            err = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                assert main(['-m', 'check-env', 'CartPole-v1', f'env.manager={manager}']) == 0
            assert (f"env.manager '{manager}' ({Logging.__name__ if said else Checked.__name__}) builds its envs its "
                    f"own way: this checked the env the factory builds" in err.getvalue()) == said, err.getvalue()
    finally:
        for name in ('logging_unchecked_test', 'logging_checked_test'):
            ENV_MANAGER_REGISTRY._entries.pop(name, None)


@pytest.mark.parametrize('fault, says', [('masked_old_reset', 'reset returned a dict, not (observation, info): the old gym API'),
                                         ('masked_old_api', 'step returned 4 values (obs, reward, done, info: the old gym API)')])
def test_a_masked_env_of_the_old_api_is_named_as_such_not_by_the_wrapper_that_unpacked_it(tmp_path, fault, says):
    """A Dict observation {'x', 'action_mask'} returned alone by reset unpacked into its two key names inside
    acframe's observation layers ('string indices must be integers', at acframe/envs/gym_env.py): those layers pass
    a result of another form on, and the env's checks name it, in check-env and at the start of a run."""
    code, text = train(['-c', 'cartpole_ppo.py', '--exp-dir', 'run', 'env.type=faulty',
                        "import_names=['fixtures.faulty_envs']", f'env.env_kwargs.fault={fault}'], tmp_path)
    assert code == 2 and os.listdir(tmp_path) == [] and says in text, text
    code, _, lines, _ = check_cli(['faulty', '--import', 'fixtures.faulty_envs', f'env.env_kwargs.fault={fault}'], tmp_path)
    assert code == 2 and len(lines) == 1 and says in lines[0], lines


def test_an_old_api_env_made_by_gym_make_is_named_as_such_and_gymnasiums_warnings_are_one_line_each(tmp_path):
    """gym.make's wrappers unpack the old 4-tuple themselves (a ValueError in gymnasium's file, which the user cannot
    fix): the refusal says what the env returned; gymnasium's checker warnings are one plain line each (no colour
    codes, no source line)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                       os.environ.get('PYTHONPATH', '')]))
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_ppo.py', '--exp-dir', 'run', '-q',
                           'env.env_id=FaultyOldApi-v0', 'env.stop_value=None', '--import', 'fixtures.faulty_envs'],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and os.listdir(tmp_path) == [], done.stderr
    assert lines[-1].startswith('acframe: error: ') and 'step returned 4 values' in lines[-1], done.stderr
    assert 'gymnasium/wrappers' not in lines[-1]
    assert all(line.startswith(('gymnasium: warning: ', 'acframe: ')) for line in lines), done.stderr
    assert '\x1b[' not in done.stderr
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'check-env', 'FaultyOwnUnpacking-v0', '--import',
                           'fixtures.faulty_envs'], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert 'faulty_envs.py:' in done.stderr and 'the old gym API' not in done.stderr, done.stderr  # the user's own bug


def test_float_observations_of_a_uint8_space_stop_a_run_at_its_start_with_the_fix_that_keeps_them(tmp_path):
    """They cannot be stacked into the envs' uint8 batch: the run failed with a bare 'Cannot cast array data from
    dtype('float32') to dtype('uint8')' naming no env; and the fix check-env gave (astype) made [0, 1] values zeros."""
    fix = ("the observation of reset is float32, observation_space says uint8; return (obs * 255).astype(np.uint8) (or "
           "declare dtype=np.float32 in the Box)")
    code, _, lines, _ = check_cli([*FAULTY, 'env.env_kwargs.fault=unit_float_image'], tmp_path)
    assert code == 2 and any(fix in line for line in lines), lines
    code, text = train(['-c', 'cartpole_ppo.py', '--exp-dir', 'run', 'env.type=faulty', 'env.stop_value=None',
                        "import_names=['fixtures.faulty_envs']", 'env.env_kwargs.fault=unit_float_image'], tmp_path)
    assert code == 2 and os.listdir(tmp_path) == [] and f"env 'faulty' [observation] {fix}" in text, text


def test_what_gymnasiums_env_checker_refuses_is_said_in_its_words_not_at_its_line(tmp_path):
    """reset returning (obs, None) under gym.make: gymnasium's PassiveEnvChecker asserts; the line named gymnasium's
    file ('fix the env there', at gymnasium/utils/passive_env_checker.py) rather than the env's reset."""
    expected = ("[reset] gymnasium's env checker (gym.make's) refused the env's reset: The second element returned by "
                "`env.reset()` was not a dictionary, actual type: <class 'NoneType'>; fix the env's reset")
    code, _, lines, _ = check_cli(['FaultyNoneInfo-v0', '--import', 'fixtures.faulty_envs'], tmp_path)
    assert code == 2 and len(lines) == 1 and expected in lines[0] and 'passive_env_checker' not in lines[0], lines
    code, text = train(['-c', 'cartpole_ppo.py', '--exp-dir', 'run', 'env.env_id=FaultyNoneInfo-v0', 'env.stop_value=None',
                        "import_names=['fixtures.faulty_envs']"], tmp_path)
    assert code == 2 and expected in text and os.listdir(tmp_path) == [], text


def test_a_registered_env_type_is_named_with_the_env_id_it_was_given(tmp_path):
    """A factory that picks its game by env.env_id (as pettingzoo_classic does) is named with it, and the command to
    check it says it; the default config's env_id, which such a factory ignores, is never shown."""
    code, text = train(['-c', 'cartpole_ppo.py', '--exp-dir', 'run', 'env.type=faulty', 'env.env_id=my_game',
                        "import_names=['fixtures.faulty_envs']", 'env.env_kwargs.fault=old_api'], tmp_path)
    assert code == 2 and "env 'faulty (my_game)' " in text
    assert 'acframe -m check-env faulty env.env_id=my_game --import fixtures.faulty_envs' in text
    (tmp_path / 'cue.py').write_text("main_config = dict(env=dict(collector_env_num=2))\n"
                                     "create_config = dict(env=dict(type='toy_cue_memory'), policy=dict(type='ppo'))\n")
    code, out, lines, _ = check_cli(['-c', 'cue.py'], tmp_path)
    assert code == 0 and 'toy_cue_memory' in out and 'CartPole' not in out, out


def test_training_warns_at_start_when_an_env_has_no_time_limit(tmp_path):
    common = ['-c', 'cartpole_a2c.py', '--max-env-step', '64', 'env.collector_env_num=2', 'env.evaluator_env_num=1',
              'env.n_evaluator_episode=1', 'policy.collect.n_sample=32', 'env.eval_episode_cap=20',
              'env.type=faulty', "import_names=['fixtures.faulty_envs']"]
    code, text = train([*common, '--exp-dir', 'a', 'env.env_kwargs.fault=no_time_limit'], tmp_path)
    assert code == 0 and "has no time limit: its evaluation episodes run up to env.eval_episode_cap=20 steps" in text
    code, text = train([*common, '--exp-dir', 'b'], tmp_path)  # the env truncates its episodes itself
    assert code == 0 and 'no time limit' not in text and 'acframe: warning: env' not in text
    # a problem check-env fails on that only spoils training: a run starts (the observations are cast) and says so
    code, text = train([*common, '--exp-dir', 'c', 'env.env_kwargs.fault=float64_obs'], tmp_path)
    assert code == 0 and FAULT_FIXES['float64_obs'] in text and "(training casts or goes on; acframe -m check-env " \
        "faulty --import fixtures.faulty_envs env.env_kwargs.fault=float64_obs fails on it)" in text, text


def test_the_start_check_leaves_a_runs_numbers_as_they_were(tmp_path, monkeypatch):
    """The same seed trains to the same weights with and without the check (its env is an instance of its own)."""
    import acframe.entry.run_base as run_base

    args = ['-c', 'cartpole_ppo.py', '--max-env-step', '256', '-q', 'env.collector_env_num=2',
            'policy.collect.n_sample=128', 'policy.learn.batch_size=64', 'env.evaluator_env_num=1',
            'env.n_evaluator_episode=1']
    assert train([*args, '--exp-dir', 'checked'], tmp_path)[0] == 0
    monkeypatch.setattr(run_base, 'check_env_at_start', lambda cfg, warn: None)
    assert train([*args, '--exp-dir', 'unchecked'], tmp_path)[0] == 0
    weights = [torch.load(tmp_path / run / 'ckpt' / 'ckpt_latest.pth', weights_only=True)['policy']['model']
               for run in ('checked', 'unchecked')]
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])


def test_a_step_that_hangs_at_the_start_is_refused_within_step_timeout_s(tmp_path):
    code, text = train(['-c', 'cartpole_ppo.py', '--exp-dir', 'run', 'env.type=faulty', 'env.step_timeout_s=0.5',
                        "import_names=['fixtures.faulty_envs']", 'env.env_kwargs.fault=hang',
                        'env.env_kwargs.at_step=2'], tmp_path)
    assert code == 2 and os.listdir(tmp_path) == []
    assert 'step 2 (episode 1, step 2): did not return within env.step_timeout_s=0.5 s' in text


def test_a_hang_at_the_start_is_refused_even_where_the_process_has_its_own_alarm(tmp_path):
    """A SIGALRM handler and a running timer set before the run (by a caller's own watchdog, or an earlier run in
    the same process) are put aside for the check and restored after it: the check never runs unwatched."""
    import signal

    rang = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: rang.append(signum))
    signal.setitimer(signal.ITIMER_REAL, 60.0)
    try:
        start = time.monotonic()
        code, text = train(['-c', 'cartpole_ppo.py', '--exp-dir', 'run', 'env.type=faulty', 'env.step_timeout_s=0.5',
                            "import_names=['fixtures.faulty_envs']", 'env.env_kwargs.fault=hang',
                            'env.env_kwargs.at_step=2'], tmp_path)
        assert code == 2 and 'did not return within env.step_timeout_s=0.5 s' in text and time.monotonic() - start < 30
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 20 < left < 60 and not rang  # the caller's timer runs on, its handler is back
        assert signal.getsignal(signal.SIGALRM) is not None and signal.getsignal(signal.SIGALRM).__name__ == '<lambda>'
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)


def test_an_atari_game_ends_itself_so_it_has_a_time_limit(tmp_path):
    """ALE's v5 games are truncated by the emulator after 108,000 frames (no TimeLimit wrapper, and no random rollout
    lasts that long): a time limit, not the 'no time limit' warning every shipped Atari config printed."""
    pytest.importorskip('ale_py', reason="the Atari chain needs the 'atari' extra (ale-py)")
    code, out, lines, wrote = check_cli(['ALE/Pong-v5'], tmp_path)
    assert code == 0 and not wrote, lines
    assert "the emulator truncates a game after 108000 frames" in out


def test_a_mask_with_values_other_than_0_and_1_is_found_as_training_refuses_it():
    """check-env steps the env as a run builds it: a mask entry 2 (read as legal before, as any nonzero) is a finding
    naming the value, not a traceback location inside acframe's wrapper."""
    from acframe.registry import ENV_REGISTRY

    class MaskTwo(MaskedDictEnv):
        def reset(self, *, seed=None, options=None):
            obs, info = super().reset(seed=seed, options=options)
            obs['action_mask'] = np.array([2] + [1] * (len(obs['action_mask']) - 1), np.int8)
            return obs, info

    ENV_REGISTRY.register('mask_two_check_test', lambda cfg, **kw: gym.wrappers.TimeLimit(MaskTwo('observation'), 25))
    try:
        cfg, _ = check_env_config('mask_two_check_test', None, [], [])
        report = check_env(cfg)
        assert not report.ok
        lines = [f.line() for f in report.findings]
        assert any("its observation's 'action_mask' holds 2, not 0 or 1" in line and 'acframe/' not in line
                   for line in lines), lines
    finally:
        ENV_REGISTRY._entries.pop('mask_two_check_test', None)


def test_an_atari_rom_missing_from_ale_py_says_to_reinstall_it(tmp_path):
    """The real fault: a copy of ale-py without Pong's ROM first on the path; check-env and a run name the file and
    the fix (they said only FileNotFoundError at ale-py's line)."""
    ale_py = pytest.importorskip('ale_py', reason="the Atari chain needs the 'atari' extra (ale-py)")
    for folder in ('ale_py', 'ale_py.libs'):  # (the package and the libraries its extension module loads)
        source = os.path.join(os.path.dirname(os.path.dirname(ale_py.__file__)), folder)
        if os.path.isdir(source):
            shutil.copytree(source, tmp_path / 'site' / folder)
    os.remove(tmp_path / 'site' / 'ale_py' / 'roms' / 'pong.bin')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / 'site'), os.environ.get('PYTHONPATH', '')]))
    for args in (['-m', 'check-env', '-c', 'pong_impala.py'],
                 ['-c', 'pong_impala.py', '--max-env-step', '64', '--exp-dir', str(tmp_path / 'run')]):
        out = subprocess.run([sys.executable, '-m', 'acframe.cli', *args], capture_output=True, text=True, env=env,
                             cwd=tmp_path, timeout=300)
        assert out.returncode == 2, out.stderr
        error = [line for line in out.stderr.splitlines() if line.startswith('acframe: error:')]
        assert len(error) == 1 and "roms/pong.bin" in error[0], out.stderr
        assert "reinstall it (pip install --force-reinstall ale-py)" in error[0]
    assert not (tmp_path / 'run').exists()


def test_the_check_env_command_of_a_run_imports_the_module_of_its_envs_factory(monkeypatch):
    """The command a mid-run env fault names took every module the process had imported (a notebook's earlier runs'
    too), and none when a script imported its env's module itself: the command then failed on an unknown env."""
    import fixtures.faulty_envs  # noqa: F401 - registers 'faulty'
    from acframe import registry
    from acframe.envs.check import env_imports
    from acframe.envs.gym_env import build_env

    monkeypatch.setattr(registry, '_IMPORTED', ['fixtures.faulty_envs', 'an_earlier_runs.envs'])
    assert env_imports({'type': 'faulty'}) == ['fixtures.faulty_envs']
    env = build_env({'type': 'faulty', 'env_kwargs': {'fault': 'none'}}, 0, 1, 'collector')
    assert env.check == 'faulty --import fixtures.faulty_envs env.env_kwargs.fault=none', env.check
    env.close()
    monkeypatch.setattr(registry, '_IMPORTED', ['fixtures'])  # its package, which imports it
    assert env_imports({'type': 'faulty'}) == ['fixtures']
    monkeypatch.setattr(registry, '_IMPORTED', [])  # a script that imported the module itself
    assert env_imports({'type': 'faulty'}) == ['fixtures.faulty_envs']
    monkeypatch.setattr(registry, '_IMPORTED', ['an_earlier_runs.envs'])  # (the one that may register it elsewhere)
    assert env_imports({'type': 'faulty'}) == ['an_earlier_runs.envs']
    for env_id in ('CartPole-v1', 'cartpole_novel'):  # gymnasium's own (by a short name too): nothing to import
        assert env_imports({'type': 'gym', 'env_id': env_id}) == [], env_id
    # a user's id for gymnasium's class (its entry point gymnasium's, its registration the module's): that module
    monkeypatch.setattr(registry, '_IMPORTED', ['an_earlier_runs.envs', 'my_ids'])
    monkeypatch.setitem(registry._REGISTERED_BY, 'my_ids', ['gym:LongCartPole-v0'])
    gym.register('LongCartPole-v0', entry_point='gymnasium.envs.classic_control.cartpole:CartPoleEnv',
                 max_episode_steps=2000)
    try:
        assert env_imports({'type': 'gym', 'env_id': 'LongCartPole-v0'}) == ['my_ids']
    finally:
        gym.registry.pop('LongCartPole-v0', None)
