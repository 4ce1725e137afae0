"""Specification of ``acframe -m plot RUN_DIR ...`` and of the ``curves.svg`` every finished run writes."""
import json
import os
import shutil
import struct
from xml.etree import ElementTree

import numpy as np
import pytest

from acframe.cli import main
from acframe.errors import ConfigError
from acframe.plot import PANEL_TITLES, Curve, _unique_labels, load_run_curves, mean_std_on_grid, plot_runs
from acframe.plot_svg import nice_ticks


def png_size(path):
    """(width, height) from a PNG's IHDR chunk."""
    data = path.read_bytes()[:24]
    assert data[:8] == b'\x89PNG\r\n\x1a\n' and data[12:16] == b'IHDR'
    return struct.unpack('>II', data[16:24])


@pytest.fixture(scope='module')
def two_seeds(tmp_path_factory):
    """Two seeds of one config (a different budget than ``trained_run``'s, so another config)."""
    root = tmp_path_factory.mktemp('seeds')
    runs = []
    for seed in (0, 1):
        run_dir = root / f'seed{seed}'
        assert main(['-c', 'cartpole_a2c.py', '--exp-dir', str(run_dir), '-s', str(seed), '--max-train-iter', '30', '-q',
                     'env.collector_env_num=4', 'env.evaluator_env_num=2', 'env.n_evaluator_episode=2',
                     'policy.eval.evaluator.eval_freq=5', 'policy.learn.learner.log_freq=5']) == 0
        runs.append(run_dir)
    return runs


#: the legend of ``two_seeds`` beside ``trained_run``: its first differing key (of 4: evaluator envs, episodes and the
#: eval and log frequencies; budgets are not a config difference)
SECOND = 'cartpole_a2c (env.evaluator_env_num=2 and 3 more)'


def svg_lines(path) -> dict:
    """What an SVG written by acframe draws: its size, panel titles, legend labels and the polylines' point counts."""
    root = ElementTree.parse(path).getroot()
    ns = '{http://www.w3.org/2000/svg}'
    texts = [t.text for t in root.iter(f'{ns}text')]
    return {'size': (int(root.get('width')), int(root.get('height'))), 'texts': texts,
            'polylines': [len(p.get('points').split()) for p in root.iter(f'{ns}polyline')],
            'bands': len(list(root.iter(f'{ns}polygon')))}


def test_every_finished_run_writes_its_curves_as_svg(trained_run):
    """The four panels, drawn without matplotlib (milliseconds at the end of every run): each titled, each curve a
    polyline with one point per logged value."""
    drawn = svg_lines(trained_run / 'curves.svg')
    assert drawn['size'] == (1200, 900)
    assert [t for t in drawn['texts'] if t in PANEL_TITLES] == list(PANEL_TITLES)
    run = load_run_curves(str(trained_run))
    logged = sorted(len(run.curves[name]['env_steps'].x) for name in ('train', 'loss', 'entropy') if name in run.curves)
    assert logged and set(logged) <= set(drawn['polylines'])
    assert 'not logged' not in drawn['texts'] and not (trained_run / 'curves.png').exists()


def test_plot_writes_svg_by_extension(trained_run, two_seeds, tmp_path):
    out = tmp_path / 'runs.svg'
    assert main(['-m', 'plot', str(trained_run), *map(str, two_seeds), '--out', str(out), '-q']) == 0
    drawn = svg_lines(out)
    # the same exp_name, another config: the second names where it differs (and how many more keys do)
    assert 'cartpole_a2c (1 run)' in drawn['texts'] and SECOND + ' (2 runs)' in drawn['texts'], drawn['texts']
    assert drawn['bands'] == 2  # a mean ± std band per config


@pytest.mark.parametrize('low, high, ticks', [(0, 16640, [0, 5000, 10000, 15000]), (0.43, 0.69, [0.45, 0.5, 0.55, 0.6, 0.65]),
                                              (-210, -120, [-200, -180, -160, -140, -120]), (5, 5, [5, 6, 7, 8, 9, 10])])
