"""Running statistics that make observation and reward normalization part of the policy.

* ``RunningMeanStd``: the mean and (population) variance of a stream of batches, merged batch by batch with
  Chan et al.'s parallel algorithm — the update of Stable-Baselines3's ``RunningMeanStd`` (same initial
  ``count = epsilon``, ``mean = 0``, ``var = 1``). Kept as float64 buffers of an ``nn.Module``, so they travel in
  the model's ``state_dict``: checkpoints, the weights parallel actors receive, and exported models carry them.
* ``ObsNormalizer``: ``clip((x − mean) / sqrt(var + eps), ±clip)`` in front of a model's encoders. Only the
  learn mode updates it (from each batch's observations: before the loss; A2C and PPO after a rollout's last
  step); collect and eval modes apply it as it is, so evaluation is frozen and parallel actors normalize exactly
  as the learner does. For Dict observations it normalizes the vector keys only (``vector_keys``; their
  statistics concatenated in that order) and passes images through: the image encoder scales uint8 images.
* ``obs_normalizer(obs_shape, clip)``: the ``ObsNormalizer`` of ``policy.model.obs_norm`` for an observation shape
  (vector, or a Dict's vector keys; images are refused) — what VAC and ACER's models build; ``normalize_obs``
  applies it when a model has one.
* ``RewardNormalizer``: SB3 VecNormalize's ``norm_reward`` — rewards divided by the running std of the
  discounted return ``G_t = γ·G_{t−1} + r_t`` (reset at every episode end), then clipped to ±clip.
* ``share_statistics``: one set of statistics for several training processes. Async workers (``-m async``): the
  statistics move to shared memory and every update holds one lock, so the workers' updates are applied one after
  another to the same numbers (reads — normalizing — take no lock: a worker may normalize with statistics another
  worker is half-way through updating, Hogwild-style, as it reads the weights). Data-parallel ranks
  (``parallel.learner_num``): every update first combines the batch moments of every rank's batch
  (``combine_moments`` in rank order), so every rank merges the same whole-batch moments and holds the same numbers.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from itertools import accumulate
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import torch
import torch.nn as nn

from ..utils import bounded_lock
from .encoders import dict_layout


#: seconds an update waits for the shared statistics' lock (held for microseconds) before it fails, naming it
STATISTICS_LOCK_TIMEOUT_S = 60.0

#: ``(count, mean, var) -> (count, mean, var)``: a batch's moments combined with every data-parallel rank's
MomentsReduce = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], Tuple[torch.Tensor, torch.Tensor, torch.Tensor]]


def combine_moments(count_a: torch.Tensor, mean_a: torch.Tensor, var_a: torch.Tensor, count_b: torch.Tensor,
                    mean_b: torch.Tensor, var_b: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The count, mean and population variance of the union of two sets from theirs (Chan, Golub & LeVeque 1979):
    ``n = n_a + n_b``, ``mean = mean_a + δ·n_b/n``, ``var = (var_a·n_a + var_b·n_b + δ²·n_a·n_b/n) / n`` with
    ``δ = mean_b − mean_a``. Counts are scalars (float64), means and variances of any one shape, element-wise."""
    total = count_a + count_b
    delta = mean_b - mean_a
    m2 = var_a * count_a + var_b * count_b + delta.pow(2) * count_a * count_b / total
    return total, mean_a + delta * count_b / total, m2 / total


