"""Data-parallel learners in the serial pipelines (``parallel.learner_num = N > 1``), SheepRL's shape over
``torch.distributed`` (gloo on CPU, NCCL with ``policy.cuda``).

``run_data_parallel`` is what ``serial.run_serial`` calls when ``parallel.learner_num > 1``: this process becomes rank
0 and starts ranks 1..N-1 itself (forked on CPU, spawned with CUDA), so ``acframe -c cartpole_ppo.py
parallel.learner_num=2`` needs no launcher. Every rank builds the same ``SerialRun`` over its share:

* the batch keys stay **global** — ``env.collector_env_num``, ``policy.collect.n_sample``, ``policy.learn.batch_size``
  and the replay buffer's sizes describe the whole run and are split evenly over the ranks (``local_config``), so
  a config trains the same amount per env step with 1 or N learners; rank r steps the envs seeded
  ``seed + r·E/N, ...`` (over the ranks: the seeds of one process with all E envs) and draws its actions from its own
  RNG stream;
* one gradient step: every rank's ``backward`` on its share, then the gradients all-reduced — averaged, since the
  losses are means over equal shares, summed with ``loss_reduction='sum'`` — before the clip and the optimizer step
  (``Policy._optimizer_step``), so the step equals one step of one process on the whole batch and every rank's
  weights and optimizer state stay identical; advantages normalised per batch (``adv_norm``) use the whole batch's
  mean and std (``normalize_advantages``);
* rank 0 evaluates, logs and writes the run folder; the other ranks write nothing. At the start of every turn of the
  loop one small all-reduce tells every rank whether to stop (rank 0 solved, the budget is spent, or a rank holds a
  Ctrl-C or SIGTERM: every rank then leaves the loop at the same point and writes its share of the final checkpoint);
* a checkpoint holds rank 0's run state and, under ``data_parallel``, every other rank's own state (envs, RNGs, a
  pending on-policy rollout, replay buffer), gathered when it is written, so ``--resume`` continues each rank where
  it stopped;
* every collective waits at most ``parallel.collective_timeout_s``; a rank that dies or fails ends the run with one
  line naming it (``DataParallelError``), and the ranks left stop too.
"""
from __future__ import annotations

import contextlib
import copy
import datetime
import functools
import os
import signal
import socket
import sys
import threading
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from ..errors import AcframeError, CheckpointError, ConfigError
from ..signals import (TERMINATING, describe_interrupt, held_while_a_child_starts, interrupt_for, interrupts_deferred,
                       pending_signum, release_held_signals, sigterm_as_interrupt)
from ..utils import cpu_cores
from ..worker import Learner, LearnerHook
from ..worker.learner import check_learner_num
from .parallel.local import _exit_reason, start_method
from .run_folder import resume_command

#: checkpoint entries every rank has in common (rank 0's are saved); the rest of a rank's state is its own
SHARED_STATE = ('policy', 'train_iter', 'env_step', 'evaluator', 'wall_s')
#: seconds rank 0 waits for the other ranks to exit once the run is over
JOIN_TIMEOUT_S = 30.0


class DataParallelError(AcframeError, RuntimeError):
    """A data-parallel rank died, failed or did not answer within ``parallel.collective_timeout_s``."""


#: the RNG stream of data-parallel rank (or async worker) ``r`` is seeded ``seed + PROCESS_SEED_STRIDE · r``
PROCESS_SEED_STRIDE = 1_000_003


def process_seed(seed: int, index: int) -> int:
    """The seed of training process ``index`` (a data-parallel rank, an async worker) of a run seeded ``seed``."""
    return (int(seed) + PROCESS_SEED_STRIDE * int(index)) % 2_147_483_647


#: set by torchrun in the processes it starts: torch's TCP rendezvous then never serves a store of its own
AGENT_STORE_VARIABLE = 'TORCHELASTIC_USE_AGENT_STORE'


def check_split(key: str, value: int, num: int, share: str, unit: int = 1) -> None:
    """Refuse, in one line, a global ``key=value`` that ``parallel.learner_num=num`` ranks cannot share evenly
    (``share``: what each rank takes of it), each share a multiple of ``unit`` (a recurrent PPO's sequence)."""
    multiple = num * unit
    if value % multiple:
        below = value // multiple * multiple
        shown = ' or '.join(str(v) for v in (below, below + multiple) if v > 0)
        raise ConfigError(f"{key}={value} does not split evenly over parallel.learner_num={num} ranks ({share}); set it "
                          f"to a multiple of {multiple}, e.g. {shown}")


