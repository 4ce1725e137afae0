"""Export a trained policy: ``acframe -m export --load RUN_DIR_OR_CKPT --out FILE``.

The exported model maps a batch of observations ``obs (B, *obs_shape)`` (float32; uint8 for image spaces) to the deterministic actions
``(B,)`` int64 (discrete) or ``(B, D)`` float32 (continuous, clipped to the action space) — exactly what
``acframe.load_policy(...).act(obs)`` returns, because both run the same ``DeterministicActor``; whatever the
model does to observations (normalization kept in its state) is part of it.

* ``FILE.pt``: TorchScript (``torch.jit.load(FILE)(obs)``), needs only torch.
* ``FILE.onnx``: ONNX with input ``obs`` and output ``action`` and a dynamic batch size (the ``onnx`` extra:
  onnx and onnxscript to write it, onnxruntime to run it).

A Dict observation (an image with vectors) is a dict of batches: TorchScript takes the dict
(``model({'image': ..., 'target': ...})``), ONNX has one input per key, named by it.
"""
from __future__ import annotations

import os
import warnings
from typing import Any, Dict, Optional, Sequence

import gymnasium as gym
import torch

from .errors import ConfigError
from .utils import atomic_write_with

FORMATS = {'.pt': 'torchscript', '.onnx': 'onnx'}


def export_format(out: str) -> str:
    ext = os.path.splitext(out)[1].lower()
    if ext not in FORMATS:
        raise ConfigError(f"--out {out}: the file name must end in .pt (TorchScript) or .onnx (ONNX)")
    return FORMATS[ext]


def export_policy(target: str, out: str, config: Optional[Any] = None, overrides: Sequence[str] = (),
                  imports: Sequence[str] = ()) -> Dict[str, Any]:
    """Write the run's deterministic actor to ``out`` (format from its suffix); returns what was written.
    ``imports``: modules named for the run folder's ``import_names`` (``--import``)."""
    from .inference import load_policy

    fmt = export_format(out)
    if fmt == 'onnx':
        for module in ('onnx', 'onnxscript'):
            try:
                __import__(module)
            except ImportError as exc:
                raise ConfigError(f"--out {out}: ONNX export needs {module}: pip install 'acframe[onnx]'") from exc
    loaded = load_policy(target, config, list(overrides or ()) + ['policy.cuda=False'],  # a CPU model is traced
                         imports=imports)
    if getattr(loaded.policy.model, 'recurrent', False):  # a trace would bake the state in as a constant
        raise ConfigError(f"{target}: the policy is recurrent (policy.model.rnn); exporting one step with the state in "
                          f"and out is not built yet: act with acframe.load_policy (act, reset) instead")
    actor = loaded.actor.cpu().eval().requires_grad_(False)  # an exported model is for inference only
    space = loaded.observation_space
    spaces = space.spaces if isinstance(space, gym.spaces.Dict) else None  # a Dict observation: a dict input
    example = ({k: _example(s) for k, s in spaces.items()} if spaces is not None else _example(space))
    with torch.no_grad():
        if fmt == 'torchscript':
            with warnings.catch_warnings():  # torch 2.13 marks torch.jit deprecated; TorchScript is still what we write
                warnings.simplefilter('ignore', DeprecationWarning)
                traced = torch.jit.trace(actor, (example,), check_trace=False, strict=spaces is None)
                atomic_write_with(out, lambda tmp: torch.jit.save(traced, tmp))
        else:
            atomic_write_with(out, lambda tmp: _export_onnx(actor, example, tmp))
    obs_shape = ({k: list(s.shape) for k, s in spaces.items()} if spaces is not None else list(space.shape))
    return {'file': os.path.abspath(out), 'format': fmt, 'checkpoint': os.path.abspath(loaded.checkpoint),
            'obs_shape': obs_shape, 'action_space': str(loaded.action_space)}


def _example(space: Any) -> torch.Tensor:
    """A batch of 2 observations of the Box ``space``, in the dtype the model takes."""
    from .inference import observation_dtype

    return torch.as_tensor(space.sample()[None].repeat(2, axis=0), dtype=observation_dtype(space))


def _export_onnx(actor: torch.nn.Module, example: Any, path: str) -> None:
    import logging

    batch = torch.export.Dim('batch', min=1)
    registration = logging.getLogger('torch.onnx._internal.exporter._registration')  # "torchvision is not installed"
    level = registration.level
    registration.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', FutureWarning)
            if isinstance(example, dict):  # a Dict observation: one input per key, named by it
                program = torch.onnx.export(actor, (), kwargs={'obs': example}, dynamo=True, input_names=list(example),
                                            output_names=['action'], verbose=False,  # (a dict in args means kwargs)
                                            dynamic_shapes={'obs': {k: {0: batch} for k in example}})
            else:
                program = torch.onnx.export(actor, (example,), dynamo=True, input_names=['obs'], output_names=['action'],
                                            dynamic_shapes=({0: batch},), verbose=False)
    finally:
        registration.setLevel(level)
    program.save(path)


def result_line(info: Dict[str, Any]) -> str:
    shape = info['obs_shape']
    shape = {k: tuple(v) for k, v in shape.items()} if isinstance(shape, dict) else tuple(shape)
    return (f"[export] {info['format']} model of {os.path.basename(info['checkpoint'])}: obs {shape} "
            f"-> action in {info['action_space']} -> {info['file']}")
