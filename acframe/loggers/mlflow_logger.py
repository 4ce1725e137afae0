"""The MLflow backend (extra ``mlflow``): every scalar as an MLflow metric of one run, the compiled config as its
parameters.

``--resume`` continues the same MLflow run: its id and experiment id are kept in ``RUN/loggers.json``. Credentials
are MLflow's business (``MLFLOW_TRACKING_USERNAME``/``PASSWORD``/``TOKEN``): a tracking URI that holds a password
is refused (the config is written to the run folder). Metrics are sent in batches (``log_batch``) every few seconds
and at the end, so a remote server is not called once per scalar.
"""
from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Optional
from urllib.parse import unquote, urlparse

from ..errors import ConfigError
from .base import LoggerBackend, LoggerRun, can_write, flat_config

#: seconds between batches sent to the tracking server (and the batch size MLflow accepts at most)
SEND_EVERY_S = 5.0
MAX_BATCH = 1000
#: MLflow's limit on a parameter value's length (longer values are cut, marked with '...')
MAX_PARAM_LEN = 6000
#: the artifact folder evaluation videos go to
VIDEO_ARTIFACTS = 'eval_videos'


class MLflowLogger(LoggerBackend):
    """One MLflow run per acframe run, through ``MlflowClient`` (no global active run): metric ``tag`` at ``step``
    with the scalar's wall time as its timestamp."""

    extra = 'mlflow'
    requires = 'mlflow'

    @classmethod
    def check(cls, cfg: Any) -> None:
        super().check(cfg)
        check_tracking_uri(cfg.logger.mlflow.tracking_uri)

    @classmethod
    def pin_config(cls, cfg: Any) -> None:
        """A local store named relative to the working folder (``sqlite:///mlflow.db``, a folder path; None: MLflow's
        default, the former, unless ``MLFLOW_TRACKING_URI`` is set) becomes absolute: a resume from another folder
        opened another store and lost the run (``Run with id=... not found``)."""
        uri = cfg.logger.mlflow.tracking_uri
        if uri is None and not os.environ.get('MLFLOW_TRACKING_URI'):
            uri = 'sqlite:///mlflow.db'
        if not isinstance(uri, str):
            return
        if uri.startswith('sqlite:///') and not uri.startswith('sqlite:////'):
            uri = 'sqlite:///' + os.path.abspath(uri[len('sqlite:///'):])  # (sqlite:////abs/file.db)
        elif '://' not in uri:
            uri = os.path.abspath(uri)
        cfg.logger.mlflow.tracking_uri = uri

    def __init__(self, run: LoggerRun) -> None:
        super().__init__(run)
        from mlflow.tracking import MlflowClient

        options = run.cfg.logger.mlflow
        self.client = MlflowClient(tracking_uri=local_uri(options.tracking_uri))
        record = run.record or {}
        if record.get('run_id'):
            self.run_id, self.experiment_id = record['run_id'], record.get('experiment_id')
            self.client.update_run(self.run_id, status='RUNNING')
        else:
            name = options.experiment_name or run.cfg.exp_name
            experiment = self.client.get_experiment_by_name(name)
            self.experiment_id = experiment.experiment_id if experiment is not None else self.client.create_experiment(name)
            created = self.client.create_run(self.experiment_id, run_name=options.run_name or os.path.basename(
                os.path.abspath(run.exp_dir)), tags={'acframe.exp_dir': os.path.abspath(run.exp_dir)})
            self.run_id = created.info.run_id
            self._log_params()
        self._pending: List[Any] = []
        self._sent = time.monotonic()

    def _log_params(self) -> None:
        from mlflow.entities import Param

        params = [Param(key, _param_text(value)) for key, value in sorted(flat_config(self.run.cfg).items())]
        for start in range(0, len(params), 100):  # MLflow takes at most 100 parameters per batch
            self.client.log_batch(self.run_id, params=params[start:start + 100])

    def log_scalar(self, tag: str, value: float, step: int, wall_time: float) -> None:
        from mlflow.entities import Metric

        self._pending.append(Metric(tag, value, int(wall_time * 1000), step))
        if len(self._pending) >= MAX_BATCH or time.monotonic() - self._sent >= SEND_EVERY_S:
            self._send()

    def _send(self) -> None:
        pending, self._pending = self._pending, []
        self._sent = time.monotonic()
        for start in range(0, len(pending), MAX_BATCH):
            self.client.log_batch(self.run_id, metrics=pending[start:start + MAX_BATCH])

    def log_video(self, tag: str, path: str, step: int) -> None:
        """The MP4 as an artifact of the run, under ``eval_videos/`` with its own file name (which names the
        checkpoint, seed, env and episode)."""
        self.client.log_artifact(self.run_id, path, artifact_path=VIDEO_ARTIFACTS)

    def run_record(self) -> Optional[Dict[str, Any]]:
        return {'run_id': self.run_id, 'experiment_id': self.experiment_id}

    def close(self) -> None:
        try:
            self._send()
        finally:
            self.client.set_terminated(self.run_id)