def check_data_parallel(cfg: Any, split_envs: bool = True, local_devices: bool = True, resume: bool = False) -> None:
    """Refuse, in one line naming the key and the fix, what N data-parallel learners cannot run (before anything
    is built or written). ``split_envs``: the ranks share ``env.collector_env_num`` (the serial pipelines; in the
    parallel pipeline it counts one actor's envs and the ranks share the actors). ``local_devices``: the ranks run
    on this machine (its cores or GPUs are counted; False on Ray, whose cluster's are). ``resume``: the run's
    checkpoint holds that many ranks' states, so fewer cannot resume it (``check_learner_num``): where there are too
    few cores or GPUs, the line says to resume it where there are enough."""
    num = int(cfg.parallel.learner_num)
    if num <= 1:
        return

    def too_few(need: str, have: str, enough: str, count: int) -> ConfigError:
        line = f"parallel.learner_num={num} data-parallel learners need {need} and {have}; "
        if resume:  # (fewer ranks cannot take the checkpoint: check_learner_num)
            return ConfigError(line + f"the run trained with {num} and resumes only with as many (each rank's envs "
                                      f"and random state are its own): resume it where {enough}")
        return ConfigError(line + f"set parallel.learner_num <= {max(count, 1)}")

    cuda = bool(cfg.policy.get('cuda'))
    backend = cfg.parallel.learner_backend
    if backend == 'nccl' and not cuda:
        raise ConfigError("parallel.learner_backend='nccl' runs the learners on GPUs: set policy.cuda=True, or "
                          "parallel.learner_backend='gloo' (or 'auto') for CPU learners")
    if local_devices and cuda:  # (on Ray the cluster's GPUs and CPUs count: ray_ranks.check_ray_ranks)
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if num > gpus:
            raise too_few('one GPU each with policy.cuda', f'{gpus} are visible', f'{num} GPUs are visible', gpus)
    elif local_devices:
        cores = cpu_cores()
        if num > cores:
            raise too_few('a CPU core each', f'this process may use {cores}', f'this process may use {num} cores', cores)
    if split_envs:
        check_split('env.collector_env_num', int(cfg.env.collector_env_num), num,
                    'each rank steps collector_env_num / learner_num envs')
    if cfg.policy.learn.get('batch_size') is not None:
        from ..policy import policy_class

        unit = policy_class(cfg).batch_unit(cfg)
        check_split('policy.learn.batch_size', int(cfg.policy.learn.batch_size), num,
                    'each rank learns on batch_size / learner_num of every batch' +
                    (f', in whole sequences of {unit} steps' if unit > 1 else ''), unit)
    for key, fix in per_process_state_refusals(cfg):
        raise ConfigError(f"{key} does not run with data-parallel learners (parallel.learner_num={num}) yet: {fix}, "
                          f"or parallel.learner_num=1")


def per_process_state_refusals(cfg: Any) -> List[Tuple[str, str]]:
    """(key, fix) of each setting in ``cfg`` that several training processes (data-parallel ranks, async workers)
    cannot share yet: a learner thread, a compiled update, domain randomization. (The running normalization
    statistics are shared: ``Policy.share_memory``, ``Policy.use_data_parallel``.)"""
    refused = [
        (cfg.policy.learn.get('learner_thread'), 'policy.learn.learner_thread', 'set it to False'),
        (cfg.policy.learn.get('compile', 'off') != 'off', 'policy.learn.compile', "set it to 'off'"),
        (cfg.env.domain_randomization.get('enable'), 'env.domain_randomization.enable', 'set it to False'),
    ]
    return [(key, fix) for value, key, fix in refused if value]


