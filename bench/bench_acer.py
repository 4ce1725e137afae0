"""ACER benchmarks: time-to-solve on CartPole-v0 (discrete) and Pendulum-v1 (continuous), and learner throughput.

* Time to solve, whole process, as a user runs it: ``acframe -c cartpole_acer.py`` (stop 195 on the 200-step
  CartPole-v0) and ``acframe -c pendulum_acer.py`` (stop -200); env steps and wall seconds, median of the seeds.
* Learner throughput: samples (T x B transitions) per second of one ACER update -- the batched loss, its
  backward pass, the optimizer step and the average-network update -- on replayed (T, B) batches, for the
  discrete and the continuous model, with and without the trust region.

    python bench/bench_acer.py [--seeds 0 1 2] [--envs cartpole pendulum] [--skip-solve] [--skip-throughput]
                               [--max-env-step N] [--iters N]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import median_report, run_cli  # noqa: E402

CONFIGS = {'cartpole': 'cartpole_acer.py', 'pendulum': 'pendulum_acer.py'}


def time_to_solve(env: str, seeds: List[int], max_env_step: int = 0) -> Dict[str, Any]:
    extra = ['--max-env-step', str(max_env_step)] if max_env_step else []
    runs = [run_cli(CONFIGS[env], seed, extra_args=extra) for seed in seeds]
    return {'benchmark': f'acer_{env}_time_to_solve', 'config': CONFIGS[env],
            'stop_value': runs[0]['stop_value'], **median_report(runs)}


def learner_throughput(env: str, trust_region: bool, iters: int) -> Dict[str, Any]:
    """Samples/s of ``learn_mode.forward`` on replayed batches of the config's ``(unroll_len, batch_size)``."""
    import torch

    from acframe.config import compile_config
    from acframe.envs import make_env_manager
    from acframe.policy import create_policy
    from acframe.registry import BUFFER_REGISTRY
    from acframe.utils import set_global_seed, set_torch_threads
    from acframe.worker import SampleCollector

    cfg = compile_config(CONFIGS[env], [f'policy.learn.trust_region={trust_region}'])
    batch_size = cfg.policy.learn.batch_size
    set_global_seed(0)
    set_torch_threads(cfg.policy.learn.torch_threads)
    envs = make_env_manager(cfg, 'collector', cfg.env.collector_env_num, 0)
    policy = create_policy(cfg, envs.observation_space, envs.action_space)
    collector = SampleCollector(envs, policy.collect_mode, cfg.policy.collect.n_sample)
    buffer_cfg = dict(cfg.policy.other.replay_buffer)
    buffer = BUFFER_REGISTRY.build(buffer_cfg.pop('type'), seed=0, **buffer_cfg)
    while len(buffer) < 2000:
        buffer.push(collector.collect())
    envs.close()
    batches = [buffer.sample_windows(batch_size) for _ in range(8)]
    learn = policy.learn_mode
    for batch in batches[:3]:  # warm-up
        learn.forward(batch)
    start = time.perf_counter()
    for i in range(iters):
        learn.forward(batches[i % len(batches)])
    seconds = time.perf_counter() - start
    samples = iters * int(batches[0].reward.numel())
    return {'benchmark': f'acer_{env}_learner_throughput', 'trust_region': trust_region,
            'batch': list(batches[0].reward.shape), 'torch_threads': torch.get_num_threads(),
            'updates_per_s': round(iters / seconds, 1), 'samples_per_s': round(samples / seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--envs', nargs='+', default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument('--max-env-step', type=int, default=0, help='cap the env steps of each run (0: the config\'s)')
    parser.add_argument('--iters', type=int, default=300, help='updates timed per throughput measurement')
    parser.add_argument('--skip-solve', action='store_true')
    parser.add_argument('--skip-throughput', action='store_true')
    args = parser.parse_args()
    for env in args.envs:
        if not args.skip_solve:
            print(json.dumps(time_to_solve(env, args.seeds, args.max_env_step)), flush=True)
        if not args.skip_throughput:
            for trust_region in (True, False):
                print(json.dumps(learner_throughput(env, trust_region, args.iters)), flush=True)


if __name__ == '__main__':
    main()
