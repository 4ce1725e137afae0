"""``ParallelRun``: the learner side of a parallel run, and its two loops.

The learner process owns the experiment folder, the learn-only policy, the replay buffer, the
``Learner`` (hooks, checkpoints) and the measurements; a backend owns the actors and the evaluator.

* ``async`` (off-policy policies): segments are pushed into the replay buffer as they arrive; the learner
  trains whenever the buffer gives a batch and publishes the new weights after every update.
* ``sync`` (on-policy policies, or on request): every actor delivers one segment collected with the
  current version; then the learner makes the policy's gradient steps on all of them at once (one rollout:
  ``Learner.train_rollout``; A2C one step, PPO epochs × minibatches) and publishes — A2C's synchronous actors.
  An off-policy policy in sync mode pushes the segments and makes ``update_per_collect`` updates from the buffer.
"""
from __future__ import annotations

import contextlib
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch

from ...data import make_tree, to_dict, ttorch
from ...data.buffer import push_copies
from ...envs import make_env_manager
from ...envs.randomization import DomainRandomizer
from ...errors import ConfigError, ConfigWarning
from ...policy import Policy, create_policy, env_steps_per_collection, policy_class
from ...signals import interrupt_pending, interrupts_deferred
from ...utils import cpu_cores
from ...worker import CheckpointHook, EvalHistory, Learner, LearnerHook, LinearLRDecayHook, LogHook, eval_score
from ..budget import check_start
from ..run_base import RunBase, build_buffer, check_no_replay, check_ray_address, return_text
from .backend import Backend, EnvStepBudget
from .shm_segments import SegmentIngest
from .inference_server import check_inference
from .messages import (VERSION_KEY, EvalRequest, EvalResult, SegmentMessage, numpy_to_tree, sample_count,
                       weights_to_numpy)

BACKENDS = ('local', 'ray', 'inline')
#: seconds the learner waits for data when it has nothing to train on
IDLE_WAIT_S = 0.01
#: seconds between two rows of throughput measurements (tensorboard, progress line)
REPORT_EVERY_S = 2.0
_ROLE_MODES = (('actors', 'collect'), ('learner', 'learn'), ('evaluator', 'eval'))


def check_setup(cfg: Any, backend: str, ray_address: Optional[str]) -> bool:
    """Refuse a set-up that cannot work, before anything starts; returns True for the synchronous mode."""
    if backend not in BACKENDS:
        raise ConfigError(f"backend '{backend}' is not one of {', '.join(BACKENDS)}")
    check_ray_address(ray_address, backend)
    cls = policy_class(cfg)
    for role, mode in _ROLE_MODES:
        # the class declares its modes; collect and eval have working defaults in Policy, learn has none
        implemented = mode != 'learn' or cls._forward_learn is not Policy._forward_learn
        if mode not in cls.modes or not implemented:
            raise ConfigError(f"policy '{cfg.policy.type}' has no {mode} mode, which the {role} of the parallel "
                              f"pipeline need; its modes are {', '.join(m for m in cls.modes)}")
    check_inference(cfg, backend)
    # parallel.actor_num and env_steps_per_update were checked by compile_config (their declarations in defaults.py)
    mode = cfg.parallel.sync_mode
    if cls.on_policy and mode == 'async':
        raise ConfigError(f"policy '{cfg.policy.type}' is on-policy: it cannot learn from the stale data of asynchronous "
                          f"actors; set parallel.sync_mode='sync' (or 'auto')")
    sync = mode == 'sync' or (mode == 'auto' and cls.on_policy)
    if cls.on_policy:
        check_no_replay(cfg)
    elif not cfg.policy.other.replay_buffer.get('type'):
        raise ConfigError(f"policy '{cfg.policy.type}' learns off-policy from a replay buffer; "
                          f"set policy.other.replay_buffer.type (e.g. 'fifo')")
    return sync


class LagTrackingLearnMode:
    """The learn mode as the parallel learner runs it: measures every gradient step.

    ``version`` is the learner's ``train_iter`` before the step. The lag of a transition is that version minus
    the ``behaviour_version`` that acted; its mean and max over the batch join the policy's info dict (so
    ``LogHook`` logs them as ``learner/policy_lag_*``). Every step adds its info and the transitions it trained
    on (``learn_mode.samples``) to ``stats``. A prepared rollout's minibatches (PPO's) carry no stamp of their own:
    their lag is the rollout's, so the k-th gradient step on a rollout collected by the learner's version has lag k.
    """

    def __init__(self, learn_mode: Any, stats: 'ParallelStats') -> None:
        self._mode = learn_mode
        self.stats = stats
        self.version = 0
        self._rollout_versions: Optional[torch.Tensor] = None  # the stamps of the rollout last prepared

    def prepare(self, rollout: ttorch.Tensor) -> Any:
        self._rollout_versions = rollout[VERSION_KEY] if VERSION_KEY in rollout else None
        return self._mode.prepare(rollout)

    def forward(self, batch: ttorch.Tensor) -> Dict[str, float]:
        versions = batch[VERSION_KEY] if VERSION_KEY in batch else None
        if versions is not None:  # the policy sees the batch without the stamp (and the caller's batch keeps it)
            batch = make_tree({k: v for k, v in batch.items() if k != VERSION_KEY})
        else:
            versions = self._rollout_versions
        info = self._mode.forward(batch)
        if not isinstance(info, dict):  # (the learner's contract check says what is wrong, in one line)
            return info
        if versions is not None:
            lag = (self.version - versions).float()
            info['policy_lag_mean'] = float(lag.mean())
            info['policy_lag_max'] = float(lag.max())
        self.stats.on_update(info, self._mode.samples(batch))
        self.version += 1
        return info

    def __getattr__(self, name: str) -> Any:
        return getattr(self._mode, name)


