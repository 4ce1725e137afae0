"""Observation encoders, chosen by ``policy.model.encoder``: ``'mlp'``, ``'nature_cnn'`` or ``'impala_resnet'``.

* ``mlp``: vector observations ``(obs,)`` → an MLP over ``encoder_hidden_size_list``.
* ``nature_cnn``: the DQN network of Mnih et al. 2015 (Nature): conv 32×8×8/4, 64×4×4/2, 64×3×3/1, each ReLU,
  flattened, then the MLP over ``encoder_hidden_size_list`` (the paper's ``[512]``). Needs images ≥ 36×36.
  With ``encoder_channels=[16, 32]`` only the first two layers (16×8×8/4, 32×4×4/2): the 2013 DQN network of
  Mnih et al. 2013, which A3C (Mnih et al. 2016) and IMPALA's "shallow" agent use with ``[256]`` — a third of
  the Nature CNN's multiply-adds on 84×84 frames.
* ``impala_resnet``: the IMPALA network of Espeholt et al. 2018 (fig. 3, "large"): per section a 3×3 conv,
  a 3×3/2 max-pool and two residual blocks (ReLU, conv, ReLU, conv, + input), channels (16, 32, 32), then
  ReLU, flattened, and the MLP over ``encoder_hidden_size_list`` (the paper's ``[256]``).

Image observations are ``(C, H, W)`` (channels first, as gymnasium's ``FrameStackObservation`` of grey frames
gives), ``(H, W)`` (one channel) or ``(H, W, C)`` with ``C <= 4`` (channels last, e.g. RGB); ``image_layout``
(``policy.model.image_layout``: ``'auto'``, ``'chw'`` or ``'hwc'``, or a dict of them by image key of a Dict
observation) says which for other shapes. ``'auto'`` refuses the shapes it cannot tell (``(64, 64, 6)``: six
channels last, or 64 channels of 64×6? ``(3, 3, 3)``?) rather than guess. They may carry any
leading dims (``(T, B, C, H, W)``). ``uint8`` images are converted to float in ``[0, 1]`` (``/255``) inside
the encoder, on the model's device, so they stay uint8 — 4× smaller — everywhere before it.

Dict observations mixing images and vectors (``obs_shape`` a dict ``{key: shape}``, e.g.
``{'image': [1, 8, 8], 'target': [2]}``) get a ``DictEncoder``: the image encoder above on every image key
(2-D/3-D shape), the vector keys (1-D) concatenated in ``obs_shape``'s order through ``vector_encoder`` (``'mlp'``
over ``vector_hidden_size_list``, or ``'identity'``), and every feature concatenated.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch
import torch.nn as nn

from .common import mlp

ENCODERS = ('mlp', 'nature_cnn', 'impala_resnet')
#: what the vector keys of a Dict observation go through
VECTOR_ENCODERS = ('mlp', 'identity')
#: how a 3-D image's dims are read (``policy.model.image_layout``)
IMAGE_LAYOUTS = ('auto', 'chw', 'hwc')
#: the papers' channels of each conv encoder
DEFAULT_CHANNELS = {'nature_cnn': (32, 64, 64), 'impala_resnet': (16, 32, 32)}


def image_layout(obs_shape: Sequence[int], layout: str = 'auto') -> Tuple[Tuple[int, int, int], str]:
    """``((C, H, W), layout)`` of an image observation shape; layout is ``'chw'``, ``'hw'`` or ``'hwc'``.

    ``layout`` (``policy.model.image_layout``) ``'chw'`` or ``'hwc'`` says how a 3-D shape is read; ``'auto'`` reads
    ``(H, W, C)`` when ``C <= 4 < H`` (RGB, RGBA) and ``(C, H, W)`` otherwise, and refuses (``ValueError``) the shapes
    it cannot tell: a last dim more than 4 and smaller than both others, e.g. ``(64, 64, 6)`` (more channels than
    RGB kept last, which read channels-first would train on 64 "channels" 6 pixels wide without a word), and a first
    and a last dim both at most 4, e.g. ``(3, 3, 3)`` (a 3×3 RGB view, or 3 channels of 3×3)."""
    if layout not in IMAGE_LAYOUTS:
        raise ValueError(f"policy.model.image_layout = {layout!r} is not one of {IMAGE_LAYOUTS}")
    shape = tuple(int(s) for s in obs_shape)
    if len(shape) == 2:
        return (1,) + shape, 'hw'
    if len(shape) != 3:
        raise ValueError(f"an image observation is (C, H, W), (H, W) or (H, W, C); got shape {list(shape)}")
    if layout == 'auto':
        if shape[0] > 4 < shape[2] < min(shape[0], shape[1]) or (shape[0] <= 4 and shape[2] <= 4):
            raise ValueError(
                f"image observations of shape {list(shape)} may be channels-last (H={shape[0]}, W={shape[1]}, "
                f"C={shape[2]}) or channels-first (C={shape[0]}, H={shape[1]}, W={shape[2]}): set "
                f"policy.model.image_layout='hwc' or 'chw' to say which")
        layout = 'hwc' if shape[-1] <= 4 < shape[0] else 'chw'
    if layout == 'hwc':
        return (shape[2], shape[0], shape[1]), 'hwc'
    return shape, 'chw'


def key_layouts(image_keys: Sequence[str], layout: Union[str, Mapping[str, str]]) -> Dict[str, str]:
    """The layout of each image key of a Dict observation: ``layout`` for all, or per key from a dict (``'auto'``
    for a key it leaves out); a key that is no image key of the observation is refused, naming them."""
    if not isinstance(layout, Mapping):
        return {key: layout for key in image_keys}
    unknown = sorted(set(layout) - set(image_keys))
    if unknown:
        raise ValueError(f"policy.model.image_layout names {unknown}, which are not image keys of the observation "
                         f"(its image keys: {list(image_keys)})")
    return {key: layout.get(key, 'auto') for key in image_keys}


class _ResidualBlock(nn.Module):
    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv0 = nn.Conv2d(channels, channels, 3, padding=1)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv1(torch.relu(self.conv0(torch.relu(x))))


def nature_cnn_trunk(in_channels: int, channels: Sequence[int]) -> nn.Sequential:
    """The Nature-DQN conv layers (8×8/4, 4×4/2, 3×3/1 with 3 ``channels``), ReLU after each, flattened; with 2
    ``channels`` the first two layers only: the 2013 DQN network that A3C and IMPALA's "shallow" agent use."""
    if len(channels) not in (2, 3):
        raise ValueError(f"policy.model.encoder_channels for 'nature_cnn' needs 3 entries (or 2: the shallow 2013 "
                         f"network); got {list(channels)}")
    sizes = [int(in_channels)] + [int(c) for c in channels]
    kernels = ((8, 4), (4, 2), (3, 1))
    layers = []
    for (kernel, stride), c_in, c_out in zip(kernels, sizes, sizes[1:]):
        layers += [nn.Conv2d(c_in, c_out, kernel, stride=stride), nn.ReLU()]
    return nn.Sequential(*layers, nn.Flatten())


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
                 channels: Optional[Sequence[int]] = None, layout: str = 'auto') -> None:
        super().__init__()
        (c, h, w), self.layout = image_layout(obs_shape, layout)
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


