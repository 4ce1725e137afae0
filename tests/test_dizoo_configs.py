"""Every shipped config in dizoo_configs/ starts: it compiles, its env builds, its policy fits the env's spaces and
its budget passes the start-up checks (a typo in a key, or a model option a policy lacks, fails here and not in a
user's first minute). Configs whose env needs an extra that is not installed skip with the extra's name."""
import importlib.util
import os

import pytest

from acframe.config import compile_config, load_config_file
from acframe.entry.budget import check_start
from acframe.envs import build_env
from acframe.policy import create_policy

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = sorted(f for f in os.listdir(os.path.join(ROOT, 'dizoo_configs')) if f.endswith('.py') and f != '__init__.py')
#: the module an env family needs, and the extra that installs it
EXTRAS = {'ALE/': ('ale_py', 'atari'), 'LunarLander': ('Box2D', 'box2d'), 'HalfCheetah': ('mujoco', 'mujoco'),
          'Hopper': ('mujoco', 'mujoco')}


def test_there_is_a_config_for_every_ladder_row_and_algorithm():
    """Issue 9: <env>_<algo>.py for every ladder row and every algorithm with a head for its action space."""
    discrete, continuous = ('cartpole', 'acrobot', 'lunarlander'), ('pendulum', 'lunarlander_continuous',
                                                                     'halfcheetah', 'hopper')
    expected = {f'{row}_{algo}.py' for row in discrete for algo in ('a2c', 'acer', 'impala', 'ppo')}
    expected |= {f'{row}_{algo}.py' for row in continuous for algo in ('a2c', 'acer', 'impala', 'ppo')}
    assert sorted(expected - set(CONFIGS)) == []


@pytest.mark.parametrize('name', CONFIGS)
def test_a_shipped_config_compiles_builds_its_env_and_policy_and_passes_the_start_checks(name):
    main, create = load_config_file(os.path.join(ROOT, 'dizoo_configs', name))
    env_id = main.get('env', {}).get('env_id', '')
    for prefix, (module, extra) in EXTRAS.items():
        if env_id.startswith(prefix) and importlib.util.find_spec(module) is None:
            pytest.skip(f"{name} needs the '{extra}' extra (pip install -e .[{extra}])")
    cfg = compile_config((main, create), None, seed=0)
    env = build_env(dict(cfg.env), 0, 0, 'collector')
    try:
        policy = create_policy(cfg, env.observation_space, env.action_space)
        check_start(cfg, 'serial', env.observation_space, env.action_space)
    finally:
        env.close()
    assert policy.learn_mode is not None and policy.collect_mode is not None and policy.eval_mode is not None
    doc = open(os.path.join(ROOT, 'dizoo_configs', name)).read().split('"""')[1]
    assert doc.strip(), f"{name} has no docstring"
    if cfg.env.stop_value is not None:  # a config with a stop value says what it measured reaching it
        assert 'MEASURED' in doc or 'Measured' in doc or 'measured' in doc, f"{name}'s docstring states no measurement"
