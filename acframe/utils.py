"""Small helpers used across acframe: atomic file writes, seeding, thread settings."""
from __future__ import annotations

import json
import os
import random
import tempfile
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Optional, Union

PathLike = Union[str, os.PathLike]


def _atomic(path: PathLike, write: Callable[[str], None], make_folder: bool = True) -> None:
    """Write through ``write(tmp_path)`` then rename over ``path``, so readers never see half a file. With
    ``make_folder=False`` a missing folder is ``FileNotFoundError`` instead of being created."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    made = missing_folders(folder) if make_folder else []
    try:
        if made:
            os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', suffix='.tmp', dir=folder)
    except OSError as exc:
        remove_empty_folders(made)
        _raise_naming(exc, path)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # the permissions of a file opened normally, not mkstemp's owner-only 0600
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        remove_empty_folders(made)  # a failed write leaves no folder it made behind (eval/ of a run on a full disk)
        if isinstance(exc, OSError):
            _raise_naming(exc, path)
        raise


def missing_folders(folder: str) -> list:
    """``folder`` and those of its parents that do not exist yet, deepest first."""
    missing = []
    while folder and not os.path.isdir(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return missing


def remove_empty_folders(folders: list) -> None:
    """``os.rmdir`` each folder in turn (deepest first) until one is not empty or gone."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            return


def _raise_naming(exc: OSError, path: str) -> None:
    """Raise ``exc`` naming the file that was being written (not its temporary name; ``os.write`` names none); an
    acframe error (``CheckpointError``) or another subclass, or ``exc`` naming it already, as it is."""
    if ((type(exc) is not OSError and not isinstance(exc, (FileNotFoundError, PermissionError)))
            or exc.filename == path or exc.errno is None):
        raise exc
    raise type(exc)(exc.errno, exc.strerror, path) from exc


def is_out_of_room(exc: BaseException) -> bool:
    """A write refused for want of room or rights: a full disk or quota, the file-size limit (``ulimit -f``), a
    read-only filesystem."""
    import errno

    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS)


def check_output_file(path: str, said: str, example: str) -> None:
    """A ``ConfigError`` naming ``said`` (how the message names ``path``: ``'--out x.pt'``) unless ``path`` names a
    file that can be written (made, or replaced): not a folder, not under a file, in a folder this process may
    write (a read-only or another user's folder). Asked before the work whose result it holds, so a command never
    does its work to lose it at the end; ``example``: a file name to suggest inside a folder given instead."""
    from .errors import ConfigError
    from .loggers.base import can_write

    if path.endswith(('/', os.sep)) or os.path.isdir(path):
        raise ConfigError(f"{said}: that is a folder; name the file to write in it, e.g. {os.path.join(path, example)}")
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(folder) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)  # the nearest part of the path that exists must be a folder
    if not os.path.isdir(folder):
        raise ConfigError(f"{said}: {folder} is a file, not a folder; pick another path")
    if not can_write(path, folder=False):
        raise ConfigError(f"{said}: cannot be written there (a read-only folder or file system, or another user's); "
                          f"name a file in a folder you can write")


def atomic_write_with(path: PathLike, write: Callable[[str], None]) -> None:
    """Write ``path`` atomically through a writer that takes a file name (``torch.jit.save``, ``savefig`` ...)."""
    _atomic(path, write)


def atomic_write_text(path: PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode('utf-8'))


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    def write(tmp: str) -> None:
        with open(tmp, 'wb') as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    _atomic(path, write)


def atomic_write_json(path: PathLike, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True) + '\n')


