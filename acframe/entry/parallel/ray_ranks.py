"""Data-parallel learner ranks on the Ray backend: ``--backend ray`` with ``parallel.learner_num`` = N > 1, in the
parallel pipeline (``-m parallel``) or a serial one (``data_parallel.run_data_parallel``).

``run_ranks`` (``entry/data_parallel.py``) starts ranks 1..N-1 through ``RayRanks`` instead of ``LocalRanks``: each
is a Ray actor (``RayLearnerRank``) reserving ``parallel.learner_num_cpus`` CPUs, and one GPU with ``policy.cuda``
(its ``cuda:0``: the GPU Ray gave it), placed by Ray on any node of the cluster. Rank 0 is the driver process, as
with the local backend. Each rank runs its ``ParallelRun`` with a ``RayBackend`` over its own share of the actors
(Ray actors it owns: they die with it); the process group's rendezvous is the driver's node IP, so the ranks may sit
on other nodes. (A serial pipeline's rank runs its ``SerialRun``, stepping its share of the envs in its actor.)
A rank actor that dies (its process killed, its node lost) is seen by Ray, and rank 0's next
collective names it in one line (``DataParallelError``).
"""
from __future__ import annotations

import contextlib
import os
import queue
import signal
import time
from typing import Any, Callable, Iterator, List, Optional, Tuple

import torch

from ...errors import ConfigError, EnvError
from ..data_parallel import run_rank


def check_ray_ranks(ray: Any, cfg: Any, actors: bool = True) -> None:
    """Refuse, in one line naming the keys, N ranks the Ray cluster cannot hold: ranks 1..N-1 reserve
    ``parallel.learner_num_cpus`` each (and a GPU with ``policy.cuda``), beside the actors and the evaluator
    (``actors``: the parallel pipeline; False: a serial pipeline's ranks, which step their envs themselves); rank 0
    (this process) needs a GPU here with ``policy.cuda``."""
    num = int(cfg.parallel.learner_num)
    par = cfg.parallel
    resources = ray.cluster_resources()
    need = (num - 1) * float(par.learner_num_cpus)
    workers = ''
    if actors:
        need += int(par.actor_num) * float(par.actor_num_cpus) + float(par.evaluator_num_cpus)
        workers = (f" + {int(par.actor_num)} actors x parallel.actor_num_cpus={float(par.actor_num_cpus):g} + "
                   f"parallel.evaluator_num_cpus={float(par.evaluator_num_cpus):g}")
    have = float(resources.get('CPU', 0.0))
    if need > have:
        raise ConfigError(f"the Ray cluster has {have:g} CPUs but {num - 1} learner rank(s) x parallel.learner_num_cpus="
                          f"{float(par.learner_num_cpus):g}{workers} need {need:g}; lower parallel.learner_num"
                          f"{', parallel.actor_num' if actors else ''} or the CPUs per worker")
    if cfg.policy.get('cuda'):
        gpus = float(resources.get('GPU', 0.0))
        if num - 1 > gpus:
            raise ConfigError(f"parallel.learner_num={num} with policy.cuda on Ray: ranks 1..{num - 1} are Ray actors "
                              f"with a GPU each and the cluster has {gpus:g}; set parallel.learner_num <= {int(gpus) + 1}")
        if not torch.cuda.is_available():
            raise ConfigError(f"parallel.learner_num={num} with policy.cuda on Ray: rank 0 is this process and sees no "
                              f"GPU; run it on a node with one, or set policy.cuda=False")


class RayLearnerRank:
    """Rank r > 0 as a Ray actor: ``run`` drives its share of the run (``data_parallel.run_rank``) and returns None,
    or its error in one line."""

    def ready(self) -> Tuple[int, str, List[str]]:
        """(pid, node IP, the GPU ids Ray gave it)."""
        import ray
        return os.getpid(), ray.util.get_node_ip_address(), [str(gpu) for gpu in ray.get_gpu_ids()]

    def run(self, rank: int, host: str, port: int, loop: Callable[[Any], None], cfg: Any, exp_dir: Optional[str],
            make_run: Callable[..., Any]) -> Optional[str]:
        from ...utils import set_torch_threads

        set_torch_threads(cfg.policy.learn.torch_threads)
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # rank 0 (the driver) stops the group
        except ValueError:  # not the actor's main thread
            pass
        lines: List[str] = []
        gpu = 0 if cfg.policy.get('cuda') else None  # the one GPU Ray made visible to this actor
        run_rank(rank, host, port, loop, cfg, exp_dir, make_run, lines.append, gpu=gpu)
        return lines[0] if lines else None


