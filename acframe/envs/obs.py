"""How observations are stored and handed to models: images stay uint8, everything else becomes float32.

The model's encoder converts uint8 images to float (``/255``) on its own device (``models.encoders``), so
segments, replay buffers and messages between processes carry a quarter of the bytes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # torch is imported on first use: `acframe --list` and config errors answer without it
    import torch


def obs_storage_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype observations of ``dtype`` are stored in: uint8 stays uint8, any other becomes float32."""
    return np.dtype(np.uint8) if np.dtype(dtype) == np.uint8 else np.dtype(np.float32)


def obs_to_tensor(obs: np.ndarray) -> 'torch.Tensor':
    """A tensor of a batch of observations for a model: uint8 kept (no copy), the rest as float32."""
    import torch

    tensor = torch.from_numpy(np.ascontiguousarray(obs))
    return tensor if tensor.dtype == torch.uint8 else tensor.float()
