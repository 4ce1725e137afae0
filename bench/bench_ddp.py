"""Data-parallel learners (``parallel.learner_num``, docs/ddp.md): learning with 2 ranks, and 2 ranks vs 1 in speed.

* ``--solve``: ``acframe -c cartpole_ppo.py -s SEED parallel.learner_num=2`` (the shipped config, unchanged: its
  batch keys are global, so each rank steps 4 of the 8 envs and learns on 128 of each 256-transition minibatch)
  until the stop value (475, confirmed on 50 fresh episodes) or its 100k-step budget; the same with one learner,
  interleaved, for comparison. Env steps to solve and whole-process seconds per seed.
* ``--speed``: the same config at a fixed budget (``--env-steps``, stop value off), 1 learner vs 2: env steps per
  second of training (``summary.json``'s ``env_steps_per_s``) and whole-process seconds, per seed, and the ratio;
  then a learner-bound variant (512x512 encoders, half the budget).

Run it with both CPU cores free (2 ranks use 2 cores): ``python bench/bench_ddp.py --solve --speed``.

    python bench/bench_ddp.py [--solve] [--speed] [--seeds 0 1 2] [--env-steps 20000] [--config acrobot_a2c.py]

``--config`` swaps the config (``--solve --config acrobot_a2c.py``: A2C with observation and reward normalization,
whose running statistics the ranks merge at every update).

``--parallel`` runs the parallel pipeline instead (``-m parallel --backend local``; default config
``cartpole_impala.py``): 2 learner ranks each fed by its own actors against one learner fed by all of them
(``parallel.actor_num=2`` both times). ``--solve --parallel``: ``cartpole_impala.py`` to its stop value on each seed.
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

CONFIG = 'cartpole_ppo.py'
#: the pipeline's CLI arguments (``--parallel``: -m parallel --backend local, two actors)
MODE_ARGS: List[str] = []
MODE_OVERRIDES: List[str] = []


def _row(learners: int, run: Dict[str, Any]) -> Dict[str, Any]:
    keys = ('seed', 'solved', 'env_steps', 'train_iters', 'wall_s', 'env_steps_per_s', 'process_s', 'best_eval_return')
    return {'learners': learners, **{k: run[k] for k in keys}}


#: the learner counts --solve and --speed run (``--learners 2``: only the 2-rank runs)
LEARNERS: List[int] = [1, 2]


def solve(seeds: List[int]) -> List[Dict[str, Any]]:
    rows = []
    for seed in seeds:
        for learners in LEARNERS:
            rows.append(_row(learners, run_cli(CONFIG, seed, [f'parallel.learner_num={learners}', *MODE_OVERRIDES],
                                               MODE_ARGS)))
            print(json.dumps({'bench': 'solve', **rows[-1]}), flush=True)
    return rows


#: the learner-bound variant of --speed: 512x512 actor and critic encoders (about 70x the shipped 64x64's weights)
WIDE = 'policy.model.encoder_hidden_size_list=[512,512]'


def speed(seeds: List[int], env_steps: int, extra: Sequence[str] = ()) -> List[Dict[str, Any]]:
    rows = []
    for seed in seeds:
        for learners in LEARNERS:
            run = run_cli(CONFIG, seed, [f'parallel.learner_num={learners}', 'env.stop_value=None', *extra,
                                         *MODE_OVERRIDES], ['--max-env-step', str(env_steps), *MODE_ARGS])
            rows.append(_row(learners, run))
            print(json.dumps({'bench': 'speed', **rows[-1]}), flush=True)
    return rows


def table(title: str, rows: List[Dict[str, Any]]) -> None:
    print(f"\n{title}\n\n| learners | solved | env steps (per seed) | train s (per seed) | env steps/s (median) | "
          f"whole-process s (median) |\n|---|---|---|---|---|---|")
    for learners in LEARNERS:
        mine = [r for r in rows if r['learners'] == learners]
        steps = ', '.join(str(r['env_steps']) for r in mine)
        walls = ', '.join(format(r['wall_s'], '.1f') for r in mine)
        print(f"| {learners} | {sum(r['solved'] for r in mine)}/{len(mine)} | {steps} | {walls} | "
              f"{statistics.median(r['env_steps_per_s'] for r in mine):,.0f} | "
              f"{statistics.median(r['process_s'] for r in mine):.1f} |")
    if not {1, 2} <= set(LEARNERS):
        return
    one = statistics.median(r['env_steps_per_s'] for r in rows if r['learners'] == 1)
    two = statistics.median(r['env_steps_per_s'] for r in rows if r['learners'] == 2)
    print(f"\n2 learners / 1 learner, env steps per second of training: {two / one:.2f}x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--solve', action='store_true', help='cartpole_ppo.py to its stop value, 2 learners vs 1')
    parser.add_argument('--speed', action='store_true', help='a fixed budget, 2 learners vs 1')
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--env-steps', type=int, default=20_000, help='the budget of --speed')
    parser.add_argument('--config', default=None, help='the config to run (default cartpole_ppo.py; --parallel: '
                        'cartpole_impala.py)')
    parser.add_argument('--learners', type=int, nargs='+', default=[1, 2],
                        help='the learner counts to run (default 1 2; `--learners 2` skips the 1-learner runs)')
    parser.add_argument('--parallel', action='store_true', help='-m parallel --backend local: learner ranks fed by '
                        'their own actors (parallel.actor_num=2)')
    args = parser.parse_args()
    global CONFIG
    LEARNERS[:] = args.learners
    CONFIG = args.config or ('cartpole_impala.py' if args.parallel else 'cartpole_ppo.py')
    if args.parallel:
        MODE_ARGS[:] = ['-m', 'parallel', '--backend', 'local']
        MODE_OVERRIDES[:] = ['parallel.actor_num=2']
    if not (args.solve or args.speed):
        args.solve = args.speed = True
    if args.solve:
        table(f'{CONFIG} to its stop value (its env.stop_value and budget)', solve(args.seeds))
    if args.speed:
        table(f'{CONFIG}, {args.env_steps} env steps, stop value off', speed(args.seeds, args.env_steps))
        table(f'{CONFIG} {WIDE} (learner-bound), {args.env_steps // 2} env steps, stop value off',
              speed(args.seeds, args.env_steps // 2, [WIDE]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