def test_svg_ticks_are_round_numbers_covering_the_range(low, high, ticks):
    assert nice_ticks(low, high) == pytest.approx(ticks)


def test_plot_draws_runs_grouped_by_config(trained_run, two_seeds, tmp_path, capsys):
    out = tmp_path / 'curves.png'
    assert main(['-m', 'plot', str(trained_run), *map(str, two_seeds), '--out', str(out)]) == 0
    line = capsys.readouterr().out.strip()
    assert line == f"[plot] 3 runs of 2 configs (cartpole_a2c, {SECOND}) by env_steps -> {out}"
    assert png_size(out) == (1200, 900)
    assert main(['-m', 'plot', *map(str, two_seeds), '--out', str(tmp_path / 'wall.png'), '--x', 'wall_s', '-q']) == 0
    assert '2 runs of 1 config' in capsys.readouterr().out
    assert png_size(tmp_path / 'wall.png') == (1200, 900)


def test_a_runs_curves_come_from_its_logs(two_seeds):
    run = load_run_curves(str(two_seeds[0]))
    summary = json.loads((two_seeds[0] / 'summary.json').read_text())
    assert set(run.curves) == {'eval', 'train', 'loss', 'entropy'}
    evals = run.curves['eval']['env_steps']
    assert evals.x[0] == 0 and evals.x[-1] == summary['env_steps'] and max(evals.y) == summary['best_eval_return']
    loss = run.curves['loss']['env_steps']
    assert len(loss.x) == 30 // 5 and np.all(np.diff(loss.x) >= 0) and 0 < loss.x[0] <= loss.x[-1] <= summary['env_steps']
    wall = run.curves['entropy']['wall_s']
    assert np.all(wall.x >= 0) and np.all(np.diff(wall.x) >= 0) and np.all(wall.y > 0)


def test_runs_are_averaged_on_a_common_grid_up_to_the_longest_a_run_that_ended_holding_its_last_value():
    """Cut at the shortest run, a group's mean hid every later evaluation of its other runs (runs stop when solved:
    the fastest seed cut its group short, the others' climb drawn nowhere in the mean)."""
    a = Curve(np.array([0.0, 10.0, 20.0]), np.array([0.0, 10.0, 20.0]))
    b = Curve(np.array([0.0, 10.0]), np.array([10.0, 30.0]))  # solved at 10: it holds 30
    grid, mean, std = mean_std_on_grid([a, b], points=5)
    assert grid.tolist() == [0.0, 5.0, 10.0, 15.0, 20.0]
    assert mean.tolist() == [5.0, 12.5, 20.0, 22.5, 25.0] and std.tolist() == [5.0, 7.5, 10.0, 7.5, 5.0]


def test_the_mean_evaluations_legend_says_that_runs_that_ended_sooner_hold_their_last_and_only_then():
    from acframe.plot import RunCurves, _panels

    def run(name, ends_at):
        steps = np.arange(0.0, ends_at + 1, 10.0)
        curve = {'env_steps': Curve(steps, steps), 'wall_s': Curve(steps / 10, steps)}
        return RunCurves(name, 'key', 'cfg', {'eval': curve})
    for ends, x_axis, note in (([20, 20], 'env_steps', False), ([20, 10], 'env_steps', True),
                               ([20, 10], 'wall_s', True)):
        mean = _panels([[run(f'seed{i}', end) for i, end in enumerate(ends)]], ['cfg'], x_axis)[0][-1]
        assert mean.label == ('cfg (2 runs; ended runs hold their last)' if note else 'cfg (2 runs)'), mean.label
        assert mean.x[-1] == (20.0 if x_axis == 'env_steps' else 2.0)


@pytest.mark.parametrize('args, message', [
    (['-m', 'plot'], '-m plot needs RUN_DIR arguments'),
    (['-m', 'plot', 'EMPTY'], 'not a run folder (no log/)'),
    (['-m', 'plot', 'EMPTY', '--load', 'x'], '--load does not apply to -m plot'),
    (['-m', 'eval', '--load', 'EMPTY', '--x', 'wall_s'], '--x chooses the x axis of -m plot'),
])
def test_bad_plot_input_exits_2_with_one_line(args, message, tmp_path, capsys):
    code = main([str(tmp_path) if a == 'EMPTY' else a for a in args])
    err = capsys.readouterr().err
    assert code == 2 and err.count('\n') == 1 and message in err, err