def local_config(cfg: Any, num: int, split_envs: bool = True) -> Any:
    """The config one of ``num`` ranks builds from: ``cfg`` with the global batch keys divided by ``num``
    (``env.collector_env_num`` and ``policy.collect.n_sample`` when ``split_envs``, ``policy.learn.batch_size``; the
    replay buffer's ``replay_buffer_size`` and ``replay_start_size`` rounded up)."""
    local = copy.deepcopy(cfg)
    if split_envs:
        local.env.collector_env_num = int(cfg.env.collector_env_num) // num
        local.policy.collect.n_sample = int(cfg.policy.collect.n_sample) // num
    if local.policy.learn.get('batch_size') is not None:
        local.policy.learn.batch_size = int(cfg.policy.learn.batch_size) // num
    replay = local.policy.other.get('replay_buffer', {})
    for key in ('replay_buffer_size', 'replay_start_size'):
        if isinstance(replay.get(key), int) and not isinstance(replay.get(key), bool) and replay[key] > 0:
            replay[key] = -(-int(replay[key]) // num)
    return local


def free_port(host: str = '127.0.0.1') -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class DataParallel:
    """One rank's side of the data-parallel learners: its rank, the process group, and every collective the run makes,
    each bounded by ``parallel.collective_timeout_s`` and turned into a ``DataParallelError`` naming the rank at fault.

    Rank 0 also holds the other ranks' processes (``children``) and the queue their errors come back on.
    """

    def __init__(self, cfg: Any, rank: int, port: int, children: Sequence[Any] = (), errors: Any = None,
                 parent_pid: Optional[int] = None, host: str = '127.0.0.1', gpu: Optional[int] = None) -> None:
        self.cfg = cfg
        self.rank, self.world = int(rank), int(cfg.parallel.learner_num)
        self.host, self.port = host, int(port)  # the rendezvous: rank 0's address
        self.timeout_s = float(cfg.parallel.collective_timeout_s)
        cuda = bool(cfg.policy.get('cuda'))
        backend = cfg.parallel.learner_backend
        self.backend = ('nccl' if cuda else 'gloo') if backend == 'auto' else backend
        # with policy.cuda: cuda:gpu (by default cuda:rank; a Ray actor's own GPU is its cuda:0)
        self.device = torch.device('cuda', self.rank if gpu is None else gpu) if cuda else torch.device('cpu')
        self.children = list(children)
        self.errors = errors
        self.parent_pid = parent_pid
        self.train_iter: Callable[[], int] = lambda: 0
        self.latest_checkpoint: Callable[[], Optional[Dict[str, int]]] = lambda: None  # (the learner's, once built)
        self.exp_dir: Optional[str] = None
        self.total_count = 0  # the ranks' counts summed at the last end_turn
        self._joined = False

    @property
    def writes(self) -> bool:
        return self.rank == 0

    # ---- the group -------------------------------------------------------------------------------------------
    def join(self) -> None:
        """Join the process group (every rank, rank 0 last: after its children were started)."""
        import torch.distributed as dist

        if self.device.type == 'cuda':
            torch.cuda.set_device(self.device)
        timeout = datetime.timedelta(seconds=self.timeout_s)
        self._excepthook = sys.excepthook  # torch puts its '[rank0]: ' one in place: given back by leave()
        # the rendezvous is rank 0's own TCP store: under torchrun's variables torch would make rank 0 a client of
        # the launcher's agent store as well, and every rank would wait for a server that never starts
        agent_store = os.environ.pop(AGENT_STORE_VARIABLE, None)
        try:
            self._collective('joining the process group', lambda: dist.init_process_group(
                self.backend, init_method=f'tcp://{self.host}:{self.port}', rank=self.rank, world_size=self.world,
                timeout=timeout))
        finally:
            if agent_store is not None:
                os.environ[AGENT_STORE_VARIABLE] = agent_store
        self._joined = True

    def leave(self) -> None:
        import torch.distributed as dist

        if self._joined and dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:  # noqa: BLE001 - a group whose peers are gone
                pass
        hook = getattr(self, '_excepthook', None)
        if hook is not None and 'distributed_excepthook' in getattr(sys.excepthook, '__qualname__', ''):
            sys.excepthook = hook  # (only torch's: one the user put in place meanwhile stays)
        self._excepthook = None
        self._joined = False

    def local_config(self, cfg: Any) -> Any:
        return local_config(cfg, self.world)

    def learner(self, policy: Any, hooks: List[LearnerHook], state_provider: Callable[[], Dict[str, Any]],
                buffer: Any = None, learn_mode: Any = None) -> Learner:
        """This rank's learner (of ``learn_mode``, by default the policy's): the policy all-reduces its gradients over
        the group, and starts from rank 0's weights; ranks > 0 draw from their own RNG streams from here on."""
        policy.use_data_parallel(self)
        self.broadcast_module(policy.model)
        if self.rank:
            from ..utils import set_global_seed
            set_global_seed(process_seed(self.cfg.seed, self.rank))
        learner = DataParallelLearner(self, learn_mode if learn_mode is not None else policy.learn_mode, None, hooks,
                                      state_provider, buffer=buffer)
        self.train_iter = lambda: learner.train_iter
        self.latest_checkpoint = lambda: learner.latest_checkpoint
        return learner

    # ---- collectives -----------------------------------------------------------------------------------------
    def reduce_gradients(self, params: Sequence[torch.nn.Parameter], average: bool = True,
                         loss: Optional[torch.Tensor] = None) -> Optional[float]:
        """All-reduce the gradients of ``params`` in one flat buffer: their mean over the ranks (``average``) or sum.
        ``loss`` (this rank's, one number) rides in the same buffer: returned is the ranks' losses summed, NaN/inf
        where any rank's is, so that every rank takes the same step-or-skip decision (None without a loss or a
        gradient)."""
        import torch.distributed as dist
        from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return None
        if grads[0].dtype not in (torch.float32, torch.float64):  # (a half-precision buffer could overflow it)
            loss = None
        parts = grads + ([loss.detach().reshape(1).to(grads[0].dtype)] if loss is not None else [])
        flat = _flatten_dense_tensors(parts)
        self._collective('the gradient all-reduce', lambda: dist.all_reduce(flat))
        if average:
            flat[:flat.numel() - (loss is not None)].div_(self.world)
        for grad, reduced in zip(grads, _unflatten_dense_tensors(flat, parts)):
            grad.copy_(reduced)
        return float(flat[-1]) if loss is not None else None

    def normalize_advantages(self, advantages: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
        """``rl_utils.normalize_advantages`` over the whole batch, every rank's share: ``(A − mean) / (std + eps)`` with
        the mean and the unbiased std of all the ranks' elements, from one all-reduce of their count, sum and sum of
        squares in float64 (where float32 would lose the std's digits to cancellation)."""
        import torch.distributed as dist

        with torch.no_grad():
            values = advantages.detach().double()
            totals = torch.stack([values.new_tensor(float(values.numel())), values.sum(), values.pow(2).sum()])
            self._collective('the advantage statistics', lambda: dist.all_reduce(totals))
            count, total, squares = totals.tolist()
            if count <= 1:
                return advantages
            mean = total / count
            std = (max(squares - count * mean * mean, 0.0) / (count - 1)) ** 0.5
        return (advantages - mean) / (std + eps)

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        """The mean of every rank's ``value`` (same shape on each; one all-reduce in float64): what a policy's own
        statistic of its batch share is over the whole batch, the shares being equal (``Policy._mean_over_learners``)."""
        import torch.distributed as dist

        with torch.no_grad():
            total = value.detach().to(self.device, torch.float64).clone()
            self._collective('a mean over the learners', lambda: dist.all_reduce(total))
        dtype = value.dtype if value.is_floating_point() else torch.float64
        return (total / self.world).to(value.device, dtype)

    def combine_moments(self, count: torch.Tensor, mean: torch.Tensor,
                        var: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The count, mean and variance of every rank's batch together, from this rank's (one all-gather; combined
        in rank order with ``models.normalization.combine_moments``, so every rank gets the same bits): what the
        running normalization statistics merge at each update."""
        import torch.distributed as dist

        from ..models.normalization import combine_moments

        packed = torch.cat([count.reshape(1), mean.reshape(-1), var.reshape(-1)]).to(self.device, torch.float64)
        parts = [torch.empty_like(packed) for _ in range(self.world)]
        self._collective('the normalization statistics', lambda: dist.all_gather(parts, packed))
        size = mean.numel()
        total, mean_all, var_all = parts[0][0], parts[0][1:1 + size], parts[0][1 + size:]
        for part in parts[1:]:
            moments = part[0], part[1:1 + size], part[1 + size:]
            if float(moments[0]) == 0:  # a rank with an empty batch adds nothing
                continue
            if float(total) == 0:
                total, mean_all, var_all = moments
                continue
            total, mean_all, var_all = combine_moments(total, mean_all, var_all, *moments)
        return (total.to(count.device), mean_all.reshape(mean.shape).to(mean.device),
                var_all.reshape(var.shape).to(var.device))

    def _flags(self, values: Sequence[bool], what: str) -> List[bool]:
        """The element-wise OR of every rank's ``values`` (an all-reduce MAX)."""
        import torch.distributed as dist

        flags = torch.tensor([float(v) for v in values], device=self.device)
        self._collective(what, lambda: dist.all_reduce(flags, op=dist.ReduceOp.MAX))
        return [bool(v) for v in flags.tolist()]

    def agree_any(self, flag: bool) -> bool:
        """True on every rank when ``flag`` is True on any."""
        return self._flags([flag], 'a checkpoint decision')[0]

    def agree_all(self, flag: bool) -> bool:
        """True on every rank when ``flag`` is True on all."""
        return not self._flags([not flag], 'a replay decision')[0]

    def end_turn(self, run: Any, stop: bool, count: int = 0) -> bool:
        """The start of every turn of the loop: True on every rank when rank 0 stops (solved, out of budget), a rank's
        hook asked to (``StopTraining``: every rank's learner then holds the request) or a rank holds a Ctrl-C or
        SIGTERM (raised on that rank when its loop ends: ``deferred``). The same all-reduce sums the
        ranks' ``count`` (the parallel pipeline: each rank's actors' env steps) into ``self.total_count``."""
        import torch.distributed as dist

        signum = pending_signum()  # the interrupt this rank holds (0: none)
        held = signum != 0
        kinds = (signal.SIGINT,) + TERMINATING  # how many ranks hold each kind of interrupt
        hook_stop = run.learner.stop_requested is not None  # (a hook's StopTraining, on this rank)
        sums = torch.tensor([float(stop), float(held), float(count), float(hook_stop),
                             float(2 ** self.rank if held and self.rank < 53 else 0)]  # which ranks hold one (bits)
                            + [float(signum == kind) for kind in kinds], dtype=torch.float64, device=self.device)
        self._collective('the end of a turn', lambda: dist.all_reduce(sums))
        stop, interrupted, total, hook_stops, holders, *held_kinds = (int(v) for v in sums.tolist())
        self.total_count = total
        if hook_stops and not hook_stop:  # every rank ends, and rank 0's summary and result line say why
            run.learner.request_stop('a hook on another data-parallel rank')
        if interrupted and not held and not run.interrupted:
            run.interrupted = True
            # rank 0 ends, once the run is finished, as that rank's own interrupt would (exit 130, or 128 + the
            # signal); ranks holding different kinds end it as a SIGTERM
            seen = [kind for kind, n in zip(kinds, held_kinds) if n]
            kind = seen[0] if len(seen) == 1 else signal.SIGTERM
            run.other_interrupt = interrupt_for(int(kind), self._ranks_named(holders))
            run.progress.message(f"[acframe] {describe_interrupt(run.other_interrupt)}: writing the final checkpoint "
                                 f"and summary")
        return stop > 0 or interrupted > 0 or hook_stops > 0

    def _ranks_named(self, holders: int) -> str:
        """'data-parallel rank 1 (pid 4242)', 'data-parallel ranks 1, 2' for the bits of ``holders`` (bit r: rank r
        holds an interrupt); the pid where this process started that rank."""
        ranks = [r for r in range(min(self.world, 53)) if holders >> r & 1]
        if not ranks:
            return 'a data-parallel rank'
        if len(ranks) > 1:
            return f"data-parallel ranks {', '.join(map(str, ranks))}"
        rank = ranks[0]
        child = self.children[rank - 1] if 0 < rank <= len(self.children) else None
        pid = getattr(child, 'pid', None)
        return f"data-parallel rank {rank}" + (f" ({getattr(child, 'what', 'pid')} {pid})" if pid else '')

    def broadcast_module(self, module: torch.nn.Module) -> None:
        """Give every rank rank 0's weights and buffers."""
        import torch.distributed as dist

        for tensor in list(module.parameters()) + list(module.buffers()):
            with torch.no_grad():
                self._collective("rank 0's weights", lambda t=tensor: dist.broadcast(t.data, 0))

    def gather(self, obj: Any) -> Optional[List[Any]]:
        """Every rank's ``obj`` on rank 0 (a list by rank); None on the other ranks."""
        import torch.distributed as dist

        found: Optional[List[Any]] = [None] * self.world if self.rank == 0 else None
        self._collective('the checkpoint state', lambda: dist.gather_object(obj, found, dst=0))
        return found

    def share_checkpoint(self, path: str) -> Dict[str, Any]:
        """The checkpoint at ``path`` to resume, read by rank 0 alone (a rank on another node, a Ray actor, does not
        see rank 0's disk, nor its working folder): every other rank gets the entries all ranks share
        (``SHARED_STATE``) and, under ``data_parallel``, its own, which ``DataParallelLearner.load_checkpoint_state``
        reads. (Rank 0's error reading it ends the run, the other ranks with it.)"""
        import torch.distributed as dist

        from ..worker import load_checkpoint

        state: Dict[str, Any] = {}
        parts: Optional[List[Any]] = None
        if self.rank == 0:
            state = load_checkpoint(path)
            stored = state.get('data_parallel')
            ranks = stored.get('ranks') if isinstance(stored, dict) else None
            parts = [None]
            for rank in range(1, self.world):
                own = ranks[rank - 1] if isinstance(ranks, list) and rank - 1 < len(ranks) else None
                if isinstance(own, dict):  # the shared entries and its own (not the others': a buffer each, maybe)
                    part = {k: v for k, v in state.items() if k in SHARED_STATE}
                    part.update(own)
                    part['data_parallel'] = {**stored, 'ranks': [None] * (rank - 1) + [own]}
                else:  # what does not fit fails on that rank as on rank 0
                    part = state
                parts.append(part)
        received: List[Any] = [None]
        self._collective('the checkpoint to resume', lambda: dist.scatter_object_list(received, parts, src=0))
        return state if self.rank == 0 else received[0]

    def _collective(self, what: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except (RuntimeError, ValueError, OSError) as exc:
            if isinstance(exc, AcframeError):
                raise
            raise DataParallelError(self.describe_failure(what, exc)) from exc

    # ---- failures --------------------------------------------------------------------------------------------
    def describe_failure(self, what: str, exc: BaseException) -> str:
        """One line: which rank died or failed (rank 0 waits a few seconds for its children to say), or the timeout."""
        where = f"at train iter {self.train_iter()}"
        if self.rank == 0:
            deadline = time.monotonic() + 3.0
            while time.monotonic() < deadline:
                gone = [(r, p) for r, p in enumerate(self.children, 1) if p.exitcode is not None]
                if gone:
                    break
                time.sleep(0.05)
            else:
                gone = []
            messages = self._child_errors()
            for rank, process in gone:
                if rank in messages:
                    cause = f"data-parallel rank {rank} failed: {messages[rank]}"
                else:  # 'was killed by SIGKILL', 'exited with code 1' (a Ray actor: 'its process died')
                    cause = f"data-parallel rank {rank} ({getattr(process, 'what', 'pid')} {process.pid}) " \
                            f"{getattr(process, 'exit_reason', None) or _exit_reason(process)}"
                return f"{cause} ({what} {where}); the run stopped, {self._resume_hint()}"
            if 'timed out' in str(exc).lower() or 'timeout' in str(exc).lower():
                late = 'data-parallel rank 1' if self.world == 2 else f"one of data-parallel ranks 1-{self.world - 1}"
                return (f"{late} did not answer within parallel.collective_timeout_s={self.timeout_s:g} s ({what} "
                        f"{where}; alive but stopped or stuck); the run stopped, {self._resume_hint()}")
        else:
            if self.parent_pid is not None and not _rank_0_alive(self.parent_pid):
                return f"data-parallel rank 0 is gone ({what} {where}); rank {self.rank} stopped"
        detail = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        hint = f"; {self._resume_hint()}" if self.rank == 0 else ''  # (rank 0 adds it to the line a rank sends it)
        if 'EADDRINUSE' in str(exc) or 'address already in use' in str(exc).lower():
            return (f"data-parallel rank {self.rank}: {what} failed {where}: port {self.port} on {self.host}, free "
                    f"when acframe chose it, was taken by another process before the ranks bound it; run the command "
                    f"again (it chooses another port){hint}")
        return (f"data-parallel rank {self.rank}: {what} failed {where} ({detail}): a rank did not answer within "
                f"parallel.collective_timeout_s={self.timeout_s:g} s or went away{hint}")

    def _resume_hint(self) -> str:
        from ..worker.learner import describe_position

        if not self.exp_dir:
            return "nothing was written"
        return (f"{resume_command(self.exp_dir, self.cfg)} continues it from its last checkpoint"
                f"{describe_position(self.latest_checkpoint())}")

    def _child_errors(self) -> Dict[int, str]:
        found: Dict[int, str] = {}
        if self.errors is None:
            return found
        try:
            while not self.errors.empty():
                rank, line = self.errors.get()
                found.setdefault(int(rank), str(line))
        except (OSError, EOFError, ValueError):
            pass
        return found


class DataParallelLearner(Learner):
    """A rank's ``Learner``: a checkpoint is collective — every rank hands rank 0 its own state (envs, RNGs, pending
    rollout, buffer: what ``SHARED_STATE`` leaves out) and rank 0 alone writes it, under ``data_parallel``; a
    restore gives each rank its own again."""

    def __init__(self, group: DataParallel, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group = group
        self._handed: Optional[Tuple[Optional[List[Any]]]] = None  # ``hand_over_final_state``'s gather

    def hand_over_final_state(self) -> None:
        """The collective part of the final checkpoint, now: every rank's own state gathered on rank 0, which writes
        it with its own state at the end (the next ``checkpoint_state`` gathers nothing). The parallel pipeline calls
        it before rank 0's final evaluation, which the other ranks then need not wait for (at most
        ``parallel.collective_timeout_s``): a rank whose loop ended with a Ctrl-C or SIGTERM skips the call and
        gathers in its final ``checkpoint_state`` instead, which is the same one collective."""
        own = {k: v for k, v in super().checkpoint_state().items() if k not in SHARED_STATE}
        self._handed = (self.group.gather(own),)

    def checkpoint_state(self) -> Dict[str, Any]:
        if self._handed is not None and not self.group.writes:  # handed over already: nothing to gather or write
            self._handed = None
            return {}
        state = super().checkpoint_state()
        if self._handed is not None:
            (ranks,), self._handed = self._handed, None
        else:
            ranks = self.group.gather({k: v for k, v in state.items() if k not in SHARED_STATE})
        if ranks is not None:
            state['data_parallel'] = {'learner_num': self.group.world, 'ranks': ranks[1:]}
        return state

    def save_checkpoint(self, name: str, state: Optional[Dict[str, Any]] = None) -> str:
        if state is not None:  # rank 0's best checkpoint: weights only, nothing to gather
            return super().save_checkpoint(name, state)
        state = self.checkpoint_state()  # collective: every rank calls it at the same point
        if not self.group.writes:
            return ''
        return super().save_checkpoint(name, state)

    def load_checkpoint_state(self, state: Dict[str, Any]) -> None:
        """Restore; on a rank > 0, ``state`` is updated in place with that rank's own entries, which the run's
        restore (``RunBase.restore``) reads next."""
        check_learner_num(state, self.learner_num)  # before a rank looks for its entries (the base checks again)
        if self.group.rank:
            state.update(state['data_parallel']['ranks'][self.group.rank - 1])
        super().load_checkpoint_state(state)

    @property
    def learner_num(self) -> int:  # type: ignore[override]
        return self.group.world


def _deferred(loop: Callable[[Any], None]) -> Callable[[Any], None]:
    """``loop`` with Ctrl-C and SIGTERM held until it ends: ``DataParallel.end_turn`` sees them and every rank leaves
    the loop at the same turn (a rank cut mid-collective would leave the others waiting)."""
    def run_loop(run: Any) -> None:
        with interrupts_deferred():
            loop(run)
    return run_loop


class _StartParent:
    """The parent this process had when it started as a rank (or async worker): rank 0 itself (fork, spawn), or a
    forkserver, which exits with rank 0. Once the parent changes (re-parented: the parent exited), rank 0 is gone --
    even where it lingers as a zombie nobody reaps."""

    pid: Optional[int] = None


def _rank_0_alive(parent_pid: int) -> bool:
    """Whether rank 0 (``parent_pid``) still runs: this process still has the parent it started with."""
    return os.getppid() == (_StartParent.pid if _StartParent.pid is not None else parent_pid)


def _watch_parent(parent_pid: int) -> None:
    """A rank > 0 exits when rank 0 is gone, whatever it is doing."""
    _StartParent.pid = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if not _rank_0_alive(parent_pid):
                os._exit(1)
    threading.Thread(target=watch, name='acframe-rank-watch', daemon=True).start()


def run_rank(rank: int, host: str, port: int, loop: Callable[[Any], None], cfg: Any, exp_dir: Optional[str],
             make_run: Callable[..., Any], report: Callable[[str], None], parent_pid: Optional[int] = None,
             gpu: Optional[int] = None, quiet_build: bool = False) -> bool:
    """A rank > 0, wherever it was started (``LocalRanks``: a process of this machine; the parallel pipeline's
    ``RayRanks``: a Ray actor): join the group at ``host:port``, build its share of the run (``make_run``) and drive the
    loop in step with rank 0; it writes nothing. Its error goes to ``report`` as one line (before it leaves the group);
    returns False when it failed. ``quiet_build``: its warnings while it builds are not shown (``_shown_by_rank_0``:
    a process of rank 0's machine, its code and its config)."""
    from .parallel.roles import import_worker_modules

    group = DataParallel(cfg, rank, port, parent_pid=parent_pid, host=host, gpu=gpu)
    try:
        group.join()
        # a spawned rank (or a Ray actor) starts with none of the user's modules that rank 0 imported: their envs,
        # models and policies are registered here, as a parallel actor's are (after joining: a module that fails
        # here ends the group at rank 0's next collective, not at the end of its wait to join)
        with _shown_by_rank_0() if quiet_build else contextlib.nullcontext():
            import_worker_modules(cfg.import_names, refuse_under=(exp_dir,) if exp_dir else ())
            run = make_run(group, False, ())
        group.exp_dir = exp_dir
        run.drive(_deferred(loop))
    except KeyboardInterrupt:  # SIGTERM of this rank: its share of the final checkpoint is written
        pass
    except BaseException as exc:  # noqa: BLE001 - reported by rank 0, in one line
        from ..cli import one_line

        report(one_line(exc))
        group.leave()
        return False
    group.leave()
    return True


@contextlib.contextmanager
def _shown_by_rank_0() -> Any:
    """Warnings of a local rank > 0 building its share of the run are not shown: rank 0 built the same config with
    the same code on the same machine and showed them (a library's warning at env construction was printed once per
    rank; a Ray rank, maybe on another node with other libraries, shows its own). Only the showing
    is replaced, not the filters (``warnings.catch_warnings`` would reset every module's record of what it showed,
    so that each would be shown again); what is dropped here is recorded as shown, as it is on rank 0."""
    show = warnings.showwarning
    warnings.showwarning = lambda *args, **kwargs: None
    try:
        yield
    finally:
        warnings.showwarning = show


def _rank_main(rank: int, host: str, port: int, parent_pid: int, errors: Any, loop: Callable[[Any], None], cfg: Any,
               exp_dir: Optional[str], make_run: Callable[..., Any]) -> None:
    """A rank > 0 as a process of this machine (``LocalRanks``): its errors go back to rank 0 on ``errors``."""
    from ..utils import set_torch_threads

    # first: a forked child of a process whose intra-op pool ran hangs at its first multi-threaded op
    set_torch_threads(cfg.policy.learn.torch_threads)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches every process: rank 0 stops the group
    release_held_signals()  # (held while rank 0 started this process)
    _watch_parent(parent_pid)

    def report(line: str) -> None:
        if not _rank_0_alive(parent_pid):
            print(f"acframe: error: data-parallel rank {rank}: {line}", file=sys.stderr, flush=True)
        else:
            errors.put((rank, line))

    if not run_rank(rank, host, port, loop, cfg, exp_dir, make_run, report, parent_pid=parent_pid, quiet_build=True):
        sys.stdout.flush()
        os._exit(1)


def _serial_run(cfg: Any, exp_dir: Optional[str], resume: bool, learner_hooks: Sequence[LearnerHook], model: Any,
                use_buffer: bool, mode: str, group: DataParallel, progress: bool, config_changes: Sequence[str]) -> Any:
    """One rank's ``SerialRun`` (module level, so that a spawned rank can unpickle it)."""
    from .serial import SerialRun

    return SerialRun(cfg, exp_dir, resume, progress, learner_hooks, model, use_buffer=use_buffer, mode=mode,
                     config_changes=config_changes, data_parallel=group)


#: how a serial pipeline's ranks 1..N-1 may run: processes of this machine, or Ray actors
SERIAL_BACKENDS = ('local', 'ray')


def check_serial_backend(cfg: Any, backend: str, ray_address: Optional[str], resume: bool = False) -> None:
    """Refuse, in one line naming the fix, a serial pipeline's ``backend`` (``--backend``) that it cannot use: 'ray'
    runs its data-parallel ranks 1..N-1 on Ray, so it needs ``parallel.learner_num`` > 1; 'inline' is the parallel
    pipeline's; ``ray_address`` goes with 'ray'."""
    from .run_base import check_ray_address  # (run_base imports this module)

    if backend == 'inline':
        if resume:  # (the folder's run is a serial one: -m parallel would be refused)
            raise ConfigError("backend 'inline' (--backend inline) runs the parallel pipeline and this run is a serial "
                              "one; drop --backend inline (a serial run's data-parallel ranks run on 'local' or 'ray')")
        raise ConfigError("backend 'inline' (--backend inline) runs the parallel pipeline; add -m parallel, or give a "
                          "serial pipeline backend 'local' or 'ray' (its data-parallel ranks on Ray)")
    if backend not in SERIAL_BACKENDS:
        raise ConfigError(f"backend '{backend}' is not one of {', '.join(SERIAL_BACKENDS)} (a serial pipeline's)")
    check_ray_address(ray_address, backend)
    num = int(cfg.parallel.get('learner_num', 1))
    if backend == 'ray' and num <= 1:
        raise ConfigError(f"--backend ray runs a serial pipeline's data-parallel ranks on Ray and parallel.learner_num="
                          f"{num}; set parallel.learner_num=2 or more, or add -m parallel (actors on Ray)")


def run_data_parallel(loop: Callable[[Any], None], cfg: Any, exp_dir: Optional[str], resume: bool, progress: bool,
                      learner_hooks: Sequence[LearnerHook], model: Any, use_buffer: bool, mode: str,
                      config_changes: Sequence[str], backend: str = 'local', ray_address: Optional[str] = None) -> Any:
    """Run ``loop`` with ``parallel.learner_num`` data-parallel learners in a serial pipeline: this process is rank 0
    (it evaluates, logs, writes the run folder and returns the trained policy); ranks 1..N-1 are processes of this
    machine (``backend='local'``) or Ray actors (``'ray'``: ``parallel.ray_ranks.RayRanks``, on the cluster at
    ``ray_address``; None starts a local Ray)."""
    check_serial_backend(cfg, backend, ray_address, resume=bool(resume))
    check_data_parallel(cfg, local_devices=backend != 'ray', resume=bool(resume))
    make_run = functools.partial(_serial_run, cfg, exp_dir, resume, tuple(learner_hooks), model, use_buffer, mode)
    if backend != 'ray':
        run = run_ranks(loop, cfg, exp_dir, progress, config_changes, make_run)
    else:
        from .parallel.ray_ranks import check_ray_ranks, connected_ranks

        # SIGTERM as Ctrl-C from before Ray starts (connect keeps the handlers): also while the rank actors start
        with sigterm_as_interrupt(), connected_ranks(ray_address) as (ray, ranks):
            check_ray_ranks(ray, cfg, actors=False)
            run = run_ranks(loop, cfg, exp_dir, progress, config_changes, make_run, ranks)
    run.policy.summary = run.summary
    return run.policy


class LocalRanks:
    """How ``run_ranks`` starts ranks 1..N-1 by default: processes of this machine (forked on CPU, spawned with CUDA:
    ``parallel.start_method``), rank r on ``cuda:r``, their errors sent back on a queue.

    The seam for another way (``parallel.ray_ranks.RayRanks``: Ray actors): ``host`` (rank 0's address, the
    rendezvous), ``start`` (returns the queue the ranks' error lines come back on, as ``(rank, line)``),
    ``children`` (one handle per rank, as ``multiprocessing.Process``: ``pid``, ``exitcode``; ``what`` and
    ``exit_reason`` may say more), ``rank0_gpu`` and ``stop``."""

    host = '127.0.0.1'

    def __init__(self) -> None:
        self.children: List[Any] = []

    def start(self, cfg: Any, port: int, loop: Callable[[Any], None], exp_dir: Optional[str],
              make_run: Callable[..., Any]) -> Any:
        import multiprocessing

        context = multiprocessing.get_context(start_method(cfg))  # parallel.start_method: fork on CPU, spawn with CUDA
        errors = context.SimpleQueue()
        self.children = [context.Process(target=_rank_main, name=f'acframe-rank{rank}',
                                         args=(rank, self.host, port, os.getpid(), errors, loop, cfg, exp_dir, make_run))
                         for rank in range(1, int(cfg.parallel.learner_num))]
        for child in self.children:
            with held_while_a_child_starts(context):
                child.start()
        return errors

    def rank0_gpu(self, cfg: Any) -> Optional[int]:
        """Rank 0's GPU index with ``policy.cuda`` (None: ``cuda:0``)."""
        return None

    def stop(self, grace_s: float) -> None:
        """Wait up to ``grace_s`` for the ranks to end (their share of the final checkpoint), then kill those left."""
        deadline = time.monotonic() + grace_s
        for child in self.children:
            if child.pid is None:
                continue
            child.join(max(0.0, deadline - time.monotonic()))
            if child.is_alive():
                child.kill()
                child.join(5.0)


def run_ranks(loop: Callable[[Any], None], cfg: Any, exp_dir: Optional[str], progress: bool,
              config_changes: Sequence[str], make_run: Callable[..., Any], ranks: Any = None) -> Any:
    """Start ranks 1..N-1 (``ranks``; by default ``LocalRanks``: processes of this machine), join the group as rank 0,
    build this rank's run — ``make_run(group, progress, config_changes)``, a ``RunBase`` built on its share — and drive
    it with ``loop``; the other ranks build theirs with ``make_run(group, False, ())`` (picklable: a
    ``functools.partial`` of a module-level function). Returns rank 0's finished run (``run.summary``); the ranks are
    stopped at the end."""
    ranks = ranks if ranks is not None else LocalRanks()
    port = free_port(ranks.host)
    group: Optional[DataParallel] = None
    run: Any = None
    finished = False
    try:
        errors = ranks.start(cfg, port, loop, exp_dir, make_run)
        group = DataParallel(cfg, 0, port, ranks.children, errors, host=ranks.host, gpu=ranks.rank0_gpu(cfg))
        with sigterm_as_interrupt():
            group.join()
            run = make_run(group, progress, config_changes)
            group.exp_dir = run.exp_dir
            run.drive(_deferred(loop))
        finished = True
        return run
    except KeyboardInterrupt:
        # driven: the final checkpoint was written with every rank; before (rank 0 joining, building its run) the
        # others, which wait in a collective rank 0 will never make, are stopped at once
        finished = run is not None
        raise
    finally:
        ranks.stop(JOIN_TIMEOUT_S if finished else 0.0)
        if group is not None:
            group.leave()