class RayRank:
    """Rank 0's handle on one rank actor, read as a ``multiprocessing.Process`` is by ``DataParallel``: ``exitcode``
    (None while its ``run`` is under way; a failure's line goes to ``errors``), ``exit_reason`` when it was lost."""

    def __init__(self, ray: Any, rank: int, handle: Any, errors: 'queue.SimpleQueue[Tuple[int, str]]') -> None:
        self.ray, self.rank, self.handle, self.errors = ray, rank, handle, errors
        self.pid: Optional[int] = None
        self.node = ''
        self.gpus: List[str] = []
        self.ref: Any = None
        self.exit_reason: Optional[str] = None
        self._exitcode: Optional[int] = None

    @property
    def what(self) -> str:
        return f"Ray actor on {self.node}, pid"

    @property
    def exitcode(self) -> Optional[int]:
        if self._exitcode is None and self.ref is not None:
            done, _ = self.ray.wait([self.ref], timeout=0)
            if done:
                self._resolve()
        return self._exitcode

    def _resolve(self) -> None:
        try:
            line = self.ray.get(self.ref)
        except self.ray.exceptions.RayTaskError as exc:  # it raised before its run could say so (e.g. its node cannot
            cause = getattr(exc, 'cause', None) or exc     # import a module the run needs): its error, not "lost"
            text = str(cause).strip().splitlines()
            self._exitcode = 1
            self.errors.put((self.rank, f"{type(cause).__name__}: {text[0][:200] if text else 'no message'}"))
            return
        except self.ray.exceptions.RayError as exc:  # its process died, its node was lost
            self._exitcode = -1
            self.exit_reason = f"was lost ({type(exc).__name__}: its process died or its node was lost)"
            return
        self._exitcode = 0 if line is None else 1
        if line is not None:
            self.errors.put((self.rank, line))

    def join(self, timeout: float) -> None:
        if self.ref is not None:
            self.ray.wait([self.ref], timeout=max(0.0, timeout))

    def is_alive(self) -> bool:
        return self.exitcode is None

    def kill(self) -> None:
        self.ray.kill(self.handle, no_restart=True)


class RayRanks:
    """``run_ranks``'s seam (``data_parallel.LocalRanks``) for Ray: ranks 1..N-1 as ``RayLearnerRank`` actors."""

    def __init__(self, ray: Any) -> None:
        self.ray = ray
        self.host = ray.util.get_node_ip_address()  # rank 0's (the driver's) node: the rendezvous
        self.children: List[RayRank] = []

    def start(self, cfg: Any, port: int, loop: Callable[[Any], None], exp_dir: Optional[str],
              make_run: Callable[..., Any]) -> Any:
        errors: 'queue.SimpleQueue[Tuple[int, str]]' = queue.SimpleQueue()
        cls = self.ray.remote(RayLearnerRank)
        resources = {'num_cpus': float(cfg.parallel.learner_num_cpus)}
        if cfg.policy.get('cuda'):
            resources['num_gpus'] = 1
        for rank in range(1, int(cfg.parallel.learner_num)):
            handle = cls.options(max_restarts=0, **resources).remote()
            self.children.append(RayRank(self.ray, rank, handle, errors))
        timeout = float(cfg.parallel.start_timeout)
        try:
            answers = self.ray.get([child.handle.ready.remote() for child in self.children], timeout=timeout)
        except self.ray.exceptions.GetTimeoutError as exc:
            raise EnvError(f"the data-parallel learner ranks (Ray actors) did not start within parallel.start_timeout="
                           f"{timeout:g} s; check that the nodes have acframe installed and the "
                           f"parallel.learner_num_cpus CPUs (and GPUs) they reserve") from exc
        except self.ray.exceptions.RayError as exc:
            raise EnvError(f"a data-parallel learner rank (Ray actor) failed to start: "
                           f"{str(exc).strip().splitlines()[0]}") from exc
        for child, (pid, node, gpus) in zip(self.children, answers):
            child.pid, child.node, child.gpus = pid, node, gpus
            child.ref = child.handle.run.remote(child.rank, self.host, port, loop, cfg, exp_dir, make_run)
        return errors

    def rank0_gpu(self, cfg: Any) -> Optional[int]:
        """With ``policy.cuda``: a GPU of this node that Ray did not give a rank actor here (NCCL needs one per rank)."""
        if not cfg.policy.get('cuda'):
            return None
        taken = {gpu for child in self.children if child.node == self.host for gpu in child.gpus}
        visible = os.environ.get('CUDA_VISIBLE_DEVICES')
        ids = [i.strip() for i in visible.split(',')] if visible else [str(i) for i in range(torch.cuda.device_count())]
        for index, gpu in enumerate(ids):
            if gpu not in taken:
                return index
        raise ConfigError(f"parallel.learner_num={cfg.parallel.learner_num} with policy.cuda on Ray: rank 0 (this "
                          f"process) needs a GPU of its own and the rank actors on this node hold all {len(ids)}; "
                          f"lower parallel.learner_num or add a node with a GPU")

    def stop(self, grace_s: float) -> None:
        """Wait up to ``grace_s`` for the ranks' runs to end (their share of the final checkpoint), then kill every
        rank actor (its own actors die with it)."""
        deadline = time.monotonic() + grace_s
        for child in self.children:
            child.join(deadline - time.monotonic())
        for child in self.children:
            try:
                child.kill()
            except Exception:  # noqa: BLE001 - already gone
                pass


@contextlib.contextmanager
def connected_ranks(ray_address: Optional[str]) -> Iterator[Tuple[Any, RayRanks]]:
    """Ray connected (the cluster at ``ray_address``; None starts a local one) and ``RayRanks`` on it, for
    ``run_ranks``: both pipelines' data-parallel ranks on Ray. A Ray this started is shut down at the end."""
    from .ray_backend import connect, disconnect

    ray, owns_ray = connect(ray_address)
    try:
        yield ray, RayRanks(ray)
    finally:
        if owns_ray:
            disconnect(ray)
