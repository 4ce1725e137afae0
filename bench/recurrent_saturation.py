"""How saturated a recurrent policy's LSTM gates are, and how much the core's output still depends on what it sees.

A one-layer LSTM whose input grows large (or whose input weights do) drives its gates' pre-activations far from 0:
sigmoid and tanh flatten there, the output stops depending on the observation and almost no gradient reaches the
encoder. This reads checkpoints and shows it. For each checkpoint (a run folder: its latest checkpoint; or a
``.pth`` inside a run folder's ``ckpt/``) it plays ``--steps`` steps of random actions in ``--envs`` of the run's
envs (seeded, the same observations for every checkpoint of one env), steps the policy's encoder and actor core over
them from zero states, and prints:

* ``feature``: the mean of the features the core reads, and their spread over the observations (std over the
  ``steps x envs`` observations, averaged over the features);
* ``|pre-activation|``: the gates' mean absolute pre-activation (input, forget, cell, output);
* ``cell > 3``: the share of cell pre-activations beyond ±3 (tanh' < 0.01 there);
* ``output spread``: the spread of the core's output over the observations after the first 5 steps (std over
  observations, averaged over units): 0 means the output no longer depends on the observation.

    python bench/recurrent_saturation.py RUN_DIR_OR_CKPT [...] [--steps 30] [--envs 8] [--seed 0]

docs/recurrent.md ("Pong: the LSTM's gates saturate") has what it showed for ``pong_impala_lstm.py``.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def observations(cfg, steps: int, envs: int, seed: int) -> torch.Tensor:
    """``(steps, envs, ...)`` observations of the run's env under uniformly random actions (a new episode where one
    ends)."""
    from acframe.envs.gym_env import build_env

    rng = np.random.default_rng(seed)
    columns = []
    for index in range(envs):
        env = build_env(dict(cfg.env), index, seed + index, 'inference')
        obs, _ = env.reset(seed=seed + index)
        env.action_space.seed(seed + index)
        column = []
        for _ in range(steps):
            column.append(np.asarray(obs))
            action = int(rng.integers(env.action_space.n)) if hasattr(env.action_space, 'n') else env.action_space.sample()
            obs, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                obs, _ = env.reset()
        env.close()
        columns.append(np.stack(column))
    return torch.as_tensor(np.stack(columns, 1))


def unroll(model: torch.nn.Module, obs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(features (T*B, D), gate pre-activations (T, B, 4H), outputs (T, B, H))`` of ``model``'s actor core (a
    one-layer LSTM), stepped from zeros over time-major ``obs`` ``(T, B, ...)``: the cell written out, as PyTorch's
    (gates in the order input, forget, cell, output)."""
    core = model.core
    if core is None or core.kind != 'lstm' or core.num_layers != 1:
        raise SystemExit("recurrent_saturation: the policy needs policy.model.rnn.type='lstm' with num_layers=1")
    steps, envs = obs.shape[:2]
    rnn = core.rnn
    with torch.no_grad():
        flat = obs.reshape(steps * envs, *obs.shape[2:])
        if getattr(model, 'obs_normalizer', None) is not None:
            flat = model.obs_normalizer(flat)
        feature = model.actor_encoder(flat)
        h = torch.zeros(envs, core.hidden_size)
        c = torch.zeros(envs, core.hidden_size)
        pre: List[torch.Tensor] = []
        out: List[torch.Tensor] = []
        for x in feature.view(steps, envs, -1):
            z = x @ rnn.weight_ih_l0.T + rnn.bias_ih_l0 + h @ rnn.weight_hh_l0.T + rnn.bias_hh_l0
            i, f, g, o = z.chunk(4, 1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            pre.append(z)
            out.append(h)
    return feature, torch.stack(pre), torch.stack(out)


def gate_statistics(model: torch.nn.Module, obs: torch.Tensor) -> Dict[str, float]:
    """The statistics above for ``model``'s actor core over time-major ``obs`` ``(T, B, ...)``."""
    feature, pre, out = unroll(model, obs)
    gates = pre.chunk(4, -1)
    later = out[5:].reshape(-1, out.shape[-1])
    return dict(feature_mean=float(feature.mean()), feature_spread=float(feature.std(0).mean()),
                **{f'pre_{name}': float(gate.abs().mean()) for name, gate in zip('ifgo', gates)},
                cell_beyond_3=float((gates[2].abs() > 3).float().mean()), output_spread=float(later.std(0).mean()))


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('targets', nargs='+', help="run folders (their latest checkpoint) or .pth files in RUN/ckpt/")
    parser.add_argument('--steps', type=int, default=30, help="steps per env (default 30)")
    parser.add_argument('--envs', type=int, default=8, help="envs (default 8)")
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    from acframe.inference import load_policy

    seen: Dict[str, torch.Tensor] = {}
    print('| checkpoint | train iter | feature mean / spread | |pre-activation| i / f / g / o | cell > 3 | '
          'output spread |')
    print('|---|---|---|---|---|---|')
    for target in args.targets:
        if os.path.isdir(target):
            target = os.path.join(target, 'ckpt', 'ckpt_latest.pth')
        loaded = load_policy(target)
        env_id = str(loaded.cfg.env.env_id)
        if env_id not in seen:
            seen[env_id] = observations(loaded.cfg, args.steps, args.envs, args.seed)
        state = torch.load(target, map_location='cpu', weights_only=True)
        s = gate_statistics(loaded.policy.model.cpu(), seen[env_id])
        print(f"| {target} | {state.get('train_iter')} | {s['feature_mean']:.2f} / {s['feature_spread']:.4f} | "
              f"{s['pre_i']:.2f} / {s['pre_f']:.2f} / {s['pre_g']:.2f} / {s['pre_o']:.2f} | "
              f"{s['cell_beyond_3']:.2f} | {s['output_spread']:.4f} |", flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
