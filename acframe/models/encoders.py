"""Observation encoders, chosen by ``policy.model.encoder``: ``'mlp'``, ``'nature_cnn'`` or ``'impala_resnet'``.

* ``mlp``: vector observations ``(obs,)`` → an MLP over ``encoder_hidden_size_list``.
* ``nature_cnn``: the DQN network of Mnih et al. 2015 (Nature): conv 32×8×8/4, 64×4×4/2, 64×3×3/1, each ReLU,
  flattened, then the MLP over ``encoder_hidden_size_list`` (the paper's ``[512]``). Needs images ≥ 36×36.
* ``impala_resnet``: the IMPALA network of Espeholt et al. 2018 (fig. 3, "large"): per section a 3×3 conv,
  a 3×3/2 max-pool and two residual blocks (ReLU, conv, ReLU, conv, + input), channels (16, 32, 32), then
  ReLU, flattened, and the MLP over ``encoder_hidden_size_list`` (the paper's ``[256]``).

Image observations are ``(C, H, W)`` (channels first, as gymnasium's ``FrameStackObservation`` of grey frames
gives), ``(H, W)`` (one channel) or ``(H, W, C)`` with ``C <= 4`` (channels last, e.g. RGB). They may carry any
leading dims (``(T, B, C, H, W)``). ``uint8`` images are converted to float in ``[0, 1]`` (``/255``) inside
the encoder, on the model's device, so they stay uint8 — 4× smaller — everywhere before it.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Tuple, Union

import torch
import torch.nn as nn

from .common import mlp

ENCODERS = ('mlp', 'nature_cnn', 'impala_resnet')
#: the papers' channels of each conv encoder
DEFAULT_CHANNELS = {'nature_cnn': (32, 64, 64), 'impala_resnet': (16, 32, 32)}


def image_layout(obs_shape: Sequence[int]) -> Tuple[Tuple[int, int, int], str]:
    """``((C, H, W), layout)`` of an image observation shape; layout is ``'chw'``, ``'hw'`` or ``'hwc'``."""
    shape = tuple(int(s) for s in obs_shape)
    if len(shape) == 2:
        return (1,) + shape, 'hw'
    if len(shape) != 3:
        raise ValueError(f"an image observation is (C, H, W), (H, W) or (H, W, C); got shape {list(shape)}")
    if shape[-1] <= 4 < shape[0]:
        return (shape[2], shape[0], shape[1]), 'hwc'
    return shape, 'chw'


class _ResidualBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv1(torch.relu(self.conv0(torch.relu(x))))


def nature_cnn_trunk(in_channels: int, channels: Sequence[int]) -> nn.Sequential:
    """The Nature-DQN conv layers (8×8/4, 4×4/2, 3×3/1 with ``channels``), ReLU after each, flattened."""
    if len(channels) != 3:
        raise ValueError(f"policy.model.encoder_channels for 'nature_cnn' needs 3 entries; got {list(channels)}")
    c0, c1, c2 = (int(c) for c in channels)
    return nn.Sequential(nn.Conv2d(in_channels, c0, 8, stride=4), nn.ReLU(), nn.Conv2d(c0, c1, 4, stride=2), nn.ReLU(),
                         nn.Conv2d(c1, c2, 3, stride=1), nn.ReLU(), nn.Flatten())


def impala_resnet_trunk(in_channels: int, channels: Sequence[int]) -> nn.Sequential:
    """IMPALA's residual sections (conv 3×3, max-pool 3×3/2, two residual blocks) per entry of ``channels``."""
    layers = []
    size = in_channels
    for out in channels:
        layers += [nn.Conv2d(size, int(out), 3, padding=1), nn.MaxPool2d(3, stride=2, padding=1),
                   _ResidualBlock(int(out)), _ResidualBlock(int(out))]
        size = int(out)
    return nn.Sequential(*layers, nn.ReLU(), nn.Flatten())


