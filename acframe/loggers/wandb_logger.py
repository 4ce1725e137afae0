"""The W&B backend (extra ``wandb``): every scalar to one W&B run, the compiled config as its hyperparameters.

``--resume`` continues the same W&B run: its id is kept in ``RUN/loggers.json``. The API key is W&B's business
(``wandb login``, ``WANDB_API_KEY``): nothing secret is read from the config or written to the run folder.
``logger.wandb.mode='offline'`` (or ``WANDB_MODE=offline``) writes the run to ``logger.wandb.dir`` for
``wandb sync`` later, without the network.
"""
from __future__ import annotations

import os
import uuid
from typing import Any, Dict, List, Optional, Set, Tuple

from ..errors import ConfigError
from .base import LoggerBackend, LoggerRun, can_write

#: the W&B metric every scalar is plotted against: its acframe step (env steps or train iterations, by tag)
STEP_KEY = 'step'


class WandbLogger(LoggerBackend):
    """One W&B run per acframe run (``wandb.init(id=..., resume='allow')``); each scalar is one ``log`` row
    ``{tag: value, 'step': step}`` and ``tag`` is defined to plot against ``step``."""

    extra = 'wandb'
    requires = 'wandb'
    folder_keys = ('logger.wandb.dir',)  # W&B links its latest run there: never inside the run folder

    @classmethod
    def folders(cls, cfg: Any) -> List[Tuple[str, str]]:
        """``logger.wandb.dir``, or where W&B writes without it: ``WANDB_DIR``, else the current folder."""
        if cfg.logger.wandb.dir is not None:
            return super().folders(cfg)
        where = os.environ.get('WANDB_DIR') or os.getcwd()
        return [(f"logger.wandb.dir = None (W&B then writes in WANDB_DIR, else the current folder: {where!r})", where)]

    @classmethod
    def check(cls, cfg: Any) -> None:
        super().check(cfg)
        folder = cfg.logger.wandb.dir
        if folder is not None and not can_write(folder):
            raise ConfigError(f"logger.wandb.dir = {folder!r} cannot be written; name a folder you can write "
                              f"(outside the run folder) or None (WANDB_DIR, else the current folder)")

    def __init__(self, run: LoggerRun) -> None:
        super().__init__(run)
        import wandb
        from ..config.compile import to_plain

        options = run.cfg.logger.wandb
        self.run_id = (run.record or {}).get('run_id') or uuid.uuid4().hex[:12]
        if options.dir is not None:
            os.makedirs(options.dir, exist_ok=True)
        self._run = wandb.init(
            project=options.project, entity=options.entity, group=options.group, tags=list(options.tags) or None,
            name=options.name or os.path.basename(os.path.abspath(run.exp_dir)), dir=options.dir, mode=options.mode,
            id=self.run_id, resume='allow', reinit='create_new', config=to_plain(run.cfg), allow_val_change=True,
            settings=wandb.Settings(console='off', silent=True, save_code=False, disable_git=True,
                                    x_disable_stats=True))
        self._run.define_metric(STEP_KEY)
        self._defined: Set[str] = set()

    def log_scalar(self, tag: str, value: float, step: int, wall_time: float) -> None:
        if tag not in self._defined:
            self._run.define_metric(tag, step_metric=STEP_KEY)
            self._defined.add(tag)
        self._run.log({tag: value, STEP_KEY: step})

    def log_video(self, tag: str, path: str, step: int) -> None:
        """The MP4 as W&B media (``wandb.Video``: copied into the run's files, shown in its media panel) at
        ``step``."""
        import wandb

        if tag not in self._defined:
            self._run.define_metric(tag, step_metric=STEP_KEY)
            self._defined.add(tag)
        self._run.log({tag: wandb.Video(path, format='mp4'), STEP_KEY: step})

    def run_record(self) -> Optional[Dict[str, Any]]:
        return {'run_id': self.run_id, 'project': self.run.cfg.logger.wandb.project,
                'entity': self.run.cfg.logger.wandb.entity}

    def close(self) -> None:
        self._run.finish()

