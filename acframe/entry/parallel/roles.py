"""The worker roles every backend runs: ``ActorWorker`` (collect mode only) and ``EvalWorker`` (eval mode only).

The backends (local processes, Ray actors, inline) only move these objects' inputs and outputs around;
the code that steps envs and runs the policy is the same everywhere, so the inline backend can be
stepped through with a debugger and behaves like the others. Workers run their networks on the CPU
(``policy.cuda`` puts only the learner on the GPU).
"""
from __future__ import annotations

import copy
import sys
from typing import Any, Callable, Dict, Optional, Protocol, Sequence

import torch

from ...envs import make_env_manager
from ...envs.randomization import DomainRandomizer
from ...errors import RegistryError
from ...policy import create_policy
from ...policy.base import batch_size
from ...registry import import_names
from ...utils import set_global_seed, set_torch_threads
from ...worker import Evaluator, SampleCollector
from ...worker.collector import check_action_output
from ..evaluate import EVAL_SEED_OFFSET
from .messages import VERSION_KEY, EvalRequest, EvalResult, SegmentMessage, numpy_to_weights, tree_to_numpy


class WeightsSource(Protocol):
    """Where an actor gets its weights: the newest version number, and a copy of the newest weights."""

    def latest_version(self) -> int:
        ...

    def load_latest(self, load_weights: Callable[[Dict[str, torch.Tensor]], None]) -> int:
        """Pass the newest weights to ``load_weights`` and return their version."""
        ...


class HandedWeights:
    """A ``WeightsSource`` whose weights are handed over with each collect request (Ray, inline)."""

    def __init__(self) -> None:
        self._weights: Optional[Dict[str, torch.Tensor]] = None
        self._version = -1

    def set(self, weights: Dict[str, torch.Tensor], version: int) -> None:
        """Hand over the weights of ``version`` (ignored when not newer than what the source holds)."""
        if version > self._version:
            self._weights, self._version = weights, version

    def latest_version(self) -> int:
        return self._version

    def load_latest(self, load_weights: Callable[[Dict[str, torch.Tensor]], None]) -> int:
        if self._weights is not None:
            load_weights(self._weights)
        return self._version


class BoundedLagCollectMode:
    """The collect mode as an actor runs it: fresh weights at each segment start, bounded staleness while acting.

    Before every step the newest published version is read; when the weights acting are more than
    ``max_policy_lag`` versions behind it, the newest weights are copied in first. Every step's output gets
    ``behaviour_version`` (B,), the version that chose the action, so the learner can measure its lag.
    The collector's notices of episode starts reach the collect mode (a recurrent model zeroes those envs' states;
    new weights leave the states as they are).
    """

    def __init__(self, collect_mode: Any, source: WeightsSource, max_policy_lag: int) -> None:
        self._mode = collect_mode
        self.source = source
        self.max_policy_lag = int(max_policy_lag)
        self.version = -1
        self.max_acting_lag = 0
        self.mid_segment_refreshes = 0
        self._stamp = torch.zeros(0, dtype=torch.int64)
        self._stamp_key = (0, -1)
        self._checked = False  # the collect mode's outputs were checked (its first step)
        self.get_train_sample = collect_mode.get_train_sample
        self.policy_cfg = collect_mode.policy_cfg
        self.unroll_len = getattr(collect_mode, 'unroll_len', 1)
        self.episode_start = getattr(collect_mode, 'episode_start', None)  # (the collector skips None)

    def reset(self) -> None:
        self._mode.reset()

    def start_segment(self) -> None:
        """Copy the newest weights when newer ones exist; restart the lag record."""
        if self.source.latest_version() > self.version:
            self.version = self.source.load_latest(self._mode.load_weights)
        self.max_acting_lag = 0

    def forward(self, obs: Any) -> Dict[str, torch.Tensor]:
        newest = self.source.latest_version()
        if newest - self.version > self.max_policy_lag:
            self.version = self.source.load_latest(self._mode.load_weights)
            self.mid_segment_refreshes += 1
        if newest - self.version > self.max_acting_lag:
            self.max_acting_lag = newest - self.version
        output = self._mode.forward(obs)
        if not self._checked:  # the first step: the contract, before the action is read here
            check_action_output(output, '_forward_collect', batch_size(obs))
            self._checked = True
        envs = int(output['action'].shape[0])  # (obs may be a Dict observation's dict of tensors)
        if self._stamp_key != (envs, self.version):
            self._stamp_key = (envs, self.version)
            self._stamp = torch.full((envs,), self.version, dtype=torch.int64)
        output[VERSION_KEY] = self._stamp  # the collector copies it into the segment
        return output


def worker_config(cfg: Any) -> Any:
    """A worker's own copy of the config: its policy runs on the CPU, whatever the learner uses."""
    cfg = copy.deepcopy(cfg)
    cfg.policy.cuda = False
    import_worker_modules(cfg.import_names)
    return cfg


def import_worker_modules(names: Sequence[str], refuse_under: Sequence[str] = ()) -> None:
    """``registry.import_names`` in a worker process (an actor, the evaluator, a data-parallel rank): in a Ray worker,
    a module it cannot import is named as that node's (the learner imported it: it is not importable there)."""
    try:
        import_names(names, refuse_under=refuse_under)
    except RegistryError as exc:
        node = _ray_node()
        if node is None:
            raise
        raise RegistryError(f"a Ray worker on node {node}: {exc}; the learner imported it, so it is not importable "
                            f"there: import_names' modules must be importable on every node of the cluster (install "
                            f"them, or start the cluster with a Ray runtime_env that ships them; docs/parallel.md)"
                            ) from exc


