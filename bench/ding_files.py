"""DI-engine 0.5.3's own dizoo config files for A2C, ACER, IMPALA and PPO, run unchanged under acframe (issue 47).

    python bench/ding_files.py                    # compile every file, then a tiny run of each that compiles
    python bench/ding_files.py --compile-only     # only acframe.config.compile_config(file)
    python bench/ding_files.py --wheel DI_engine-0.5.3-py3-none-any.whl --filter pong --markdown

The files are read from DI-engine's wheel (``pip download --no-deps di-engine==0.5.3``: 2.4 MB, no install, no
dependencies) into a temporary folder; nothing of DI-engine is copied into this repository and DI-engine is not
installed (acframe reads the files without it).

**Selection**: every ``dizoo/**/*_config.py`` of the wheel whose file name contains ``a2c``, ``acer``, ``impala``,
``ppo`` or ``ppg``, or whose ``create_config`` names a policy type containing ``a2c``, ``acer``, ``impala`` or
``ppo`` (read from the source with ``ast``, without running it): DI-engine's on- and off-policy PPO variants
(``ppo_offpolicy``, ``ppo_pg``, ``ppo_stdim``, PPG, MAPPO/HAPPO), the PPO-based reward-model files (GCL, TREX, RND,
ICM) and the R2D3 files with a PPO expert are in the list, so that what acframe refuses is listed too.

Each file is run in its own subprocess (``--timeout`` seconds):

* **compile**: ``compile_config(file)``; a ``ConfigError`` is *refused* (its one line), anything else *failed*
  (the traceback's last line; ``--verbose`` prints the whole traceback);
* **run** (unless ``--compile-only``): ``acframe -c FILE --max-env-step N -q`` with tiny overrides that shorten the
  run but change nothing the file decides (``RUN_OVERRIDES``: one evaluation episode of at most 200 steps, in-process
  envs, no confirmation episodes; a ``multi_gpu=True`` file on 2 ranks, ``DDP_OVERRIDES``); the file's envs, model and learning settings are used. The budget is
  ``--max-env-step`` (default 1): an on-policy run then collects one step of each collector env and learns on that
  (cut) rollout; where acframe refuses the budget because the learner could not make one update with it (off-policy
  runs), the run is repeated (at most twice) with the smallest budget the refusal names. A run that exits 0 shows
  the env steps and gradient steps of its summary.json. Exit 0 is *ran*, exit 2 (one ``acframe: error:`` line) *refused*, anything
  else (or the timeout) *failed*.

One line per file, then the counts; ``--markdown`` prints the table docs/from_di_engine.md holds.
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from typing import Dict, List, Optional

DI_ENGINE = 'di-engine==0.5.3'
NAME = re.compile(r'a2c|acer|impala|ppo|ppg')
POLICY = re.compile(r'a2c|acer|impala|ppo')
RUN_OVERRIDES = ['env.evaluator_env_num=1', 'env.n_evaluator_episode=1', 'env.max_episode_steps=200',
                 'env.n_confirm_episode=0', 'env.manager=sync']

# the subprocess: compile, then (optionally) the CLI; the last stdout line is a JSON result
WORKER = r'''
import json, sys, traceback, io, contextlib
path, exp_dir, max_env_step, overrides, compile_only = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5] == '1'
out = {'stage': 'compile'}
try:
    from acframe.config import compile_config
    from acframe.errors import AcframeError
    try:
        compile_config(path, overrides=overrides)
    except AcframeError as exc:
        from acframe.cli import one_line
        out.update(outcome='refused', line=one_line(exc))
    if 'outcome' not in out and not compile_only:
        out['stage'] = 'run'
        from acframe.cli import main
        import re
        for attempt in range(3):  # a budget too small to learn once is refused naming the smallest: run that one
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                code = main(['-c', path, '--max-env-step', max_env_step, '-q', '--exp-dir', exp_dir + f'_{attempt}', *overrides])
            lines = [l for l in err.getvalue().splitlines() if l.strip()]
            found = re.search(r'raise max_env_step to at least (\d+)', lines[-1] if lines else '')
            out['max_env_step'] = int(max_env_step)
            if code != 2 or not found or attempt == 2:
                break
            max_env_step = found.group(1)
        if code == 0:
            out.update(outcome='ran')
            try:
                with open(exp_dir + f'_{attempt}/summary.json') as f:
                    summary = json.load(f)
                out['line'] = f"{summary.get('env_steps')} env steps, {summary.get('train_iters')} gradient steps"
            except (OSError, ValueError):
                pass
        elif code == 2:
            out.update(outcome='refused', line=next((l for l in reversed(lines) if l.startswith('acframe: error:')), lines[-1] if lines else ''))
        else:
            out.update(outcome='failed', line=f'exit {code}: ' + (lines[-1] if lines else ''))
    elif 'outcome' not in out:
        out.update(outcome='compiled')
except BaseException as exc:
    tb = traceback.format_exc()
    out.update(outcome='failed', line=tb.strip().splitlines()[-1], traceback=tb)
print(json.dumps(out))
'''


def download_wheel(folder: str) -> str:
    subprocess.run([sys.executable, '-m', 'pip', 'download', '--no-deps', '--quiet', DI_ENGINE, '-d', folder],
                   check=True, timeout=300)
    wheels = [f for f in os.listdir(folder) if f.endswith('.whl')]
    if not wheels:
        raise SystemExit(f"pip download {DI_ENGINE} gave no wheel in {folder}")
    return os.path.join(folder, wheels[0])


def create_policy_types(source: str) -> List[str]:
    """The ``type`` of ``policy=dict(type=...)`` inside assignments to ``*create_config`` names."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    types = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and 'create_config' in t.id for t in node.targets):
            for sub in ast.walk(node.value):
                if isinstance(sub, ast.keyword) and sub.arg == 'policy' and isinstance(sub.value, ast.Call):
                    types += [kw.value.value for kw in sub.value.keywords
                              if kw.arg == 'type' and isinstance(kw.value, ast.Constant)]
    return types


