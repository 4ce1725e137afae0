"""The experiment folder of a run: where it is, that its path is sane, and that one process owns it.

* ``plan_exp_dir`` picks the folder without creating anything (a failed start writes nothing);
* ``NewRunFolder`` makes it once every other start-up check has passed (and takes it back if the start fails after);
* ``RunLock`` is an advisory lock (``fcntl.flock`` on ``.acframe.lock``, with the holder's pid and host
  written in it): a second process training in the same folder is refused with one line naming the holder.
  The kernel drops the lock when its process dies, so a lock left by a killed run is never in the way.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import socket
import time
from typing import Any, Optional, Sequence

from ..config.run_folder import NAME_MAX as _NAME_MAX, check_exp_name
from ..errors import ConfigError

LOCK_NAME = '.acframe.lock'


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
    """The experiment folder: ``exp_dir`` or ``./<exp_name>_seed<seed>`` (a fresh suffix if that holds a run; an
    ``exp_name`` that ends with ``_seed<seed>`` already, as DI-engine's ``cartpole_ppo_seed0``, does not get it twice).

    Nothing is created; a path that cannot be used is a ``ConfigError`` naming it.
    """
    if resume:
        return exp_dir
    check_exp_name(cfg.exp_name)
    if exp_dir is None:
        suffix = f"_seed{cfg.seed}"  # not twice: DI-engine's files name their seed ('cartpole_ppo_seed0')
        base = cfg.exp_name if cfg.exp_name.endswith(suffix) and cfg.exp_name != suffix else cfg.exp_name + suffix
        exp_dir, n = base, 1
        while holds_run(exp_dir):
            exp_dir = f"{base}_{n}"
            n += 1
        _check_path(exp_dir, 'exp_name')
        return exp_dir
    _check_path(exp_dir, '--exp-dir')
    if holds_run(exp_dir):
        raise ConfigError(f"--exp-dir {exp_dir} already holds a run; continue it with --resume {exp_dir} or choose another folder")
    return exp_dir


def holds_run(folder: str) -> bool:
    """``folder`` holds a run's record or checkpoint (a new run there is refused)."""
    return any(os.path.exists(os.path.join(folder, name)) for name in ('config.json', 'config.py', os.path.join('ckpt', 'ckpt_latest.pth')))


#: what a run's start writes in its folder (``RunBase._start``, the loggers' log/, a randomizer's draws)
RUN_START_NAMES = ('.acframe.lock', 'config.json', 'config.py', 'ckpt', 'log', 'domain_randomization.json',
                   'loggers.json')  # (the trackers' run ids: loggers.base.RECORD_FILE)


class NewRunFolder:
    """A new run's (or study's) folder, made once every other start-up check has passed; ``remove()`` takes back what
    the start wrote when it fails after that (a full disk, workers that do not start): of ``names`` (what a start
    writes), those that were not there before, then the folders it made if they are empty. Nothing else is touched
    — a file another program put in the folder meanwhile stays — and it is called only while the run holds the
    folder's lock, so another acframe run is never touched."""

    def __init__(self, exp_dir: str, subfolder: Optional[str] = 'ckpt', names: Sequence[str] = RUN_START_NAMES,
                 what: str = 'experiment folder', key: str = 'exp_dir (--exp-dir)') -> None:
        from ..utils import missing_folders

        self.exp_dir = os.path.abspath(exp_dir)
        self.made = missing_folders(self.exp_dir)  # exp_dir and the parents it needed, deepest first
        self.names = [name for name in names if not os.path.lexists(os.path.join(self.exp_dir, name))]
        try:
            os.makedirs(os.path.join(self.exp_dir, subfolder) if subfolder else self.exp_dir, exist_ok=True)
        except OSError as exc:
            self.remove()
            raise ConfigError(f"cannot create the {what} {exp_dir}: {exc.strerror}; pass another {key}") from exc

    def remove(self) -> None:
        from ..utils import remove_empty_folders

        for name in self.names:
            path = os.path.join(self.exp_dir, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        remove_empty_folders(self.made)


#: the most entries ``check_folder_is_data`` walks (a run folder holds tens: checkpoints, event files, results)
FOLDER_MAX_ENTRIES = 100_000


def check_folder_is_data(folder: str, what: str = 'run folder') -> None:
    """Every entry under ``folder`` is a plain file or folder: a symbolic link (which would send acframe's writes,
    or reads, outside the folder), a FIFO (a read that never returns), a socket or a device planted there is a
    ``ConfigError`` naming it. Walked without following links; ``folder`` itself is the path the user gave."""
    import stat

    seen = 0
    pending = [folder]
    while pending:
        current = pending.pop()
        try:
            entries = list(os.scandir(current))
        except OSError as exc:
            raise ConfigError(f"{what} {folder}: cannot list {current} ({exc.strerror or exc})") from exc
        for entry in entries:
            seen += 1
            if seen > FOLDER_MAX_ENTRIES:
                raise ConfigError(f"{what} {folder} holds over {FOLDER_MAX_ENTRIES} files; that is not an acframe folder")
            mode = entry.stat(follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                pending.append(entry.path)
            elif not stat.S_ISREG(mode):
                kind = 'a symbolic link' if stat.S_ISLNK(mode) else 'a special file (FIFO, socket or device)'
                raise ConfigError(f"{what} {folder}: {entry.path} is {kind}; acframe reads and writes only plain files "
                                  f"in a {what} — remove it (a folder from elsewhere may have been tampered with)")


def resume_command(exp_dir: str, cfg: Any) -> str:
    """``--resume EXP_DIR``, with the ``--import`` the run's ``import_names`` ask for (a resume without them is
    refused: a folder never decides what code runs), for the hints that say how to continue a run."""
    names = [str(name) for name in (cfg.get('import_names') or [])] if cfg is not None else []
    return f"--resume {exp_dir}" + (f" --import {','.join(names)}" if names else '')


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` of this machine is running (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # (EPERM: another user's)
        return True
    return True


class RunLock:
    """Holds ``exp_dir/.acframe.lock`` for the life of a run; ``release()`` (or process exit) frees it.

    ``reads_only``: the holder writes nothing in the folder (a resume whose budget is spent), which may then be
    read-only or another user's: where the lock file cannot be opened for writing it is locked shared through a
    read-only descriptor (which a trainer's exclusive lock excludes both ways, on NFS too), and where it cannot be
    opened or locked at all the folder is not locked (nothing is written in it)."""

    def __init__(self, exp_dir: str, reads_only: bool = False) -> None:
        import fcntl

        import stat

        self.path = os.path.join(exp_dir, LOCK_NAME)
        flags = os.O_NOFOLLOW | os.O_NONBLOCK  # never through a planted link, and never blocking on a planted FIFO
        self._fd: Optional[int] = None
        mode = fcntl.LOCK_EX
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | flags, 0o644)
        except OSError as exc:
            unwritable = exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM)
            if not (unwritable and reads_only):
                raise self._open_error(exp_dir, exc, unwritable) from exc
            try:
                self._fd, mode = os.open(self.path, os.O_RDONLY | flags), fcntl.LOCK_SH
            except OSError as again:
                if again.errno == errno.ELOOP:
                    raise self._open_error(exp_dir, again, False) from again
                return  # none, or not readable: not locked (a reads-only holder writes nothing)
        if not stat.S_ISREG(os.fstat(self._fd).st_mode):
            os.close(self._fd)
            self._fd = None
            raise ConfigError(f"the lock file {self.path} is not a plain file; remove it")
        try:
            fcntl.flock(self._fd, mode | fcntl.LOCK_NB)
        except OSError as exc:
            held = exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK)
            holder = self._holder() if held else ''
            os.close(self._fd)
            self._fd = None
            if held:
                raise ConfigError(f"{exp_dir} is in use by another acframe process ({holder}); wait for it to finish "
                                  f"or stop it — one folder holds one run") from exc
            if reads_only:
                return  # a file system without locks (an NFS mount with nolock): not locked, nothing is written
            raise ConfigError(f"cannot lock {self.path}: {exc.strerror}") from exc
        if mode == fcntl.LOCK_SH:
            return  # (a read-only descriptor: no holder line)
        try:  # who holds it, for the refusal of a second process; the lock is the flock, not this line
            os.ftruncate(self._fd, 0)
            os.write(self._fd, json.dumps({'pid': os.getpid(), 'host': socket.gethostname(),
                                           'since': time.strftime('%Y-%m-%d %H:%M:%S')}).encode())
        except OSError:  # a full disk: held all the same (a second process reads 'holder unknown')
            pass

    def _open_error(self, exp_dir: str, exc: OSError, unwritable: bool) -> ConfigError:
        if unwritable and not os.access(exp_dir, os.W_OK):
            return ConfigError(f"cannot open the lock file {self.path}: {exc.strerror}; a run writes in its folder: "
                               f"make {exp_dir} writable, or copy it to a folder you can write and resume the copy")
        if unwritable:
            return ConfigError(f"cannot open the lock file {self.path}: {exc.strerror}; it is not yours to write (its "
                               f"owner, or its permissions): let its owner run it, or copy the folder and resume the "
                               f"copy")
        why = 'it is a symbolic link' if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        return ConfigError(f"cannot open the lock file {self.path}: {why}; remove it (acframe writes only plain files "
                           f"in a run folder)")

    def _holder(self) -> str:
        """Who holds the lock, from the holder line its last exclusive holder wrote. A process that locks it shared
        (a spent resume reading a folder it cannot write) writes no line: where the line names a process of this
        machine that has ended, the line is stale and the holder is not named."""
        try:
            with open(self.path, encoding='utf-8') as f:
                info = json.load(f)
            pid, host, since = int(info['pid']), info['host'], info['since']
        except (OSError, ValueError, KeyError, TypeError):
            return 'holder unknown'
        if pid <= 0:
            return 'holder unknown'
        if host == socket.gethostname() and not _process_alive(pid):
            return (f"holder unknown: the lock file's line, pid {pid} since {since}, is of a process that has "
                    f"ended; a process that only reads the folder, a resume with its budget spent, writes none")
        return f"pid {pid} on {host} since {since}"

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

