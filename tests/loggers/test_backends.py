"""Every logger backend receives every scalar a run logs, with TensorBoard's tags and steps; W&B and MLflow runs
continue on ``--resume`` and receive ``-m eval --video``'s videos; a failing backend is dropped with one warning and the run goes on.

W&B runs offline (``logger.wandb.mode='offline'``, files under a temp folder) and MLflow logs to a file store in a
temp folder: nothing here touches the network. Their records are read back from what they wrote: W&B's
``run-<id>.wandb`` (a LevelDB-style log of ``wandb_internal_pb2.Record``) and MLflow's store through
``MlflowClient``.
"""
import filecmp
import json
import os
import struct
from collections import Counter
from typing import Dict, List, Tuple

import numpy as np
import pytest

from acframe.entry import serial_pipeline
from acframe.entry.evaluate import evaluate_run
from acframe.entry.parallel import parallel_pipeline
from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy
from acframe.loggers import LoggerBackend, LoggerRun, RunLogger
from acframe.loggers.files import JsonlLogger
from acframe.logs import read_jsonl_scalars, read_scalars

wandb = pytest.importorskip('wandb')
mlflow = pytest.importorskip('mlflow')

ALL = "logger.backends=['tensorboard', 'jsonl', 'wandb', 'mlflow']"
SMALL = ['env.collector_env_num=4', 'env.evaluator_env_num=2', 'env.n_evaluator_episode=2', 'env.n_confirm_episode=0',
         'policy.learn.learner.log_freq=5', 'policy.eval.evaluator.eval_freq=20', 'env.stop_value=10000']

Key = Tuple[str, int, float]


@pytest.fixture
def trackers(tmp_path, monkeypatch) -> List[str]:
    """Overrides sending W&B (offline) and MLflow (a file store) into ``tmp_path``; no network, no API key."""
    monkeypatch.setenv('WANDB_MODE', 'offline')
    monkeypatch.setenv('WANDB_SILENT', 'true')
    monkeypatch.delenv('WANDB_API_KEY', raising=False)
    monkeypatch.setenv('MLFLOW_ALLOW_FILE_STORE', 'true')  # MLflow 3 keeps file stores behind this switch
    return [ALL, 'logger.wandb.mode=offline', f"logger.wandb.dir={tmp_path / 'wandb'}",
            f"logger.mlflow.tracking_uri=file://{tmp_path / 'mlruns'}", 'logger.mlflow.experiment_name=acframe_test']


def keys(scalars) -> Counter:
    """``(tag, step, value as float32)`` of each scalar: event files keep float32 values."""
    return Counter((tag, int(step), float(np.float32(value))) for tag, step, value in scalars)


def tensorboard_scalars(exp_dir) -> Counter:
    return keys((s.tag, s.step, s.value) for s in read_scalars(os.path.join(exp_dir, 'log')))


def jsonl_scalars(exp_dir) -> Counter:
    return keys((s.tag, s.step, s.value) for s in read_jsonl_scalars(os.path.join(exp_dir, 'log', 'scalars.jsonl')))


# ---- W&B's offline run file ---------------------------------------------------------------------------------------
def wandb_records(path: str):
    """The ``Record``s of a W&B run file: a 7-byte header, then LevelDB-log chunks (crc32 u32, length u16, type u8;
    1 full, 2 first, 3 middle, 4 last) in 32 KiB blocks."""
    from wandb.proto import wandb_internal_pb2

    with open(path, 'rb') as f:
        data = f.read()
    assert data[:4] == b':W&B'
    pos, pending = 7, b''
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # a block's tail too short for a chunk header is padding
            pos += 32768 - pos % 32768
            continue
        length, kind = struct.unpack('<HB', data[pos + 4:pos + 7])
        pending += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b''
            yield record
        elif kind == 0:
            pending = b''