class RunningMeanStd(nn.Module):
    """Mean and variance of everything passed to ``update`` (batches of shape ``(N, *shape)``).

    ``share_statistics`` makes several processes keep one set: ``update_lock`` (async workers on shared memory) is
    held while an update reads and writes the numbers; ``batch_reduce`` (data-parallel ranks) combines the batch's
    moments with every other rank's before the merge — a collective: every rank updates at the same points.
    """

    update_lock: Any = None
    batch_reduce: Optional[MomentsReduce] = None

    def __init__(self, shape: Union[int, Sequence[int]] = (), epsilon: float = 1e-4) -> None:
        super().__init__()
        shape = (int(shape),) if isinstance(shape, int) else tuple(shape)
        self.register_buffer('mean', torch.zeros(shape, dtype=torch.float64))
        self.register_buffer('var', torch.ones(shape, dtype=torch.float64))
        self.register_buffer('count', torch.tensor(float(epsilon), dtype=torch.float64))

    def __getstate__(self) -> Dict[str, Any]:
        # a copy (deepcopy, pickle) is a statistics of its own: the lock and the group stay with the original
        state = dict(self.__dict__)
        state.pop('update_lock', None)
        state.pop('batch_reduce', None)
        return state

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Merge the batch ``x`` (``(N, *shape)``, or any leading dims) into the running statistics."""
        x = x.detach().to(torch.float64).reshape((-1,) + tuple(self.mean.shape))
        n = x.new_tensor(float(x.shape[0]))
        batch_mean = x.mean(0) if x.shape[0] else torch.zeros_like(self.mean)
        batch_var = x.var(0, unbiased=False) if x.shape[0] else torch.zeros_like(self.var)
        if self.batch_reduce is not None:  # before the empty check: every rank takes part in the collective
            n, batch_mean, batch_var = self.batch_reduce(n, batch_mean, batch_var)
        if float(n) == 0:
            return
        with self._locked():
            total, mean, var = combine_moments(self.count, self.mean, self.var, n, batch_mean, batch_var)
            self.mean.copy_(mean)
            self.var.copy_(var)
            self.count.copy_(total)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        lock = self.update_lock
        if lock is None:
            yield
            return
        with bounded_lock(lock, STATISTICS_LOCK_TIMEOUT_S, lambda: RuntimeError(
                f"the shared running statistics' lock was not released within {STATISTICS_LOCK_TIMEOUT_S:g} s (an "
                f"async worker died holding it); resume the run")):
            yield


def running_statistics(*owners: Any) -> List[RunningMeanStd]:
    """Every ``RunningMeanStd`` in ``owners`` (modules — a model's ``obs_normalizer`` —, or objects holding them as
    attributes — ``RewardNormalizer.return_rms``; None is skipped), each once."""
    found: Dict[int, RunningMeanStd] = {}
    for owner in owners:
        if owner is None:
            continue
        roots = [owner] if isinstance(owner, nn.Module) else [v for v in vars(owner).values() if isinstance(v, nn.Module)]
        for root in roots:
            for module in root.modules():
                if isinstance(module, RunningMeanStd):
                    found.setdefault(id(module), module)
    return list(found.values())


def share_statistics(owners: Sequence[Any], lock: Any = None, reduce: Optional[MomentsReduce] = None) -> int:
    """Make every ``RunningMeanStd`` of ``owners`` one set of statistics for several processes; returns how many.

    ``lock`` (async workers, forked afterwards): the statistics move to shared memory and every update holds
    ``lock`` (a ``multiprocessing`` lock). ``reduce`` (data-parallel ranks): every update combines its batch's
    moments over the ranks first (``DataParallel.combine_moments``), so every rank merges the same numbers.
    """
    found = running_statistics(*owners)
    for stats in found:
        if lock is not None:
            stats.share_memory()
            stats.update_lock = lock
        if reduce is not None:
            stats.batch_reduce = reduce
    return len(found)


class ObsNormalizer(RunningMeanStd):
    """``forward(obs) = clip((obs − mean) / sqrt(var + eps), −clip, clip)`` in ``obs``'s dtype; ``update`` is explicit.

    With ``vector_keys`` (``{key: size}`` of a Dict observation's vector entries) ``obs`` is a dict or tree: each
    vector key is normalized with its slice of the statistics, every other key (images) is passed as it is.
    """

    def __init__(self, shape: Union[int, Sequence[int]], clip: float = 10.0, eps: float = 1e-8,
                 vector_keys: Optional[Dict[str, int]] = None) -> None:
        super().__init__(shape)
        if not clip > 0:
            raise ValueError(f"policy.model.obs_norm_clip = {clip!r} must be positive")
        self.clip = float(clip)
        self.eps = float(eps)
        self.vector_keys = dict(vector_keys) if vector_keys else None
        if self.vector_keys is not None:
            bounds = [0, *accumulate(self.vector_keys.values())]
            self._slices = {k: slice(a, b) for k, a, b in zip(self.vector_keys, bounds, bounds[1:])}

    def forward(self, obs: Any) -> Any:
        if self.vector_keys is None:
            return self._normalize(obs, slice(None))
        out = {k: obs[k] for k in obs.keys()}
        for key, part in self._slices.items():
            out[key] = self._normalize(out[key].float(), part)
        return out

    def _normalize(self, x: torch.Tensor, part: slice) -> torch.Tensor:
        scale = (self.var[part] + self.eps).sqrt().to(x.dtype)
        return ((x - self.mean[part].to(x.dtype)) / scale).clamp(-self.clip, self.clip)

    @torch.no_grad()
    def update(self, x: Any) -> None:
        """Merge a batch (``(N, *shape)`` or any leading dims; for Dict observations its vector keys) into the statistics."""
        if self.vector_keys is not None:
            x = torch.cat([x[k].reshape(-1, size).to(torch.float64) for k, size in self.vector_keys.items()], dim=-1)
        super().update(x)


@torch.no_grad()
def running_discounted_returns(reward: torch.Tensor, done: torch.Tensor, carry: Optional[torch.Tensor],
                               gamma: float) -> Tuple[torch.Tensor, torch.Tensor]:
    """Each env stream's running discounted return ``G_t = γ·G_{t−1} + r_t``, zeroed after every episode end.

    ``reward``, ``done``: ``(T, B)``, the B columns the same env streams as in the previous call; ``carry``: ``(B,)``
    float64, ``G`` after the previous call's last step (None, or another column count: every stream starts at 0).
    Returns ``(G (T, B) float64, carry (B,))`` — the statistic whose std ``learn.reward_norm`` divides rewards by.
    """
    steps, num_envs = reward.shape
    if carry is None or carry.shape != (num_envs,):
        carry = torch.zeros(num_envs, dtype=torch.float64)
    returns = torch.empty(steps, num_envs, dtype=torch.float64)
    keep = (~done).to(torch.float64)
    reward64 = reward.to(torch.float64)
    ret = carry
    for t in range(steps):  # a forward scan over T of (B,) vectors
        ret = ret * gamma + reward64[t]
        returns[t] = ret
        ret = ret * keep[t]
    return returns, ret


def scale_by_return_std(reward: torch.Tensor, return_rms: RunningMeanStd, clip: float, eps: float = 1e-8) -> torch.Tensor:
    """``clip(r / sqrt(var(G) + eps), ±clip)`` with ``var(G)`` from the running return statistics ``return_rms``."""
    scale = float((return_rms.var + eps).sqrt())
    return (reward / scale).clamp(-clip, clip)


class RewardNormalizer:
    """Divides rewards by the running std of the discounted return of each env stream (SB3's ``norm_reward``).

    ``__call__(reward, done)`` takes a time-major ``(T, B)`` segment whose columns are the same env streams from
    one call to the next (the on-policy collector's envs): it continues the per-column return
    ``G_t = γ·G_{t−1} + r_t`` (zeroed after every episode end), merges the ``T·B`` returns into the running
    statistics, and returns ``clip(r / sqrt(var(G) + eps), ±clip)``. A different column count restarts the returns.
    Its state (``state_dict``: tensors only) belongs in the learn mode's checkpoint state.
    """

    def __init__(self, gamma: float, clip: float = 10.0, eps: float = 1e-8) -> None:
        if not clip > 0:
            raise ValueError(f"policy.learn.reward_norm_clip = {clip!r} must be positive")
        self.gamma, self.clip, self.eps = float(gamma), float(clip), float(eps)
        self.return_rms = RunningMeanStd(())
        self.returns = torch.zeros(0, dtype=torch.float64)

    @torch.no_grad()
    def __call__(self, reward: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
        # the statistics live on the CPU whatever the reward's device (policy.cuda): a checkpoint's state reads anywhere
        returns, self.returns = running_discounted_returns(reward.cpu(), done.cpu(), self.returns, self.gamma)
        self.return_rms.update(returns)
        return scale_by_return_std(reward, self.return_rms, self.clip, self.eps)

    def state_dict(self) -> Dict[str, torch.Tensor]:
        return {'mean': self.return_rms.mean.clone(), 'var': self.return_rms.var.clone(),
                'count': self.return_rms.count.clone(), 'returns': self.returns.clone()}

    def load_state_dict(self, state: Dict[str, torch.Tensor]) -> None:
        self.return_rms.load_state_dict({k: state[k] for k in ('mean', 'var', 'count')})
        self.returns = state['returns'].clone().to(torch.float64)


def obs_normalizer(obs_shape: Union[int, Sequence[int], Mapping[str, Any]], clip: float) -> ObsNormalizer:
    """The ``ObsNormalizer`` of ``policy.model.obs_norm``: of vector observations, or of a Dict observation's vector keys."""
    if isinstance(obs_shape, Mapping):
        vectors = dict_layout(obs_shape)[1]
        if not vectors:
            raise ValueError(f"policy.model.obs_norm normalizes vector observations; the Dict observation "
                             f"{dict(obs_shape)} has none (the encoder scales uint8 images): set obs_norm=False")
        return ObsNormalizer(sum(vectors.values()), clip, vector_keys=vectors)
    if not isinstance(obs_shape, int) and len(obs_shape) > 1:
        raise ValueError(f"policy.model.obs_norm normalizes vector observations; observations of shape "
                         f"{list(obs_shape)} are images (the encoder scales uint8 images): set obs_norm=False")
    return ObsNormalizer(int(obs_shape if isinstance(obs_shape, int) else math.prod(obs_shape)), clip)


def normalize_obs(normalizer: Optional[ObsNormalizer], obs: Any) -> Any:
    """``obs`` through a model's ``obs_normalizer`` (``policy.model.obs_norm``), or as it is when it has none."""
    return obs if normalizer is None else normalizer(obs)