def atomic_torch_save(obj: Any, path: PathLike, make_folder: bool = True) -> None:
    """``torch.save`` of ``to_plain_data(obj)`` through a temporary file (readable with ``weights_only=True``);
    ``make_folder=False``: the folder must exist (``FileNotFoundError`` otherwise).

    A write that fails for want of room — a full disk, or a file-size limit (``ulimit -f``) — is an ``OSError``
    (``ENOSPC``/``EFBIG``) like any other file write: torch's zip writer reports it as a ``RuntimeError``
    (``[enforce fail at inline_container.cc] unexpected pos ...``, ``basic_ios::clear: iostream error``)."""
    import torch

    data = to_plain_data(obj)

    def save(tmp: str) -> None:
        try:
            torch.save(data, tmp)
        except RuntimeError as exc:
            raise _write_failure(tmp, exc) from exc
    _atomic(path, save, make_folder)


def _write_failure(path: str, exc: BaseException) -> OSError:
    """The ``OSError`` behind a failed write of ``path``: no space left on its filesystem, or the file-size limit."""
    import errno
    import resource

    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    if limit != resource.RLIM_INFINITY and size >= limit - 4096:
        return OSError(errno.EFBIG, f"File too large (the file-size limit, ulimit -f, is {limit} bytes)")
    try:
        stats = os.statvfs(os.path.dirname(os.path.abspath(path)))
        full = stats.f_bavail * stats.f_frsize < 1 << 20
    except OSError:
        full = False
    if full:
        return OSError(errno.ENOSPC, 'No space left on device')
    return OSError(errno.EIO, f"the write failed ({str(exc).strip().splitlines()[0][:160]})")


_NDARRAY = '__ndarray__'


class NotPlainData(TypeError):
    """What ``to_plain_data`` met that a checkpoint cannot hold: ``where`` (the key path, e.g. ``buffer.items[0]``)
    and ``kind`` (the object's type, with its module)."""

    def __init__(self, where: str, kind: str, why: str = '') -> None:
        self.where, self.kind, self.what = where, kind, why or f'a {kind}'
        super().__init__(f"{where or 'the state'}: {self.what} is not plain data (checkpoints hold tensors, numpy "
                         f"arrays, numbers, strings, None and dicts/lists/tuples of them)")


def to_plain_data(obj: Any, where: str = '') -> Any:
    """``obj`` made of what ``torch.load(weights_only=True)`` reads: tensors, numbers, str, bytes, None and
    dicts/lists/tuples of those. numpy arrays become ``{'__ndarray__': bytes, 'dtype', 'shape'}`` and numpy
    scalars Python numbers; anything else (an object that would need unpickling) is a ``NotPlainData`` naming where
    it is (``where``: the path of ``obj`` itself)."""
    import numpy as np
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()  # a checkpoint of a run on a GPU loads on any machine (a no-op for CPU tensors)
    if obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        return obj
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise NotPlainData(where, 'numpy.ndarray', f"a numpy array of dtype {obj.dtype}")
        return {_NDARRAY: np.ascontiguousarray(obj).tobytes(), 'dtype': obj.dtype.str, 'shape': list(obj.shape)}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {key: to_plain_data(value, f"{where}.{key}" if where else str(key)) for key, value in obj.items()}
    if isinstance(obj, tuple):
        return tuple(to_plain_data(v, f"{where}[{i}]") for i, v in enumerate(obj))
    if isinstance(obj, list):
        return [to_plain_data(v, f"{where}[{i}]") for i, v in enumerate(obj)]
    kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
    raise NotPlainData(where, kind)


def from_plain_data(obj: Any) -> Any:
    """Undo ``to_plain_data``: numpy arrays back from their bytes."""
    import numpy as np

    if isinstance(obj, dict):
        if _NDARRAY in obj:
            return _ndarray_of(obj)
        return {key: from_plain_data(value) for key, value in obj.items()}
    if isinstance(obj, tuple):
        return tuple(from_plain_data(v) for v in obj)
    if isinstance(obj, list):
        return [from_plain_data(v) for v in obj]
    return obj


