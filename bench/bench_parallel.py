"""The parallel pipeline against the serial one, whole process, as a user runs them.

1. Throughput: ``cartpole_impala.py`` (CartPole-v1) with the stop value off and a fixed env-step budget;
   env-steps/s of ``acframe -c ...`` (serial) and of ``acframe -m parallel`` (local backend) with 1, 2 and 4
   actors on the same config (the learner making as many updates per env step as the serial loop), and
   with 2 actors running free (``parallel.env_steps_per_update=0``). Two figures per run: ``steady`` (env
   steps / seconds of collecting and learning: the summary's ``env_steps_per_s``; for the parallel pipeline
   the start-up of its workers is left out) and ``end_to_end`` (env steps / wall time of the whole process).
2. Time-to-solve: IMPALA on CartPole-v0 (stop value 195), serial and parallel with 2 actors, per seed.

The scaling depends on the cores: the machine's core count and load average are printed with the results.

    python bench/bench_parallel.py [--steps 100000] [--actors 1 2 4] [--seeds 0 1 2]
    python bench/bench_parallel.py --quick        # a small run to check the script
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run_cli  # noqa: E402

CONFIG = 'cartpole_impala.py'
THROUGHPUT_OVERRIDES = ['env.stop_value=None']
SOLVE_OVERRIDES = ['env.env_id=CartPole-v0', 'env.stop_value=195']


def run(seed: int, overrides: List[str], actors: int = 0, max_env_step: int = 0) -> Dict[str, Any]:
    """One run; ``actors`` > 0 runs the parallel pipeline (local backend) with that many actors."""
    extra = ['--max-env-step', str(max_env_step)] if max_env_step else []
    if actors:
        extra += ['-m', 'parallel', '--backend', 'local']
        overrides = overrides + [f'parallel.actor_num={actors}']
    result = run_cli(CONFIG, seed, overrides, extra)
    result['end_to_end_steps_per_s'] = result['env_steps'] / result['process_s']
    return result


def throughput(steps: int, actor_counts: List[int], seed: int) -> List[Dict[str, Any]]:
    rows = []
    serial = run(seed, THROUGHPUT_OVERRIDES, max_env_step=steps)
    base_steady, base_e2e = serial['env_steps_per_s'], serial['end_to_end_steps_per_s']
    rows.append(_row('serial', serial, base_steady, base_e2e))
    for actors in actor_counts:
        result = run(seed, THROUGHPUT_OVERRIDES, actors=actors, max_env_step=steps)
        rows.append(_row(f'parallel x{actors}', result, base_steady, base_e2e))
    # the actors never wait for the learner: more env steps/s, fewer updates per env step
    free = run(seed, THROUGHPUT_OVERRIDES + ['parallel.env_steps_per_update=0'], actors=2, max_env_step=steps)
    rows.append(_row('parallel x2, env_steps_per_update=0', free, base_steady, base_e2e))
    return rows


def _row(name: str, result: Dict[str, Any], base_steady: float, base_e2e: float) -> Dict[str, Any]:
    return {
        'pipeline': name,
        'env_steps': result['env_steps'],
        'train_iters': result['train_iters'],
        'process_s': result['process_s'],
        'steady_steps_per_s': round(result['env_steps_per_s'], 1),
        'end_to_end_steps_per_s': round(result['end_to_end_steps_per_s'], 1),
        'steady_vs_serial': round(result['env_steps_per_s'] / base_steady, 2),
        'end_to_end_vs_serial': round(result['end_to_end_steps_per_s'] / base_e2e, 2),
        'per_actor_steps_per_s': result.get('env_steps_per_s_per_actor'),
        'learner_idle_fraction': result.get('learner_idle_fraction'),
        'policy_lag_mean': result.get('policy_lag_mean'),
    }


def time_to_solve(seeds: List[int], actors: int, max_env_step: int) -> List[Dict[str, Any]]:
    rows = []
    for name, n in (('serial', 0), (f'parallel x{actors}', actors)):
        runs = [run(seed, SOLVE_OVERRIDES, actors=n, max_env_step=max_env_step) for seed in seeds]
        rows.append({
            'pipeline': name, 'seeds': seeds, 'solved': [r['solved'] for r in runs],
            'process_s': [r['process_s'] for r in runs], 'env_steps': [r['env_steps'] for r in runs],
            'median_process_s': round(statistics.median(r['process_s'] for r in runs), 2),
            'median_env_steps': int(statistics.median(r['env_steps'] for r in runs)),
        })
    return rows


def markdown(rows: List[Dict[str, Any]], keys: List[str]) -> str:
    lines = ['| ' + ' | '.join(keys) + ' |', '|' + '---|' * len(keys)]
    lines += ['| ' + ' | '.join(str(row[k]) for k in keys) + ' |' for row in rows]
    return '\n'.join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--steps', type=int, default=100_000, help='env-step budget of each throughput run')
    parser.add_argument('--actors', type=int, nargs='+', default=[1, 2, 4], help='actor counts to measure')
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2], help='seeds of the time-to-solve runs')
    parser.add_argument('--solve-actors', type=int, default=2, help='actors of the parallel time-to-solve runs')
    parser.add_argument('--solve-budget', type=int, default=300_000, help='env-step budget of a time-to-solve run')
    parser.add_argument('--quick', action='store_true', help='a small run: 20k steps, actors 1 2, one seed')
    args = parser.parse_args()
    if args.quick:
        args.steps, args.actors, args.seeds = 20_000, [1, 2], [0]
    context = {'date': datetime.date.today().isoformat(), 'cpu_count': os.cpu_count(),
               'load_average_at_start': [round(x, 2) for x in os.getloadavg()]}
    rows = throughput(args.steps, args.actors, seed=0)
    solve = time_to_solve(args.seeds, args.solve_actors, args.solve_budget)
    print(json.dumps({'benchmark': 'parallel_vs_serial', **context, 'throughput': rows, 'time_to_solve': solve}))
    print(f"\n{context['date']}, {context['cpu_count']} cores, load average {context['load_average_at_start']} at start")
    print(f"\nThroughput ({CONFIG}, {args.steps} env steps, stop value off):\n")
    print(markdown(rows, ['pipeline', 'train_iters', 'steady_steps_per_s', 'steady_vs_serial', 'end_to_end_steps_per_s',
                          'end_to_end_vs_serial', 'learner_idle_fraction', 'policy_lag_mean']))
    print("\nTime to solve CartPole-v0 (195):\n")
    print(markdown(solve, ['pipeline', 'solved', 'median_process_s', 'median_env_steps', 'process_s']))


if __name__ == '__main__':
    main()