def dict_layout(obs_shape: Mapping[str, Any]) -> Tuple[Dict[str, List[int]], Dict[str, int]]:
    """``(image keys → shape, vector keys → size)`` of a Dict observation's ``obs_shape``, in its order."""
    images: Dict[str, List[int]] = {}
    vectors: Dict[str, int] = {}
    for key, shape in obs_shape.items():
        dims = [int(shape)] if isinstance(shape, int) else [int(s) for s in shape]
        if len(dims) == 1:
            vectors[str(key)] = dims[0]
        elif len(dims) in (2, 3):
            images[str(key)] = dims
        else:
            raise ValueError(f"policy.model.obs_shape['{key}'] = {dims}: a Dict observation's entries are vectors (1-D) "
                             f"or images (2-D/3-D)")
    if not images and not vectors:
        raise ValueError("policy.model.obs_shape is an empty dict: a Dict observation needs at least one key")
    return images, vectors


def vector_part(obs: Any, keys: Sequence[str]) -> torch.Tensor:
    """The vector keys of a Dict observation (a dict or a tree of ``(*lead, n_k)`` tensors) concatenated, float."""
    parts = [obs[k].float() for k in keys]
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)


class DictEncoder(nn.Module):
    """A Dict observation mixing images and vectors → one feature vector: an ``ImageEncoder`` per image key, the
    vector keys concatenated through an MLP (or as they are), all concatenated (images first, in key order)."""

    def __init__(self, obs_shape: Mapping[str, Any], encoder: str, hidden_size_list: Sequence[int], activation: str,
                 channels: Optional[Sequence[int]] = None, vector_encoder: str = 'mlp',
                 vector_hidden_size_list: Sequence[int] = (64,), layout: Union[str, Mapping[str, str]] = 'auto') -> None:
        super().__init__()
        images, vectors = dict_layout(obs_shape)
        if vector_encoder not in VECTOR_ENCODERS:
            raise ValueError(f"policy.model.vector_encoder '{vector_encoder}' is not one of {VECTOR_ENCODERS}")
        if images and encoder not in DEFAULT_CHANNELS:
            key = next(iter(images))
            raise ValueError(f"observation '{key}' of shape {images[key]} is an image: set policy.model.encoder="
                             f"'nature_cnn' or 'impala_resnet' (the conv encoder of a Dict observation's image keys)")
        self.image_keys = list(images)
        self.vector_keys = list(vectors)
        layouts = key_layouts(self.image_keys, layout)
        self.images = nn.ModuleDict({k: ImageEncoder(shape, encoder, hidden_size_list, activation, channels,
                                                    layouts[k]) for k, shape in images.items()})
        size = sum(vectors.values())
        hidden = list(vector_hidden_size_list) if vector_encoder == 'mlp' else []
        self.vector = mlp(size, hidden, activation) if vectors else None
        vector_out = (hidden[-1] if hidden else size) if vectors else 0
        self.output_size = sum(m.output_size for m in self.images.values()) + vector_out

    def forward(self, obs: Any) -> torch.Tensor:
        features = [self.images[k](obs[k]) for k in self.image_keys]
        if self.vector is not None:
            features.append(self.vector(vector_part(obs, self.vector_keys)))
        return features[0] if len(features) == 1 else torch.cat(features, dim=-1)


