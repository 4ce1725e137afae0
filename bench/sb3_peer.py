"""Stable-Baselines3 as the peer of the time-to-solve benchmarks (bench_ppo.py, bench_a2c.py).

The peer runs in a fresh process (``run_sb3``), with the RL Zoo's hyperparameters for the task, stopped as acframe
is: ``EvalCallback`` + ``StopTrainingOnRewardThreshold`` on ``n_eval_episodes`` deterministic episodes every
``eval_every`` env steps (``stop=None``: no stop, the whole ``budget``). ``VARIANTS`` are the settings it is run
with: the RL Zoo's own (one torch thread, its best for a small MLP; one evaluation env, as the Zoo evaluates),
the same with its evaluation episodes on 10 envs at once (as acframe's evaluator plays them), and the Zoo's
with torch's default thread count (the machine's cores).

SB3 is a bench-only dependency (the ``bench`` extra, or ``pip install --no-deps stable-baselines3``).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

#: the RL Zoo's CartPole-v1 settings (rl-baselines3-zoo hyperparams/{ppo,a2c}.yml) as SB3 constructor arguments;
#: ``lin_X`` schedules are written as callables by ``_zoo_kwargs``
#: name -> (torch threads, 0 for torch's default; evaluation envs)
VARIANTS = {'sb3': (1, 1), 'sb3-vec-eval': (1, 10), 'sb3-default-threads': (0, 1)}
ZOO = {
    'ppo': dict(n_envs=8, kwargs=dict(n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
                                      ent_coef=0.0, learning_rate='lin_0.001', clip_range='lin_0.2')),
    'a2c': dict(n_envs=8, kwargs=dict(ent_coef=0.0)),
}


def available() -> bool:
    return importlib.util.find_spec('stable_baselines3') is not None


def _linear(start: float) -> Callable[[float], float]:
    return lambda progress_remaining: progress_remaining * start


def _zoo_kwargs(algo: str) -> Dict[str, Any]:
    return {k: _linear(float(v[4:])) if isinstance(v, str) and v.startswith('lin_') else v
            for k, v in ZOO[algo]['kwargs'].items()}


def child(algo: str, seed: int, threads: Optional[int], eval_envs: int, env_id: str, stop: Optional[float],
          eval_every: int, n_eval_episodes: int, budget: int) -> None:
    """Train SB3 ``algo`` until the deterministic evaluation mean reaches ``stop`` (None: for ``budget`` env steps);
    print one JSON line."""
    import torch
    if threads:
        torch.set_num_threads(threads)
    import stable_baselines3
    from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
    from stable_baselines3.common.env_util import make_vec_env

    n_envs = ZOO[algo]['n_envs']
    env = make_vec_env(env_id, n_envs=n_envs, seed=seed)
    eval_env = make_vec_env(env_id, n_envs=eval_envs, seed=seed + 100_000)
    on_best = None if stop is None else StopTrainingOnRewardThreshold(reward_threshold=stop)
    callback = EvalCallback(eval_env, callback_on_new_best=on_best,
                            n_eval_episodes=n_eval_episodes, eval_freq=max(1, eval_every // n_envs),
                            deterministic=True, verbose=0)
    model = getattr(stable_baselines3, algo.upper())('MlpPolicy', env, seed=seed, device='cpu', verbose=0,
                                                     **_zoo_kwargs(algo))
    model.learn(total_timesteps=budget, callback=callback)
    print(json.dumps({'solved': stop is not None and bool(callback.best_mean_reward >= stop),
                      'env_steps': int(model.num_timesteps),
                      'best_eval_return': float(callback.best_mean_reward), 'threads': torch.get_num_threads()}))


def run_sb3(script: str, algo: str, seed: int, variant: str, extra: Sequence[str] = ()) -> Dict[str, Any]:
    """Run ``script --sb3-child SEED --sb3-variant VARIANT`` (the benchmark's own child entry) in a fresh process and
    return its JSON line with the whole-process wall seconds."""
    threads = VARIANTS[variant][0]
    env = dict(os.environ)
    for var in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS'):  # the default: whatever torch picks on this machine
        if threads:
            env[var] = str(threads)
        else:
            env.pop(var, None)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, script, '--sb3-child', str(seed), '--sb3-variant', variant, *extra],
                          capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"SB3 {algo} seed {seed} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return {'seed': seed, 'process_s': round(wall, 2), 'variant': variant,
            **json.loads(proc.stdout.strip().splitlines()[-1])}


def run_child(algo: str, seed: int, variant: str, task: Dict[str, Any], fixed_steps: Optional[int]) -> None:
    """The child entry of a benchmark script: ``variant``'s threads and evaluation envs on ``task`` (with
    ``fixed_steps``: no stop value, that many env steps)."""
    threads, eval_envs = VARIANTS[variant]
    if fixed_steps:
        task = dict(task, stop=None, budget=fixed_steps)
    child(algo, seed, threads or None, eval_envs, **task)


def add_arguments(parser: Any) -> None:
    """The peer comparison's command-line options (and the hidden child entry's)."""
    parser.add_argument('--peers', nargs='*', choices=list(VARIANTS), default=list(VARIANTS),
                        help="SB3 variants to run beside acframe (none: acframe only): 'sb3' is the RL Zoo's settings "
                             "with one torch thread (the ratio's yardstick); 'sb3-vec-eval' plays its evaluation "
                             "episodes on 10 envs at once; 'sb3-default-threads' leaves torch's thread count")
    parser.add_argument('--fixed-steps', type=int, default=None,
                        help='no stop value: train exactly this many env steps (the same evaluations), so the '
                             'whole-process times compare overhead alone, not the luck of when a seed solves')
    parser.add_argument('--sb3-child', type=int, default=None, help='(internal) run one SB3 child process')
    parser.add_argument('--sb3-variant', default='sb3', help='(internal)')


def compare(script: str, algo: str, config: str, overrides: Sequence[str], task: Dict[str, Any], seeds: Sequence[int],
            peers: Sequence[str], fixed_steps: Optional[int]) -> Tuple[List[Dict[str, Any]], Dict[str, List[Dict[str, Any]]]]:
    """acframe's ``config`` and each SB3 variant in ``peers`` on each seed, interleaved (acframe seed 0, the peers
    seed 0, acframe seed 1, ...) so all see the same machine load; one JSON line per run as it ends."""
    from common import run_cli

    if peers and not available():
        print("# stable-baselines3 is not installed (pip install --no-deps stable-baselines3, or .[bench]): "
              "measuring acframe only", flush=True)
        peers = []
    ours_overrides = list(overrides) + (['env.stop_value=None'] if fixed_steps else [])
    extra_args = ['--max-env-step', str(fixed_steps)] if fixed_steps else []
    extra_child = ['--fixed-steps', str(fixed_steps)] if fixed_steps else []
    ours: List[Dict[str, Any]] = []
    theirs: Dict[str, List[Dict[str, Any]]] = {p: [] for p in peers}
    for seed in seeds:
        ours.append(run_cli(config, seed, ours_overrides, extra_args=extra_args))
        print(json.dumps({'framework': 'acframe', **{k: ours[-1][k] for k in
                          ('seed', 'solved', 'env_steps', 'process_s', 'best_eval_return')}}), flush=True)
        for variant in peers:
            theirs[variant].append(run_sb3(script, algo, seed, variant, extra_child))
            print(json.dumps({'framework': variant, **theirs[variant][-1]}), flush=True)
    return ours, theirs
