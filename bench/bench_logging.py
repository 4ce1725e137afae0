"""Logger overhead: a CartPole run logging to TensorBoard and JSON lines against TensorBoard alone (issue 43).

* run: ``cartpole_impala.py`` (serial, off-policy) with ``logger.backends=['tensorboard']`` and
  ``['tensorboard', 'jsonl']``, alternated, each repeated; the run's own wall time (``summary.json``'s ``wall_s``:
  from the start of the run to its end, process start-up excluded) and the scalars it logged. Run in-process, one
  after the other, so both configurations see the same machine load.
* inside the run: in the TensorBoard + JSONL runs the JSONL backend is timed where it works (a subclass registered
  here as ``jsonl_timed`` adds ``perf_counter`` around ``JsonlLogger``'s open, ``log_scalar`` and ``close``): its
  seconds over the run's wall time is JSONL's share of the run, whatever else loads the machine.
* per scalar: the cost of one ``RunLogger.add_scalar`` to the JSONL backend alone (100,000 calls).

Wall times on a shared machine are noisy; the table gives the fastest and the median of the alternated runs.

    python bench/bench_logging.py [--repeats 5] [--env-steps 50000] [--log-freq 50]

Prints one JSON line per measurement and a Markdown table at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, List

CONFIGS = {'tensorboard': "logger.backends=['tensorboard']",
           'tensorboard+jsonl': "logger.backends=['tensorboard', 'jsonl_timed']"}


def register_timed_jsonl() -> Dict[str, float]:
    """Register ``jsonl_timed``: the JSONL backend with the seconds spent in it added to the returned dict."""
    from acframe import LOGGER_REGISTRY
    from acframe.loggers.files import JsonlLogger

    spent = {'s': 0.0}

    def timed(method):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                spent['s'] += time.perf_counter() - start
        return wrapper

    class TimedJsonl(JsonlLogger):
        __init__ = timed(JsonlLogger.__init__)
        log_scalar = timed(JsonlLogger.log_scalar)
        close = timed(JsonlLogger.close)

    LOGGER_REGISTRY.register('jsonl_timed', TimedJsonl, force=True)
    return spent


def one_run(backends: str, env_steps: int, log_freq: int, folder: str, spent: Dict[str, float]) -> Dict[str, Any]:
    from acframe.entry import serial_pipeline
    from acframe.logs import read_scalars

    spent['s'] = 0.0

    exp_dir = os.path.join(folder, f"run_{time.time_ns()}")
    serial_pipeline('cartpole_impala.py', overrides=[CONFIGS[backends], f'policy.learn.learner.log_freq={log_freq}',
                                                     'env.stop_value=None'],
                    exp_dir=exp_dir, max_env_step=env_steps, progress=False)
    with open(os.path.join(exp_dir, 'summary.json')) as f:
        summary = json.load(f)
    scalars = len(read_scalars(os.path.join(exp_dir, 'log')))
    shutil.rmtree(exp_dir)
    return {'backends': backends, 'wall_s': summary['wall_s'], 'env_steps': summary['env_steps'], 'scalars': scalars,
            'jsonl_s': round(spent['s'], 6) if backends != 'tensorboard' else None}


def per_scalar_cost(folder: str, calls: int = 100_000) -> float:
    """Seconds per ``add_scalar`` through ``RunLogger`` to the JSONL backend (its default flush interval)."""
    from acframe.config import compile_config
    from acframe.loggers import LoggerRun, RunLogger
    from acframe.loggers.files import JsonlLogger

    cfg = compile_config('cartpole_impala.py')
    backend = JsonlLogger(LoggerRun(folder, os.path.join(folder, 'log_micro'), cfg, False, None))
    logger = RunLogger([('jsonl', backend)])
    start = time.perf_counter()
    for i in range(calls):
        logger.add_scalar('learner/total_loss', 0.123456789 + i, i)
    logger.close()
    return (time.perf_counter() - start) / calls


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--repeats', type=int, default=5)
    parser.add_argument('--env-steps', type=int, default=50_000)
    parser.add_argument('--log-freq', type=int, default=50, help='policy.learn.learner.log_freq (the default is 50)')
    args = parser.parse_args(argv)
    folder = tempfile.mkdtemp(prefix='acframe_bench_logging_')
    try:
        spent = register_timed_jsonl()
        one_run('tensorboard', 2000, args.log_freq, folder, spent)  # warm-up: imports, first env builds
        runs: Dict[str, List[Dict[str, Any]]] = {name: [] for name in CONFIGS}
        for _ in range(args.repeats):
            for name in CONFIGS:
                row = one_run(name, args.env_steps, args.log_freq, folder, spent)
                print(json.dumps(row), flush=True)
                runs[name].append(row)
        cost = per_scalar_cost(folder)
        print(json.dumps({'jsonl_s_per_scalar': cost}), flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"\n| backends | fastest wall s | median wall s | all runs ({args.repeats} each, {args.env_steps} env steps, "
          f"log_freq {args.log_freq}), wall s | scalars per run | seconds in the JSONL backend (share of the run) |")
    print('|---|---|---|---|---|---|')
    for name in CONFIGS:
        walls = [r['wall_s'] for r in runs[name]]
        inside = [r['jsonl_s'] / r['wall_s'] for r in runs[name] if r['jsonl_s'] is not None]
        share = (f"{statistics.median(r['jsonl_s'] for r in runs[name]):.4f} s ({100 * statistics.median(inside):.3f} %, "
                 f"at most {100 * max(inside):.3f} %)" if inside else '-')
        print(f"| {name} | {min(walls):.2f} | {statistics.median(walls):.2f} | {', '.join(f'{w:.2f}' for w in walls)} | "
              f"{statistics.median(r['scalars'] for r in runs[name]):.0f} | {share} |")
    base = min(r['wall_s'] for r in runs['tensorboard'])
    both = min(r['wall_s'] for r in runs['tensorboard+jsonl'])
    print(f"\nfastest against fastest: {100 * (both - base) / base:+.2f} %; one add_scalar to JSONL alone: "
          f"{cost * 1e6:.2f} µs")
    return 0


if __name__ == '__main__':
    sys.exit(main())
