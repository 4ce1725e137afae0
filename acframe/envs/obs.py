"""How observations are stored and handed to models: images stay uint8, everything else becomes float32.

The model's encoder converts uint8 images to float (``/255``) on its own device (``models.encoders``), so
segments, replay buffers and messages between processes carry a quarter of the bytes.

A Dict observation mixing images and vectors (``envs.gym_env.FlattenDictObservation``) is a dict of such
arrays, one per key (a uint8 image beside a float32 vector); the helpers here take either form.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Mapping, Sequence, Tuple, Union

import numpy as np

if TYPE_CHECKING:  # torch is imported on first use: `acframe --list` and config errors answer without it
    import torch

#: a batch of observations: one array, or one array per key of a Dict observation
ObsArray = Union[np.ndarray, Dict[str, np.ndarray]]


def obs_storage_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype observations of ``dtype`` are stored in: uint8 stays uint8, any other becomes float32."""
    return np.dtype(np.uint8) if np.dtype(dtype) == np.uint8 else np.dtype(np.float32)


def obs_to_tensor(obs: Any) -> Any:
    """A tensor of a batch of observations for a model: uint8 kept (no copy), the rest as float32; a Dict
    observation gives a dict of such tensors."""
    import torch

    if isinstance(obs, Mapping):
        return {k: obs_to_tensor(v) for k, v in obs.items()}
    tensor = torch.from_numpy(np.ascontiguousarray(obs))
    return tensor if tensor.dtype == torch.uint8 else tensor.float()


def obs_buffer(lead: Tuple[int, ...], example: ObsArray, zeros: bool = False) -> ObsArray:
    """Storage ``(*lead, *shape)`` for observations like the batch ``example`` ``(B, *shape)`` (per key of a Dict
    observation), in the storage dtype: the collector's preallocated segment buffers."""
    if isinstance(example, Mapping):
        return {k: obs_buffer(lead, v, zeros) for k, v in example.items()}
    alloc = np.zeros if zeros else np.empty
    return alloc(tuple(lead) + example.shape, dtype=obs_storage_dtype(example.dtype))


def put_obs(buffer: ObsArray, index: Any, value: ObsArray) -> None:
    """``buffer[index] = value``, per key for a Dict observation (the collector's per-step write)."""
    if isinstance(buffer, dict):
        for key, part in buffer.items():
            part[index] = value[key]
    else:
        buffer[index] = value


def stack_obs(items: Sequence[Any]) -> ObsArray:
    """One batch from single observations (arrays, or dicts of arrays for a Dict observation)."""
    if items and isinstance(items[0], Mapping):
        return {k: np.stack([item[k] for item in items]) for k in items[0]}
    return np.stack(items)
