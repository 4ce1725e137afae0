"""Collector throughput: acframe's SampleCollector against a bare gymnasium vector-env loop.

Both step the same envs (SyncVectorEnv × N CartPole-v1, SAME_STEP autoreset) with the same 64×64 MLP
choosing every action; the bare loop is the ceiling a collector can reach.

    python bench/bench_collector.py [--envs 8] [--steps 40000] [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import gymnasium as gym
import torch
import torch.nn as nn


def bare_loop(num_envs: int, steps: int, seed: int) -> float:
    """env-steps/s of the plainest loop: numpy obs -> MLP -> sampled action -> env.step."""
    envs = gym.vector.SyncVectorEnv([lambda: gym.make('CartPole-v1') for _ in range(num_envs)],
                                    autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))
    obs, _ = envs.reset(seed=seed)
    iterations = steps // num_envs
    start = time.perf_counter()
    with torch.inference_mode():
        for _ in range(iterations):
            logits = net(torch.from_numpy(obs))
            action = torch.multinomial(torch.softmax(logits, -1), 1).squeeze(-1)
            obs, _, _, _, _ = envs.step(action.numpy())
    elapsed = time.perf_counter() - start
    envs.close()
    return iterations * num_envs / elapsed


def acframe_collector(num_envs: int, steps: int, seed: int, steps_per_env: int = 32) -> float:
    """env-steps/s of SampleCollector.collect with the IMPALA collect mode on the same envs and network
    (segments of ``steps_per_env`` steps: ``n_sample`` counts 16-step unrolls across all envs)."""
    from acframe.config import compile_config
    from acframe.envs import make_env_manager
    from acframe.policy import create_policy
    from acframe.worker import SampleCollector
    from dizoo_configs.cartpole_impala import create_config, main_config

    n_sample = num_envs * steps_per_env // main_config['policy']['unroll_len']
    cfg = compile_config((main_config, create_config), [('env.collector_env_num', num_envs),
                                                        ('policy.collect.n_sample', n_sample)], seed=seed)
    torch.manual_seed(seed)
    env = make_env_manager(cfg, 'collector', num_envs, seed)
    policy = create_policy(cfg, env.observation_space, env.action_space, enable_field=('collect',))
    collector = SampleCollector(env, policy.collect_mode, n_sample)
    collector.collect()  # warm-up (allocations, first reset)
    rounds = max(1, steps // (steps_per_env * num_envs))
    start = time.perf_counter()
    for _ in range(rounds):
        collector.collect()
    elapsed = time.perf_counter() - start
    env.close()
    return rounds * steps_per_env * num_envs / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--envs', type=int, default=8)
    parser.add_argument('--steps', type=int, default=40000)
    parser.add_argument('--repeats', type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    bare, ours = [], []
    for r in range(args.repeats):  # interleaved, so drifts in machine load hit both alike
        bare.append(bare_loop(args.envs, args.steps, r))
        ours.append(acframe_collector(args.envs, args.steps, r))
    result = {
        'envs': args.envs,
        'bare_loop_steps_per_s': round(statistics.median(bare)),
        'acframe_collector_steps_per_s': round(statistics.median(ours)),
        'ratio': round(statistics.median(ours) / statistics.median(bare), 3),
    }
    print(json.dumps(result))


if __name__ == '__main__':
    main()
