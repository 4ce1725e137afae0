"""PPO benchmark: time-to-solve CartPole-v1 (stop 475) as a user runs it, acframe vs Stable-Baselines3, same run.

* acframe: ``acframe -c cartpole_ppo.py -s SEED`` in a fresh process (RL-Zoo's PPO settings; evaluation of 10
  deterministic episodes every 100 gradient steps = every 1280 env steps).
* SB3: ``stable_baselines3.PPO`` with RL-Zoo's CartPole-v1 settings (8 envs × 32 steps, batch 256, 20 epochs,
  gamma 0.98, GAE lambda 0.8, ``lin_1e-3`` learning rate, ``lin_0.2`` clip range, 100k steps) in a fresh process,
  stopped by ``EvalCallback`` + ``StopTrainingOnRewardThreshold(475)`` evaluating 10 deterministic episodes every
  1280 env steps on 10 evaluation envs, as acframe does (bench/sb3_peer.py). acframe with one torch thread; SB3
  with one (its best on this MLP: the ratio's yardstick) and with torch's default (``--peer-threads``).

Whole-process wall seconds (interpreter start to exit) and env steps to the stop value, median over seeds.
SB3 is a bench-only dependency (the ``bench`` extra, or ``pip install --no-deps stable-baselines3``: it needs
gymnasium, numpy, torch and cloudpickle, which acframe already has); without it only acframe is measured.

    python bench/bench_ppo.py [--seeds 0 1 2] [--only acframe sb3] [--peer-threads 1 0]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sb3_peer  # noqa: E402
from common import run_cli, solve_table  # noqa: E402

EVAL_EVERY_ENV_STEPS = 1280
#: SB3's child process: RL Zoo settings, evaluated and stopped as acframe's cartpole_ppo.py is
SB3_TASK = dict(env_id='CartPole-v1', stop=475, eval_every=EVAL_EVERY_ENV_STEPS, eval_envs=10, n_eval_episodes=10,
                budget=100_000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--only', nargs='+', choices=['acframe', 'sb3'], default=['acframe', 'sb3'])
    parser.add_argument('--peer-threads', type=int, nargs='+', default=[1, 0],
                        help="SB3's torch threads: 1 (its best on a small MLP, the ratio's yardstick) and/or 0 "
                             "(torch's default, the machine's cores)")
    parser.add_argument('--sb3-child', type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument('--sb3-threads', type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sb3_child is not None:
        sb3_peer.child('ppo', args.sb3_child, args.sb3_threads or None, **SB3_TASK)
        return 0
    if 'sb3' in args.only and not sb3_peer.available():
        print("# stable-baselines3 is not installed (pip install --no-deps stable-baselines3, or .[bench]): "
              "measuring acframe only", flush=True)
        args.only = [f for f in args.only if f != 'sb3']
    peers = [t for t in args.peer_threads] if 'sb3' in args.only else []
    acframe_runs: List[Dict[str, Any]] = []
    sb3_runs: Dict[int, List[Dict[str, Any]]] = {t: [] for t in peers}
    for seed in args.seeds:  # interleaved, so all see the same machine load
        if 'acframe' in args.only:
            acframe_runs.append(run_cli('cartpole_ppo.py', seed))
            print(json.dumps({'framework': 'acframe', **{k: acframe_runs[-1][k] for k in
                              ('seed', 'solved', 'env_steps', 'process_s', 'best_eval_return')}}), flush=True)
        for threads in peers:
            sb3_runs[threads].append(sb3_peer.run_sb3(os.path.abspath(__file__), 'ppo', seed, threads))
            print(json.dumps({'framework': 'sb3', **sb3_runs[threads][-1]}), flush=True)
    print(solve_table('CartPole-v1 PPO', acframe_runs, sb3_runs))
    return 0


if __name__ == '__main__':
    sys.exit(main())