@pytest.mark.parametrize('out, message', [
    ('curves', 'the file name must end in .png, .svg or .pdf'),
    ('curves.jpg', 'the file name must end in .png, .svg or .pdf'),
    ('figs/', 'that is a folder'),
    ('DIR', 'that is a folder'),
    ('FILE/curves.png', 'is a file, not a folder'),
])
def test_a_bad_out_is_one_line_before_anything_is_read(out, message, tmp_path, capsys):
    """The extension picks the format; anything else is refused before the runs are read (the RUN_DIR here is no run
    folder at all) and nothing is written."""
    (tmp_path / 'DIR').mkdir()
    (tmp_path / 'FILE').write_text('a file')
    before = sorted(p.name for p in tmp_path.rglob('*'))
    out = str(tmp_path / out) + ('/' if out.endswith('/') else '')
    code = main(['-m', 'plot', str(tmp_path / 'DIR'), '--out', out])
    err = capsys.readouterr().err
    assert code == 2 and err.count('\n') == 1 and err.startswith(f'acframe: error: --out {out}: ') and message in err, err
    assert sorted(p.name for p in tmp_path.rglob('*')) == before
    with pytest.raises(ConfigError, match='--out'):
        plot_runs([str(tmp_path / 'DIR')], out)


def test_plot_writes_pdf_by_extension(trained_run, tmp_path):
    assert main(['-m', 'plot', str(trained_run), '--out', str(tmp_path / 'curves.PDF'), '-q']) == 0
    assert (tmp_path / 'curves.PDF').read_bytes()[:5] == b'%PDF-'


@pytest.fixture(scope='module')
def resumed(two_seeds, tmp_path_factory):
    """A copy of ``two_seeds[1]`` resumed with a bigger budget: a second sitting, in an event file of its own."""
    run_dir = tmp_path_factory.mktemp('resumed') / 'seed1'
    shutil.copytree(two_seeds[1], run_dir)
    assert main(['--resume', str(run_dir), '--max-train-iter', '40', '-q']) == 0
    assert len([n for n in os.listdir(run_dir / 'log') if n.startswith('events.out.tfevents.')]) == 2
    return run_dir


def test_seeds_stay_one_config_whatever_their_budget_and_logger(two_seeds, resumed, tmp_path, capsys):
    """A run resumed with a bigger budget, or logged to another backend, is still a seed of the same config."""
    other_logger = tmp_path / 'seed0_jsonl'
    shutil.copytree(two_seeds[0], other_logger)
    record = json.loads((other_logger / 'config.json').read_text())
    record['config']['logger']['backends'] = ['jsonl']
    record['config']['policy']['learn']['learner']['save_ckpt_freq'] = 7
    (other_logger / 'config.json').write_text(json.dumps(record))
    out = tmp_path / 'seeds.svg'
    assert main(['-m', 'plot', str(two_seeds[0]), str(resumed), str(other_logger), '--out', str(out)]) == 0
    assert '3 runs of 1 config (cartpole_a2c)' in capsys.readouterr().out
    assert svg_lines(out)['bands'] == 1


def test_configs_apart_only_in_their_imports_are_named_by_them():
    configs = [{'import_names': [], 'env': {'type': 'gym'}}, {'import_names': ['my_envs'], 'env': {'type': 'gym'}}]
    assert _unique_labels(['run', 'run'], configs) == ['run', "run (import_names=['my_envs'])"]


def shift_last_sitting(log_dir, seconds: float) -> None:
    """Stamp every event of the last event file ``seconds`` later: its sitting resumed after that long a pause."""
    from tensorboardX.proto.event_pb2 import Event
    from tensorboardX.record_writer import RecordWriter

    path = str(log_dir / sorted(n for n in os.listdir(log_dir) if n.startswith('events.out.tfevents.'))[-1])
    data, events, pos = open(path, 'rb').read(), [], 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack('<Q', data[pos:pos + 8])
        events.append(Event.FromString(data[pos + 12:pos + 12 + length]))
        pos += 12 + length + 4
    writer = RecordWriter(path)
    for event in events:
        event.wall_time += seconds
        writer.write(event.SerializeToString())
    writer.close()


