"""Does prioritized replay help here? (issue 43) The ladder's shipped configs with their uniform buffer and with the
prioritized one, side by side, same seeds, same budget.

    python bench/bench_per.py --rows cartpole,acrobot --algos acer,impala --seeds 0,1,2

For every (row, algorithm, buffer, seed) it trains ``dizoo_configs/<row>_<algo>.py`` exactly as ``bench/ladder.py``
does (fresh ``acframe`` process, one torch thread, the row's budget and overrides, hold-out of the best checkpoint on
50 fresh episodes); ``per`` adds ``policy.other.replay_buffer.type=prioritized`` (IMPALA's unrolls) or
``episodic_prioritized`` (ACER's windows) with the PER paper's proportional settings: ``alpha=0.6``, ``beta`` from
0.4 annealed to 1 over ``--anneal-step`` sample calls. Results accumulate in ``bench/results/per.json``; the table in
docs/benchmarks.md (between the ``per`` markers) is rewritten from everything recorded.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from ladder import DOC, ROWS, run_acframe  # noqa: E402  (the ladder's runner: same command, same hold-out)

RESULTS = os.path.join(HERE, 'results', 'per.json')
START, END = '<!-- per:start -->', '<!-- per:end -->'
#: the ladder's overrides for rows whose shipped config is made for another env version
ROW_OVERRIDES = {('cartpole', 'acer'): ['env.env_id=CartPole-v1', 'env.stop_value=475']}
PER_TYPE = {'impala': 'prioritized', 'acer': 'episodic_prioritized'}


def per_overrides(algo: str, anneal_step: int) -> List[str]:
    key = 'policy.other.replay_buffer'
    return [f'{key}.type={PER_TYPE[algo]}', f'{key}.alpha=0.6', f'{key}.beta=0.4', f'{key}.anneal_step={anneal_step}']


def load() -> Dict[str, Any]:
    if os.path.exists(RESULTS):
        with open(RESULTS) as f:
            return json.load(f)
    return {'runs': []}


def save(results: Dict[str, Any]) -> None:
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    tmp = RESULTS + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(results, f, indent=1)
    os.replace(tmp, RESULTS)


def _k(steps: Optional[float]) -> str:
    return 'no' if steps is None else f'{steps / 1000:.0f}k' if steps >= 10_000 else f'{steps / 1000:.1f}k'


def table(results: Dict[str, Any]) -> str:
    lines = ['| row (target) | algo | buffer | seeds | solved (env steps per seed) | median env steps to solve | '
             'best eval (mean ± std) | hold-out 50 ep. (per seed) | wall s (median) |', '|---|---|---|---|---|---|---|---|---|']
    keys = sorted({(r['row'], r['algo'], r['buffer']) for r in results['runs']}, key=lambda k: (k[0], k[1], k[2] != 'uniform'))
    for row, algo, buffer in keys:
        runs = sorted((r for r in results['runs'] if (r['row'], r['algo'], r['buffer']) == (row, algo, buffer)),
                      key=lambda r: r['seed'])
        steps = [r['env_steps'] if r['solved'] else None for r in runs]
        solved = [s for s in steps if s is not None]
        # unsolved runs count as the whole budget in the median (an upper bound on their time to solve)
        median = statistics.median(s if s is not None else r['budget'] for s, r in zip(steps, runs))
        best = [r['best'] for r in runs]
        spread = statistics.pstdev(best) if len(best) > 1 else 0.0
        lines.append(
            f"| {row} ({ROWS[row]['target']:g}) | {algo} | {buffer} | {','.join(str(r['seed']) for r in runs)} | "
            f"{len(solved)}/{len(runs)} ({' / '.join(_k(s) for s in steps)}) | {_k(median)}"
            f"{'' if len(solved) == len(runs) else ' (unsolved = budget)'} | {statistics.mean(best):.0f} ± {spread:.0f} | "
            f"{' / '.join(format(r['holdout']['mean'], '.0f') for r in runs)} | {statistics.median(r['wall_s'] for r in runs):.0f} |")
    return '\n'.join(lines)


def write_doc(results: Dict[str, Any]) -> None:
    with open(DOC) as f:
        text = f.read()
    if START not in text:
        raise SystemExit(f"{DOC} has no {START} ... {END} markers: add them where the table goes")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    with open(DOC, 'w') as f:
        f.write(f'{head}{START}\n{table(results)}\n{END}{tail}')


def overhead(capacity: int, batch_size: int, steps: int) -> Dict[str, Any]:
    """Wall time of one IMPALA replay step (sample a batch of ``batch_size`` unrolls + one learner update, the
    priorities handed back) from a full ``fifo`` and from a full ``prioritized`` buffer of ``capacity`` CartPole
    unrolls, interleaved, one torch thread; median ms per step of each and the prioritized one's overhead."""
    import time

    import gymnasium as gym
    import numpy as np
    import torch

    from acframe.config import compile_config
    from acframe.data import split_segment
    from acframe.data.prioritized import PrioritizedReplayBuffer
    from acframe.data.buffer import ReplayBuffer
    from acframe.policy import create_policy
    from acframe.worker import Learner

    torch.set_num_threads(1)
    cfg = compile_config('cartpole_impala.py', [f'policy.learn.batch_size={batch_size}'])
    policy = create_policy(cfg, gym.spaces.Box(-np.inf, np.inf, (4,), np.float32), gym.spaces.Discrete(2))
    unroll = int(cfg.policy.unroll_len)
    gen = torch.Generator().manual_seed(0)
    buffers = {'fifo': ReplayBuffer(capacity, max_use=10 ** 9), 'prioritized': PrioritizedReplayBuffer(capacity, max_use=10 ** 9)}
    while len(buffers['fifo']) < capacity:
        envs = 256
        obs = torch.randn(unroll + 1, envs, 4, generator=gen)
        with torch.no_grad():
            out = policy.collect_mode.forward(obs[:-1].reshape(-1, 4))
        segment = {k: v.reshape((unroll, envs) + tuple(v.shape[1:])) for k, v in out.items()}
        segment.update(obs=obs, reward=torch.randn(unroll, envs, generator=gen), final_obs=torch.zeros(unroll, envs, 4),
                       terminated=torch.zeros(unroll, envs, dtype=torch.bool), truncated=torch.zeros(unroll, envs, dtype=torch.bool))
        from acframe.data import make_tree
        samples = split_segment(make_tree(segment), unroll, drop_remainder=True)
        for buffer in buffers.values():
            buffer.push(samples)
    times: Dict[str, List[float]] = {name: [] for name in buffers}
    draws: Dict[str, List[float]] = {name: [] for name in buffers}  # the buffer's own work inside each step
    sample_update: List[float] = []
    for i in range(steps):
        for name, buffer in buffers.items():
            learner = Learner(policy.learn_mode, buffer=buffer)
            priority_update = getattr(buffer, 'update_priority', None)
            spent = [0.0]
            if priority_update is not None:  # time the priority update the learner makes, inside its step
                def timed_update(batch: Any, priority: Any, update: Any = priority_update) -> None:
                    begin = time.perf_counter()
                    update(batch, priority)
                    spent[0] += time.perf_counter() - begin
                buffer.update_priority = timed_update
            start = time.perf_counter()
            batch = buffer.sample(batch_size)
            drawn = time.perf_counter()
            learner.train(batch)
            times[name].append(time.perf_counter() - start)
            draws[name].append(drawn - start + spent[0])
            if priority_update is not None:
                del buffer.update_priority
        buffer = buffers['prioritized']  # the sum-tree work alone: a draw and a priority update
        start = time.perf_counter()
        batch = buffer.sample(batch_size)
        buffer.update_priority(batch, torch.rand(batch_size))
        sample_update.append(time.perf_counter() - start)
    medians = {name: 1000 * statistics.median(t[steps // 10:]) for name, t in times.items()}
    buffer_ms = {name: 1000 * statistics.median(t[steps // 10:]) for name, t in draws.items()}
    return dict(capacity=capacity, batch_size=batch_size, steps=steps, step_ms=medians,
                sample_update_ms=1000 * statistics.median(sample_update[steps // 10:]),
                buffer_ms=buffer_ms, overhead=medians['prioritized'] / medians['fifo'] - 1,
                # the buffer's share: (prioritized sample + priority update) - fifo sample, over the fifo step
                buffer_overhead=(buffer_ms['prioritized'] - buffer_ms['fifo']) / medians['fifo'])


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--rows', default='cartpole,acrobot')
    parser.add_argument('--algos', default='acer,impala')
    parser.add_argument('--buffers', default='uniform,per')
    parser.add_argument('--seeds', default='0,1,2')
    parser.add_argument('--anneal-step', type=int, default=5000, help='sample calls over which beta grows to 1')
    parser.add_argument('--doc-only', action='store_true', help='rewrite the docs table from the recorded results')
    parser.add_argument('--overhead', metavar='CAPACITY', type=int, nargs='*',
                        help='instead: time an IMPALA replay step at batch 32 from fifo and prioritized buffers of these capacities')
    args = parser.parse_args(argv)
    if args.overhead is not None:
        for capacity in args.overhead or [1000, 100_000]:
            print(json.dumps(overhead(capacity, 32, 300)), flush=True)
        return 0
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    results = load()
    if not args.doc_only:
        for row in args.rows.split(','):
            for algo in args.algos.split(','):
                for buffer in args.buffers.split(','):
                    for seed in (int(s) for s in args.seeds.split(',')):
                        overrides = ROW_OVERRIDES.get((row, algo), []) + (
                            per_overrides(algo, args.anneal_step) if buffer == 'per' else [])
                        budget = ROWS[row]['budget']
                        run = run_acframe(row, algo, seed, budget, overrides)
                        run.update(row=row, algo=algo, buffer=buffer, seed=seed, budget=budget,
                                   command=f'python bench/bench_per.py --rows {row} --algos {algo} --buffers {buffer} '
                                           f'--seeds {seed} --anneal-step {args.anneal_step}')
                        print(f"{row} {algo} {buffer} seed {seed}: solved={run['solved']} env_steps={run['env_steps']} "
                              f"best={run['best']:.1f} holdout={run['holdout']['mean']:.1f} wall={run['wall_s']}s",
                              flush=True)
                        with open(RESULTS + '.lock', 'w') as lock:  # bench_per processes side by side keep each other's runs
                            fcntl.flock(lock, fcntl.LOCK_EX)
                            results = load()
                            results['runs'] = [r for r in results['runs'] if (r['row'], r['algo'], r['buffer'], r['seed'])
                                               != (row, algo, buffer, seed)] + [run]
                            save(results)
    print(table(results))
    write_doc(results)
    return 0


if __name__ == '__main__':
    sys.exit(main())
