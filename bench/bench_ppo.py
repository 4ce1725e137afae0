"""PPO benchmark: time-to-solve CartPole-v1 (stop 475) as a user runs it, acframe vs Stable-Baselines3, same run.

* acframe: ``acframe -c cartpole_ppo.py -s SEED`` in a fresh process (RL-Zoo's PPO settings; evaluation of 10
  deterministic episodes every 100 gradient steps = every 1280 env steps).
* SB3: ``stable_baselines3.PPO`` with RL-Zoo's CartPole-v1 settings (8 envs × 32 steps, batch 256, 20 epochs,
  gamma 0.98, GAE lambda 0.8, ``lin_1e-3`` learning rate, ``lin_0.2`` clip range, 100k steps) in a fresh process,
  stopped by ``EvalCallback`` + ``StopTrainingOnRewardThreshold(475)`` evaluating 10 deterministic episodes every
  1280 env steps, as acframe does; as the RL Zoo runs it (one torch thread, one evaluation env: the ratio's
  yardstick), with its evaluation episodes on 10 envs at once, and with torch's default threads (bench/sb3_peer.py).
  ``--fixed-steps N`` trains both N env steps without a stop value: the times then compare overhead alone.

Whole-process wall seconds (interpreter start to exit) and env steps to the stop value, median over seeds.
SB3 is a bench-only dependency (the ``bench`` extra, or ``pip install --no-deps stable-baselines3``: it needs
gymnasium, numpy, torch and cloudpickle, which acframe already has); without it only acframe is measured.

    python bench/bench_ppo.py [--seeds 0 1 2] [--peers sb3 sb3-vec-eval sb3-default-threads] [--fixed-steps N]
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sb3_peer  # noqa: E402
from common import solve_table  # noqa: E402

EVAL_EVERY_ENV_STEPS = 1280
#: SB3's child process: RL Zoo settings, evaluated and stopped as acframe's cartpole_ppo.py is
SB3_TASK = dict(env_id='CartPole-v1', stop=475, eval_every=EVAL_EVERY_ENV_STEPS, n_eval_episodes=10, budget=100_000)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    sb3_peer.add_arguments(parser)
    args = parser.parse_args()
    if args.sb3_child is not None:
        sb3_peer.run_child('ppo', args.sb3_child, args.sb3_variant, SB3_TASK, args.fixed_steps)
        return 0
    ours, theirs = sb3_peer.compare(os.path.abspath(__file__), 'ppo', 'cartpole_ppo.py', [], SB3_TASK, args.seeds,
                                    args.peers, args.fixed_steps)
    what = f'{args.fixed_steps} env steps' if args.fixed_steps else 'to 475'
    print(solve_table(f'CartPole-v1 PPO, {what}', ours, theirs))
    return 0


if __name__ == '__main__':
    sys.exit(main())
