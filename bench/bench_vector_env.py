"""Throughput of a user's vectorized env against gymnasium's ``SyncVectorEnv``, bare and through acframe.

examples/vector_cartpole.py's ``NumpyCartPole`` (N CartPole-v1 envs stepped as numpy arrays, plugged in by name:
``env.manager='numpy_cartpole'``) against ``SyncVectorEnv`` × N ``gymnasium.make('CartPole-v1')`` (what
``env.manager='sync'`` steps), with uniformly random actions: env-steps/s of

* the bare vector env (``venv.step`` in a loop), and
* the env manager the factory builds for the run (``make_env_manager``: episode statistics, SAME_STEP final
  observations), which is what the collectors step;
* a whole PPO collection (``SampleCollector`` with PPO's collect mode, a 64×64 MLP acting) on each.

    python bench/bench_vector_env.py [--envs 16 256 1024] [--steps 200000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Callable, Dict, List

import gymnasium as gym
import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'examples'))


def cfg_for(manager: str, num_envs: int):
    from acframe.config import compile_config
    from vector_cartpole import config

    main, create = config(num_envs)
    create['env_manager'] = dict(type=manager)
    return compile_config((main, create))


def stepped(venv, num_envs: int, steps: int, seed: int) -> float:
    """env-steps/s of ``venv.step`` with random actions (after a seeded reset); closes ``venv``."""
    venv.reset(seed=[seed + i for i in range(num_envs)]) if isinstance(venv, gym.vector.VectorEnv) else venv.reset()
    actions = np.random.default_rng(seed).integers(0, 2, size=(64, num_envs))
    iterations = max(1, steps // num_envs)
    start = time.perf_counter()
    for t in range(iterations):
        venv.step(actions[t % 64])
    elapsed = time.perf_counter() - start
    venv.close()
    return iterations * num_envs / elapsed


def bare(manager: str, num_envs: int, steps: int, seed: int) -> float:
    from vector_cartpole import NumpyCartPole

    if manager == 'numpy_cartpole':
        return stepped(NumpyCartPole(num_envs), num_envs, steps, seed)
    return stepped(gym.vector.SyncVectorEnv([lambda: gym.make('CartPole-v1') for _ in range(num_envs)],
                                            autoreset_mode=gym.vector.AutoresetMode.SAME_STEP), num_envs, steps, seed)


def managed(manager: str, num_envs: int, steps: int, seed: int) -> float:
    from acframe.envs import make_env_manager

    return stepped(make_env_manager(cfg_for(manager, num_envs), 'collector', num_envs, seed), num_envs, steps, seed)


def collected(manager: str, num_envs: int, steps: int, seed: int) -> float:
    from acframe.envs import make_env_manager
    from acframe.policy import create_policy
    from acframe.worker import SampleCollector

    cfg = cfg_for(manager, num_envs)
    torch.manual_seed(seed)
    env = make_env_manager(cfg, 'collector', num_envs, seed)
    policy = create_policy(cfg, env.observation_space, env.action_space, enable_field=('collect',))
    collector = SampleCollector(env, policy.collect_mode, cfg.policy.collect.n_sample)
    collector.collect()  # warm-up
    rounds = max(1, steps // cfg.policy.collect.n_sample)
    start = time.perf_counter()
    for _ in range(rounds):
        collector.collect()
    elapsed = time.perf_counter() - start
    env.close()
    return rounds * cfg.policy.collect.n_sample / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--envs', type=int, nargs='+', default=[16, 256, 1024])
    parser.add_argument('--steps', type=int, default=200_000)
    parser.add_argument('--repeats', type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    loops: Dict[str, Callable[[str, int, int, int], float]] = dict(bare=bare, manager=managed, collector=collected)
    for num_envs in args.envs:
        row: Dict[str, object] = {'envs': num_envs}
        for loop, run in loops.items():
            rates: Dict[str, List[float]] = {'sync': [], 'numpy_cartpole': []}
            for r in range(args.repeats):  # interleaved, so drifts in machine load hit both alike
                for manager in rates:
                    rates[manager].append(run(manager, num_envs, args.steps, r))
            sync, vector = statistics.median(rates['sync']), statistics.median(rates['numpy_cartpole'])
            row[f'{loop}_sync_steps_per_s'] = round(sync)
            row[f'{loop}_numpy_cartpole_steps_per_s'] = round(vector)
            row[f'{loop}_speedup'] = round(vector / sync, 1)
        print(json.dumps(row), flush=True)


if __name__ == '__main__':
    main()