class ParallelStats:
    """What a parallel run measures: env steps per actor, learner samples, idle time, policy lag."""

    def __init__(self, actor_num: int) -> None:
        self.steps_per_actor = [0] * actor_num
        self.segments = 0
        self.discarded_segments = 0
        self.discarded_env_steps = 0  # sync: their env steps, charged to neither env_step nor the budget
        self.samples_trained = 0
        self.idle_s = 0.0
        self.lag_sum = 0.0
        self.lag_batches = 0
        self.lag_max = 0.0
        self.max_acting_lag = 0
        self.start = time.perf_counter()
        self.end: Optional[float] = None

    def running_s(self) -> float:
        """Seconds since the workers started (until the loop ended, once it has)."""
        return max(1e-9, (self.end or time.perf_counter()) - self.start)

    def on_segment(self, message: SegmentMessage) -> None:
        self.steps_per_actor[message.actor_id] += message.env_steps
        self.segments += 1
        if message.max_acting_lag is not None:
            self.max_acting_lag = max(self.max_acting_lag, int(message.max_acting_lag))

    def on_update(self, info: Dict[str, float], samples: int) -> None:
        self.samples_trained += samples
        if 'policy_lag_mean' in info:
            self.lag_sum += info['policy_lag_mean']
            self.lag_batches += 1
            self.lag_max = max(self.lag_max, info['policy_lag_max'])

    def rates(self) -> Dict[str, Any]:
        wall = self.running_s()
        per_actor = [steps / wall for steps in self.steps_per_actor]
        return {
            'env_steps_per_s': sum(per_actor),
            'env_steps_per_s_per_actor': per_actor,
            'learner_samples_per_s': self.samples_trained / wall,
            'learner_idle_fraction': min(1.0, self.idle_s / wall),
            'policy_lag_mean': self.lag_sum / self.lag_batches if self.lag_batches else None,
            'policy_lag_max': self.lag_max if self.lag_batches else None,
        }


def resolve_steps_per_update(cfg: Any) -> float:
    """``parallel.env_steps_per_update``, by default the serial off-policy loop's (0: no limit)."""
    if cfg.parallel.env_steps_per_update is not None:
        return float(cfg.parallel.env_steps_per_update)
    updates = cfg.policy.learn.get('update_per_collect', 0)
    if not updates:
        return 0.0
    return env_steps_per_collection(cfg) / updates


def check_before_the_cluster(cfg: Any, sync: bool, resume: bool, data_parallel: Any) -> None:
    """What a Ray run refuses without its cluster, checked before it connects (or starts one): the learner's
    ``policy.cuda`` on a machine without CUDA, and with ``parallel.actor_num`` given, the budget's arithmetic."""
    from ...policy.base import check_cuda

    check_cuda(cfg.policy)
    if cfg.parallel.actor_num is not None and not resume and data_parallel is None:
        from ..budget import check_learning_budget
        check_learning_budget(cfg, 'parallel', int(cfg.parallel.actor_num), sync)