def wandb_runs(wandb_dir) -> Dict[str, List[dict]]:
    """Each offline run folder's run id, config and history rows, by folder name (in time order)."""
    runs = {}
    root = os.path.join(wandb_dir, 'wandb')
    for name in sorted(n for n in os.listdir(root) if n.startswith('offline-run-')):
        files = [f for f in os.listdir(os.path.join(root, name)) if f.endswith('.wandb')]
        rows, run_id, config = [], None, {}
        for record in wandb_records(os.path.join(root, name, files[0])):
            kind = record.WhichOneof('record_type')
            if kind == 'history':
                rows.append({item.key or '/'.join(item.nested_key): json.loads(item.value_json)
                             for item in record.history.item})
            elif kind == 'run':
                run_id = record.run.run_id
                config = {item.key: json.loads(item.value_json) for item in record.run.config.update}
        runs[name] = {'run_id': run_id, 'rows': rows, 'config': config}
    return runs


def wandb_scalars(runs) -> Counter:
    found = []
    for run in runs:
        for row in run['rows']:
            tags = [k for k in row if not k.startswith('_') and k != 'step']
            assert len(tags) == 1, row  # one scalar per row, with its own step
            found.append((tags[0], row['step'], row[tags[0]]))
    return keys(found)


# ---- MLflow's store -----------------------------------------------------------------------------------------------
def mlflow_run(tmp_path, run_id):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"file://{tmp_path / 'mlruns'}"), run_id


def mlflow_scalars(client, run_id) -> Counter:
    run = client.get_run(run_id)
    found = []
    for tag in run.data.metrics:
        found += [(tag, m.step, m.value) for m in client.get_metric_history(run_id, tag)]
    return keys(found)


def check_every_backend(tmp_path, exp_dir) -> Counter:
    """Every backend holds exactly TensorBoard's scalars; returns them."""
    expected = tensorboard_scalars(exp_dir)
    assert sum(expected.values()) > 20 and any(t.startswith('learner/') for t, _, _ in expected)
    assert jsonl_scalars(exp_dir) == expected
    with open(os.path.join(exp_dir, 'loggers.json')) as f:
        records = json.load(f)
    runs = list(wandb_runs(tmp_path / 'wandb').values())
    assert {run['run_id'] for run in runs} == {records['wandb']['run_id']}
    assert wandb_scalars(runs) == expected
    client, run_id = mlflow_run(tmp_path, records['mlflow']['run_id'])
    assert mlflow_scalars(client, run_id) == expected
    return expected


def test_a_serial_run_logs_the_same_scalars_to_every_backend(tmp_path, trackers):
    exp_dir = tmp_path / 'impala'
    serial_pipeline('cartpole_impala.py', overrides=SMALL + trackers, exp_dir=str(exp_dir), max_env_step=3000,
                    progress=False)
    expected = check_every_backend(tmp_path, exp_dir)
    tags = {tag for tag, _, _ in expected}
    assert {'collector/episode_return_mean', 'evaluator/return_mean', 'learner/total_loss'} <= tags
    # the compiled config is the hyperparameters: nested in W&B, flat parameters in MLflow
    with open(exp_dir / 'loggers.json') as f:
        records = json.load(f)
    (run,) = wandb_runs(tmp_path / 'wandb').values()
    assert run['config']['policy']['type'] == 'impala' and run['config']['env']['collector_env_num'] == 4
    client, run_id = mlflow_run(tmp_path, records['mlflow']['run_id'])
    params = client.get_run(run_id).data.params
    assert params['policy.type'] == 'impala' and params['env.collector_env_num'] == '4'
    assert client.get_run(run_id).info.status == 'FINISHED'
    # nothing secret in the run folder: its one new file holds ids only
    assert set(records) == {'wandb', 'mlflow'} and set(records['mlflow']) == {'run_id', 'experiment_id'}


