"""Helpers shared by the benchmarks: run the CLI as a user would and read what it wrote."""
from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Sequence


def acframe_command() -> List[str]:
    """The installed ``acframe`` command next to this interpreter (falls back to ``python -m acframe.cli``)."""
    candidate = os.path.join(os.path.dirname(sys.executable), 'acframe')
    return [candidate] if os.path.exists(candidate) else [sys.executable, '-m', 'acframe.cli']


def run_cli(config: str, seed: int, overrides: Sequence[str] = (), extra_args: Sequence[str] = ()) -> Dict[str, Any]:
    """Run ``acframe -c config -s seed -q ...`` in a fresh process; whole-process wall time and peak RSS.

    Peak memory is the child's maximum resident set size (``getrusage(RUSAGE_CHILDREN)`` is cumulative
    over children, so each run is measured through ``/usr/bin/time`` when present, else by resource).
    """
    exp_dir = tempfile.mkdtemp(prefix='acframe_bench_')
    cmd = acframe_command() + ['-c', config, '-s', str(seed), '-q', '--exp-dir', os.path.join(exp_dir, 'run'),
                               *extra_args, *overrides]
    time_bin = shutil.which('time') or ('/usr/bin/time' if os.path.exists('/usr/bin/time') else None)
    rss_file = os.path.join(exp_dir, 'rss')
    if time_bin:
        cmd = [time_bin, '-f', '%M', '-o', rss_file] + cmd
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    with open(os.path.join(exp_dir, 'run', 'summary.json')) as f:
        summary = json.load(f)
    peak_mib = None
    if time_bin and os.path.exists(rss_file):
        with open(rss_file) as f:
            peak_mib = int(f.read().split()[-1]) / 1024
    else:
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    shutil.rmtree(exp_dir, ignore_errors=True)
    return {'seed': seed, 'process_s': round(wall, 2), 'peak_mib': round(peak_mib, 1), **summary}


def median_report(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Medians over seeds of the figures a benchmark table shows."""
    return {
        'seeds': [r['seed'] for r in runs],
        'solved': [r['solved'] for r in runs],
        'median_process_s': round(statistics.median(r['process_s'] for r in runs), 2),
        'median_env_steps': int(statistics.median(r['env_steps'] for r in runs)),
        'median_peak_mib': round(statistics.median(r['peak_mib'] for r in runs), 1),
        'process_s': [r['process_s'] for r in runs],
        'env_steps': [r['env_steps'] for r in runs],
    }


def solve_table(task: str, acframe_runs: List[Dict[str, Any]], peer_runs: Dict[str, List[Dict[str, Any]]]) -> str:
    """A Markdown table of runs, acframe against each SB3 variant (``sb3_peer.VARIANTS``), and acframe's median
    whole-process time as a fraction of each variant's (medians over the same seeds)."""
    names = {'sb3': "SB3, RL Zoo settings (1 torch thread, 1 eval env)",
             'sb3-vec-eval': 'SB3, 1 torch thread, evaluation on 10 envs',
             'sb3-default-threads': "SB3, RL Zoo settings, torch's default threads"}
    rows = [('acframe, 1 torch thread', acframe_runs)] if acframe_runs else []
    rows += [(names.get(variant, variant), runs) for variant, runs in peer_runs.items() if runs]
    lines = [f"\n{task}\n", '| framework | solved | median env steps | median whole-process s | per seed (s) |',
             '|---|---|---|---|---|']
    for name, runs in rows:
        lines.append(f"| {name} | {sum(bool(r['solved']) for r in runs)}/{len(runs)} | "
                     f"{int(statistics.median(r['env_steps'] for r in runs))} | "
                     f"{statistics.median(r['process_s'] for r in runs):.2f} | "
                     f"{', '.join(str(r['process_s']) for r in runs)} |")
    if acframe_runs:
        ours = statistics.median(r['process_s'] for r in acframe_runs)
        for name, runs in rows[1:]:
            lines.append(f"\nacframe / {name}: {ours / statistics.median(r['process_s'] for r in runs):.2f}x")
    return '\n'.join(lines)
