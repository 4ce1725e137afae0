"""The compiled update (``policy.learn.compile``, issue 45) against the eager one: ms per learn step per model size.

Three models, each with the batch its shipped config learns on, on synthetic data of the env's shapes (no env is
built; a learn step's cost does not depend on the values):

* ``cartpole``: ``cartpole_ppo.py`` — PPO, separate 64x64 tanh actor and critic, minibatches of 256 transitions;
* ``mujoco``: ``halfcheetah_ppo.py`` — PPO, separate 256x256 bodies (obs 17, 6 continuous actions), observation
  normalization, minibatches of 64;
* ``atari``: ``pong_impala.py`` — IMPALA, the shallow Nature CNN (16/32 channels, 256 units) on uint8 4x84x84
  frames, a batch of 8 unrolls of 20 steps.

For each, two policies start from the same weights: one eager, one with ``policy.learn.compile=<--mode>``. The
first compiled steps are timed apart (``compile_s``: their time minus as many steady steps — Dynamo, inductor and the
C++ compiler, from an empty inductor cache: ``TORCHINDUCTOR_CACHE_DIR`` is a fresh folder). Then ``--rounds`` rounds,
each ``--steps`` eager steps then ``--steps`` compiled steps (interleaved: the machine is shared), on the same
batches; the median of the rounds' ms/step is reported, and the speed-up eager / compiled. Last, the two policies'
losses at one more step are compared (they learned the same steps, so they must agree).

    python bench/bench_compile.py [--models cartpole,mujoco,atari] [--threads 1] [--mode default] [--rounds 5] [--steps 20]

Run it alone on the machine (one CPU; ``--threads 2``: two CPUs free).
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List, Tuple

os.environ.setdefault('TORCHINDUCTOR_CACHE_DIR', tempfile.mkdtemp(prefix='acframe_inductor_'))

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from acframe.config import compile_config  # noqa: E402
from acframe.data import make_tree  # noqa: E402
from acframe.policy import create_policy  # noqa: E402

#: model -> (config, overrides, observation space, action space, collector envs, steps per env in a batch)
MODELS: Dict[str, Tuple[str, List[str], gym.Space, gym.Space, int, int]] = {
    'cartpole': ('cartpole_ppo.py', [], gym.spaces.Box(-1, 1, (4,), np.float32), gym.spaces.Discrete(2), 8, 32),
    'mujoco': ('halfcheetah_ppo.py', [], gym.spaces.Box(-10, 10, (17,), np.float32),
               gym.spaces.Box(-1, 1, (6,), np.float32), 1, 512),
    'atari': ('pong_impala.py', ['env.manager=sync'], gym.spaces.Box(0, 255, (4, 84, 84), np.uint8),
              gym.spaces.Discrete(6), 8, 20),
}


def segment(obs_space: gym.Space, action_space: gym.Space, steps: int, envs: int, logits: bool) -> Any:
    """A time-major segment ``(T, B)`` of random data of these spaces, a few truncated steps among them."""
    def obs(*lead: int) -> torch.Tensor:
        if obs_space.dtype == np.uint8:
            return torch.randint(0, 256, lead + obs_space.shape, dtype=torch.uint8)
        return torch.randn(lead + obs_space.shape)

    discrete = isinstance(action_space, gym.spaces.Discrete)
    truncated = torch.zeros(steps, envs, dtype=torch.bool)
    truncated[steps // 2, 0] = True
    data = {
        'obs': obs(steps + 1, envs), 'final_obs': obs(steps, envs),
        'action': (torch.randint(0, int(action_space.n), (steps, envs)) if discrete
                   else torch.randn(steps, envs, action_space.shape[0])),
        'reward': torch.randn(steps, envs), 'terminated': torch.rand(steps, envs) < 0.01, 'truncated': truncated,
    }
    if logits:  # the behaviour policy's statistics (off-policy learners)
        data['logit'] = torch.randn(steps, envs, int(action_space.n))
    return make_tree(data)


def batches(policy: Any, seg: Any, count: int) -> List[Any]:
    """``count`` learn batches: an on-policy policy's minibatches of the segment's plan (cycled), else the segment."""
    if not policy.on_policy:
        return [seg] * count
    mode = policy.learn_mode
    torch.manual_seed(1)
    found = list(mode.minibatches(mode.prepare(seg)))
    full = [b for b in found if b.advantage.shape == found[0].advantage.shape]  # (a cut last minibatch left out)
    return [full[i % len(full)] for i in range(count)]


def timed(forward: Any, batch_list: List[Any]) -> float:
    """Seconds per step of ``forward`` over ``batch_list``."""
    start = time.perf_counter()
    for batch in batch_list:
        forward(batch)
    return (time.perf_counter() - start) / len(batch_list)


def measure(name: str, mode: str, rounds: int, steps: int, warm: int) -> Dict[str, Any]:
    config, overrides, obs_space, action_space, envs, per_env = MODELS[name]
    cfg = compile_config(config, overrides=overrides + [f'env.collector_env_num={envs}'], seed=0)
    torch.manual_seed(0)
    eager = create_policy(cfg, obs_space, action_space)
    compiled_cfg = compile_config(config, overrides=overrides + [f'env.collector_env_num={envs}',
                                                                 f'policy.learn.compile={mode}'], seed=0)
    compiled = create_policy(compiled_cfg, obs_space, action_space, init_weights=eager.get_weights())
    compiled._optimizer.load_state_dict(copy.deepcopy(eager._optimizer.state_dict()))
    seg = segment(obs_space, action_space, per_env, envs, logits=not eager.on_policy)
    eager_batches = batches(eager, seg, steps)
    compiled_batches = batches(compiled, seg, steps)
    first = [time.perf_counter()]
    for batch in compiled_batches[:warm]:  # the compiles (a recompile for a Python number that changes included)
        compiled.learn_mode.forward(batch)
        first.append(time.perf_counter())
    for batch in eager_batches[:warm]:  # the same steps, eager: both policies stay at the same weights
        eager.learn_mode.forward(batch)
    eager_ms, compiled_ms = [], []
    for _ in range(rounds):
        eager_ms.append(1e3 * timed(eager.learn_mode.forward, eager_batches))
        compiled_ms.append(1e3 * timed(compiled.learn_mode.forward, compiled_batches))
    torch.manual_seed(5)
    expected = eager.learn_mode.forward(eager_batches[0])['total_loss']
    torch.manual_seed(5)
    got = compiled.learn_mode.forward(compiled_batches[0])['total_loss']
    eager_step, compiled_step = statistics.median(eager_ms), statistics.median(compiled_ms)
    return {
        'model': name, 'config': config, 'weights': sum(p.numel() for p in eager.model.parameters()),
        'batch': int(eager._batch_samples(eager_batches[0])), 'threads': torch.get_num_threads(), 'mode': mode,
        'compile_s': round(first[-1] - first[0] - warm * compiled_step / 1e3, 1),
        'eager_ms': round(eager_step, 2), 'compiled_ms': round(compiled_step, 2),
        'speedup': round(eager_step / compiled_step, 2),
        'eager_ms_rounds': [round(x, 2) for x in eager_ms], 'compiled_ms_rounds': [round(x, 2) for x in compiled_ms],
        'loss_after_rel_diff': abs(got - expected) / max(abs(expected), 1e-12),
    }


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--models', default='cartpole,mujoco,atari')
    parser.add_argument('--threads', type=int, default=1)
    parser.add_argument('--mode', default='default')
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--steps', type=int, default=20)
    parser.add_argument('--warm', type=int, default=3, help='compiled steps counted as compiling')
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = []
    for name in args.models.split(','):
        row = measure(name, args.mode, args.rounds, args.steps, args.warm)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\n| model | weights | batch | threads | compile (s) | eager ms/step | compiled ms/step | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} ({r['config']}) | {r['weights']:,} | {r['batch']} | {r['threads']} | {r['compile_s']} | "
              f"{r['eager_ms']} | {r['compiled_ms']} | {r['speedup']}x |")
    sys.stdout.flush()


if __name__ == '__main__':
    main()