def _ndarray_of(record: dict) -> Any:
    """The numpy array of a ``to_plain_data`` record, checked before anything is allocated: a numeric dtype and a
    shape whose size is exactly the bytes stored (a crafted record is a ``ValueError`` saying what is wrong)."""
    import numpy as np

    data, dtype, shape = record.get(_NDARRAY), record.get('dtype'), record.get('shape')
    if not isinstance(data, bytes) or not isinstance(dtype, str) or not isinstance(shape, (list, tuple)) or \
            not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
        raise ValueError("an array record is malformed (bytes, a dtype string and a shape of sizes are expected)")
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"an array has an unknown dtype {dtype[:40]!r}") from exc
    if dtype.kind not in 'biufc' or dtype.hasobject or dtype.fields is not None:
        raise ValueError(f"an array has dtype {dtype}: only numeric and bool arrays are data")
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(data):
        raise ValueError(f"an array of shape {tuple(shape)[:8]} and dtype {dtype} needs {count * dtype.itemsize} bytes "
                         f"but {len(data)} are stored")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def available_memory() -> Optional[int]:
    """Bytes of memory available now (psutil when installed, else MemAvailable of /proc/meminfo), and no more than
    the room left under this process's address-space limit (``ulimit -v``, RLIMIT_AS); None if unknown."""
    free = _system_available_memory()
    room = _address_space_room()
    if room is None:
        return free
    return room if free is None else min(free, room)


