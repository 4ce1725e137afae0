"""Export a trained policy: ``acframe -m export --load RUN_DIR_OR_CKPT --out FILE``.

The exported model maps a batch of observations ``obs (B, *obs_shape)`` (float32; uint8 where the env gives uint8: image spaces, action masks) to the deterministic actions
``(B,)`` int64 (discrete) or ``(B, D)`` float32 (continuous, clipped to the action space) — exactly what
``acframe.load_policy(...).act(obs)`` returns, because both run the same ``DeterministicActor``; whatever the
model does to observations (normalization kept in its state) is part of it.

* ``FILE.pt``: TorchScript (``torch.jit.load(FILE)(obs)``), needs only torch; it checks its inputs' shapes first (a
  ``ValueError`` naming the input: one observation where a batch is taken, a missing key, a state of another shape).
* ``FILE.onnx``: ONNX with input ``obs`` and output ``action`` and a dynamic batch size (the ``onnx`` extra:
  onnx and onnxscript to write it, onnxruntime to run it).

A Dict observation (an image with vectors) is a dict of batches: TorchScript takes the dict
(``model({'image': ..., 'target': ...})``), ONNX has one input per key, named by it.

A recurrent policy (``policy.model.rnn``) is exported as one step with its state in and out:
``model(obs, state) -> (action, next_state)`` (TorchScript); ONNX inputs ``obs`` (or one per key) and ``state``,
outputs ``action`` and ``state_out``. ``state`` is float32 ``(B, R, H)``: ``R = num_layers`` for a GRU,
``2·num_layers`` for an LSTM (its ``h`` rows, then its ``c`` rows), twice that with a critic core of its own
(``share_encoder=False``: the actor core's rows first), ``H = hidden_size``; zeros at an episode's first
step, then the ``next_state`` of the env's previous step — what ``load_policy(...).act(obs, state)`` computes.

Before anything is written, the traced model is run beside ``load_policy`` over an episode of the run's env (at most
``CHECK_STEPS`` steps, the state fed back): an export that would act otherwise (an eval mode that keeps state of its
own, which a trace bakes in as a constant) is refused in one line.
"""
from __future__ import annotations

import io
import os
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import gymnasium as gym
import numpy as np
import torch

from .errors import ConfigError, ConfigWarning
from .utils import atomic_write_bytes, atomic_write_with

FORMATS = {'.pt': 'torchscript', '.onnx': 'onnx'}
#: env steps of the episode on which the traced model must act as ``load_policy`` before it is written
CHECK_STEPS = 200


def export_format(out: str) -> str:
    ext = os.path.splitext(out)[1].lower()
    if ext not in FORMATS:
        raise ConfigError(f"--out {out}: the file name must end in .pt (TorchScript) or .onnx (ONNX)")
    return FORMATS[ext]