@pytest.mark.parametrize('backend', ['tensorboard', 'jsonl'])
def test_wall_seconds_leave_out_the_pause_before_a_resume(resumed, backend, tmp_path):
    """A run resumed 700 s after its interrupt: the wall_s axis is training time (monotone, ending near summary.json's
    wall_s), not the 700 s the run sat idle. Event files mark each sitting; a scalars.jsonl's pause is the longest gap
    while the log spans more than summary.json's wall_s."""
    from acframe.logs import read_scalars

    run_dir = tmp_path / 'paused'
    shutil.copytree(resumed, run_dir)
    shift_last_sitting(run_dir / 'log', 700.0)
    if backend == 'jsonl':
        lines = [json.dumps({'tag': s.tag, 'step': s.step, 'value': s.value, 'wall_time': s.wall_time})
                 for s in read_scalars(str(run_dir / 'log'))]
        for name in os.listdir(run_dir / 'log'):
            os.remove(run_dir / 'log' / name)
        (run_dir / 'log' / 'scalars.jsonl').write_text('\n'.join(lines) + '\n')
    trained = json.loads((run_dir / 'summary.json').read_text())['wall_s']
    run = load_run_curves(str(run_dir))
    for name, curves in run.curves.items():
        wall, steps = curves['wall_s'].x, curves['env_steps'].x
        assert np.all(wall >= 0) and np.all(np.diff(wall) >= 0) and wall[-1] <= trained, (name, wall, trained)
    evals = run.curves['eval']
    assert evals['env_steps'].x[-1] > evals['env_steps'].x[0]


def test_a_key_set_in_both_configs_names_the_group_before_one_left_to_its_default():
    """A run with 2 data-parallel ranks was labelled by 'parallel.actor_num=None and 1 more' (a default resolved in
    one config), hiding the setting that made it differ (parallel.learner_num)."""
    configs = [{'parallel': {'actor_num': 2, 'learner_num': 1}}, {'parallel': {'actor_num': None, 'learner_num': 2}}]
    assert _unique_labels(['run', 'run'], configs) == ['run', 'run (parallel.learner_num=2 and 1 more)']


def test_what_is_no_run_folder_is_named_as_such_and_a_run_given_twice_is_refused(trained_run, tmp_path, capsys):
    """A file was refused as '--out FILE/curves.png' (an --out never given), a W&B folder for a symbolic link inside
    it, a missing folder for having no log/; the same run twice counted twice in the mean over runs."""
    (tmp_path / 'notes.txt').write_text('x')
    (tmp_path / 'wandb_dir' / 'wandb').mkdir(parents=True)
    os.symlink(tmp_path, tmp_path / 'wandb_dir' / 'wandb' / 'latest-run')
    for given, says in ((tmp_path / 'notes.txt', 'a file, not a run folder'), (tmp_path / 'nowhere', 'no such folder'),
                        (tmp_path / 'wandb_dir', 'not a run folder (no log/)')):
        assert main(['-m', 'plot', str(given)]) == 2
        assert capsys.readouterr().err == (f"acframe: error: {given}: {says}; pass folders written by acframe training "
                                           f"runs\n")
    again = os.path.join(str(trained_run), '.')
    assert main(['-m', 'plot', str(trained_run), again, '--out', str(tmp_path / 'two.svg')]) == 2
    assert 'given twice' in capsys.readouterr().err and not (tmp_path / 'two.svg').exists()