def test_an_on_policy_run_and_its_resume_append_to_the_same_tracker_runs(tmp_path, trackers):
    exp_dir = tmp_path / 'a2c'
    serial_pipeline_onpolicy('cartpole_a2c.py', overrides=SMALL + trackers, exp_dir=str(exp_dir), max_env_step=1280,
                             progress=False)
    with open(exp_dir / 'loggers.json') as f:
        first_records = json.load(f)
    first = tensorboard_scalars(exp_dir)
    serial_pipeline_onpolicy(resume=str(exp_dir), max_env_step=2560, progress=False)
    with open(exp_dir / 'loggers.json') as f:
        assert json.load(f) == first_records  # the same W&B and MLflow runs
    expected = check_every_backend(tmp_path, exp_dir)
    assert sum(expected.values()) > sum(first.values())  # the resumed part was logged too
    # W&B: one offline folder per session, one run id; the second starts where the first stopped
    runs = list(wandb_runs(tmp_path / 'wandb').values())
    assert len(runs) == 2
    last_first = max(row['step'] for row in runs[0]['rows'] if 'learner/total_loss' in row)
    assert min(row['step'] for row in runs[1]['rows'] if 'learner/total_loss' in row) > last_first
    # MLflow: one run in the experiment, holding both sessions' steps
    client, run_id = mlflow_run(tmp_path, first_records['mlflow']['run_id'])
    assert len(client.search_runs([first_records['mlflow']['experiment_id']])) == 1
    steps = [m.step for m in client.get_metric_history(run_id, 'learner/total_loss')]
    assert min(steps) <= last_first < max(steps)
    assert client.get_run(run_id).info.status == 'FINISHED'


def test_a_parallel_run_logs_the_same_scalars_to_every_backend(tmp_path, trackers):
    exp_dir = tmp_path / 'parallel'
    parallel_pipeline('cartpole_impala.py', overrides=SMALL + trackers + ['parallel.actor_num=2'], exp_dir=str(exp_dir),
                      backend='inline', max_env_step=3000, progress=False)
    expected = check_every_backend(tmp_path, exp_dir)
    tags = {tag for tag, _, _ in expected}
    assert {'collector/episode_return', 'parallel/env_steps_per_s', 'learner/total_loss'} <= tags


# ---- the fan-out ---------------------------------------------------------------------------------------------------
class Recording(LoggerBackend):
    def __init__(self, fail_at: int = -1) -> None:
        self.seen, self.fail_at, self.closed = [], fail_at, False

    def log_scalar(self, tag, value, step, wall_time):
        if len(self.seen) == self.fail_at:
            raise OSError(28, 'No space left on device')
        self.seen.append((tag, step, value))

    def close(self):
        self.closed = True


def test_a_backend_that_raises_is_dropped_with_one_warning_and_the_others_go_on(capsys):
    good, bad = Recording(), Recording(fail_at=2)
    logger = RunLogger([('good', good), ('bad', bad)])
    for i in range(5):
        logger.add_scalar('learner/loss', i / 2, i)
    logger.add_text('collector/param', 'x', 5)
    assert good.seen == [('learner/loss', i, i / 2) for i in range(5)]
    assert bad.seen == good.seen[:2] and bad.closed and logger.names == ['good']
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("acframe: warning: logger backend 'bad' failed (OSError")
    logger.close()
    assert good.closed and logger.names == []


def test_jsonl_appends_and_cuts_a_line_a_killed_run_left_half_written(tmp_path):
    from easydict import EasyDict

    cfg = EasyDict(logger=dict(jsonl=dict(flush_every_s=0.0)))
    log_dir = str(tmp_path / 'log')
    first = JsonlLogger(LoggerRun(str(tmp_path), log_dir, cfg, False, None))
    first.log_scalar('a', 1.0, 1, 100.0)
    first.close()
    with open(os.path.join(log_dir, 'scalars.jsonl'), 'a') as f:
        f.write('{"tag": "a", "st')  # killed mid-write
    second = JsonlLogger(LoggerRun(str(tmp_path), log_dir, cfg, True, None))
    second.log_scalar('a', 2.0, 2, 101.0)
    second.close()
    assert [(s.tag, s.step, s.value) for s in read_scalars(log_dir)] == [('a', 1, 1.0), ('a', 2, 2.0)]