class ImageEncoder(nn.Module):
    """A conv trunk and an MLP on its flattened output, for images with any leading dims."""

    def __init__(self, obs_shape: Sequence[int], encoder: str, hidden_size_list: Sequence[int], activation: str,
                 channels: Optional[Sequence[int]] = None) -> None:
        super().__init__()
        (c, h, w), self.layout = image_layout(obs_shape)
        self.image_ndim = len(tuple(obs_shape))
        channels = tuple(channels) if channels else DEFAULT_CHANNELS[encoder]
        self.trunk = nature_cnn_trunk(c, channels) if encoder == 'nature_cnn' else impala_resnet_trunk(c, channels)
        with torch.no_grad():
            try:
                flat = int(self.trunk(torch.zeros(1, c, h, w)).shape[-1])
            except RuntimeError as exc:
                raise ValueError(f"policy.model.encoder '{encoder}' does not fit images of shape {list(obs_shape)} "
                                 f"(nature_cnn needs at least 36x36; use 'impala_resnet' for small images): {exc}") from exc
        self.head = mlp(flat, list(hidden_size_list), activation)
        self.output_size = int(list(hidden_size_list)[-1]) if hidden_size_list else flat

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        lead = obs.shape[:obs.dim() - self.image_ndim]
        x = obs.reshape((-1,) + tuple(obs.shape[len(lead):]))
        if self.layout == 'hw':
            x = x.unsqueeze(1)
        elif self.layout == 'hwc':
            x = x.permute(0, 3, 1, 2)
        x = x.contiguous(memory_format=torch.channels_last)  # (the copy is of uint8 bytes, before the float)
        x = x.float().div_(255.0) if x.dtype == torch.uint8 else x.float()
        out = self.head(self.trunk(x))
        return out.reshape(tuple(lead) + (out.shape[-1],))


def use_channels_last(model: nn.Module) -> nn.Module:
    """Store the conv weights of every image encoder in ``model`` channels-last (NHWC), the layout the CPU's
    oneDNN convolutions run fastest in (measured: 1.7x for the Nature CNN's learner step). Call it after the
    weights are initialised (``nn.init.orthogonal_`` needs contiguous weights); state dicts are unaffected."""
    for module in model.modules():
        if isinstance(module, ImageEncoder):
            module.trunk.to(memory_format=torch.channels_last)
    return model


def build_encoder(obs_shape: Union[int, Sequence[int]], encoder: str = 'mlp', hidden_size_list: Sequence[int] = (64, 64),
                  activation: str = 'tanh', channels: Optional[Sequence[int]] = None) -> Tuple[nn.Module, int]:
    """``(module, feature size)`` of the encoder named ``encoder`` (None: ``'mlp'``) for observations of ``obs_shape``."""
    encoder = encoder or 'mlp'
    if encoder not in ENCODERS:
        raise ValueError(f"policy.model.encoder '{encoder}' is not one of {ENCODERS}")
    shape = [int(obs_shape)] if isinstance(obs_shape, int) else [int(s) for s in obs_shape]
    if encoder == 'mlp':
        if len(shape) != 1:
            raise ValueError(f"observations of shape {shape} are images: set policy.model.encoder='nature_cnn' "
                             f"or 'impala_resnet' (the 'mlp' encoder takes vectors)")
        hidden = list(hidden_size_list)
        return mlp(shape[0], hidden, activation), (hidden[-1] if hidden else shape[0])
    if len(shape) not in (2, 3):
        raise ValueError(f"policy.model.encoder '{encoder}' takes image observations (C, H, W); got shape {shape}: "
                         f"use encoder='mlp' for vectors")
    module = ImageEncoder(shape, encoder, hidden_size_list, activation, channels)
    return module, module.output_size


def obs_size(obs_shape: Union[int, Sequence[int]]) -> int:
    """The number of elements of one observation."""
    return int(obs_shape if isinstance(obs_shape, int) else math.prod(obs_shape))