def test_a_run_logged_to_no_backend_plot_reads_is_warned_at_its_start_and_named_by_plot(tmp_path, capsys):
    """A run with logger.backends=[] (or MLflow alone) was told at plot time to 'plot it once it has trained'."""
    run = str(tmp_path / 'run')
    assert main(['-c', 'cartpole_ppo.py', 'logger.backends=[]', '--max-env-step', '64', '-q', '--exp-dir', run]) == 0
    assert ("acframe: warning: logger.backends=[] has neither 'tensorboard' nor 'jsonl', the logs -m plot reads: the "
            "run draws no curves.svg and -m plot cannot draw it") in capsys.readouterr().err
    assert main(['-m', 'plot', run]) == 2
    assert capsys.readouterr().err == (f"acframe: error: {run}: the run logged to no backend (logger.backends=[]), and "
                                       f"-m plot reads 'tensorboard' and 'jsonl' logs; add one of them to "
                                       f"logger.backends for the runs you will plot\n")


def test_groups_that_share_the_first_differing_value_get_labels_of_their_own():
    """Trials 1 and 6 of a study both differed from trial 0 first in n_sample=64 (and in their learning rates):
    one label for two configs, two curves under one legend entry."""
    configs = [{'n_sample': 128, 'rate': 1}, {'n_sample': 64, 'rate': 2}, {'n_sample': 64, 'rate': 3}]
    assert _unique_labels(['a2c'] * 3, configs) == ['a2c', 'a2c (n_sample=64 and 1 more)', 'a2c (rate=3 and 1 more)']


KILLER = '''
import os
import signal

from acframe import HOOK_REGISTRY, LearnerHook


@HOOK_REGISTRY.register('kill_once_test')
class KillOnce(LearnerHook):
    """SIGKILLs its own process at train iter `at`, the first time only (a marker file remembers)."""

    def __init__(self, at, marker):
        self.at, self.marker = at, marker

    def after_iter(self, learner, info):
        if learner.train_iter == self.at and not os.path.exists(self.marker):
            open(self.marker, 'w').close()
            os.kill(os.getpid(), signal.SIGKILL)
'''


def test_a_run_killed_past_its_checkpoint_and_resumed_plots_one_timeline(tmp_path):
    """SIGKILL 16 train iters after the last checkpoint, then --resume: the log held both timelines, and the curves
    (and curves.svg) ran to the kill, back to the checkpoint and on again."""
    import subprocess
    import sys

    from acframe.logs import read_scalars

    (tmp_path / 'killer.py').write_text(KILLER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get('PYTHONPATH', '')]))
    # a checkpoint at iter 20, the kill at 36; the event file's buffer (4 KiB) reached the disk up to about iter 28
    hook = f"policy.learn.learner.hooks=[{{'type': 'kill_once_test', 'at': 36, 'marker': '{tmp_path / 'killed'}'}}]"
    args = [sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_a2c.py', '--exp-dir', 'run', '--max-train-iter', '60',
            '-q', 'env.stop_value=None', 'policy.learn.learner.save_ckpt_freq=20', 'policy.learn.learner.log_freq=1',
            'policy.eval.evaluator.eval_freq=2', 'env.n_evaluator_episode=1', 'env.evaluator_env_num=1',
            "import_names=['killer']", hook]
    killed = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert killed.returncode == -9, killed.stderr
    resumed = subprocess.run([sys.executable, '-m', 'acframe.cli', '--resume', 'run', '--import', 'killer', '-q'],
                             cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert resumed.returncode == 0, resumed.stderr
    log = tmp_path / 'run' / 'log'
    assert len([name for name in os.listdir(log) if name.startswith('events.out')]) == 2
    from acframe.logs import event_files, read_event_file
    first = [s.step for s in read_event_file(event_files(str(log))[0]) if s.tag == 'evaluator/return_mean_by_iter']
    assert max(first) > 22, first  # (the killed sitting's file holds steps the resume trains again)
    evals = [s.step for s in read_scalars(str(log)) if s.tag == 'evaluator/return_mean_by_iter']
    assert evals == sorted(evals) and evals[-1] == 60 and evals.count(22) == 1, evals  # (22: logged twice, kept once)
    run = load_run_curves(str(tmp_path / 'run'))
    for name, curves in run.curves.items():
        assert np.all(np.diff(curves['env_steps'].x) >= 0), (name, curves['env_steps'].x)
