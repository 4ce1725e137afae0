"""Before/after in one run: an acframe config from several source trees, and SB3 (the RL Zoo's settings, one torch
thread), alternated seed by seed, so every tree and the peer see the same machine load.

    python bench/ab_trees.py --trees before=/tmp/before after=. [--config cartpole_ppo.py] [--seeds 0 1 2 0 1 2]
                             [--fixed-steps N] [--no-peer]

Each tree is a folder holding ``acframe/`` (and ``dizoo_configs/``), e.g. ``git archive COMMIT | tar -x -C
/tmp/before``; it is put first on ``PYTHONPATH`` of its runs (``acframe -c CONFIG -s SEED`` in a fresh process, as
``bench_ppo.py`` runs it). A tree written ``name=PATH:pyc`` runs with Python's bytecode cache next to its
sources (written by one import before its first run), for machines that set ``PYTHONDONTWRITEBYTECODE`` (every
process then compiles acframe's sources again; an installed package does not). Per run: whole-process wall seconds
and the child's CPU seconds; at the end, medians over the runs and their ratio to SB3's.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sb3_peer  # noqa: E402
from bench_ppo import SB3_TASK  # noqa: E402
from common import run_cli  # noqa: E402


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--trees', nargs='+', required=True, help='name=PATH or name=PATH:pyc, in run order')
    parser.add_argument('--config', default='cartpole_ppo.py')
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--fixed-steps', type=int, default=None, help='no stop value: exactly this many env steps')
    parser.add_argument('--no-peer', action='store_true', help='acframe trees only')
    args = parser.parse_args()
    trees = []
    for spec in args.trees:
        name, _, path = spec.partition('=')
        pyc = path.endswith(':pyc')
        trees.append((name, os.path.abspath(path[:-4] if pyc else path), pyc))
    overrides = ['env.stop_value=None'] if args.fixed_steps else []
    extra = ['--max-env-step', str(args.fixed_steps)] if args.fixed_steps else []
    base_env = dict(os.environ)
    runs: Dict[str, List[Dict[str, Any]]] = {}
    warmed = set()
    for seed in args.seeds:
        for name, path, pyc in trees:
            os.environ.clear()
            os.environ.update(base_env, PYTHONPATH=path)
            if pyc:
                os.environ.pop('PYTHONDONTWRITEBYTECODE', None)
                if path not in warmed:  # write the bytecode cache once, outside the timed runs
                    subprocess.run([sys.executable, '-c', 'import acframe.cli, acframe.entry.serial, acframe.policy'],
                                   check=True)
                    warmed.add(path)
            start = _cpu()
            run = run_cli(args.config, seed, overrides, extra_args=extra)
            run['cpu_s'] = round(_cpu() - start, 2)
            runs.setdefault(name, []).append(run)
            print(json.dumps({'tree': name, **{k: run[k] for k in ('seed', 'process_s', 'cpu_s', 'env_steps',
                                                                     'best_eval_return')}}), flush=True)
        os.environ.clear()
        os.environ.update(base_env)
        if not args.no_peer:
            start = _cpu()
            run = sb3_peer.run_sb3(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'bench_ppo.py'), 'ppo',
                                   seed, 'sb3', ['--fixed-steps', str(args.fixed_steps)] if args.fixed_steps else [])
            run['cpu_s'] = round(_cpu() - start, 2)
            runs.setdefault('sb3', []).append(run)
            print(json.dumps({'tree': 'sb3', **{k: run[k] for k in ('seed', 'process_s', 'cpu_s', 'env_steps')}}),
                  flush=True)
    print('| tree | wall s per run | median wall s | median CPU s | wall / SB3 |\n|---|---|---|---|---|')
    peer = statistics.median(r['process_s'] for r in runs['sb3']) if 'sb3' in runs else None
    for name, rows in runs.items():
        wall = statistics.median(r['process_s'] for r in rows)
        ratio = f'{wall / peer:.3f}x' if peer else ''
        print(f"| {name} | {' / '.join(str(r['process_s']) for r in rows)} | {wall:.2f} | "
              f"{statistics.median(r['cpu_s'] for r in rows):.2f} | {ratio} |")
    return 0


if __name__ == '__main__':
    sys.exit(main())
