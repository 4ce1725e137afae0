"""Run the core benchmarks in turn (``make bench``); each prints JSON lines, collected here with the machine's state.

    python bench/run_all.py [--quick]

The core set is the list below (collection, the four algorithms, the parallel pipeline, pixels); the other scripts in
bench/ (the ladder, masks, recurrent, replay priorities, DDP, A3C, ...) run on their own, each with the command
docs/benchmarks.md gives.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = [
    ('bench_collector.py', ['--repeats', '5']),
    ('bench_impala.py', []),
    ('bench_a2c.py', []),
    ('bench_acer.py', []),
    ('bench_parallel.py', []),
    ('bench_ppo.py', []),
    ('bench_pixels.py', []),
]


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description="Run the core benchmarks in turn (make bench).")
    parser.add_argument('--quick', action='store_true', help='one seed and small budgets: minutes, not hours')
    quick = parser.parse_args(argv).quick
    print(f"# cores: {os.cpu_count()}, load average before: {os.getloadavg()}", flush=True)
    failed = 0
    for script, args in BENCHMARKS:
        if quick:
            args = {'bench_collector.py': ['--repeats', '1', '--steps', '8000'], 'bench_impala.py': ['--seeds', '0'],
                    'bench_a2c.py': ['--quick'], 'bench_acer.py': ['--seeds', '0', '--max-env-step', '4000'],
                    'bench_parallel.py': ['--quick'], 'bench_ppo.py': ['--seeds', '0'],
                    'bench_pixels.py': ['--steps', '1280', '--bare-steps', '1600']}[script]
        print(f"# {script} {' '.join(args)}", flush=True)
        failed += subprocess.call([sys.executable, os.path.join(HERE, script), *args]) != 0
    print(f"# load average after: {os.getloadavg()}", flush=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
