"""The scripts in examples/ run as documented (with small budgets)."""
import ast
import json
import os
import subprocess
import sys

import pytest


EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'examples')


def run_example(name, *args, cwd, env=None):
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, name), *args], cwd=cwd, capture_output=True,
                         text=True, timeout=180, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_custom_policy_example_registers_and_trains_my_pg(tmp_path):
    stdout = run_example('custom_policy.py', '--max-env-step', '2000', '--exp-dir', str(tmp_path / 'run'), cwd=tmp_path)
    assert 'my_pg: 2000 env steps,' in stdout  # the budget is exact: the last segment is cut
    assert (tmp_path / 'run' / 'summary.json').is_file()
    assert "'type': 'my_pg'" in (tmp_path / 'run' / 'config.py').read_text()
    # the script registered my_pg in itself (its __main__, which no --import brings back): -m eval on its run says so
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'eval', '--load', 'run'], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count('\n') == 1, done.stderr
    assert ("run was trained by a script that registered policy 'my_pg' in itself (__main__), which acframe cannot "
            "import: load or evaluate it from that script, or move that class into a module and name it with --import "
            "MODULE") in done.stderr, done.stderr


@pytest.mark.parametrize('backend', ['local', 'inline'])
def test_my_pg_trains_in_the_parallel_pipeline_when_the_budget_cuts_its_last_segment(tmp_path, backend):
    """my_pg's samples are whole segments: the budget's last, cut segment (the one that spends it, not trained on)
    is not stored, as in the serial pipeline; before, pushing it failed the run's final checkpoint (local: in the
    ingest thread)."""
    (tmp_path / 'my_pg_config.py').write_text(
        "main_config = dict(env=dict(env_id='CartPole-v1', evaluator_env_num=1, n_evaluator_episode=1), max_env_step=1000)\n"
        "create_config = dict(env=dict(type='gym'), policy=dict(type='my_pg'), import_names=['custom_policy'])\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([EXAMPLES, os.environ.get('PYTHONPATH', '')]))
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'parallel', '-c', 'my_pg_config.py', '--exp-dir',
                          'run', '-q', '--backend', backend], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=env)
    assert out.returncode == 0, out.stderr
    with open(tmp_path / 'run' / 'summary.json') as f:
        summary = json.load(f)
    assert summary['env_steps'] == 1000 and summary['train_iters'] > 0  # 15 segments of 64, then one cut to 40


