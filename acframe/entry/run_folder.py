"""The experiment folder of a run: where it is, that its path is sane, and that one process owns it.

* ``plan_exp_dir`` picks the folder without creating anything (a failed start writes nothing);
* ``create_exp_dir`` makes it once every other start-up check has passed;
* ``RunLock`` is an advisory lock (``fcntl.flock`` on ``.acframe.lock``, with the holder's pid and host
  written in it): a second process training in the same folder is refused with one line naming the holder.
  The kernel drops the lock when its process dies, so a lock left by a killed run is never in the way.
"""
from __future__ import annotations

import errno
import json
import os
import socket
import time
from typing import Any, Optional

from ..errors import ConfigError

LOCK_NAME = '.acframe.lock'
_NAME_MAX = 255


def check_exp_name(name: Any) -> None:
    """``exp_name`` is a folder name, never a path (``--exp-dir`` is where a user picks any path)."""
    if not isinstance(name, str) or not name or name in ('.', '..') or '/' in name or '\\' in name or '\0' in name:
        raise ConfigError(f"config key 'exp_name' = {name!r} must be a plain folder name (no '/', not '.' or '..'); "
                          f"to put the run elsewhere pass --exp-dir PATH")
    if len(name.encode()) > _NAME_MAX - 20:
        raise ConfigError(f"config key 'exp_name' is {len(name)} characters long; keep it under {_NAME_MAX - 20}")


def _check_path(path: str, flag: str) -> None:
    if '\0' in path:
        raise ConfigError(f"{flag} {path!r} contains a NUL character; pass a usable folder path")
    if any(len(part.encode()) > _NAME_MAX for part in path.split(os.sep)):
        raise ConfigError(f"{flag} {path[:60]}...: a folder name is longer than {_NAME_MAX} bytes; pass a shorter path")
    if len(os.path.abspath(path).encode()) > 4000:
        raise ConfigError(f"{flag} {path[:60]}...: the path is too long; pass a shorter path")
    if os.path.exists(path) and not os.path.isdir(path):
        raise ConfigError(f"{flag} {path} is a file, not a folder; pass a folder path")
    probe = path
    while not os.path.exists(probe):  # the nearest existing ancestor must let us create the folder
        parent = os.path.dirname(os.path.abspath(probe))
        if parent == probe:
            break
        probe = parent
    if not os.path.isdir(probe):
        raise ConfigError(f"{flag} {path}: {probe} is a file, so the folder cannot be created; pass another path")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {path}: {probe} is not writable; pass a folder you can write to")


def plan_exp_dir(cfg: Any, exp_dir: Optional[str], resume: bool) -> str:
    """The experiment folder: ``exp_dir`` or ``./<exp_name>_seed<seed>`` (a fresh suffix if that holds a run).

    Nothing is created; a path that cannot be used is a ``ConfigError`` naming it.
    """
    if resume:
        return exp_dir
    check_exp_name(cfg.exp_name)
    if exp_dir is None:
        base = f"{cfg.exp_name}_seed{cfg.seed}"
        exp_dir, n = base, 1
        while _holds_run(exp_dir):
            exp_dir = f"{base}_{n}"
            n += 1
        _check_path(exp_dir, 'exp_name')
        return exp_dir
    _check_path(exp_dir, '--exp-dir')
    if _holds_run(exp_dir):
        raise ConfigError(f"--exp-dir {exp_dir} already holds a run; continue it with --resume {exp_dir} or choose another folder")
    return exp_dir


def _holds_run(folder: str) -> bool:
    return any(os.path.exists(os.path.join(folder, name)) for name in ('config.json', 'config.py', os.path.join('ckpt', 'ckpt_latest.pth')))


def create_exp_dir(exp_dir: str) -> None:
    try:
        os.makedirs(os.path.join(exp_dir, 'ckpt'), exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create the experiment folder {exp_dir}: {exc.strerror}; pass another --exp-dir") from exc


class RunLock:
    """Holds ``exp_dir/.acframe.lock`` for the life of a run; ``release()`` (or process exit) frees it."""

    def __init__(self, exp_dir: str) -> None:
        import fcntl

        self.path = os.path.join(exp_dir, LOCK_NAME)
        self._fd: Optional[int] = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = self._holder()
            os.close(self._fd)
            self._fd = None
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise ConfigError(f"cannot lock {self.path}: {exc.strerror}") from exc
            raise ConfigError(f"{exp_dir} is in use by another acframe process ({holder}); wait for it to finish "
                              f"or stop it — one folder holds one run") from exc
        os.ftruncate(self._fd, 0)
        os.write(self._fd, json.dumps({'pid': os.getpid(), 'host': socket.gethostname(),
                                       'since': time.strftime('%Y-%m-%d %H:%M:%S')}).encode())

    def _holder(self) -> str:
        try:
            with open(self.path, encoding='utf-8') as f:
                info = json.load(f)
            return f"pid {info['pid']} on {info['host']} since {info['since']}"
        except (OSError, ValueError, KeyError, TypeError):
            return 'holder unknown'

    def release(self) -> None:
        if self._fd is not None:
            import fcntl

            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:
            pass