def test_a_run_logged_to_jsonl_alone_still_plots_and_imports_no_tracker(tmp_path):
    """Without the tensorboard backend ``-m plot`` (and the curves drawn at the end) read ``log/scalars.jsonl``; a
    run that names neither W&B nor MLflow never imports them (they cost a second of start-up)."""
    import subprocess
    import sys

    exp_dir = tmp_path / 'jsonl_only'
    overrides = SMALL + ["logger.backends=['jsonl']"]
    code = ("import sys; from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy; "
            f"serial_pipeline_onpolicy('cartpole_a2c.py', overrides={overrides!r}, "
            f"exp_dir={str(exp_dir)!r}, max_env_step=1280, progress=False); "
            "print(sorted(m for m in ('wandb', 'mlflow') if m in sys.modules))")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == '[]'
    assert not list((exp_dir / 'log').glob('events.out.tfevents.*'))
    assert len(read_scalars(str(exp_dir / 'log'))) > 10 and (exp_dir / 'curves.svg').is_file()
    os.remove(exp_dir / 'curves.svg')
    plot = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'plot', str(exp_dir), '--out',
                           str(tmp_path / 'plot.png')], capture_output=True, text=True, timeout=120)
    assert plot.returncode == 0, plot.stderr
    assert (tmp_path / 'plot.png').stat().st_size > 1000


# ---- evaluation videos --------------------------------------------------------------------------------------------
def test_eval_videos_are_uploaded_to_wandb_and_mlflow(tmp_path, trackers):
    """``-m eval --video`` of a run logged to W&B and MLflow: each MP4 lands in the same tracker runs."""
    pytest.importorskip('imageio_ffmpeg')
    from mlflow.tracking import MlflowClient

    exp_dir = str(tmp_path / 'run')
    serial_pipeline('cartpole_impala.py', seed=0, max_env_step=300, exp_dir=exp_dir, overrides=trackers + SMALL)
    videos = tmp_path / 'videos'
    report = evaluate_run(exp_dir, episodes=1, video_dir=str(videos))
    recorded = sorted(p for p in os.listdir(videos) if p.endswith('.mp4'))
    assert recorded and report['video_uploads'] == ['wandb', 'mlflow']
    with open(os.path.join(exp_dir, 'loggers.json')) as f:
        records = json.load(f)

    # MLflow: the same run (the training run's id) holds each MP4 under eval_videos/, byte for byte
    client = MlflowClient(tracking_uri=f"file://{tmp_path / 'mlruns'}")
    run = client.get_run(records['mlflow']['run_id'])
    assert [a.path for a in client.list_artifacts(run.info.run_id, 'eval_videos')] == [f'eval_videos/{p}' for p in recorded]
    local = client.download_artifacts(run.info.run_id, f'eval_videos/{recorded[0]}', str(tmp_path / 'dl'))
    assert filecmp.cmp(local, videos / recorded[0], shallow=False)
    assert run.data.metrics  # the training scalars are still there: the upload continued that run

    # W&B: an offline run with the training run's id whose media folder holds the MP4 (wandb.Video copies it)
    root = tmp_path / 'wandb' / 'wandb'
    media = [os.path.join(folder, name) for folder, _, names in os.walk(root) for name in names
             if name.endswith('.mp4') and records['wandb']['run_id'] in folder]
    assert len(media) == len(recorded)
    assert filecmp.cmp(media[0], videos / recorded[0], shallow=False)


def test_backends_without_media_are_not_opened_for_videos(tmp_path):
    from acframe.config import compile_config
    from acframe.loggers import upload_videos

    cfg = compile_config('cartpole_impala.py', ["logger.backends=['tensorboard', 'jsonl']"])
    (tmp_path / 'a.mp4').write_bytes(b'not read')
    assert upload_videos(cfg, str(tmp_path), [str(tmp_path / 'a.mp4')], 0) == []
    assert sorted(os.listdir(tmp_path)) == ['a.mp4']  # no log folder, no lock, no loggers.json


