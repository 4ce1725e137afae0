"""Where the time of one whole ``acframe`` training process goes, phase by phase.

    python bench/profile_run.py -c cartpole_ppo.py -s 0 [any acframe arguments]

Runs ``acframe.cli.main`` in this process with wall-clock timers around the phases of a run (nothing else changes:
same config, same seed, same results) and prints one table: interpreter start-up and imports (torch, then acframe's
own), compiling the config, building the envs, collection, the update split into its loss (forward), backward +
gradient clip and optimizer step, evaluation and its confirmation run, and writing the run folder (checkpoints,
curves, summary). Phases nest (the update is inside the loop); "rest" is what no timer covers. One torch thread,
as acframe's CLI sets it. The numbers in docs/benchmarks.md (issue 48) come from this script.
"""
from __future__ import annotations

import atexit
import collections
import os
import sys
import time

START = time.perf_counter()
os.environ.setdefault('OMP_NUM_THREADS', '1')
import torch  # noqa: E402

TORCH = time.perf_counter()
import acframe.cli as cli  # noqa: E402
import acframe.entry.serial  # noqa: E402,F401  (what a serial run imports anyway, timed with the imports)
import acframe.policy  # noqa: E402,F401

ACFRAME = time.perf_counter()
SECONDS: dict = collections.defaultdict(float)
CALLS: collections.Counter = collections.Counter()


def timed(owner: object, name: str, phase: str) -> None:
    """Add the wall time of every call of ``owner.name`` to ``phase`` (an outer call only: no double count)."""
    inner = getattr(owner, name)
    depth = [0]

    def wrapper(*args, **kwargs):
        depth[0] += 1
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                SECONDS[phase] += time.perf_counter() - start
                CALLS[phase] += 1
    setattr(owner, name, wrapper)


def install() -> None:
    from acframe.config import compile as compile_module
    from acframe.entry import run_base, serial
    from acframe.policy import base
    from acframe.worker import collector, evaluator, learner

    import acframe.config as config_package
    for owner in (compile_module, config_package, run_base):  # every name a run calls it by
        timed(owner, 'compile_config', 'compile the config')
    timed(run_base.RunBase, '_start', 'open the run folder (lock, config.json, loggers)')
    timed(serial.SerialRun, '__init__', 'set up (envs, policy, buffer, learner, evaluator)')
    timed(serial, 'make_env_manager', 'build the envs')
    timed(collector.SampleCollector, 'collect', 'collection')
    timed(learner.Learner, 'train', 'update (whole)')
    timed(base.Policy, '_optimizer_step', 'update: backward + clip + optimizer step')
    timed(evaluator.Evaluator, 'evaluate', 'evaluation (incl. confirmation)')
    timed(evaluator.Evaluator, 'confirm', 'evaluation: confirmation run')
    timed(learner.Learner, 'save_checkpoint', 'write the folder: checkpoints')
    timed(run_base, 'write_run_curves', 'write the folder: curves')
    timed(run_base.RunBase, 'finish', 'finish (summary, curves, final checkpoint)')


def report() -> None:
    total = time.perf_counter() - START
    rows = [('imports: torch', TORCH - START), ("imports: acframe's own (gymnasium, treetensor, tensorboardX ...)",
                                                ACFRAME - TORCH)]
    rows += sorted(SECONDS.items(), key=lambda item: -item[1])
    print(f"\n| phase | seconds | share of the process | calls |\n|---|---|---|---|", file=sys.stderr)
    for phase, seconds in rows:
        print(f"| {phase} | {seconds:.2f} | {seconds / total:.0%} | {CALLS.get(phase, 1)} |", file=sys.stderr)
    print(f"| whole process (after interpreter start-up) | {total:.2f} | 100% | |", file=sys.stderr)


if __name__ == '__main__':
    install()
    atexit.register(report)
    sys.exit(cli.main(sys.argv[1:]))