def test_my_pg_acts_on_a_masked_env_and_a_policy_calling_its_model_directly_is_told_why_it_cannot(tmp_path):
    """The example called self._model on the observations: on a masked env (a dict {'obs', 'action_mask'}) that was
    a torch traceback from deep inside the model, exit 1."""
    (tmp_path / 'direct_pg.py').write_text(
        "from acframe import POLICY_REGISTRY\n"
        "from custom_policy import MyPGPolicy\n\n\n"
        "@POLICY_REGISTRY.register('direct_pg')\n"
        "class DirectPG(MyPGPolicy):\n"
        "    def _forward_eval(self, obs):\n"
        "        return {'action': self._model(obs, mode='compute_actor')['logit'].argmax(-1)}\n")
    for name in ('my_pg', 'direct_pg'):
        (tmp_path / f'{name}_cfg.py').write_text(
            "main_config = dict(env=dict(evaluator_env_num=1, n_evaluator_episode=2, stop_value=None))\n"
            f"create_config = dict(env=dict(type='toy_tictactoe'), policy=dict(type='{name}'), "
            f"import_names=['{'custom_policy' if name == 'my_pg' else name}'])\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([EXAMPLES, str(tmp_path), os.environ.get('PYTHONPATH', '')]))
    common = [sys.executable, '-m', 'acframe.cli', '-q', '--max-env-step', '1000']
    out = subprocess.run(common + ['-c', 'my_pg_cfg.py', '--exp-dir', 'masked'], cwd=tmp_path, capture_output=True,
                         text=True, timeout=180, env=env)
    assert out.returncode == 0, out.stderr
    out = subprocess.run(common + ['-c', 'direct_pg_cfg.py', '--exp-dir', 'direct'], cwd=tmp_path,
                         capture_output=True, text=True, timeout=180, env=env)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1, out.stderr
    assert lines[0].startswith("acframe: error: policy 'direct_pg' raised TypeError: ") and 'direct_pg.py:8 in ' \
        '_forward_eval' in lines[0] and 'self._compute_actor(obs) and self._evaluate(obs) take it' in lines[0], lines
    assert not (tmp_path / 'direct').exists()


@pytest.mark.parametrize('algo', ['impala', 'ppo', 'a2c'])
def test_compose_pipeline_example_trains_by_hand_off_and_on_policy(tmp_path, algo):
    stdout = run_example('compose_pipeline.py', '--algo', algo, '--max-env-step', '3000', '--exp-dir',
                         str(tmp_path / 'run'), cwd=tmp_path)
    assert '[eval] env_step 0' in stdout
    summary = ast.literal_eval(stdout.splitlines()[-1])
    assert summary['train_iters'] > 0 and (summary['env_steps'] >= 3000 or summary['solved']), summary
    assert (tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth').is_file()


STOP_HOOK = """
from acframe import HOOK_REGISTRY, LearnerHook, StopTraining


@HOOK_REGISTRY.register('stop_at_test')
class StopAt(LearnerHook):
    def __init__(self, at=20, **kwargs):
        self.at = at

    def after_iter(self, learner, info):
        if learner.train_iter >= self.at:
            raise StopTraining(f'enough at {learner.train_iter}')
"""


def test_compose_pipeline_example_takes_the_configs_buffer_and_hooks(tmp_path):
    """A hand-composed loop (as the example was) dropped a prioritized buffer's priorities without a word (its Learner
    had no buffer=) and ran past a hook's StopTraining; the config's buffer and hooks were not built."""
    (tmp_path / 'stop_hook.py').write_text(STOP_HOOK)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get('PYTHONPATH', '')]))
    out = subprocess.run([sys.executable, os.path.join(EXAMPLES, 'compose_pipeline.py'), '--max-env-step', '20000',
                          'policy.other.replay_buffer.type=prioritized', "import_names=['stop_hook']",
                          "policy.learn.learner.hooks=['stop_at_test']", 'env.stop_value=10000'], cwd=tmp_path,
                         capture_output=True, text=True, timeout=180, env=env)
    assert out.returncode == 0 and 'warning' not in out.stderr, out.stderr
    assert '[stop] the hook StopAt.after_iter: enough at 20' in out.stdout
    summary = ast.literal_eval(out.stdout.splitlines()[-1])
    assert summary['stopped_by'] == 'the hook StopAt.after_iter: enough at 20' and summary['env_steps'] < 20000


@pytest.mark.parametrize('pipeline', ['serial', 'parallel'])
def test_vector_cartpole_example_trains_its_numpy_envs_by_name(tmp_path, pipeline):
    stdout = run_example('vector_cartpole.py', '--pipeline', pipeline, '--num-envs', '64', '--max-env-step', '4096',
                         '--exp-dir', str(tmp_path / 'run'), cwd=tmp_path)
    assert f'numpy_cartpole x 64 ({pipeline}): 4096 env steps' in stdout
    assert "'type': 'numpy_cartpole'" in (tmp_path / 'run' / 'config.py').read_text()


def test_vector_cartpole_example_reports_the_run_it_made_not_an_earlier_one(tmp_path):
    """Run twice in one folder: the second run's folder is <name>_1, and the line is the second run's."""
    run_example('vector_cartpole.py', '--num-envs', '64', '--max-env-step', '4096', cwd=tmp_path)
    stdout = run_example('vector_cartpole.py', '--num-envs', '64', '--max-env-step', '2048', cwd=tmp_path)
    assert 'numpy_cartpole x 64 (serial): 2048 env steps' in stdout
    assert stdout.strip().endswith('vector_cartpole_ppo_seed0_1')
