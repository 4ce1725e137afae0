"""PPO benchmark: time-to-solve CartPole-v1 (stop 475) as a user runs it, acframe vs Stable-Baselines3, same run.

* acframe: ``acframe -c cartpole_ppo.py -s SEED`` in a fresh process (RL-Zoo's PPO settings; evaluation of 10
  deterministic episodes every 100 gradient steps = every 1280 env steps).
* SB3: ``stable_baselines3.PPO`` with RL-Zoo's CartPole-v1 settings (8 envs × 32 steps, batch 256, 20 epochs,
  gamma 0.98, GAE lambda 0.8, ``lin_1e-3`` learning rate, ``lin_0.2`` clip range, 100k steps) in a fresh process,
  stopped by ``EvalCallback`` + ``StopTrainingOnRewardThreshold(475)`` evaluating 10 deterministic episodes every
  1280 env steps, as acframe does. One torch thread in both.

Whole-process wall seconds (interpreter start to exit) and env steps to the stop value, median over seeds.
SB3 is a bench-only dependency (the ``bench`` extra, or ``pip install --no-deps stable-baselines3``: it needs
gymnasium, numpy, torch and cloudpickle, which acframe already has); without it only acframe is measured.

    python bench/bench_ppo.py [--seeds 0 1 2] [--only acframe sb3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import median_report, run_cli  # noqa: E402

EVAL_EVERY_ENV_STEPS = 1280
N_ENVS = 8


def sb3_child(seed: int) -> None:
    """Train SB3 PPO (RL-Zoo CartPole-v1 settings) until the deterministic 10-episode mean reaches 475; print JSON."""
    import torch
    torch.set_num_threads(1)
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import EvalCallback, StopTrainingOnRewardThreshold
    from stable_baselines3.common.env_util import make_vec_env

    def linear(start: float):
        return lambda progress_remaining: progress_remaining * start

    env = make_vec_env('CartPole-v1', n_envs=N_ENVS, seed=seed)
    eval_env = make_vec_env('CartPole-v1', n_envs=1, seed=seed + 100_000)
    stop = StopTrainingOnRewardThreshold(reward_threshold=475, verbose=0)
    callback = EvalCallback(eval_env, callback_on_new_best=stop, n_eval_episodes=10,
                            eval_freq=EVAL_EVERY_ENV_STEPS // N_ENVS, deterministic=True, verbose=0)
    model = PPO('MlpPolicy', env, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0,
                learning_rate=linear(0.001), clip_range=linear(0.2), seed=seed, device='cpu', verbose=0)
    model.learn(total_timesteps=100_000, callback=callback)
    print(json.dumps({'solved': bool(callback.best_mean_reward >= 475), 'env_steps': int(model.num_timesteps),
                      'best_eval_return': float(callback.best_mean_reward)}))


def run_sb3(seed: int) -> Dict[str, Any]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), '--sb3-child', str(seed)],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"SB3 PPO seed {seed} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    return {'seed': seed, 'process_s': round(wall, 2), **result}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--only', nargs='+', choices=['acframe', 'sb3'], default=['acframe', 'sb3'])
    parser.add_argument('--sb3-child', type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sb3_child is not None:
        sb3_child(args.sb3_child)
        return 0
    if 'sb3' in args.only:
        import importlib.util
        if importlib.util.find_spec('stable_baselines3') is None:
            print("# stable-baselines3 is not installed (pip install --no-deps stable-baselines3, or .[bench]): "
                  "measuring acframe only", flush=True)
            args.only = [f for f in args.only if f != 'sb3']
    rows: List[Dict[str, Any]] = []
    acframe_runs: List[Dict[str, Any]] = []
    sb3_runs: List[Dict[str, Any]] = []
    for seed in args.seeds:  # interleaved, so both see the same machine load
        if 'acframe' in args.only:
            acframe_runs.append(run_cli('cartpole_ppo.py', seed))
            print(json.dumps({'framework': 'acframe', **{k: acframe_runs[-1][k] for k in
                              ('seed', 'solved', 'env_steps', 'process_s', 'best_eval_return')}}), flush=True)
        if 'sb3' in args.only:
            sb3_runs.append(run_sb3(seed))
            print(json.dumps({'framework': 'sb3', **sb3_runs[-1]}), flush=True)
    if acframe_runs:
        rows.append({'benchmark': 'ppo_solve', 'framework': 'acframe', 'env_id': 'CartPole-v1', **median_report(acframe_runs)})
    if sb3_runs:
        rows.append({'benchmark': 'ppo_solve', 'framework': 'sb3', 'env_id': 'CartPole-v1', 'seeds': args.seeds,
                     'solved': [r['solved'] for r in sb3_runs],
                     'median_process_s': round(statistics.median(r['process_s'] for r in sb3_runs), 2),
                     'median_env_steps': int(statistics.median(r['env_steps'] for r in sb3_runs)),
                     'process_s': [r['process_s'] for r in sb3_runs], 'env_steps': [r['env_steps'] for r in sb3_runs]})
    for row in rows:
        print(json.dumps(row), flush=True)
    if len(rows) == 2:
        ratio = rows[0]['median_process_s'] / rows[1]['median_process_s']
        print(f"\n| framework | solved | median env steps | median whole-process s | per seed (s) |\n|---|---|---|---|---|")
        for row in rows:
            print(f"| {row['framework']} | {sum(row['solved'])}/{len(row['solved'])} | {row['median_env_steps']} | "
                  f"{row['median_process_s']} | {', '.join(str(s) for s in row['process_s'])} |")
        print(f"\nacframe / SB3 whole-process time: {ratio:.2f}x")
    return 0


if __name__ == '__main__':
    sys.exit(main())