def export_policy(target: str, out: str, config: Optional[Any] = None, overrides: Sequence[str] = (),
                  imports: Sequence[str] = (), what: str = 'export_policy', model: Any = None) -> Dict[str, Any]:
    """Write the run's deterministic actor to ``out`` (format from its suffix); returns what was written.
    ``imports``: modules named for the run folder's ``import_names`` (``--import``); ``what``: how errors about
    ``target`` name it (the CLI: ``--load``); ``model``: for a run trained with a model instance given in Python
    (``serial_pipeline(..., model=...)``), a model of that architecture to load the weights into, as
    ``load_policy``'s."""
    from .config.compile import override_list, override_value
    from .inference import LoadedPolicy
    from .runs import locate_run
    from .utils import check_output_file

    fmt = export_format(out)
    # (said before the run is loaded and traced: an export is never done to be lost to its path)
    check_output_file(out, f"--out {out}" if what != 'export_policy' else f"out={out!r}",
                      'policy' + os.path.splitext(out)[1].lower())
    if not override_value(override_list(overrides), 'policy.eval.deterministic', True):
        raise ConfigError("policy.eval.deterministic=False: an exported policy is the deterministic actor (the most "
                          "likely action; ONNX and TorchScript hold no sampler); drop the override, and sample from "
                          "the model's outputs yourself if you need a stochastic policy")
    if fmt == 'onnx':
        for module in ('onnx', 'onnxscript'):
            try:
                __import__(module)
            except ImportError as exc:
                raise ConfigError(f"--out {out}: ONNX export needs {module}: pip install 'acframe[onnx]'") from exc
    artifacts = locate_run(target, config, override_list(overrides) + ['policy.cuda=False'],  # traced on CPU
                           what=what, imports=imports, model=model)
    sampled = artifacts.cfg.policy.eval.get('deterministic', True) is False  # (LoadedPolicy's actor is greedy)
    loaded = LoadedPolicy(artifacts)
    if sampled:  # (the run's own config: said, not refused)
        warnings.warn(f"{target} evaluated with sampled actions (its policy.eval.deterministic=False); the exported "
                      f"file holds the greedy actor (the most likely action), which its evaluations did not play",
                      ConfigWarning, stacklevel=2)
    recurrent = loaded.recurrent  # one step with the state in and out (a trace of act(obs) would bake it in)
    actor = (loaded.step_actor if recurrent else loaded.actor).cpu().eval().requires_grad_(False)  # inference only
    space = loaded.observation_space
    spaces = space.spaces if isinstance(space, gym.spaces.Dict) else None  # a Dict observation: a dict input
    example = ({k: _example(s) for k, s in spaces.items()} if spaces is not None else _example(space))
    inputs = (example, torch.as_tensor(loaded.initial_state(2))) if recurrent else (example,)
    with torch.no_grad():
        with warnings.catch_warnings():  # torch 2.13 marks torch.jit deprecated; TorchScript is still what we write
            warnings.simplefilter('ignore', DeprecationWarning)
            traced = torch.jit.trace(actor, inputs, check_trace=False, strict=spaces is None)
            if fmt == 'torchscript':  # a wrong shape is a line naming the input, not an error deep in the graph
                traced = checked_inputs(traced, space, loaded.initial_state().shape if recurrent else None,
                                        obs_from_keys(loaded))
        check_over_an_episode(traced, loaded, target)
        if fmt == 'torchscript':
            with warnings.catch_warnings():
                warnings.simplefilter('ignore', DeprecationWarning)
                # through memory: torch's zip writer aborts the process (C++ terminate) when a disk fills under it
                data = io.BytesIO()
                torch.jit.save(traced, data)
                atomic_write_bytes(out, data.getvalue())
        else:
            atomic_write_with(out, lambda tmp: _export_onnx(actor, inputs, tmp))
    obs_shape = ({k: list(s.shape) for k, s in spaces.items()} if spaces is not None else list(space.shape))
    info = {'file': os.path.abspath(out), 'format': fmt, 'checkpoint': os.path.abspath(loaded.checkpoint),
            'obs_shape': obs_shape, 'action_space': str(loaded.action_space)}
    if recurrent:
        info['state_shape'] = ['B'] + list(loaded.initial_state().shape)
    if obs_from_keys(loaded):
        info['obs_is'] = obs_from_keys(loaded)
    return info


def obs_from_keys(loaded: Any) -> str:
    """What the model's input ``obs`` is where the env's observation is a Dict of vectors (its keys raveled and
    concatenated, as ``load_policy``'s ``act`` does it: the exported file takes that vector); '' otherwise."""
    flatten = getattr(loaded, '_flatten', None)
    if flatten is None or flatten.mixed:
        return ''
    keys = ', '.join(repr(key) for key in flatten.keys)
    return (f"the env's {keys}" if len(flatten.keys) == 1
            else f"the env's {keys} raveled and concatenated in that order")


def check_over_an_episode(model: Any, loaded: Any, target: str, steps: int = CHECK_STEPS) -> None:
    """A ``ConfigError`` unless ``model`` (an exported step: ``obs → action``, or ``(obs, state) → (action, state)``
    for a recurrent policy, the state fed back) gives ``loaded.act``'s actions (``reset()`` at the start) at every
    step of an episode of the run's env, at most ``steps`` steps (discrete actions equal, continuous to 1e-5).
    The env is one env of the run's ``env.manager``, built one by one where it can be, else (a user's vectorized env)
    a batch of one through the env factory."""
    from .envs.gym_env import env_name
    from .inference import one_env_manager

    cfg = loaded.cfg
    with one_env_manager(cfg, int(cfg.seed) + 12345) as env:
        obs = env.reset()  # a batch of one observation (a dict of batches for a Dict observation)
        loaded.reset()
        state = torch.as_tensor(loaded.initial_state(1)) if loaded.recurrent else None
        try:
            for step in range(steps):
                expected = loaded.act(obs)
                batch, _ = loaded._as_batch(obs)
                try:
                    if state is None:
                        exported = model(batch)
                    else:
                        exported, state = model(batch, state)
                except RuntimeError as exc:
                    said = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
                    why = ("the model's forward fixes the batch size its trace ran with, 2 (a Python loop over rows, a "
                           "reshape to a constant); write it batch-free, or act with acframe.load_policy"
                           if _runs_on_two(model, batch, state) else "act with acframe.load_policy")
                    raise ConfigError(f"{target}: the exported model fails on a batch of one ({said}): {why}; "
                                      f"nothing written") from exc
                exported = exported.numpy()
                same = (np.array_equal(exported, expected) if exported.dtype.kind in 'iub'
                        else np.allclose(exported, expected, rtol=1e-5, atol=1e-6))
                if not same:
                    raise ConfigError(f"{target}: the exported model acts otherwise than load_policy at step {step} of "
                                      f"an episode of {env_name(cfg.env)} ({exported[0].tolist()} vs {expected[0].tolist()}): "
                                      f"the policy's eval mode keeps state that a trace cannot carry; act with "
                                      f"acframe.load_policy (act, reset) instead; nothing written")
                result = env.step(expected)
                if len(result.done_index):
                    break
                obs = result.obs
        finally:
            loaded.reset()