def select(wheel: str, dest: str, pattern: Optional[str]) -> List[str]:
    """Extract the selected config files into ``dest`` (their paths inside the wheel kept); return those paths."""
    chosen = []
    with zipfile.ZipFile(wheel) as zf:
        for name in sorted(zf.namelist()):
            if not (name.startswith('dizoo/') and name.endswith('_config.py')):
                continue
            source = zf.read(name).decode('utf-8')
            base = os.path.basename(name)
            if not (NAME.search(base) or any(POLICY.search(t) for t in create_policy_types(source))):
                continue
            if pattern and not re.search(pattern, name):
                continue
            target = os.path.join(dest, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, 'w') as f:
                f.write(source)
            chosen.append(name)
    return chosen


#: a DI-engine DDP file (``multi_gpu=True``) runs on 2 ranks, as its docstring launches it (``--nproc_per_node=2``)
DDP_OVERRIDES = ['parallel.learner_num=2']


def run_one(path: str, exp_dir: str, args: argparse.Namespace) -> Dict[str, str]:
    with open(path) as f:
        ddp = re.search(r'multi_gpu\s*=\s*True', f.read()) is not None
    overrides = RUN_OVERRIDES + (DDP_OVERRIDES if ddp else [])
    cmd = [sys.executable, '-c', WORKER, path, exp_dir, str(args.max_env_step), json.dumps(overrides),
           '1' if args.compile_only else '0']
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, cwd=os.path.dirname(exp_dir))
    except subprocess.TimeoutExpired:
        return {'outcome': 'failed', 'line': f'timed out after {args.timeout} s', 'seconds': args.timeout}
    seconds = round(time.monotonic() - start, 1)
    lines = proc.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (IndexError, ValueError):
        tail = (proc.stderr.strip().splitlines() or ['(no output)'])[-1]
        result = {'outcome': 'failed', 'line': f'exit {proc.returncode}: {tail}', 'traceback': proc.stderr}
    result['seconds'] = seconds
    return result


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--wheel', help=f"DI-engine's wheel (default: pip download --no-deps {DI_ENGINE})")
    parser.add_argument('--compile-only', action='store_true', help='only compile_config(file), no run')
    parser.add_argument('--max-env-step', type=int, default=1, help='budget of each tiny run (one collection)')
    parser.add_argument('--timeout', type=int, default=300, help='seconds per file')
    parser.add_argument('--filter', help='only files whose path matches this regex')
    parser.add_argument('--markdown', action='store_true', help='also print the markdown table')
    parser.add_argument('--json', help='write the results to this file')
    parser.add_argument('--verbose', action='store_true', help='print the traceback of each failed file')
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix='ding_files_') as tmp:
        wheel = args.wheel or download_wheel(os.path.join(tmp, 'wheel'))
        files = select(wheel, os.path.join(tmp, 'files'), args.filter)
        print(f"{len(files)} DI-engine 0.5.3 dizoo files (a2c/acer/impala/ppo), "
              f"{'compile only' if args.compile_only else f'compile + run to {args.max_env_step} env steps'}", flush=True)
        results: Dict[str, Dict[str, str]] = {}
        for i, name in enumerate(files):
            exp_dir = os.path.join(tmp, 'runs', f'{i:03d}')
            os.makedirs(os.path.dirname(exp_dir), exist_ok=True)
            result = run_one(os.path.join(tmp, 'files', name), exp_dir, args)
            if result.get('line'):  # the file's path in the wheel, not in this run's temporary folder
                result['line'] = result['line'].replace(os.path.join(tmp, 'files') + os.sep, '')
            results[name] = result
            budget = f" (max_env_step={result['max_env_step']})" if result.get('max_env_step', 1) > 1 else ''
            print(f"{result['outcome']:8s} {result['seconds']:6.1f}s  {name[len('dizoo/'):]}{budget}"
                  + (f"\n         {result['line']}" if result.get('line') else ''), flush=True)
            if args.verbose and result.get('traceback'):
                print(result['traceback'])
    counts: Dict[str, int] = {}
    for result in results.values():
        counts[result['outcome']] = counts.get(result['outcome'], 0) + 1
    print(' '.join(f'{k}: {v}' for k, v in sorted(counts.items())) + f' (of {len(results)})')
    if args.markdown:
        print('\n| file | outcome | acframe says |\n|---|---|---|')
        for name, result in results.items():
            line = result.get('line', '').replace('acframe: error: ', '').replace('|', '\\|')
            print(f"| `{name[len('dizoo/'):]}` | {result['outcome']} | {line} |")
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
