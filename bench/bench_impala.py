"""IMPALA time-to-solve, whole process, as a user runs it: `acframe -c cartpole_impala.py` on the
200-step CartPole-v0 with stop value 195 (like-for-like with DI-engine's CartPole IMPALA), median of 3 seeds.

    python bench/bench_impala.py [--seeds 0 1 2]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import median_report, run_cli  # noqa: E402

OVERRIDES = ['env.env_id=CartPole-v0', 'env.stop_value=195']


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    args = parser.parse_args()
    runs = [run_cli('cartpole_impala.py', seed, OVERRIDES) for seed in args.seeds]
    print(json.dumps({'benchmark': 'impala_cartpole_v0_195', **median_report(runs)}))


if __name__ == '__main__':
    main()
