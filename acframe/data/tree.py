"""treetensor helpers: the one container for segments and batches."""
from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, Iterator, Tuple

import torch

with warnings.catch_warnings():  # treevalue registers itself with a deprecated torch API
    warnings.simplefilter('ignore', FutureWarning)
    import treetensor.torch as ttorch
    from treevalue.tree.common.storage import create_storage as _create_storage


def make_tree(data: Dict[str, Any]) -> ttorch.Tensor:
    """A treetensor tree over a nested dict of tensors, without copying.

    Use this rather than ``ttorch.Tensor(dict)``: that path formats every leaf (``repr``) while
    converting and costs milliseconds per segment; building from a storage costs microseconds.
    """
    return ttorch.Tensor(_create_storage(data))


def is_leaf(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and not isinstance(value, ttorch.Tensor)


def leaves(tree: ttorch.Tensor, prefix: str = '') -> Iterator[Tuple[str, torch.Tensor]]:
    """``(dotted_key, tensor)`` for every leaf."""
    for key, value in tree.items():
        if is_leaf(value):
            yield prefix + key, value
        else:
            yield from leaves(value, prefix + key + '.')


def to_dict(tree: ttorch.Tensor) -> Dict[str, Any]:
    """A nested plain dict of the tree's tensors (for torch.save and pickling)."""
    return {k: (v if is_leaf(v) else to_dict(v)) for k, v in tree.items()}


def nest(flat: Dict[str, Any]) -> Dict[str, Any]:
    """``{'a.b': x}`` -> ``{'a': {'b': x}}`` (dotted keys, as ``leaves`` gives them, back to a nested dict)."""
    out: Dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        *parents, last = key.split('.')
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def tree_map(fn: Callable[[torch.Tensor], torch.Tensor], tree: ttorch.Tensor) -> ttorch.Tensor:
    """A new tree with ``fn`` applied to every leaf."""
    return make_tree(_map_with_key(lambda _, leaf: fn(leaf), tree))


def to_device(data: Any, device: torch.device) -> Any:
    """A tensor or tree on ``device``; to a GPU through pinned (page-locked) memory, asynchronously.

    The copy keeps dtypes (uint8 images cross as uint8, a quarter of float32's bytes); on the CPU it is the
    identity. Later GPU work on the result is ordered after the copy by the CUDA stream.
    """
    device = torch.device(device)
    if device.type == 'cpu':
        return data

    def move(x: torch.Tensor) -> torch.Tensor:
        return x.pin_memory().to(device, non_blocking=True) if x.device.type == 'cpu' else x.to(device)

    return move(data) if is_leaf(data) else tree_map(move, data)


def flatten_lead(data: Any, dims: int) -> Any:
    """A tensor ``(d0, ..., d{dims-1}, *rest)`` as ``(d0 * ... * d{dims-1}, *rest)`` (a view where possible); a tree
    (a Dict observation) leaf by leaf, each keeping its own ``rest`` — what a model takes as one batch."""
    if is_leaf(data):
        return data.reshape((-1,) + tuple(data.shape[dims:]))
    return tree_map(lambda x: x.reshape((-1,) + tuple(x.shape[dims:])), data)


def lead_shape(data: Any, dims: int) -> Tuple[int, ...]:
    """The first ``dims`` dims of a tensor, or of a tree's leaves (which share them)."""
    leaf = data if is_leaf(data) else next(leaves(data))[1]
    return tuple(leaf.shape[:dims])


def split_segment(segment: ttorch.Tensor, unroll_len: int, drop_remainder: bool = False) -> ttorch.Tensor:
    """Cut a time-major segment ``(T, B, ...)`` into item-major train samples ``(B * T // U, U, ...)``.

    ``obs`` carries one extra step: each sample gets ``U + 1`` observations (its last one is the first of the
    next sample), so the learner can bootstrap. ``T`` must be a multiple of ``unroll_len``, unless
    ``drop_remainder``: then the last ``T % U`` steps are left out (a segment shorter than ``U`` gives none).
    """
    steps = int(segment.reward.shape[0])
    if steps % unroll_len and not drop_remainder:
        raise ValueError(f"segment length {steps} is not a multiple of unroll_len {unroll_len}")
    chunks = steps // unroll_len

    def cut(key: str, x: torch.Tensor) -> torch.Tensor:
        is_obs = key == 'obs' or key.startswith('obs.')  # (a Dict observation's keys: obs.image, obs.target, ...)
        length = unroll_len + 1 if is_obs else unroll_len
        if chunks == 0:
            return x.new_zeros((0, length) + tuple(x.shape[2:]))
        pieces = [x[k * unroll_len:k * unroll_len + length] for k in range(chunks)]
        # (chunks, U(+1), B, ...) -> (chunks * B, U(+1), ...)
        stacked = torch.stack(pieces).transpose(1, 2)
        return stacked.reshape((-1,) + tuple(stacked.shape[2:]))

    return make_tree(_map_with_key(cut, segment))


def _map_with_key(fn, tree, prefix=''):
    return {k: (fn(prefix + k, v) if is_leaf(v) else _map_with_key(fn, v, prefix + k + '.')) for k, v in tree.items()}
