"""Batched inference server (``parallel.inference='server'``, issue 45) against per-actor inference.

``acframe -m parallel`` (local backend) with the actors running free (``parallel.env_steps_per_update=0``: collection
is measured, not the learner's pace), each actor with ``env.collector_env_num`` envs, the two inference modes
interleaved run by run (A, B, A, B, ...) so that the machine's load falls on both alike. Two workloads:

* ``cartpole``: ``cartpole_impala.py`` (CartPole-v1, the 64x64 MLP, 8 envs per actor);
* ``pong``: ``pong_impala.py`` with EnvPool (``env.manager=envpool``: 84x84x4 frames, the shallow CNN, 8 envs per
  actor).

Figure: the summary's ``env_steps_per_s`` (env steps / seconds the workers ran; start-up left out), median over the
repeats; the machine's cores and load average are printed with the results.

``--learn``: a recurrent model learning through the server (SEED RL's per-env state on the server):
``cartpole_novel_impala_lstm.py`` (CartPole-v1 without velocities, IMPALA with an LSTM, 2 actors) with
``-m parallel --backend local`` until solved (475, confirmed on 50 fresh episodes) or its 100k budget, per seed, the
two inference modes interleaved seed by seed; env steps to solve and the process's wall time.

    python bench/bench_inference_server.py                       # both workloads, 2 and 4 actors, 2 repeats
    python bench/bench_inference_server.py --quick               # a small run to check the script
    python bench/bench_inference_server.py --learn --seeds 0 1 2 # the recurrent learning check
    # on a GPU machine (the server on the GPU, the learner too):
    python bench/bench_inference_server.py --workloads pong --actors 4 8 15 --gpu
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

WORKLOADS = {
    'cartpole': ('cartpole_impala.py', ['env.stop_value=None'], 100_000),
    'pong': ('pong_impala.py', ['env.manager=envpool', 'env.stop_value=None', 'env.evaluator_env_num=1',
                                'env.n_evaluator_episode=1'], 12_000),
}
MODES = ('actor', 'server')


def run(workload: str, actors: int, inference: str, steps: int, gpu: bool) -> Dict[str, Any]:
    config, overrides, _ = WORKLOADS[workload]
    overrides = overrides + [f'parallel.actor_num={actors}', f'parallel.inference={inference}',
                             'parallel.env_steps_per_update=0'] + (['policy.cuda=True'] if gpu else [])
    result = run_cli(config, 0, overrides, ['-m', 'parallel', '--backend', 'local', '--max-env-step', str(steps)])
    return {'env_steps': result['env_steps'], 'env_steps_per_s': result['env_steps_per_s'],
            'startup_s': result.get('startup_s'), 'process_s': result['process_s'],
            'learner_samples_per_s': result.get('learner_samples_per_s')}


LEARN_CONFIG = 'cartpole_novel_impala_lstm.py'


def learn(seeds: List[int]) -> List[Dict[str, Any]]:
    """``LEARN_CONFIG`` to its stop value with each inference mode, seed by seed (A, B, A, B, ...)."""
    rows = []
    for seed in seeds:
        for mode in MODES:
            result = run_cli(LEARN_CONFIG, seed, [f'parallel.inference={mode}', 'parallel.actor_num=2'],
                             ['-m', 'parallel', '--backend', 'local'])
            confirm = (result.get('confirmations') or [{}])[-1].get('mean')
            rows.append({'seed': seed, 'inference': mode, 'solved': result['solved'], 'env_steps': result['env_steps'],
                         'process_s': result['process_s'], 'confirmed_mean': confirm,
                         'env_steps_per_s': round(result['env_steps_per_s'])})
            print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--workloads', nargs='+', default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument('--actors', nargs='+', type=int, default=[2, 4])
    parser.add_argument('--repeats', type=int, default=2)
    parser.add_argument('--scale', type=float, default=1.0, help='multiplies each workload env-step budget')
    parser.add_argument('--gpu', action='store_true', help='policy.cuda=True (the server and the learner on the GPU)')
    parser.add_argument('--quick', action='store_true')
    parser.add_argument('--out', default=None, help='write the results as JSON here')
    parser.add_argument('--learn', action='store_true', help=f'the recurrent learning check ({LEARN_CONFIG})')
    parser.add_argument('--seeds', nargs='+', type=int, default=[0, 1, 2], help='seeds of --learn')
    args = parser.parse_args()
    if args.learn:
        report = {'date': datetime.datetime.now().isoformat(timespec='seconds'), 'cores': os.cpu_count(),
                  'config': LEARN_CONFIG, 'rows': learn(args.seeds)}
        report['load_avg'] = [round(x, 2) for x in os.getloadavg()]
        print(json.dumps(report, indent=1))
        print('\n| seed | inference | solved | env steps | process s | confirmed mean |\n|---|---|---|---|---|---|')
        for row in report['rows']:
            print(f"| {row['seed']} | {row['inference']} | {row['solved']} | {row['env_steps']:,} | {row['process_s']} | "
                  f"{row['confirmed_mean']} |")
        if args.out:
            with open(args.out, 'w') as f:
                json.dump(report, f, indent=1)
        return
    if args.quick:
        args.actors, args.repeats, args.scale = [2], 1, 0.1
    rows: List[Dict[str, Any]] = []
    for workload in args.workloads:
        steps = int(WORKLOADS[workload][2] * args.scale)
        for actors in args.actors:
            runs: Dict[str, List[Dict[str, Any]]] = {mode: [] for mode in MODES}
            for _ in range(args.repeats):
                for mode in MODES:  # interleaved: A, B, A, B
                    runs[mode].append(run(workload, actors, mode, steps, args.gpu))
                    print(workload, actors, mode, runs[mode][-1], flush=True)
            rates = {mode: [round(r['env_steps_per_s']) for r in runs[mode]] for mode in MODES}
            medians = {mode: statistics.median(rates[mode]) for mode in MODES}
            rows.append({'workload': workload, 'actors': actors, 'env_steps': steps,
                         'actor_steps_per_s': rates['actor'], 'server_steps_per_s': rates['server'],
                         'server_vs_actor': round(medians['server'] / medians['actor'], 2)})
    report = {'date': datetime.datetime.now().isoformat(timespec='seconds'), 'cores': os.cpu_count(),
              'load_avg': [round(x, 2) for x in os.getloadavg()], 'gpu': args.gpu, 'rows': rows}
    print(json.dumps(report, indent=1))
    print('\n| workload | actors | per-actor inference env steps/s | inference server env steps/s | server / actor |')
    print('|---|---|---|---|---|')
    for row in rows:
        print(f"| {row['workload']} | {row['actors']} | {', '.join(map(str, row['actor_steps_per_s']))} | "
              f"{', '.join(map(str, row['server_steps_per_s']))} | {row['server_vs_actor']} |")
    if args.out:
        with open(args.out, 'w') as f:
            json.dump(report, f, indent=1)


if __name__ == '__main__':
    main()