def test_a_registered_backend_that_cannot_log_scalars_is_refused_before_anything_is_written(tmp_path, capsys):
    from acframe import LOGGER_REGISTRY
    from acframe.cli import main

    @LOGGER_REGISTRY.register('scalarless_backend')
    class Scalarless(LoggerBackend):
        def close(self):
            pass
    try:
        code = main(['-c', 'cartpole_a2c.py', '--exp-dir', str(tmp_path / 'run'), '-q', '--max-env-step', '200',
                     "logger.backends=['scalarless_backend']"])
        err = capsys.readouterr().err
        assert code == 2 and err == ("acframe: error: logger.backends: 'scalarless_backend' (Scalarless) does not define "
                                     "log_scalar(tag, value, step, wall_time), which every backend does; add it "
                                     "(docs/logging.md)\n")
        assert not (tmp_path / 'run').exists()
    finally:
        LOGGER_REGISTRY._entries.pop('scalarless_backend', None)


@pytest.mark.parametrize('inside', ['RUN/wb', 'RUN', 'WANDB_DIR=RUN/wb'])
def test_a_wandb_folder_inside_the_run_folder_is_refused_before_anything_is_written(tmp_path, capsys, monkeypatch,
                                                                                    inside):
    """W&B writes symbolic links in its folder, and a run folder holds none: the run could never be resumed. Without
    logger.wandb.dir, W&B's folder is WANDB_DIR (else the current folder)."""
    pytest.importorskip('wandb')
    from acframe.cli import main

    run = tmp_path / 'run'
    folder = inside.replace('RUN', str(run)).replace('WANDB_DIR=', '')
    if inside.startswith('WANDB_DIR='):
        monkeypatch.setenv('WANDB_DIR', folder)
        what, given = f"logger.wandb.dir = None (W&B then writes in WANDB_DIR, else the current folder: {folder!r})", []
    else:
        what, given = f"logger.wandb.dir = {folder!r}", [f'logger.wandb.dir={folder}']
    code = main(['-c', 'cartpole_a2c.py', '--exp-dir', str(run), '-q', '--max-env-step', '200',
                 "logger.backends=['wandb']", 'logger.wandb.mode=offline', *given])
    err = capsys.readouterr().err
    assert code == 2 and err == (f"acframe: error: {what} is inside the run folder {run}, which holds the run's own "
                                 f"files only (no symbolic link: the tracker writes some); name a folder outside it\n")
    assert not run.exists()


def test_a_users_backend_whose_check_raises_is_one_line_and_whose_record_json_cannot_hold_is_left_out(tmp_path,
                                                                                                      capsys):
    from acframe import LOGGER_REGISTRY
    from acframe.cli import main

    class Base(LoggerBackend):
        def log_scalar(self, tag, value, step, wall_time):
            pass

    @LOGGER_REGISTRY.register('check_raises_backend')
    class CheckRaises(Base):
        @classmethod
        def check(cls, cfg):
            raise ValueError('oops in check')

    @LOGGER_REGISTRY.register('odd_record_backend')
    class OddRecord(Base):
        def run_record(self):
            return {1: 'a', 'b': 2}  # JSON holds it, but not with its keys sorted, as loggers.json is written
    try:
        code = main(['-c', 'cartpole_a2c.py', '--exp-dir', str(tmp_path / 'a'), '-q', '--max-env-step', '200',
                     "logger.backends=['check_raises_backend']"])
        err = capsys.readouterr().err
        assert code == 2 and err.count('\n') == 1 and "logger backend 'check_raises_backend' check raised ValueError: " \
            "oops in check" in err and 'test_backends.py' in err
        assert not (tmp_path / 'a').exists()
        code = main(['-c', 'cartpole_a2c.py', '--exp-dir', str(tmp_path / 'b'), '-q', '--max-env-step', '200',
                     "logger.backends=['tensorboard', 'odd_record_backend']"])
        err = capsys.readouterr().err
        assert code == 0, err
        assert "logger backend 'odd_record_backend': run_record() gave no JSON record" in err
        assert (tmp_path / 'b' / 'summary.json').is_file() and not (tmp_path / 'b' / 'loggers.json').exists()
    finally:
        LOGGER_REGISTRY._entries.pop('check_raises_backend', None)
        LOGGER_REGISTRY._entries.pop('odd_record_backend', None)