def _runs_on_two(model: Any, batch: Any, state: Optional[torch.Tensor]) -> bool:
    """Whether the exported ``model`` runs on two rows (``batch`` doubled), the batch size it was traced with."""
    doubled = ({key: torch.cat([value, value]) for key, value in batch.items()} if isinstance(batch, dict)
               else torch.cat([batch, batch]))
    try:
        model(doubled) if state is None else model(doubled, torch.cat([state, state]))
    except RuntimeError:
        return False
    return True


def check_obs(obs: torch.Tensor, name: str, shape: List[int]) -> None:
    """A ``ValueError`` naming ``name`` unless ``obs`` is a batch ``(B, *shape)`` (TorchScript: kept in the file)."""
    if obs.dim() != len(shape) + 1 or obs.shape[1:] != shape:
        single = ' (one observation is obs[None])' if obs.shape == shape else ''
        raise ValueError('{}: a batch of shape (B, {}) is expected, not {}{}'.format(
            name, ', '.join([str(size) for size in shape]), obs.shape, single))


def check_state(state: torch.Tensor, batch: int, shape: List[int]) -> None:
    """A ``ValueError`` unless ``state`` is ``(batch, *shape)``: one row of state per observation."""
    if state.dim() != 3 or state.shape[0] != batch or state.shape[1:] != shape:
        raise ValueError('state: shape ({}, {}, {}) is expected (one per observation; zeros at an episode\'s first '
                         'step, then the state the previous step returned), not {}'.format(
                             batch, shape[0], shape[1], state.shape))


def as_dict_obs(obs: Union[torch.Tensor, Dict[str, torch.Tensor]],
                shapes: Dict[str, List[int]]) -> Dict[str, torch.Tensor]:
    """``obs`` itself when it is a dict; a ``ValueError`` naming the keys for one tensor (TorchScript's own words
    were "dictionary update sequence element #0 has length 36; 2 is required")."""
    if isinstance(obs, torch.Tensor):
        keys = ', '.join(["'" + name + "'" for name in shapes.keys()])  # (TorchScript's format escapes no braces)
        raise ValueError("obs: a dict of batches is expected, " + "{key: (B, *shape)}" + " for the keys [" + keys
                         + "], not one tensor of shape " + str(obs.shape))
    return obs


def check_keys(obs: Dict[str, torch.Tensor], shapes: Dict[str, List[int]], obs_is: str = '') -> int:
    """Check each key of a Dict observation as ``check_obs`` does; their common batch size. ``obs_is``: what the
    key 'obs' holds (the env's keys it flattens), said when it is missing."""
    batch = -1
    for key, shape in shapes.items():  # (TorchScript formats no {!r}: the quotes are written out)
        if key not in obs:
            said = obs_is if key == 'obs' else ''
            raise ValueError("obs: key '{}' is missing; the model takes [{}]{}".format(
                key, ', '.join(["'" + name + "'" for name in shapes.keys()]), said))
        check_obs(obs[key], "obs['" + key + "']", shape)
        if batch >= 0 and obs[key].shape[0] != batch:
            raise ValueError("obs: every key must hold the same batch size; obs['{}'] holds {}, not {}".format(
                key, obs[key].shape[0], batch))
        batch = obs[key].shape[0]
    return batch


class CheckedActor(torch.nn.Module):
    """A traced ``obs → action`` whose input shape is checked first."""

    def __init__(self, traced: Any, shape: Sequence[int]) -> None:
        super().__init__()
        self.traced, self.shape = traced, list(shape)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        check_obs(obs, 'obs', self.shape)
        return self.traced(obs)


