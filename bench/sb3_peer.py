"""Stable-Baselines3 as the peer of the time-to-solve benchmarks (bench_ppo.py, bench_a2c.py).

The peer runs in a fresh process (``run_sb3``), with the RL Zoo's hyperparameters for the task, stopped as acframe
is: ``EvalCallback`` + ``StopTrainingOnRewardThreshold`` on ``n_eval_episodes`` deterministic episodes every
``eval_every`` env steps, played on as many evaluation envs as acframe's ``evaluator_env_num`` (one episode each,
as acframe's evaluator does). ``threads`` is the torch thread count of the peer: 1 (its best for a small MLP, and
acframe's) or ``None`` for torch's default (the machine's cores).

SB3 is a bench-only dependency (the ``bench`` extra, or ``pip install --no-deps stable-baselines3``).
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Dict, Optional

#: the RL Zoo's CartPole-v1 settings (rl-baselines3-zoo hyperparams/{ppo,a2c}.yml) as SB3 constructor arguments;
#: ``lin_X`` schedules are written as callables by ``_zoo_kwargs``
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


def child(algo: str, seed: int, threads: Optional[int], env_id: str, stop: float, eval_every: int,
          eval_envs: int, n_eval_episodes: int, budget: int) -> None:
    """Train SB3 ``algo`` until the deterministic evaluation mean reaches ``stop``; print one JSON line."""
    import torch
    if threads:
        torch.set_num_threads(threads)
    import stable_baselines3
    from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
    from stable_baselines3.common.env_util import make_vec_env

    n_envs = ZOO[algo]['n_envs']
    env = make_vec_env(env_id, n_envs=n_envs, seed=seed)
    eval_env = make_vec_env(env_id, n_envs=eval_envs, seed=seed + 100_000)
    callback = EvalCallback(eval_env, callback_on_new_best=StopTrainingOnRewardThreshold(reward_threshold=stop),
                            n_eval_episodes=n_eval_episodes, eval_freq=max(1, eval_every // n_envs),
                            deterministic=True, verbose=0)
    model = getattr(stable_baselines3, algo.upper())('MlpPolicy', env, seed=seed, device='cpu', verbose=0,
                                                     **_zoo_kwargs(algo))
    model.learn(total_timesteps=budget, callback=callback)
    print(json.dumps({'solved': bool(callback.best_mean_reward >= stop), 'env_steps': int(model.num_timesteps),
                      'best_eval_return': float(callback.best_mean_reward), 'threads': torch.get_num_threads()}))


def run_sb3(script: str, algo: str, seed: int, threads: Optional[int]) -> Dict[str, Any]:
    """Run ``script --sb3-child SEED --sb3-threads N`` (the benchmark's own child entry) in a fresh process and
    return its JSON line with the whole-process wall seconds."""
    env = dict(os.environ)
    for var in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS'):  # the default: whatever torch picks on this machine
        if threads:
            env[var] = str(threads)
        else:
            env.pop(var, None)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, script, '--sb3-child', str(seed), '--sb3-threads', str(threads or 0)],
                          capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"SB3 {algo} seed {seed} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return {'seed': seed, 'process_s': round(wall, 2), **json.loads(proc.stdout.strip().splitlines()[-1])}
