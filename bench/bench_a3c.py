"""Asynchronous A3C (``-m async``, docs/ddp.md) vs the serial A2C pipeline on CartPole-v1 (``--env acrobot``:
Acrobot-v1, ``acrobot_a3c.py`` vs ``acrobot_a2c.py``, 16 envs over 2 workers vs one process, 500k-step budget).

* ``--solve``: ``acframe -m async -c cartpole_a3c.py -s SEED`` (2 Hogwild workers, 4 envs each) and ``acframe -c
  cartpole_a2c.py -s SEED`` (one process, 8 envs; the same network, optimizer and t_max = 5), interleaved per seed,
  until the stop value (490, confirmed on 50 fresh episodes) or the 100k-step budget: solved, the env steps at the
  solving evaluation, seconds of training (``summary.json``'s ``wall_s``) and whole-process seconds.
* ``--speed``: both at a fixed budget (``--env-steps``, stop value off): env steps per second of training.

Run it with both CPU cores free (2 workers use 2 cores): ``python bench/bench_a3c.py``.

    python bench/bench_a3c.py [--env cartpole|acrobot] [--solve] [--speed] [--seeds 0 1 2] [--env-steps 20000]
    [--only a3c|a2c] [--set KEY=VALUE ...]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any, Dict, List, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run_cli  # noqa: E402

#: (name, config, extra CLI arguments)
PIPELINES = (('A3C, -m async, 2 workers', 'cartpole_a3c.py', ['-m', 'async']),
             ('A2C, serial', 'cartpole_a2c.py', []))
#: the env's title for the tables: (name, stop value, budget)
TASKS = {'cartpole': ('CartPole-v1', 490, '100k'), 'acrobot': ('Acrobot-v1', -90, '500k')}


def _row(name: str, run: Dict[str, Any]) -> Dict[str, Any]:
    solving = [c for c in run.get('confirmations', []) if c.get('solved')]
    keys = ('seed', 'solved', 'env_steps', 'train_iters', 'wall_s', 'env_steps_per_s', 'process_s', 'best_eval_return')
    return {'pipeline': name, 'solve_env_step': solving[0]['env_step'] if solving else None,
            **{k: run[k] for k in keys}}


def measure(seeds: List[int], overrides: Sequence[str] = (), extra: Sequence[str] = ()) -> List[Dict[str, Any]]:
    rows = []
    for seed in seeds:
        for name, config, args in PIPELINES:
            rows.append(_row(name, run_cli(config, seed, overrides, [*args, *extra])))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def table(title: str, rows: List[Dict[str, Any]]) -> None:
    print(f"\n{title}\n\n| pipeline | solved | env steps at the solving eval (per seed) | train s (per seed) | "
          f"env steps/s (median) | whole-process s (median) |\n|---|---|---|---|---|---|")
    for name, _, _ in PIPELINES:
        mine = [r for r in rows if r['pipeline'] == name]
        steps = ', '.join(str(r['solve_env_step'] if r['solved'] else r['env_steps']) for r in mine)
        walls = ', '.join(format(r['wall_s'], '.1f') for r in mine)
        print(f"| {name} | {sum(r['solved'] for r in mine)}/{len(mine)} | {steps} | {walls} | "
              f"{statistics.median(r['env_steps_per_s'] for r in mine):,.0f} | "
              f"{statistics.median(r['process_s'] for r in mine):.1f} |")
    if len(PIPELINES) < 2:
        return
    a3c, a2c = (statistics.median(r['env_steps_per_s'] for r in rows if r['pipeline'] == name)
                for name, _, _ in PIPELINES)
    print(f"\nA3C / serial A2C, env steps per second of training: {a3c / a2c:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--solve', action='store_true', help='to the stop value, A3C vs serial A2C')
    parser.add_argument('--speed', action='store_true', help='a fixed budget, A3C vs serial A2C')
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--env-steps', type=int, default=20_000, help='the budget of --speed')
    parser.add_argument('--env', choices=sorted(TASKS), default='cartpole')
    parser.add_argument('--only', choices=['a3c', 'a2c'], help='run one of the two pipelines')
    parser.add_argument('--set', nargs='*', default=[], help='config overrides KEY=VALUE for every run')
    args = parser.parse_args()
    global PIPELINES
    PIPELINES = tuple((name, config.replace('cartpole', args.env), extra) for name, config, extra in PIPELINES
                      if args.only is None or config.endswith(f'_{args.only}.py'))
    title, stop, budget = TASKS[args.env]
    if not (args.solve or args.speed):
        args.solve = args.speed = True
    if args.solve:
        table(f'{title} to the stop value ({stop}, confirmed on 50 episodes; {budget}-step budget)',
              measure(args.seeds, args.set))
    if args.speed:
        table(f'{title}, {args.env_steps} env steps, stop value off',
              measure(args.seeds, ['env.stop_value=None', *args.set], ['--max-env-step', str(args.env_steps)]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
