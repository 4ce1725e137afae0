"""Asynchronous ACER (``-m async`` with policy 'acer', docs/ddp.md; ChainerRL's async ACER) on ChainerRL's example tasks.

``acframe -m async -c CONFIG -s SEED`` for ``cartpole_async_acer.py`` (CartPole-v1, stop 475) and / or
``pendulum_async_acer.py`` (Pendulum-v1, stop -200), 2 Hogwild workers each with its own episodic replay, until the
stop value (confirmed on 50 fresh episodes) or the config's budget: solved, the env steps at the solving evaluation,
seconds of training (``summary.json``'s ``wall_s``) and the best evaluation. ``--serial`` also runs the serial ACER
pipeline on the same task, interleaved per seed: ``cartpole_acer.py`` on CartPole-v1 (stop 475) and
``pendulum_acer.py`` (one process with all 4 / 8 envs, the same network and learning rate).

Run it with both CPU cores free (2 workers use 2 cores): ``python bench/bench_async_acer.py``.

    python bench/bench_async_acer.py [--tasks cartpole pendulum] [--seeds 0 1 2] [--serial]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run_cli  # noqa: E402

TASKS = {'cartpole': 'cartpole_async_acer.py', 'pendulum': 'pendulum_async_acer.py'}
#: the serial ACER pipeline on the same task: (config, overrides)
SERIAL = {'cartpole': ('cartpole_acer.py', ['env.env_id=CartPole-v1', 'env.stop_value=475']),
          'pendulum': ('pendulum_acer.py', [])}


def measure(task: str, seeds: List[int], serial: bool) -> List[Dict[str, Any]]:
    rows = []
    runs = [(TASKS[task], [], ['-m', 'async'])] + ([(*SERIAL[task], [])] if serial else [])
    for seed in seeds:
        for config, overrides, args in runs:
            rows.append(_row(config, seed, run_cli(config, seed, overrides, args)))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def _row(config: str, seed: int, run: Dict[str, Any]) -> Dict[str, Any]:
    solving = [c for c in run.get('confirmations', []) if c.get('solved')]
    return {'config': config, 'seed': seed, 'solved': run['solved'],
            'solve_env_step': solving[0]['env_step'] if solving else None,
            'confirmed_return': solving[0].get('mean') if solving else None,
            **{k: run[k] for k in ('env_steps', 'train_iters', 'wall_s', 'best_eval_return')}}


def table(rows: List[Dict[str, Any]]) -> None:
    print("\n| config | solved | env steps at the solving eval (per seed) | confirmed on 50 episodes (per seed) | "
          "train s (per seed) | best eval (per seed) |\n|---|---|---|---|---|---|")
    for config in dict.fromkeys(r['config'] for r in rows):
        mine = [r for r in rows if r['config'] == config]
        steps = ', '.join(f"{r['solve_env_step']:,}" if r['solved'] else f"not in {r['env_steps']:,}" for r in mine)
        confirmed = ', '.join(format(r['confirmed_return'], '.0f') if r['solved'] else '-' for r in mine)
        print(f"| `{config}` | {sum(r['solved'] for r in mine)}/{len(mine)} | {steps} | {confirmed} | "
              f"{', '.join(format(r['wall_s'], '.0f') for r in mine)} | "
              f"{', '.join(format(r['best_eval_return'], '.0f') for r in mine)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--tasks', nargs='+', choices=sorted(TASKS), default=sorted(TASKS))
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--serial', action='store_true', help='also the serial ACER pipeline on the same tasks')
    args = parser.parse_args()
    rows = [row for task in args.tasks for row in measure(task, args.seeds, args.serial)]
    table(rows)
    return 0


if __name__ == '__main__':
    sys.exit(main())