def _ray_node() -> Optional[str]:
    """The address of the Ray node this process is a worker of, or None (not in a Ray worker)."""
    ray = sys.modules.get('ray')
    try:
        if ray is None or not ray.is_initialized():
            return None
        return str(ray.util.get_node_ip_address())
    except Exception:  # noqa: BLE001 - (another Ray's API: the error is said without the node)
        return 'unknown'


def actor_seed(cfg: Any, actor_id: int, incarnation: int) -> int:
    """The seed of an actor's envs and RNGs: every actor and every restart of it gets fresh env seeds.

    Actor 0's first incarnation uses the serial pipeline's collector seeds.
    """
    return int(cfg.seed) + (incarnation * int(cfg.parallel.actor_num) + actor_id) * int(cfg.env.collector_env_num)


class ActorWorker:
    """One actor: ``env.collector_env_num`` envs, a collect-only policy and a collector.

    ``collect()`` returns one ``SegmentMessage``: the collect mode's train samples (as numpy) of one segment,
    each step stamped with the weights version that acted.
    """

    def __init__(self, cfg: Any, actor_id: int, incarnation: int, source: WeightsSource, inference: Any = None) -> None:
        cfg = worker_config(cfg)
        self.actor_id, self.incarnation = actor_id, incarnation
        seed = actor_seed(cfg, actor_id, incarnation)
        set_global_seed(seed)
        set_torch_threads(cfg.policy.learn.torch_threads)
        # each actor's own env set (the seeds' index): its domain-randomized parameters are drawn for it
        self.randomizer = DomainRandomizer.from_config(cfg, actor=incarnation * int(cfg.parallel.actor_num) + actor_id,
                                                       watch_sync=True)
        self.env = (self.randomizer.make_collector_env() if self.randomizer is not None else
                    make_env_manager(cfg, 'collector', cfg.env.collector_env_num, seed, watch_sync=True))
        try:
            policy = create_policy(cfg, self.env.observation_space, self.env.action_space, enable_field=('collect',))
            # parallel.inference='server': the forward passes run in the inference server (inference_server.py)
            self.mode = (inference.collect_mode(policy.collect_mode) if inference is not None else
                         BoundedLagCollectMode(policy.collect_mode, source, cfg.parallel.max_policy_lag))
            self.collector = SampleCollector(self.env, self.mode, cfg.policy.collect.n_sample)
        except BaseException:
            self.env.close()
            raise
        self.env_steps = 0

    @property
    def version(self) -> int:
        return self.mode.version

    def collect(self, steps: Optional[int] = None) -> SegmentMessage:
        """One segment of ``steps`` steps per env (default: the collector's, from ``policy.collect.n_sample``)."""
        self.mode.start_segment()
        segment = self.collector.collect(steps)
        versions = segment[VERSION_KEY]
        oldest = int(versions.min())
        samples = self.mode.get_train_sample(segment)
        if VERSION_KEY not in samples and 'reward' in samples:  # the policy rebuilt its samples: stamp them whole
            samples[VERSION_KEY] = torch.full(tuple(samples.reward.shape), oldest, dtype=torch.int64)
        stats = self.collector.pop_episode_stats()
        steps = int(versions.numel())
        self.env_steps += steps
        if self.randomizer is not None:  # re-draws the env parameters when due
            self.env = self.randomizer.after_collect(self.collector, self.env_steps)
        return SegmentMessage(self.actor_id, self.incarnation, tree_to_numpy(samples), steps, oldest,
                              self.mode.max_acting_lag, stats['returns'], stats['lengths'])

    def close(self) -> None:
        self.env.close()


class EvalWorker:
    """The evaluator role: its own envs and an eval-only policy; evaluates the weights it is given."""

    def __init__(self, cfg: Any) -> None:
        cfg = worker_config(cfg)
        set_global_seed(cfg.seed)
        set_torch_threads(cfg.policy.learn.torch_threads)
        randomizer = DomainRandomizer.from_config(cfg, watch_sync=True)
        self.env = (randomizer.make_evaluator_env(cfg.env.evaluator_env_num, cfg.seed + EVAL_SEED_OFFSET)
                    if randomizer is not None else
                    make_env_manager(cfg, 'evaluator', cfg.env.evaluator_env_num, cfg.seed + EVAL_SEED_OFFSET, watch_sync=True))
        try:
            self.policy = create_policy(cfg, self.env.observation_space, self.env.action_space, enable_field=('eval',))
        except BaseException:
            self.env.close()
            raise
        self.evaluator = Evaluator(self.env, self.policy.eval_mode, cfg.env.n_evaluator_episode, cfg.env.stop_value,
                                   cfg.policy.eval.evaluator.eval_freq, n_confirm_episode=cfg.env.n_confirm_episode)

    def evaluate(self, request: EvalRequest, weights: Optional[Dict[str, Any]] = None) -> EvalResult:
        """Evaluate ``weights`` (default: the request's) as version ``request.version``."""
        weights = request.weights if weights is None else weights
        self.policy.eval_mode.load_weights(numpy_to_weights(weights))
        result = self.evaluator.evaluate(request.train_iter, request.env_step)
        return EvalResult(request.version, request.train_iter, request.env_step, result['mean'], result['std'],
                          result['returns'], result['lengths'], result['solved'], result['confirm'])

    def close(self) -> None:
        self.env.close()

