"""IMPALA time-to-solve, whole process, as a user runs it, median of 3 seeds:

* ``acframe -c cartpole_impala.py env.env_id=CartPole-v0 env.stop_value=195``: the 200-step CartPole with
  DI-engine's stop value (like-for-like with DI-engine's CartPole IMPALA anchor);
* ``acframe -c cartpole_impala.py``: the config as shipped, CartPole-v1 to 475 (500-step episodes), a task
  a lucky greedy policy cannot pass by chance.

    python bench/bench_impala.py [--seeds 0 1 2] [--tasks v0 v1]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import median_report, run_cli  # noqa: E402

TASKS = {'v0': ['env.env_id=CartPole-v0', 'env.stop_value=195'], 'v1': []}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--tasks', nargs='+', default=list(TASKS), choices=list(TASKS))
    args = parser.parse_args()
    for task in args.tasks:
        runs = [run_cli('cartpole_impala.py', seed, TASKS[task]) for seed in args.seeds]
        print(json.dumps({'benchmark': f'impala_cartpole_{task}', 'overrides': TASKS[task], **median_report(runs)}), flush=True)


if __name__ == '__main__':
    main()