def _system_available_memory() -> Optional[int]:
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        with open('/proc/meminfo') as f:
            for line in f:
                if line.startswith('MemAvailable:'):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _address_space_room() -> Optional[int]:
    """Bytes this process may still map under RLIMIT_AS (None: no limit, or not known)."""
    import resource

    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith('VmSize:'):
                    return max(0, limit - int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    return None


def defining_class(cls: type, name: str) -> Optional[type]:
    """The class of ``cls``'s MRO that defines the attribute ``name`` itself (None: no class does)."""
    return next((klass for klass in cls.__mro__ if name in vars(klass)), None)


@contextmanager
def bounded_lock(lock: Any, timeout_s: float, held_too_long: Callable[[], BaseException]) -> Iterator[None]:
    """Hold ``lock`` (a ``multiprocessing`` lock shared by processes) for the block; ``held_too_long()`` is raised when
    it is not free within ``timeout_s`` (a process killed while holding it never releases it: waiting for ever would
    stop the others too). Acquired inside the ``try``, so an interrupt right after it is released too."""
    acquired = False
    try:
        acquired = lock.acquire(timeout=timeout_s)
        if not acquired:
            raise held_too_long()
        yield
    finally:
        if acquired:
            lock.release()


def cpu_cores() -> int:
    """CPU cores this process may use (its affinity mask where the platform has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else (os.cpu_count() or 1)


def set_global_seed(seed: int) -> None:
    """Seed Python, numpy and torch (CPU) for a reproducible run."""
    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed % (2 ** 32))
    torch.manual_seed(seed)


def set_torch_threads(threads: int) -> None:
    """``threads`` intra-op threads; 0 picks 1, the fastest for the small MLPs of classic-control tasks."""
    import torch

    n = threads if threads > 0 else 1
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)


def skip_dynamo_import() -> None:
    """Let ``torch.optim`` optimizers run without importing ``torch._dynamo`` (seconds of start-up).

    ``Optimizer.add_param_group`` / ``zero_grad`` / ``state_dict`` / ``load_state_dict`` are wrapped by
    ``torch._disable_dynamo``, which imports the whole compiler stack on their first call only to mark them
    "not to be compiled" — more than 2 s on these machines, about half of a CartPole run. acframe never
    compiles an optimizer, so when ``torch._dynamo`` is not loaded yet we give each wrapper its cached
    "disabled" function up front: the plain method itself. Under ``torch.compile`` (dynamo already
    imported) nothing is changed.
    """
    import sys

    import torch

    if 'torch._dynamo' in sys.modules:
        return
    for name in ('add_param_group', 'zero_grad', 'state_dict', 'load_state_dict'):
        method = torch.optim.Optimizer.__dict__.get(name)
        plain = getattr(method, '__wrapped__', None)
        if plain is not None and getattr(plain, '__dynamo_disable', None) is None:
            setattr(plain, '__dynamo_disable', plain)


def capture_rng_states() -> dict:
    """The global RNG states a run draws from (torch CPU, numpy, Python; CUDA's where it was used), for checkpoints."""
    import numpy as np
    import torch

    states = {'torch': torch.get_rng_state(), 'numpy': np.random.get_state(), 'python': random.getstate()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():  # policy.cuda: collect/eval sample on the GPU
        states['torch_cuda'] = torch.cuda.get_rng_state_all()
    return states


def check_rng_states(states: Any) -> None:
    """A ``ValueError`` saying which of ``capture_rng_states``' entries is malformed (a checkpoint is data someone
    may have crafted); each is tried on a scratch generator, so nothing global is touched."""
    import numpy as np
    import torch

    if not isinstance(states, dict) or not {'torch', 'numpy', 'python'} <= set(states):
        raise ValueError("its RNG states are missing (a dict with torch, numpy and python entries is expected)")
    expected = torch.get_rng_state()
    state = states['torch']
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8 or state.shape != expected.shape:
        raise ValueError(f"its torch RNG state is not a uint8 tensor of shape {tuple(expected.shape)}")
    for name, scratch in (('numpy', np.random.RandomState().set_state), ('python', random.Random().setstate)):
        try:
            scratch(states[name])
        except (TypeError, ValueError, IndexError, OverflowError) as exc:
            raise ValueError(f"its {name} RNG state is malformed ({type(exc).__name__}: {str(exc)[:120]})") from exc
    cuda = states.get('torch_cuda')
    if cuda is not None and not (isinstance(cuda, (list, tuple)) and all(
            isinstance(t, torch.Tensor) and t.dtype == torch.uint8 and t.dim() == 1 for t in cuda)):
        raise ValueError("its CUDA RNG states are not a list of uint8 tensors")


def restore_rng_states(states: dict) -> None:
    """Set the global RNG states ``capture_rng_states`` returned; a ``ValueError`` before anything is set when one
    is malformed."""
    import numpy as np
    import torch

    check_rng_states(states)
    torch.set_rng_state(states['torch'])
    np.random.set_state(states['numpy'])
    random.setstate(states['python'])
    if states.get('torch_cuda') is not None and torch.cuda.is_available():
        for device, state in enumerate(states['torch_cuda'][:torch.cuda.device_count()]):  # fewer GPUs here: theirs
            torch.cuda.set_rng_state(state, device)


def buffer_checkpoint(buffer: Any, save_contents: bool) -> dict:
    """A replay buffer's part of a checkpoint: its sampling RNG always, its contents when asked."""
    if buffer is None:
        return {'buffer': None, 'buffer_rng': None}
    return {'buffer': buffer.state_dict() if save_contents else None, 'buffer_rng': buffer.rng_state()}


def restore_buffer(buffer: Any, state: dict, contents: bool = True) -> None:
    """Undo ``buffer_checkpoint``: the contents when saved (and ``contents``: the config still saves them), else
    just the sampling RNG (a resume that turned ``save_in_checkpoint`` off starts from an empty buffer)."""
    if buffer is None:
        return
    if state.get('buffer') is not None and contents:
        buffer.load_state_dict(state['buffer'])
    elif state.get('buffer_rng') is not None:
        buffer.set_rng_state(state['buffer_rng'])


def nonfinite_tensor_names(state: Any, prefix: str = '') -> list:
    """Dotted names of the floating-point tensors in a (nested) state dict that hold NaN or inf."""
    import torch

    bad: list = []
    if isinstance(state, dict):
        for key, value in state.items():
            bad += nonfinite_tensor_names(value, f"{prefix}{key}.")
    elif isinstance(state, (list, tuple)):
        for i, value in enumerate(state):
            bad += nonfinite_tensor_names(value, f"{prefix}{i}.")
    elif isinstance(state, torch.Tensor) and state.is_floating_point() and not bool(torch.isfinite(state).all()):
        bad.append(prefix.rstrip('.'))
    return bad
