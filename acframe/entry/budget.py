"""Start-up checks of a run's plan, before anything is written: can its budget ever let it learn, and does its
replay buffer fit in memory?

* ``check_learning_budget``: the arithmetic of what ``max_env_step`` delivers to the learner in each pipeline
  (``CollectionPlan``) against what the policy's learn mode declares it needs (``Policy.learn_needs``), and the
  buffer's own rules (``check_learn_config`` of the buffer class). A run that would make zero gradient steps
  (or zero replays, or minibatches larger than its rollouts) is refused with one line giving the numbers.
* ``check_buffer_memory``: the replay buffer's storage, estimated from the observation and action spaces
  (uint8 images stay uint8), against the memory available now.

``check_start`` runs both; every pipeline calls it once, after the env spaces are known.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from ..errors import ConfigError
from ..policy import env_steps_per_collection, policy_class
from ..registry import BUFFER_REGISTRY
from ..utils import available_memory

PIPELINES = ('serial', 'serial_onpolicy', 'parallel')
#: bytes per step besides observations and the policy's statistics: reward (4), terminated and truncated (2),
#: the behaviour version a parallel actor stamps (8)
_STEP_OVERHEAD_BYTES = 14


@dataclass(frozen=True)
class CollectionPlan:
    """How a pipeline turns ``max_env_step`` into data for the learner (counts in env steps over all collector envs)."""

    pipeline: str
    max_env_step: int
    #: collector envs of one actor (of the serial collector)
    num_envs: int
    #: env steps of one full segment (one collection of one actor)
    segment_steps: int
    #: actors collecting (1 in the serial pipelines)
    actors: int = 1
    #: parallel: rounds where every actor delivers one segment, trained on together
    sync: bool = False

    @classmethod
    def of(cls, cfg: Any, pipeline: str, actors: int = 1, sync: bool = False) -> 'CollectionPlan':
        if pipeline not in PIPELINES:
            raise ValueError(f"pipeline '{pipeline}' is not one of {PIPELINES}")
        return cls(pipeline, int(cfg.max_env_step), int(cfg.env.collector_env_num), env_steps_per_collection(cfg),
                   int(actors) if pipeline == 'parallel' else 1, bool(sync) and pipeline == 'parallel')

    def learner_env_steps(self, max_env_step: Optional[int] = None) -> int:
        """At most this many of the budget's env steps reach the learner in time to be trained on.

        * serial (off-policy): the whole segments (the budget's last, cut segment is not stored);
        * serial_onpolicy and parallel sync: everything collected (the last rollout/round is cut and trained on);
        * parallel async: the learner stops when the segment that spends the budget arrives, so that one is not
          trained on: nothing when one segment spends the whole budget, else at most all but one step per env.
        """
        budget = self.max_env_step if max_env_step is None else int(max_env_step)
        n, full = self.num_envs, self.segment_steps
        if self.pipeline == 'serial':
            return (budget + n - 1) // full * full
        if self.pipeline == 'serial_onpolicy' or self.sync:
            group = n * self.actors
            return -(-budget // group) * group
        if budget <= full:
            return 0
        return -(-budget // n) * n - n

    def rollout_steps(self) -> int:
        """Transitions of one full rollout an on-policy learner trains on at once (parallel sync: every actor's segment)."""
        return self.segment_steps * self.actors

    def describe(self, max_env_step: Optional[int] = None) -> str:
        budget = self.max_env_step if max_env_step is None else int(max_env_step)
        steps = self.learner_env_steps(budget)
        if self.pipeline == 'serial':
            whole = steps // self.segment_steps
            return (f"max_env_step={budget} gives the learner {steps} env steps ({whole} whole collection"
                    f"{'' if whole == 1 else 's'} of {self.segment_steps}; the budget's last, cut segment is not stored)")
        if self.pipeline == 'serial_onpolicy' or self.sync:
            return f"max_env_step={budget} collects at most {steps} env steps"
        return (f"max_env_step={budget} lets the parallel learner train on at most {steps} env steps (it stops when "
                f"the segment that spends the budget arrives; a full segment is {self.segment_steps} steps)")

    def budget_for(self, env_steps: int) -> int:
        """The smallest ``max_env_step`` whose ``learner_env_steps`` reach ``env_steps``."""
        low, high = 1, max(2, int(env_steps))
        while self.learner_env_steps(high) < env_steps:
            high *= 2
        while low < high:
            mid = (low + high) // 2
            if self.learner_env_steps(mid) >= env_steps:
                high = mid
            else:
                low = mid + 1
        return low


#: what the pipelines call on a replay buffer (docs/replay.md, "The contract"); ``update_priority`` is optional
BUFFER_CONTRACT = ('push', 'sample', '__len__', 'state_dict', 'load_state_dict', 'rng_state', 'set_rng_state')


def buffer_class(cfg: Any) -> type:
    """The class ``policy.other.replay_buffer.type`` names; a ``ConfigError`` naming the key for an unknown name or a
    class that lacks part of ``BUFFER_CONTRACT`` (at the start: a checkpoint would otherwise fail on it mid-run)."""
    name = cfg.policy.other.replay_buffer.get('type')
    cls = BUFFER_REGISTRY.get_for(name, 'policy.other.replay_buffer.type')
    lacking = [method for method in BUFFER_CONTRACT if not callable(getattr(cls, method, None))]
    if lacking:
        raise ConfigError(f"policy.other.replay_buffer.type='{name}': {getattr(cls, '__qualname__', cls)} lacks "
                          f"{', '.join(lacking)}; a buffer provides {', '.join(BUFFER_CONTRACT)} (docs/replay.md)")
    return cls


def check_learning_budget(cfg: Any, pipeline: str, actors: int = 1, sync: bool = False, budget: bool = True,
                          ranks: int = 1) -> None:
    """``ConfigError`` with the arithmetic when the run could never learn: its budget delivers less than the learn
    mode needs (``Policy.learn_needs``), a full rollout is smaller than a need per rollout, or the replay buffer
    can never give what the learner asks for (the buffer class's ``check_learn_config``). ``budget=False``: all but
    the budget's arithmetic (a resumed run has learned already; what its config asks of each rollout and of the
    buffer still holds). ``ranks``: ``cfg`` is one data-parallel rank's share of a run of that many (the parallel
    pipeline's ``rank_config``): the error says so, and the budget it asks for is the run's."""
    cls = policy_class(cfg)
    buffer_type = cfg.policy.other.replay_buffer.get('type') or ''
    if buffer_type and not cls.on_policy:
        check = getattr(buffer_class(cfg), 'check_learn_config', None)
        if check is not None:
            check(cfg.policy.other.replay_buffer, cfg.policy.learn)
    plan = CollectionPlan.of(cfg, pipeline, actors, sync)
    share = (f"with parallel.learner_num={ranks}, each rank has 1/{ranks} of the run's actors, batch and budget: "
             if ranks > 1 else '')
    for need in cls.learn_needs(cfg.policy):
        if need.scope == 'rollout':
            rollout = plan.rollout_steps()
            if rollout < need.env_steps:
                where = f" over {plan.actors} actors" if plan.actors > 1 else ''
                raise ConfigError(f"{share}one rollout holds {rollout} transitions (policy.collect.n_sample="
                                  f"{cfg.policy.collect.n_sample}{where}) but {need.wants} {need.env_steps}: the run "
                                  f"would make no {need.lacks}; {need.fix}")
            continue
        if budget and plan.learner_env_steps() < need.env_steps:
            steps = f"{need.env_steps} env step{'' if need.env_steps == 1 else 's'}"
            least = (plan.budget_for(need.env_steps) - 1) * ranks + 1  # the run's: each rank gets ceil(its / ranks)
            rounds = (f" (envs step together, a step of each a round: {least} gives {plan.learner_env_steps(least)})"
                      if ranks == 1 and least < need.env_steps else '')
            raise ConfigError(f"{share}{plan.describe()} but {need.wants} {steps}: the run would make 0 "
                              f"{need.lacks}; raise max_env_step to at least {least}{rounds} or {need.fix}")


# ---- memory ---------------------------------------------------------------------------------------------
def observation_bytes(space: Any) -> int:
    """Bytes one observation takes in a segment or buffer: uint8 images as uint8, everything else float32."""
    from ..envs import obs_storage_dtype

    spaces = getattr(space, 'spaces', None)
    if isinstance(spaces, dict):
        return sum(observation_bytes(sub) for sub in spaces.values())
    shape = tuple(getattr(space, 'shape', None) or (1,))
    dtype = getattr(space, 'dtype', None)
    itemsize = obs_storage_dtype(dtype).itemsize if dtype is not None else 4
    return int(np.prod(shape, dtype=np.int64)) * itemsize


def action_step_bytes(space: Any) -> int:
    """Bytes per step of the action and the behaviour policy's statistics a segment keeps (logits, or mean and std)."""
    nvec = getattr(space, 'nvec', None)
    if nvec is not None:  # MultiDiscrete: int64 actions, a logit per choice
        return 8 * int(np.size(nvec)) + 4 * int(np.sum(nvec))
    n = getattr(space, 'n', None)
    if n is not None:  # Discrete
        return 8 + 4 * int(n)
    return 3 * 4 * int(np.prod(getattr(space, 'shape', None) or (1,), dtype=np.int64))  # Box: action, mu, sigma


#: the share of the memory available at the start a replay buffer may take: the learner's batches and activations,
#: the segments in flight and the envs need the rest (DI-engine's Pong ACER file, a 16.3 GiB buffer of the 22 GiB
#: available, was killed by the kernel's OOM killer at 24 GiB: its learner's batches of 64 x 65 frames took 8 GiB)
BUFFER_MEMORY_SHARE = 0.5


def check_buffer_memory(cfg: Any, observation_space: Any, action_space: Any,
                        available: Callable[[], Optional[int]] = available_memory) -> None:
    """``ConfigError`` naming ``policy.other.replay_buffer.replay_buffer_size`` when the buffer's estimated storage
    (the buffer class's ``storage_bytes``) exceeds ``BUFFER_MEMORY_SHARE`` of the memory available; nothing is
    allocated to find out."""
    buffer_cfg = cfg.policy.other.replay_buffer
    buffer_type = buffer_cfg.get('type') or ''
    if not buffer_type or policy_class(cfg).on_policy:
        return
    estimate = getattr(BUFFER_REGISTRY.get(buffer_type), 'storage_bytes', None)
    size = buffer_cfg.get('replay_buffer_size')
    if estimate is None or not isinstance(size, int) or isinstance(size, bool):
        return
    unroll = policy_class(cfg).train_sample_len(cfg.policy)
    obs, step = observation_bytes(observation_space), action_step_bytes(action_space) + _STEP_OVERHEAD_BYTES
    frames = _dedup_frames(estimate, buffer_cfg, observation_space)
    need = estimate(size, obs, step, unroll, **frames)
    free = available()
    if free is None:
        return
    allowed = int(free * BUFFER_MEMORY_SHARE)
    if need <= allowed:
        return
    per_unit = max(1, estimate(1, obs, step, unroll, **frames))
    raise ConfigError(f"policy.other.replay_buffer.replay_buffer_size={size} would take about {_gib(need)} "
                      f"({per_unit} bytes per entry: {obs}-byte observations) but {_gib(free)} of memory is available, "
                      f"of which a buffer may take {BUFFER_MEMORY_SHARE:.0%} (the rest of the run needs the others); "
                      f"lower replay_buffer_size to at most {allowed // per_unit} (or free memory)")


def _dedup_frames(estimate: Callable[..., int], buffer_cfg: Any, observation_space: Any) -> dict:
    """``{'frames': {leaf: (K, frame_bytes)}}`` for a buffer that stores stacked frames deduplicated
    (``policy.other.replay_buffer.dedup_frames``, acframe.data.frames) and whose ``storage_bytes`` counts them."""
    import inspect

    from ..data.frames import space_frames

    if not buffer_cfg.get('dedup_frames', False) or 'frames' not in inspect.signature(estimate).parameters:
        return {}
    frames = space_frames(observation_space)
    return {'frames': frames} if frames else {}


def _gib(n: int) -> str:
    return f"{n / 2 ** 30:.1f} GiB" if n >= 2 ** 30 else f"{n / 2 ** 20:.1f} MiB"


def check_start(cfg: Any, pipeline: str, observation_space: Any, action_space: Any, actors: int = 1,
                sync: bool = False, resume: bool = False, ranks: int = 1) -> None:
    """Every start-up check of the run's plan (see the module docstring); raises ``ConfigError``.

    A resumed run has learned already (and may hold a buffer): its budget is not checked, what its config asks of a
    rollout and of the buffer is (``--accept-config-change`` may have changed it).
    """
    check_learning_budget(cfg, pipeline, actors, sync, budget=not resume, ranks=ranks)
    check_buffer_memory(cfg, observation_space, action_space)


__all__ = ['CollectionPlan', 'check_learning_budget', 'check_buffer_memory', 'check_start', 'available_memory']