def resolve_actor_num(cfg: Any, backend: str, ray: Any = None) -> int:
    """``parallel.actor_num``, or by default one actor per core this process may use (its affinity mask: ``taskset``
    or a container's CPU set; Ray: as many as the cluster's CPUs hold; with ``parallel.learner_num`` = N
    data-parallel learners: rounded down to a multiple of N, at least N)."""
    if cfg.parallel.actor_num is not None:
        return int(cfg.parallel.actor_num)
    if backend == 'ray':
        from .ray_backend import cluster_actor_num
        return cluster_actor_num(ray, cfg)
    learners = int(cfg.parallel.get('learner_num', 1))
    return max(learners, cpu_cores() // learners * learners)


def warn_more_actors_than_cores(cfg: Any, backend: str) -> None:
    """A ``ConfigWarning`` when the local backend's actor processes outnumber the cores this process may use (a
    config written for a bigger machine): said once the run has started (a start refused says only why)."""
    num, cores = int(cfg.parallel.actor_num), cpu_cores()
    if backend == 'local' and num > cores:
        warnings.warn(f"parallel.actor_num={num} actor processes share the {cores} CPU cores this process may use "
                      f"with the learner: they take turns (context switches, staler weights), no faster than {cores} "
                      f"would collect; set parallel.actor_num <= {cores} (or leave it unset: one per core) unless "
                      f"the envs wait on something other than the CPU", ConfigWarning, stacklevel=2)


class ParallelRun(RunBase):
    """The learner side of a parallel run: learn-only policy, buffer, learner, backend (the rest: ``RunBase``)."""

    def __init__(self, cfg: Any, exp_dir: Optional[str], resume: bool, progress: bool, backend: str,
                 ray_address: Optional[str] = None, learner_hooks: Sequence[LearnerHook] = (),
                 config_changes: Sequence[str] = (), data_parallel: Any = None) -> None:
        super().__init__(cfg, progress, 'parallel')
        #: this process's rank of the data-parallel learners (``parallel.learner_num > 1``; ``parallel/learners.py``):
        #: it learns from its own share of the actors; rank 0 alone evaluates and writes
        self.ddp = data_parallel
        self.writes = data_parallel is None or data_parallel.rank == 0
        self.held_batch: Optional[ttorch.Tensor] = None  # data-parallel: sampled, waiting for every rank to have one
        self.sampled_nothing = False  # this turn's ``sample`` gave no batch (read and reset by ``done``)
        self.sync = check_setup(cfg, backend, ray_address)
        self.backend_name = backend
        self.backend: Optional[Backend] = None
        self._ray, self._owns_ray = None, False
        if backend == 'ray':
            check_before_the_cluster(cfg, self.sync, resume, data_parallel)  # (a Ray start-up takes ~15 s)
            from .ray_backend import connect
            self._ray, self._owns_ray = connect(ray_address)
        self._learner_hooks = learner_hooks
        self._incarnations: Optional[List[int]] = None
        self.randomizer: Optional[DomainRandomizer] = None
        self.ingest: Optional[SegmentIngest] = None  # the thread that pushes arrived segments (async, local backend)
        self._pinned: List[ttorch.Tensor] = []  # with the ingest thread and policy.cuda: two page-locked batches
        try:
            cfg.parallel.actor_num = resolve_actor_num(cfg, self.backend_name, self._ray)
            self._start(exp_dir, resume, config_changes)
            self.backend = self._make_backend(self._incarnations)
            self.backend.budget = EnvStepBudget(self.local_cfg, self.own_env_step, self.sync)
            if (getattr(self.backend, 'segment_pools', None) is not None and not self.sync and self.buffer is not None
                    and not hasattr(self.buffer, 'update_priority')):  # (priorities are written by the learner)
                self.ingest = SegmentIngest(self.buffer)
        except BaseException:  # e.g. a corrupt checkpoint to resume from; a user's model failing the inference
            # server's first step: a new run's folder is taken back, nothing having run
            self._close_taking_back(self.new_folder)
            if self._owns_ray:
                from .ray_backend import disconnect
                disconnect(self._ray)
            raise
        if self.writes:  # (data-parallel ranks: rank 0, for the run's actors)
            warn_more_actors_than_cores(cfg, self.backend_name)

    def _build(self) -> None:
        # data-parallel learners: this rank's share of the actors, batches and budget (``cfg`` stays the run's)
        if self.ddp is not None:
            from .learners import rank_config
            cfg = self.local_cfg = rank_config(self.cfg, self.ddp.world, self.ddp.rank)
        else:
            cfg = self.local_cfg = self.cfg
        self.randomizer = DomainRandomizer.from_config(cfg)  # the actors draw their own; the learner records them
        if self.randomizer is not None and self.randomizer.apply_to_evaluator:
            self.randomizer.evaluator_record = {'params': self.randomizer.evaluator_params(cfg.env.evaluator_env_num)}
        with make_env_manager(cfg, 'collector', 1, cfg.seed) as probe:  # the spaces the policy is built for
            spaces = (probe.observation_space, probe.action_space)
        check_start(cfg, 'parallel', *spaces, actors=cfg.parallel.actor_num, sync=self.sync, resume=self.resuming,
                    ranks=self.ddp.world if self.ddp is not None else 1)
        self.policy = create_policy(cfg, *spaces, enable_field=('learn',), init_weights=self.init_weights)
        self._weights: Optional[Dict[str, torch.Tensor]] = None
        if not policy_class(cfg).on_policy:
            self.buffer = build_buffer(cfg)
        self.stats = ParallelStats(cfg.parallel.actor_num)
        self.learn_mode = LagTrackingLearnMode(self.policy.learn_mode, self.stats)
        self.log_hook = LogHook(cfg.policy.learn.learner.log_freq, None)
        hooks: List[LearnerHook] = [self.log_hook, CheckpointHook(
            cfg.policy.learn.learner.save_ckpt_freq, cfg.policy.learn.learner.save_ckpt_every_s,
            self.ddp.agree_any if self.ddp is not None else None)]
        if cfg.policy.learn.get('lr_decay_iters', 0):
            hooks.append(LinearLRDecayHook(cfg.policy.learn.lr_decay_iters))
        hooks += list(self._learner_hooks)
        if self.ddp is None:
            self.learner = Learner(self.learn_mode, None, hooks, self.state_provider, buffer=self.buffer)
        else:  # gradients all-reduced; checkpoints hold every rank's state, written by rank 0
            self.learner = self.ddp.learner(self.policy, hooks, self.state_provider, buffer=self.buffer,
                                            learn_mode=self.learn_mode)
        # the evaluator runs elsewhere (a worker of the backend): the learner records what it reports
        self.evals = EvalHistory(cfg.policy.eval.evaluator.eval_freq)
        self.steps_per_update = resolve_steps_per_update(cfg)
        self.segment_steps = env_steps_per_collection(cfg)
        self.segment_samples = 0  # the most train samples one segment brought (receive_limit)
        self._env_step = 0  # the env steps of this process's actors
        self._other_env_step = 0  # data-parallel: the other ranks' actors' (as of the last turn)
        self.eval_pending: Optional[EvalRequest] = None
        self.startup_s = 0.0
        self._last_report = 0.0
        self._first_iter, self._first_env_step = 0, 0
        self._first_total_env_step = 0  # every rank's, at the start (data-parallel)

    @property
    def env_step(self) -> int:
        """The run's env steps: with data-parallel learners, every rank's actors' (the others' as of the last turn)."""
        return self._env_step + self._other_env_step

    @env_step.setter
    def env_step(self, value: int) -> None:
        self._env_step = value - self._other_env_step

    @property
    def own_env_step(self) -> int:
        """The env steps of this rank's actors (``env_step`` with one learner)."""
        return self._env_step

    def weights(self) -> Dict[str, torch.Tensor]:
        """The learner's current weights, for publishing.

        The base ``Policy.get_weights`` is the model's state dict, whose tensors are the parameters and buffers
        themselves (updated in place by the optimizer), so it is taken once; a policy that overrides
        ``get_weights`` is asked every time.
        """
        if type(self.policy).get_weights is not Policy.get_weights:
            return self.policy.get_weights()
        if self._weights is None:
            self._weights = self.policy.get_weights()
        return self._weights

    def _make_backend(self, incarnations: Optional[List[int]]) -> Backend:
        weights_fn, warn = self.weights, self.warn
        if self.backend_name == 'local':
            from .local import LocalBackend
            return LocalBackend(self.local_cfg, weights_fn, warn, self.sync, incarnations, evaluates=self.writes)
        if self.backend_name == 'inline':
            from .inline import InlineBackend
            return InlineBackend(self.local_cfg, weights_fn, warn, self.sync, incarnations, evaluates=self.writes)
        from .ray_backend import RayBackend
        return RayBackend(self.local_cfg, weights_fn, warn, self.sync, incarnations, self._ray, self._owns_ray,
                          evaluates=self.writes)

    # ---- checkpoints -------------------------------------------------------------------------------
    def _extra_state(self) -> Dict[str, Any]:
        backend = self.backend
        return {'parallel': {'backend': self.backend_name, 'actor_num': int(self.local_cfg.parallel.actor_num),
                             'actor_incarnations': list(backend.incarnations) if backend is not None else None,
                             'own_env_step': int(self.own_env_step),  # data-parallel: each rank's own
                             # data-parallel: the batch sampled and held for the other ranks (``agreed_batch``),
                             # which a once-only buffer (max_use=1) no longer holds: trained first after --resume
                             'held_batch': None if self.held_batch is None else to_dict(self.held_batch)},
                'domain_randomization': self.randomizer.state_dict() if self.randomizer is not None else None}

    def _opened(self) -> None:
        if self.randomizer is not None:  # the actors' draws are recorded here, as their segments arrive
            self.randomizer.attach(self.exp_dir, self.logger, self.progress.message)

    def _restore_extra(self, state: Dict[str, Any]) -> None:
        """The counters; the actors' incarnation counters (fresh env seeds after a resume) go to the backend."""
        self.learn_mode.version = self.learner.train_iter
        total, own = int(state.get('env_step', 0)), (state.get('parallel') or {}).get('own_env_step')
        self._env_step = int(own) if self.ddp is not None and own is not None else total
        self._other_env_step = total - self._env_step
        self._first_iter, self._first_env_step = self.learner.train_iter, self.own_env_step
        self._first_total_env_step = total
        held = (state.get('parallel') or {}).get('held_batch')
        self.held_batch = make_tree(held) if held is not None and self.ddp is not None else None
        incarnations = (state.get('parallel') or {}).get('actor_incarnations')
        self._incarnations = list(incarnations) if incarnations else None
        if self.randomizer is not None and state.get('domain_randomization'):
            self.randomizer.history = list(state['domain_randomization']['history'])

    # ---- data --------------------------------------------------------------------------------------
    def take(self, messages: List[SegmentMessage]) -> List[ttorch.Tensor]:
        """Account for arrived segments (steps, returns, lag); push them into the buffer, or return them (sync)."""
        kept = []
        if messages:  # new data: an empty sample before it says nothing about the buffer now
            self.sampled_nothing = False
        for message in messages:
            self.env_step += message.env_steps
            self.stats.on_segment(message)
            if self.randomizer is not None:
                self.randomizer.note_actor_segment(message.actor_id, message.incarnation, self.cfg.parallel.actor_num,
                                                   self.env_step)
            self.collected(message.env_steps, message.episode_returns, message.episode_lengths)
            for ret in message.episode_returns:
                self.recent_returns.append(ret)
                self.logger.add_scalar('collector/episode_return', ret, self.env_step)
            self.segment_samples = max(self.segment_samples, sample_count(message.samples))
            if self.buffer is not None and not self.sync and self.is_cut(message):
                # the budget's last steps (the segment that spends it, which is not trained on): shorter than the
                # buffer's segments, not stored, as in the serial pipeline (a fixed-length buffer could not hold them)
                if message.release is not None:
                    message.release()
                continue
            if self.ingest is not None:  # pushed by the ingest thread, which frees its shared-memory slot
                self.ingest.submit(message.samples, message.release)
                continue
            samples = numpy_to_tree(message.samples)
            if self.buffer is not None and not self.sync:  # (a slot's view copied for a buffer that keeps it)
                self.buffer.push(samples if message.release is None or push_copies(self.buffer) else samples.clone())
            else:  # arrays viewing a shared-memory slot are copied out before it is freed
                kept.append(samples if message.release is None else samples.clone())
            if message.release is not None:
                message.release()
        return kept

    def is_cut(self, message: SegmentMessage) -> bool:
        """The segment is shorter than a full one (``policy.collect.n_sample``): the budget cut it."""
        return message.env_steps < self.segment_steps

    def discard(self, message: SegmentMessage) -> None:
        """Sync mode: a segment that is not the round's (a restarted actor's duplicate of a segment it had delivered,
        or one of an older version) is dropped uncharged: not in ``env_step``, its steps given back to the budget
        (``EnvStepBudget.refund``), so the budget counts the data trained on and every data-parallel rank's rounds
        keep the same length; counted in ``discarded_segments`` / ``discarded_env_steps``."""
        self.backend.budget.refund(message.env_steps)
        self.stats.on_segment(message)  # the actor's throughput (it did step its envs)
        self.stats.discarded_segments += 1
        self.stats.discarded_env_steps += message.env_steps
        if self.randomizer is not None:  # the actor's re-draws count its segments
            self.randomizer.note_actor_segment(message.actor_id, message.incarnation, self.cfg.parallel.actor_num,
                                               self.env_step)
        if message.release is not None:
            message.release()

    def sample(self, batch_size: int) -> Optional[ttorch.Tensor]:
        """A batch from the buffer (data-parallel: the batch held from an earlier turn first); with the ingest thread,
        None only once every segment handed to it is pushed."""
        batch = self._sample(batch_size)
        self.sampled_nothing = batch is None
        return batch

    def _sample(self, batch_size: int) -> Optional[ttorch.Tensor]:
        if self.held_batch is not None:
            batch, self.held_batch = self.held_batch, None
            return batch
        if self.ingest is None:
            return self.buffer.sample(batch_size)
        with self.ingest.lock:
            batch = self._sample_into(batch_size)
        if batch is None and self.ingest.pending():
            self.ingest.drain()
            with self.ingest.lock:
                batch = self._sample_into(batch_size)
        return batch

    def _sample_into(self, batch_size: int) -> Optional[ttorch.Tensor]:
        """With ``policy.cuda``: the batch sampled straight into one of two preallocated page-locked batches, in turn
        (the update's copy to the GPU reads one while the next is sampled into the other; no pinning copy)."""
        if not self.cfg.policy.get('cuda') or not hasattr(self.buffer, 'batch_buffer'):
            return self.buffer.sample(batch_size)
        if not self._pinned:
            first = self.buffer.batch_buffer(batch_size, pin_memory=True)
            if first is None:
                return self.buffer.sample(batch_size)
            self._pinned = [first, self.buffer.batch_buffer(batch_size, pin_memory=True)]
        self._pinned.reverse()
        return self.buffer.sample(batch_size, out=self._pinned[0])

    def state_provider(self) -> Dict[str, Any]:
        if self.ingest is None:
            return super().state_provider()
        self.ingest.drain()  # the buffer holds every segment counted in env_step
        with self.ingest.lock:
            return super().state_provider()

    def receive_limit(self, at_least_one: bool) -> Optional[int]:
        """How many segments a buffer whose samples are trained on once (``max_use=1``: IMPALA's queue) takes now
        without overwriting a sample never trained on; None: no limit — a replay buffer (``max_use`` > 1, its
        replay ratio set by ``parallel.env_steps_per_update`` alone), or actors that run free
        (``env_steps_per_update=0``)."""
        room = getattr(self.buffer, 'room', None)
        if room is None or getattr(self.buffer, 'max_use', None) != 1 or not self.steps_per_update:
            return None
        if getattr(self, 'ingest', None) is not None:
            self.ingest.drain()  # the room left once what was handed to the ingest thread is pushed
        if not self.segment_samples:
            return 1  # the first segment tells how many samples a segment brings
        fits = room(4 * self.segment_samples) // self.segment_samples
        return max(fits, 1) if at_least_one else fits

    def wait(self, timeout: float = IDLE_WAIT_S, max_segments: Optional[int] = None) -> List[ttorch.Tensor]:
        """Idle until data arrives (at most ``timeout``; at most ``max_segments`` taken); the time counts as
        learner idle time."""
        start = time.perf_counter()
        messages = self.backend.receive(timeout, max_segments)
        self.stats.idle_s += time.perf_counter() - start
        return self.take(messages)

    def train(self, batch: ttorch.Tensor) -> None:
        """One gradient step (measured by ``LagTrackingLearnMode``)."""
        self.learner.train(batch)

    def train_rollout(self, rollout: ttorch.Tensor) -> None:
        """On-policy: the gradient steps the policy makes on one rollout (``Learner.train_rollout``), within the budget."""
        self.learner.train_rollout(self.learn_mode.prepare(rollout), 0, self.cfg.max_train_iter)

    def publish(self) -> None:
        self.backend.publish(self.learner.train_iter)

    def learner_behind(self) -> bool:
        """True when the learner has taken in more env steps per update than ``parallel.env_steps_per_update``."""
        if not self.steps_per_update:
            return False
        allowed = (self.learner.train_iter - self._first_iter + 1) * self.steps_per_update + self.segment_steps
        return self.own_env_step - self._first_env_step > allowed

    def done(self) -> bool:
        """The start of every turn of a loop: log finished evaluations; True when the run stops (solved, out of
        budget). Data-parallel learners: one all-reduce tells every rank whether one stops (rank 0 solved, the
        budget, a Ctrl-C or SIGTERM, a rank that can train no more) and sums the ranks' env steps; each rank's actors
        collect its share of ``max_env_step`` (a rank whose share is spent trains on from its buffer while the others
        collect theirs; once that buffer gives no batch, with nothing more to come, every rank stops, with a note)."""
        stop = self.handle_evals() or not self.budget_left()
        if self.ddp is None:
            return stop
        # sync rounds: a rank whose share is spent would wait for a round its actors are granted nothing for: all
        # stop (a guard: the ranks' shares run out in the same round, since a discarded duplicate is not charged)
        share_spent = self.sync and self.backend.budget.left <= 0
        # async: a rank whose share is collected and whose buffer gave no batch (a once-only queue, max_use=1, drained)
        # can never train again, and the ranks train only together: all stop (rather than the others collecting the
        # rest of their shares untrained)
        dry, self.sampled_nothing = not self.sync and self.sampled_nothing and self.backend.budget.collected(), False
        stop = self.ddp.end_turn(self, stop or share_spent or dry, self.own_env_step)
        self._other_env_step = self.ddp.total_count - self.own_env_step
        if stop and self.writes and not (self.solved or self.interrupted or interrupt_pending()) and self.budget_left():
            self.progress.message(f"[acframe] a data-parallel rank can train no more (its share of max_env_step is "
                                  f"collected and its replay buffer gives no more batches; the ranks train together): "
                                  f"every rank stops at env step {self.env_step} of {self.cfg.max_env_step}")
        return stop or not self.budget_left()  # the budget again, with every rank's env steps of now (the same on all)

    def all_ranks(self, flag: bool) -> bool:
        """``flag`` held on every data-parallel rank (``flag`` itself with one learner)."""
        return flag if self.ddp is None else self.ddp.agree_all(flag)

    def agreed_batch(self, batch: Optional[ttorch.Tensor]) -> Optional[ttorch.Tensor]:
        """The batch to train on now: ``batch``; with data-parallel learners, only when every rank has one (they all
        step together) — otherwise None, and this rank's batch is held for its next turn (``sample`` returns it)."""
        if self.all_ranks(batch is not None):
            return batch
        if batch is not None:
            self.held_batch = batch
        return None

    def end_turn(self) -> None:
        """The end of a turn of the learner's loop: publish the weights, end the learner's round, report progress."""
        self.publish()
        self.learner.end_round()
        self.report()

    # ---- evaluation --------------------------------------------------------------------------------
    def eval_due(self) -> bool:
        return self.writes and self.eval_pending is None and self.evals.due(self.learner.train_iter)

    def request_eval(self) -> None:
        it = self.learner.train_iter
        self.eval_pending = EvalRequest(it, it, self.env_step, weights_to_numpy(self.policy.get_weights()))
        self.evals.mark(it)  # (not due again while it runs)
        self.backend.request_eval(self.eval_pending)

    def handle_evals(self) -> bool:
        """Log finished evaluations; True when one reached the stop value (confirmed, with ``env.n_confirm_episode``)."""
        while True:
            result = self.backend.eval_result()
            if result is None:
                return self.solved
            self._eval_done(result)

    def _eval_done(self, result: EvalResult) -> None:
        request, self.eval_pending = self.eval_pending, None
        score = eval_score(result.mean, len(result.returns), result.confirm)
        if self.evals.record(result.train_iter, result.env_step, result.mean, score):
            if request is not None and request.version == result.version:
                self.save_best(score, {k: torch.from_numpy(v) for k, v in request.weights.items()},
                               result.train_iter, result.env_step)
        if result.confirm is not None:
            self.evals.record_confirmation(result.confirm)
        self.announce_eval(result.train_iter, result.env_step, result.mean, result.std, result.confirm, result.solved,
                           result.returns, result.lengths)

    def final_eval(self) -> None:
        """Wait for the evaluation under way, then evaluate the final weights unless that one already did (not after
        an interrupt; data-parallel ranks > 0 never evaluate)."""
        if not self.writes or self.interrupted:
            return
        while self.eval_pending is not None:
            self.backend.receive(0.05)
            self.handle_evals()
        if not self.solved and self.evals.last_eval_iter != self.learner.train_iter:
            self.request_eval()
            while self.eval_pending is not None:
                self.backend.receive(0.05)
                self.handle_evals()

    # ---- reporting ---------------------------------------------------------------------------------
    def report(self, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self._last_report < REPORT_EVERY_S:
            return
        self._last_report = now
        rates = self.run_rates()
        step = self.env_step
        self.logger.add_scalar('parallel/env_steps_per_s', rates['env_steps_per_s'], step)
        for actor_id, rate in enumerate(rates['env_steps_per_s_per_actor']):
            self.logger.add_scalar(f'parallel/actor{actor_id}_env_steps_per_s', rate, step)
        self.logger.add_scalar('parallel/learner_samples_per_s', rates['learner_samples_per_s'], step)
        self.logger.add_scalar('parallel/learner_idle_fraction', rates['learner_idle_fraction'], step)
        self.logger.add_scalar('parallel/actor_restarts', self.backend.restarts, step)
        lag = f"{rates['policy_lag_mean']:.1f}" if rates['policy_lag_mean'] is not None else '-'
        per_actor = '/'.join(f"{r:,.0f}" for r in rates['env_steps_per_s_per_actor'])
        ranks = ' on this rank' if self.ddp is not None else ''
        self.progress.update(
            f"env_step {self.env_step} | {rates['env_steps_per_s']:,.0f} steps/s (actors{ranks} {per_actor}) | "
            f"iter {self.learner.train_iter} | {rates['learner_samples_per_s']:,.0f} samples/s | "
            f"idle {rates['learner_idle_fraction']:.0%} | lag {lag} | {self.progress_tail()}", force=force)

    def drive(self, loop: Callable[['ParallelRun'], None]) -> Dict[str, Any]:
        """Start the workers, run ``loop``, stop the actors, evaluate the final weights; finish (``RunBase.drive``)."""
        def run_workers(run: 'ParallelRun') -> None:
            # data-parallel: a Ctrl-C or SIGTERM while the workers start is held for the loop's first turn, where every
            # rank stops together (raised here, this rank would gather the final checkpoint while the others wait in
            # their turn's all-reduce); and one during the hand-over is raised after its collectives
            held = interrupts_deferred if self.ddp is not None else contextlib.nullcontext
            with held():
                started = time.perf_counter()
                self.workers_started = False
                self.backend.start(self.learner.train_iter)
                self.workers_started = True
                self.startup_s = time.perf_counter() - started
                self.stats.start = time.perf_counter()
                try:
                    loop(self)
                finally:  # interrupted too: the rates are over the time the workers ran, not their shutdown
                    self.stats.end = time.perf_counter()
            self.backend.stop_actors()
            if self.ddp is not None:  # the other ranks' share of the final checkpoint: they need not wait for the eval
                with interrupts_deferred():
                    self.learner.hand_over_final_state()
            self.final_eval()

        return super().drive(run_workers)

    def _stopping_note(self) -> str:
        return 'stopping the workers, '

    def _stop_workers(self) -> None:
        if self.ingest is not None:
            self.ingest.close()
        if self.backend is not None:
            self.backend.close()

    def _final_report(self) -> None:
        self.report(force=True)

    def run_rates(self) -> Dict[str, Any]:
        """``stats.rates()``, with data-parallel learners the env steps of every rank's actors (the per-actor rates
        are this rank's): what the progress line and the summary both say."""
        rates = self.stats.rates()
        if self.ddp is not None:
            rates['env_steps_per_s'] = (self.env_step - self._first_total_env_step) / self.stats.running_s()
        return rates

    def _extra_summary(self, wall: float) -> Dict[str, Any]:
        rates = self.run_rates()
        measured = {
            'startup_s': round(self.startup_s, 3),
            'env_steps_per_s': round(rates['env_steps_per_s'], 1),
            'env_steps_per_s_per_actor': [round(r, 1) for r in rates['env_steps_per_s_per_actor']],
            'learner_samples_per_s': round(rates['learner_samples_per_s'], 1),
            'learner_idle_fraction': round(rates['learner_idle_fraction'], 4),
            'policy_lag_mean': None if rates['policy_lag_mean'] is None else round(rates['policy_lag_mean'], 3),
            'policy_lag_max': rates['policy_lag_max'],
        }
        return {
            'backend': self.backend_name,
            'sync_mode': 'sync' if self.sync else 'async',
            'actor_num': int(self.cfg.parallel.actor_num),
            # measured while the workers ran (start-up aside)
            **measured,
            'samples_trained': int(self.stats.samples_trained),
            'max_policy_lag': int(self.cfg.parallel.max_policy_lag),
            'max_acting_lag': int(self.stats.max_acting_lag),
            'actor_restarts': int(self.backend.restarts),
            'worker_failures': list(self.backend.failures),
            'segments': int(self.stats.segments),
            'discarded_segments': int(self.stats.discarded_segments),
            'discarded_env_steps': int(self.stats.discarded_env_steps),  # sync: not in env_steps nor the budget
            # local backend: segments whose arrays came through shared memory (parallel.shared_memory_segments)
            'segments_through_shared_memory': int(getattr(getattr(self.backend, 'segment_pools', None), 'shared', 0)),
            # train samples the replay buffer overwrote before they were ever trained on (the actors outran it)
            'samples_evicted_unused': int(getattr(self.buffer, 'evicted_unused', 0)),
        }

    def _result_line(self, summary: Dict[str, Any]) -> str:
        return (f"[acframe] {self._ending()}: "
                f"{summary['env_steps']} env steps, {self._iters_text(summary)}{self._learners_text(summary)}, "
                f"{summary['wall_s']:.1f} s, "
                f"{summary['env_steps_per_s']:,.0f} env steps/s over {summary['actor_num']} "
                f"actor{'s' if summary['actor_num'] != 1 else ''}, "
                f"learner idle {summary['learner_idle_fraction']:.0%}, best eval return {return_text(summary['best_eval_return'])} "
                f"-> {self.exp_dir}")

    def trained_policy(self) -> Policy:
        """A policy with every mode of its class, holding the learner's model and optimizer state."""
        modes = policy_class(self.cfg).modes
        policy = create_policy(self.cfg, enable_field=modes, model=self.policy.model)
        if 'learn' in modes:
            policy.learn_mode.load_state_dict(self.policy.learn_mode.state_dict())
        return policy


def async_loop(run: ParallelRun) -> None:
    """Train whenever the buffer gives a batch, publish after every update, take segments as they come.

    While the learner is behind (``ParallelRun.learner_behind``) it leaves the segments waiting, so the
    actors wait too; when the buffer has no batch it waits for segments (idle time).
    """
    batch_size = run.local_cfg.policy.learn.batch_size
    if run.ingest is not None:
        return _async_ingest_loop(run, batch_size)
    while True:
        if not run.learner_behind():
            limit = run.receive_limit(at_least_one=False)
            if limit != 0:
                run.take(run.backend.receive(0.0, limit))
        if run.done():
            return
        if run.eval_due():
            run.request_eval()
        batch = run.agreed_batch(run.sample(batch_size) if run.backend.may_train(run.learner.train_iter + 1) else None)
        if batch is None:
            # behind: one segment more, not every waiting one — a learner slower than its actors then trains on
            # all they collect, and they wait (IMPALA's bounded queue), instead of the buffer overwriting unused data
            run.wait(max_segments=1 if run.learner_behind() else run.receive_limit(at_least_one=True))
            continue
        run.train(batch)
        run.end_turn()


def _async_ingest_loop(run: ParallelRun, batch_size: int) -> None:
    """``async_loop`` with the ingest thread: the batch is sampled first, then the segments that arrived are handed
    to the thread, which copies them into the buffer while this update runs (the next ``receive_limit`` waits for it)."""
    while True:
        if run.done():
            return
        if run.eval_due():
            run.request_eval()
        may_train = run.backend.may_train(run.learner.train_iter + 1)
        batch = run.sample(batch_size) if may_train else None
        if not run.learner_behind():
            limit = run.receive_limit(at_least_one=False)
            messages = run.backend.receive(0.0, limit) if limit != 0 else []
            run.take(messages)
            if batch is None and messages and may_train:  # what just arrived may make a batch: sample it first
                batch = run.sample(batch_size)
        batch = run.agreed_batch(batch)
        if batch is None:
            run.wait(max_segments=1 if run.learner_behind() else run.receive_limit(at_least_one=True))
            continue
        run.train(batch)
        run.end_turn()


def sync_loop(run: ParallelRun) -> None:
    """Rounds: one segment from every actor, all collected with the current weights; then update and publish."""
    updates = int(run.cfg.policy.learn.get('update_per_collect', 1))
    batch_size = run.local_cfg.policy.learn.get('batch_size', 1)
    actor_num = int(run.local_cfg.parallel.actor_num)
    while True:
        if run.done():
            return
        if run.eval_due():
            run.request_eval()
        version = run.learner.train_iter
        round_samples: Dict[int, ttorch.Tensor] = {}
        while len(round_samples) < actor_num:
            start = time.perf_counter()
            messages = run.backend.receive(IDLE_WAIT_S)
            run.stats.idle_s += time.perf_counter() - start
            length = run.backend.budget.round_env_steps(version)
            for message in messages:
                if (message.behaviour_version == version and message.actor_id not in round_samples
                        and message.env_steps == (length or message.env_steps)):
                    round_samples[message.actor_id] = run.take([message])[0]
                else:  # a restarted actor's duplicate (of this round, or collected with these weights on the grant
                    # of an earlier round, whose length it has), or data of an older version: not charged
                    run.discard(message)
        trees = [round_samples[i] for i in sorted(round_samples)]
        if run.buffer is None:  # on-policy: the time-major segments side by side are one rollout
            run.train_rollout(ttorch.cat(trees, dim=1))
        else:
            for tree in trees:
                run.buffer.push(tree)
            for _ in range(updates):
                batch = run.buffer.sample(batch_size) if run.learner.train_iter < run.cfg.max_train_iter else None
                if not run.all_ranks(batch is not None):  # data-parallel: every rank makes the round's updates, or none
                    break
                run.train(batch)
        run.end_turn()
