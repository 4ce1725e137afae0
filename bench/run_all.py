"""Run every benchmark in turn (``make bench``); each prints JSON lines, collected here with the machine's state.

    python bench/run_all.py [--quick]
"""
from __future__ import annotations

import os
import subprocess
import sys

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


def main() -> int:
    quick = '--quick' in sys.argv[1:]
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