def build_encoder(obs_shape: Union[int, Sequence[int], Mapping[str, Any]], encoder: str = 'mlp',
                  hidden_size_list: Sequence[int] = (64, 64), activation: str = 'tanh',
                  channels: Optional[Sequence[int]] = None, vector_encoder: str = 'mlp',
                  vector_hidden_size_list: Sequence[int] = (64,),
                  layout: Union[str, Mapping[str, str]] = 'auto') -> Tuple[nn.Module, int]:
    """``(module, feature size)`` of the encoder named ``encoder`` (None: ``'mlp'``) for observations of ``obs_shape``
    (a dict ``{key: shape}`` for Dict observations: a ``DictEncoder``, its vector keys through ``vector_encoder``);
    ``layout`` (``policy.model.image_layout``) says how 3-D images are read (``image_layout()``): one for all, or a
    dict ``{image key: layout}`` for a Dict observation's (``key_layouts``)."""
    encoder = encoder or 'mlp'
    if encoder not in ENCODERS:
        raise ValueError(f"policy.model.encoder '{encoder}' is not one of {ENCODERS}")
    check_layer_sizes(hidden_size_list, 'encoder_hidden_size_list')
    check_layer_sizes(vector_hidden_size_list, 'vector_hidden_size_list')
    if channels is not None:
        check_layer_sizes(channels, 'encoder_channels', empty='a CNN of no convolution')
    if isinstance(obs_shape, Mapping):
        module = DictEncoder(obs_shape, encoder, hidden_size_list, activation, channels, vector_encoder,
                             vector_hidden_size_list, layout)
        return module, module.output_size
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
    if isinstance(layout, Mapping):
        raise ValueError(f"policy.model.image_layout = {dict(layout)!r} is a dict of a Dict observation's image keys; "
                         f"this observation is one image: give one of {IMAGE_LAYOUTS}")
    module = ImageEncoder(shape, encoder, hidden_size_list, activation, channels, layout)
    return module, module.output_size


def check_layer_sizes(sizes: Any, key: str, empty: str = '') -> None:
    """``sizes`` (``policy.model.<key>``) is a list of whole numbers > 0 — empty too, unless ``empty`` says what that
    would build; a ``ValueError`` naming the key otherwise (a negative size was torch's traceback, 8.5 cut to 8)."""
    whole = isinstance(sizes, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                                     for v in sizes)
    if not whole or (empty and not sizes):
        raise ValueError(f"policy.model.{key} = {sizes!r} must be a list of whole numbers > 0 (layer sizes)"
                         + (f", not empty ({empty})" if empty else ''))


def obs_size(obs_shape: Union[int, Sequence[int]]) -> int:
    """The number of elements of one observation."""
    return int(obs_shape if isinstance(obs_shape, int) else math.prod(obs_shape))