def test_a_users_backend_alone_finds_the_run_s_log_folder_made(tmp_path):
    from acframe import LOGGER_REGISTRY

    @LOGGER_REGISTRY.register('lines_backend')
    class Lines(LoggerBackend):
        def __init__(self, run):
            super().__init__(run)
            self.file = open(os.path.join(run.log_dir, 'lines.txt'), 'a')  # no makedirs: log/ is there

        def log_scalar(self, tag, value, step, wall_time):
            self.file.write(f"{tag} {step} {value}\n")

        def close(self):
            self.file.close()
    try:
        serial_pipeline_onpolicy('cartpole_a2c.py', seed=0, exp_dir=str(tmp_path / 'run'), max_env_step=400,
                                 progress=False, overrides=["logger.backends=['lines_backend']"])
        lines = (tmp_path / 'run' / 'log' / 'lines.txt').read_text().splitlines()
        assert lines and all(len(line.split()) == 3 for line in lines)  # the run's scalars reached it
    finally:
        LOGGER_REGISTRY._entries.pop('lines_backend', None)


def test_a_missing_requires_names_the_extra_only_when_the_backend_has_one():
    from acframe.config import ConfigError

    class Acframes(LoggerBackend):
        registered_name, requires, extra = 'mine', 'no_such_module_for_acframe', 'mine'

    class Users(LoggerBackend):
        registered_name, requires = 'theirs', 'no_such_module_for_acframe'

    with pytest.raises(ConfigError, match=r"no_such_module_for_acframe is not installed; pip install 'acframe\[mine\]'"):
        Acframes.check({})
    with pytest.raises(ConfigError) as info:
        Users.check({})
    assert str(info.value) == ("logger.backends names 'theirs' but no_such_module_for_acframe is not installed; install "
                               "the package that provides module no_such_module_for_acframe (or drop 'theirs' from "
                               "logger.backends)")


def test_a_relative_mlflow_store_is_pinned_so_a_resume_from_another_folder_continues_the_run(tmp_path):
    """``logger.mlflow.tracking_uri=sqlite:///rel.db``: the run's config kept it relative, so ``--resume`` from another
    folder opened a new rel.db there, could not find the MLflow run and logged the rest of the run nowhere."""
    import subprocess
    import sys

    first, other = tmp_path / 'a', tmp_path / 'b'
    first.mkdir()
    other.mkdir()
    run = first / 'run'
    env = dict(os.environ, MLFLOW_TRACKING_URI='')
    common = dict(capture_output=True, text=True, timeout=300, env=env)
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_a2c.py', '--exp-dir', 'run', '-q',
                           '--max-env-step', '400', "logger.backends=['mlflow']",
                           'logger.mlflow.tracking_uri=sqlite:///rel.db'], cwd=first, **common)
    assert done.returncode == 0, done.stderr
    with open(run / 'config.json') as f:
        assert json.load(f)['config']['logger']['mlflow']['tracking_uri'] == f"sqlite:///{first / 'rel.db'}"
    resumed = subprocess.run([sys.executable, '-m', 'acframe.cli', '--resume', str(run), '-q', '--max-env-step', '800'],
                             cwd=other, **common)
    assert resumed.returncode == 0, resumed.stderr
    assert 'did not open' not in resumed.stderr and not (other / 'rel.db').exists(), resumed.stderr
    from mlflow.tracking import MlflowClient

    with open(run / 'loggers.json') as f:
        run_id = json.load(f)['mlflow']['run_id']
    client = MlflowClient(tracking_uri=f"sqlite:///{first / 'rel.db'}")
    history = client.get_metric_history(run_id, 'evaluator/return_mean')  # (logged at env steps)
    assert history and max(m.step for m in history) > 400  # the resumed sitting's points reached the same run