class CheckedDictActor(torch.nn.Module):
    """A traced ``{key: obs} → action`` whose keys and shapes are checked first."""

    def __init__(self, traced: Any, shapes: Dict[str, List[int]], obs_is: str = '') -> None:
        super().__init__()
        self.traced, self.shapes, self.obs_is = traced, shapes, obs_is

    def forward(self, obs: Union[torch.Tensor, Dict[str, torch.Tensor]]) -> torch.Tensor:
        given = as_dict_obs(obs, self.shapes)
        check_keys(given, self.shapes, self.obs_is)
        return self.traced(given)


class CheckedStep(torch.nn.Module):
    """A traced recurrent step ``(obs, state) → (action, state)`` whose input shapes are checked first."""

    def __init__(self, traced: Any, shape: Sequence[int], state_shape: Sequence[int]) -> None:
        super().__init__()
        self.traced, self.shape, self.state_shape = traced, list(shape), list(state_shape)

    def forward(self, obs: torch.Tensor, state: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        check_obs(obs, 'obs', self.shape)
        check_state(state, obs.shape[0], self.state_shape)
        return self.traced(obs, state)


class CheckedDictStep(torch.nn.Module):
    """A traced recurrent step taking a Dict observation, its keys and shapes checked first."""

    def __init__(self, traced: Any, shapes: Dict[str, List[int]], state_shape: Sequence[int], obs_is: str = '') -> None:
        super().__init__()
        self.traced, self.shapes, self.state_shape, self.obs_is = traced, shapes, list(state_shape), obs_is

    def forward(self, obs: Union[torch.Tensor, Dict[str, torch.Tensor]],
                state: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        given = as_dict_obs(obs, self.shapes)
        check_state(state, check_keys(given, self.shapes, self.obs_is), self.state_shape)
        return self.traced(given, state)


def checked_inputs(traced: Any, space: gym.Space, state_shape: Optional[Sequence[int]], obs_is: str = '') -> Any:
    """``traced`` in a scripted module that checks its inputs' shapes (observations of ``space``; a recurrent step's
    state ``(B, *state_shape)``) and says which is wrong: a trace alone fails inside its graph. ``obs_is``: what a
    Dict input's key 'obs' holds (``obs_from_keys``' words)."""
    if isinstance(space, gym.spaces.Dict):
        shapes = {key: [int(size) for size in sub.shape] for key, sub in space.spaces.items()}
        said = f" ('obs' is {obs_is})" if obs_is else ''
        wrapper = (CheckedDictActor(traced, shapes, said) if state_shape is None
                   else CheckedDictStep(traced, shapes, state_shape, said))
    else:
        shape = [int(size) for size in space.shape]
        wrapper = CheckedActor(traced, shape) if state_shape is None else CheckedStep(traced, shape, state_shape)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        return torch.jit.script(wrapper)


def _example(space: Any) -> torch.Tensor:
    """A batch of 2 observations of the Box ``space``, in the dtype the model takes."""
    from .inference import observation_dtype

    return torch.as_tensor(space.sample()[None].repeat(2, axis=0), dtype=observation_dtype(space))


def _export_onnx(actor: torch.nn.Module, inputs: Tuple[Any, ...], path: str) -> None:
    import logging

    example = inputs[0]
    batch = torch.export.Dim('batch', min=1)
    registration = logging.getLogger('torch.onnx._internal.exporter._registration')  # "torchvision is not installed"
    level = registration.level
    registration.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', FutureWarning)
            # the state's batch axis is the observations' on purpose: torch says it names one axis once
            warnings.filterwarnings('ignore', message=r'# The axis name: .* shares the same shape constraints', category=UserWarning)
            if len(inputs) == 2:  # a recurrent step: the state in and out
                state_dims = {0: batch}
                if isinstance(example, dict):
                    program = torch.onnx.export(
                        actor, (), kwargs={'obs': example, 'state': inputs[1]}, dynamo=True,
                        input_names=list(example) + ['state'], output_names=['action', 'state_out'], verbose=False,
                        dynamic_shapes={'obs': {k: {0: batch} for k in example}, 'state': state_dims})
                else:
                    program = torch.onnx.export(actor, inputs, dynamo=True, input_names=['obs', 'state'],
                                                output_names=['action', 'state_out'],
                                                dynamic_shapes=({0: batch}, state_dims), verbose=False)
            elif isinstance(example, dict):  # a Dict observation: one input per key, named by it
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
    state = f", state {tuple(info['state_shape'])} in and out" if 'state_shape' in info else ''
    obs_is = f" ('obs': {info['obs_is']})" if info.get('obs_is') else ''
    return (f"[export] {info['format']} model of {os.path.basename(info['checkpoint'])}: obs {shape}{obs_is}{state} "
            f"-> action in {info['action_space']} -> {info['file']}")
