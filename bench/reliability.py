"""Run the reliability catalogue (tests/fixtures/reliability.py) and write its counts into docs/reliability.md.

    python bench/reliability.py            # all bad inputs and all injected faults (about 3 minutes)
    python bench/reliability.py --no-write # print only

Counts what happened, never what was meant to: bad inputs tried / clear one-line errors / tracebacks /
silently accepted / hangs / errors that wrote into the folder, and faults injected / survived / data lost.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'tests'))

from fixtures.reliability import bad_inputs, faults, run_fault, run_input  # noqa: E402

BEGIN, END = '<!-- reliability:begin -->', '<!-- reliability:end -->'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--no-write', action='store_true', help='print the table, do not edit docs/reliability.md')
    args = parser.parse_args()
    started = time.time()
    counts = collections.Counter()
    problems = []
    cases = bad_inputs()
    for case in cases:
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
    survived = sum(r.survived for _, r in fault_rows)
    lost = [f"{name}: {r.lost}" for name, r in fault_rows if r.lost]
    table = '\n'.join([
        BEGIN,
        f"Measured with `python bench/reliability.py` ({time.strftime('%Y-%m-%d')}, {time.time() - started:.0f} s):",
        '',
        '| bad inputs tried | clear one-line errors | tracebacks | silently accepted | hangs | wrote into the folder |',
        '|---|---|---|---|---|---|',
        f"| {len(cases)} | {counts['clear']} | {counts['traceback']} | {counts['silent']} | {counts['hang']} | {counts['wrote']} |",
        '',
        '| faults injected | survived | data lost |',
        '|---|---|---|',
        f"| {len(fault_rows)} | {survived} | " + ('; '.join(lost) if lost else 'none') + ' |',
        '',
        'Faults: ' + '; '.join(name for name, _ in fault_rows) + '.',
        '',
        ('Not yet right:\n' + '\n'.join(problems)) if problems else 'Every input ended in one clear line with nothing written; every fault was survived.',
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