def _param_text(value: Any) -> str:
    text = str(value)
    return text if len(text) <= MAX_PARAM_LEN else text[:MAX_PARAM_LEN - 3] + '...'


def local_uri(uri: Optional[str]) -> Optional[str]:
    """A plain folder path as a ``file://`` URI (MLflow reads a bare path as one too, relative ones included)."""
    if uri is None or '://' in uri:
        return uri
    return 'file://' + os.path.abspath(uri)


def check_tracking_uri(uri: Optional[str]) -> None:
    """Refuse a tracking URI with a password in it, or a local store (folder or SQLite file) that cannot be written;
    a remote server is not contacted here."""
    if uri is None:
        uri = os.environ.get('MLFLOW_TRACKING_URI') or 'sqlite:///mlflow.db'
        where = 'MLFLOW_TRACKING_URI' if os.environ.get('MLFLOW_TRACKING_URI') else \
            "logger.mlflow.tracking_uri (None: MLflow's default, sqlite:///mlflow.db here)"
    else:
        where = 'logger.mlflow.tracking_uri'
        if not isinstance(uri, str) or not uri:
            raise ConfigError(f"{where} = {uri!r} must be a URI or folder path, e.g. 'file:///tmp/mlruns'")
    parsed = urlparse(uri if '://' in uri else 'file://' + os.path.abspath(uri))
    if parsed.password:
        raise ConfigError(f"{where} holds a password; the config is written to the run folder, so put credentials in "
                          f"MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) instead")
    if parsed.scheme == 'file':
        path = unquote(parsed.path)
        if not _file_store_allowed():
            raise ConfigError(f"{where} = {uri!r} is an MLflow file store, which this MLflow refuses unless "
                              f"MLFLOW_ALLOW_FILE_STORE=true is set; set it, or use a SQLite store "
                              f"(e.g. sqlite:////tmp/mlflow.db)")
        if not can_write(path, folder=True):
            raise ConfigError(f"{where} = {uri!r}: the folder {path} cannot be written; name a folder you can write, "
                              f"e.g. file:///tmp/mlruns")
    elif parsed.scheme == 'sqlite':
        path = unquote(parsed.path)
        path = path[1:] if path.startswith('//') else path  # sqlite:////abs/file.db
        if path and not can_write(path, folder=False):
            raise ConfigError(f"{where} = {uri!r}: the database file {path} cannot be written; name a file in a folder "
                              f"you can write, e.g. sqlite:////tmp/mlflow.db")


def _file_store_allowed() -> bool:
    """MLflow 3.x refuses file stores unless ``MLFLOW_ALLOW_FILE_STORE`` is true (older versions have no such switch)."""
    try:
        from mlflow.environment_variables import MLFLOW_ALLOW_FILE_STORE
    except ImportError:
        return True
    return bool(MLFLOW_ALLOW_FILE_STORE.get())
