"""Run the reliability catalogue (tests/fixtures/reliability.py) and write its counts into docs/reliability.md.

    python bench/reliability.py            # all bad inputs, injected faults and tampered folders (about 5 minutes)
    python bench/reliability.py --no-write # print only

Counts what happened, never what was meant to: bad inputs tried / clear one-line errors / tracebacks /
silently accepted / hangs / errors that wrote into the folder, faults injected / survived / data lost, and
tampered run and study folders tried from each of the three command forms / clear / code ran / wrote / tracebacks.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from fixtures.reliability import (COMMAND_FORMS, bad_inputs, faults, run_fault, run_input, run_tampered,  # noqa: E402
                                  tampered_folders)


def trained_run(folder: str) -> str:
    """A finished CartPole A2C run (the suite's ``trained_run`` fixture) to tamper with copies of."""
    import subprocess

    run_dir = os.path.join(folder, 'cartpole_a2c')
    done = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_a2c.py', '--exp-dir', run_dir,
                           '--max-env-step', '1600', '-q', 'env.collector_env_num=4', 'env.evaluator_env_num=4',
                           'env.n_evaluator_episode=4', 'policy.eval.evaluator.eval_freq=10'],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return run_dir

BEGIN, END = '<!-- reliability:begin -->', '<!-- reliability:end -->'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--no-write', action='store_true', help='print the table, do not edit docs/reliability.md')
    args = parser.parse_args()
    started = time.time()
    counts = collections.Counter()
    problems = []
    inputs = bad_inputs()
    for case in inputs:
        outcome = run_input(case, timeout_s=60)
        counts[outcome.kind] += 1
        if outcome.kind != 'clear':
            problems.append(f"* input `{case.name}`: {outcome.kind} ({outcome.detail})")
    fault_rows = []
    for name in faults():
        result = run_fault(name)
        fault_rows.append((name, result))
        if not result.survived:
            problems.append(f"* fault `{name}`: not survived ({result.detail})")
    tampered = collections.Counter()
    cases = tampered_folders()
    with tempfile.TemporaryDirectory(prefix='acframe_bench_trained_') as folder:
        run_dir = trained_run(folder)
        for case in cases:
            for form, outcome in run_tampered(case, run_dir).items():
                tampered[outcome.kind] += 1
                if outcome.kind != 'clear':
                    problems.append(f"* tampered folder `{case.name}` ({form}): {outcome.kind} ({outcome.detail})")
    survived = sum(r.survived for _, r in fault_rows)
    lost = [f"{name}: {r.lost}" for name, r in fault_rows if r.lost]
    table = '\n'.join([
        BEGIN,
        f"Measured with `python bench/reliability.py` ({time.strftime('%Y-%m-%d')}, {time.time() - started:.0f} s):",
        '',
        '| bad inputs tried | clear one-line errors | tracebacks | silently accepted | hangs | wrote into the folder |',
        '|---|---|---|---|---|---|',
        f"| {len(inputs)} | {counts['clear']} | {counts['traceback']} | {counts['silent']} | {counts['hang']} | {counts['wrote']} |",
        '',
        '| faults injected | survived | data lost |',
        '|---|---|---|',
        f"| {len(fault_rows)} | {survived} | " + ('; '.join(lost) if lost else 'none') + ' |',
        '',
        'Faults: ' + '; '.join(name for name, _ in fault_rows) + '.',
        '',
        f"| tampered run/study folders × command forms | clear (one line, exit 2, or -m plot plotting) | code ran | "
        f"wrote | tracebacks | silently accepted | hangs |",
        '|---|---|---|---|---|---|---|',
        f"| {len(cases)} × {len(COMMAND_FORMS)} = {sum(tampered.values())} | {tampered['clear']} | {tampered['ran code']} | "
        f"{tampered['wrote']} | {tampered['traceback']} | {tampered['silent']} | {tampered['hang']} |",
        '',
        'Tampered folders (tests/test_run_folder_is_data.py; forms: ' + ', '.join(f'`{f}`' for f in COMMAND_FORMS)
        + '): ' + '; '.join(case.name for case in cases) + '.',
        '',
        ('Not yet right:\n' + '\n'.join(problems)) if problems else 'Every input ended in one clear line with nothing written; every fault was survived; no tampered folder ran code, wrote anything or crashed a reader.',
        END,
    ])
    print(table)
    if not args.no_write:
        path = os.path.join(ROOT, 'docs', 'reliability.md')
        text = open(path, encoding='utf-8').read()
        text = re.sub(re.escape(BEGIN) + '.*?' + re.escape(END), lambda _: table, text, flags=re.S)
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)


if __name__ == '__main__':
    main()
