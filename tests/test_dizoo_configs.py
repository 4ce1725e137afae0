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
          'Hopper': ('mujoco', 'mujoco'), 'connect_four_v': ('pettingzoo', 'pettingzoo')}


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


def uncommented_keys(source: str) -> list:
    """The ``key=`` entries of ``main_config`` and ``create_config`` with no comment on their lines or on a comment
    line right above them (as ``'<line> <key>'``); a section spanning several lines needs none, its keys do."""
    import ast
    import io
    import tokenize
    commented = set()  # lines that hold a comment
    alone = set()  # lines that are only a comment
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            commented.add(token.start[0])
            if not token.line[:token.start[1]].strip():
                alone.add(token.start[0])
    missing = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets if isinstance(t, ast.Name)] in (
                ['main_config'], ['create_config']):
            for call in ast.walk(node.value):
                for keyword in getattr(call, 'keywords', []):
                    value = keyword.value
                    if isinstance(value, ast.Call) and value.lineno != value.end_lineno:
                        continue  # a section over several lines: its keys carry the comments
                    own = any(line in commented for line in range(keyword.lineno, value.end_lineno + 1))
                    if not own and keyword.lineno - 1 not in alone:
                        missing.append(f'{keyword.lineno} {keyword.arg}')
    return missing


@pytest.mark.parametrize('name', CONFIGS)
def test_every_key_of_a_shipped_config_carries_a_comment(name):
    source = open(os.path.join(ROOT, 'dizoo_configs', name)).read()
    assert uncommented_keys(source) == []


def test_the_comment_check_finds_an_uncommented_key():
    source = ("main_config = dict(\n    a=1,  # why a\n    # why b\n    b=2,\n    c=dict(\n        d=3,\n    ),\n)\n"
              "create_config = dict(e=4)\n")
    assert uncommented_keys(source) == ['6 d', '9 e']
