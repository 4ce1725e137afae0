"""Invalid-action masks on tic-tac-toe and connect four (docs/masks.md): acframe's masked PPO and A2C, the unmasked
PPO control, and sb3-contrib's MaskablePPO, side by side on the same env (``acframe/envs/tictactoe.py``,
``acframe/envs/pettingzoo_env.py``), seeds 0 1 2.

    python bench/bench_masks.py                                   # 3x3: everything, 3 seeds, 100k-step budgets
    python bench/bench_masks.py --runs ppo_masked,maskable_ppo --seeds 0
    python bench/bench_masks.py --board 5x5                       # 5x5, four in a row: PPO masked / unmasked, MaskablePPO
    python bench/bench_masks.py --board connect4                  # PettingZoo's connect_four_v3: PPO masked, MaskablePPO

Every acframe run is its shipped config (3x3: ``dizoo_configs/tictactoe_<run>.py``, solved at a greedy mean return
of 0.9; 5x5: ``dizoo_configs/tictactoe5x5_<run>.py``, 0.95; connect4: ``dizoo_configs/connect_four_<run>.py``,
0.95, against a random opponent; greedy evaluation on 100 games every 1,024 env steps, solved when 50 fresh games
confirm the stop value) in a fresh ``acframe`` process, one torch thread, with the board's budget. MaskablePPO (``--peer-python``: an interpreter with sb3-contrib, e.g. PEERS/bin/python) gets
the masked PPO config's settings (8 envs x 128 steps, 10 epochs of minibatches of 256, Adam 1e-3, gamma 0.99,
GAE 0.95, entropy 0.01, clip 0.2, a 64x64 tanh network), the same board and the same evaluation and stop rule:
greedy masked actions on 100 games every 1,024 env steps, solved when their mean reaches the stop value and 50
fresh games confirm it. Both see the board alone; the mask only masks. Reported: env steps to solved (median, and
per seed), and the mean greedy return of the evaluations at the board's marks (3x3: 4k / 8k / 16k env steps; 5x5:
16k / 32k / 64k; connect4: 8k / 16k / 32k). Results go to ``bench/results/masks.json`` (3x3),
``bench/results/masks_5x5.json`` and ``bench/results/masks_connect4.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EVAL_EVERY, EVAL_GAMES, CONFIRM_GAMES = 1024, 100, 50
#: per board: its configs' prefix, the env's size and win length, the configs' stop value, the budget, the acframe
#: runs, the env steps the table reports the greedy return at, and the results file
BOARDS: Dict[str, Dict[str, Any]] = {
    '3x3': dict(game='tictactoe', prefix='tictactoe', size=3, win=3, stop=0.9, budget=100_000,
                runs=('ppo_masked', 'a2c_masked', 'ppo_nomask'), marks=(4096, 8192, 16384),
                results=os.path.join(HERE, 'results', 'masks.json')),
    '5x5': dict(game='tictactoe', prefix='tictactoe5x5', size=5, win=4, stop=0.95, budget=250_000,
                runs=('ppo_masked', 'ppo_nomask'), marks=(16384, 32768, 65536),
                results=os.path.join(HERE, 'results', 'masks_5x5.json')),
    # PettingZoo's connect_four_v3 against a random opponent (needs pettingzoo in both interpreters)
    'connect4': dict(game='connect_four', prefix='connect_four', stop=0.95, budget=200_000,
                     runs=('ppo_masked',), marks=(8192, 16384, 32768),
                     results=os.path.join(HERE, 'results', 'masks_connect4.json')),
}


def run_acframe(prefix: str, name: str, seed: int, budget: int) -> Dict[str, Any]:
    """One shipped config trained to its stop value or the budget; its summary and evaluation curve."""
    env = dict(os.environ, OMP_NUM_THREADS='1',
               PYTHONPATH=os.pathsep.join([ROOT] + [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = os.path.join(tmp, 'run')
        cmd = [sys.executable, '-m', 'acframe.cli', '-c', os.path.join(ROOT, 'dizoo_configs', f'{prefix}_{name}.py'),
               '-s', str(seed), '--exp-dir', run_dir, '--max-env-step', str(budget), '-q']
        start = time.time()
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
        if out.returncode != 0:
            raise RuntimeError(f"{name} seed {seed} failed: {out.stderr[-2000:]}")
        with open(os.path.join(run_dir, 'summary.json')) as f:
            summary = json.load(f)
        sys.path.insert(0, ROOT)
        from acframe.logs import read_scalars
        curve = [(s.step, s.value) for s in read_scalars(os.path.join(run_dir, 'log')) if s.tag == 'evaluator/return_mean']
    return dict(solved=bool(summary['solved']), env_steps=int(summary['env_steps']), curve=curve,
                wall_s=round(time.time() - start, 1))


def peer_worker(seed: int, budget: int, out: str, board: str) -> None:
    """MaskablePPO on the same env (run by the peer interpreter; acframe is not imported, the env file is loaded)."""
    import importlib.util

    import gymnasium as gym
    import numpy as np
    import torch
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.evaluation import evaluate_policy
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv

    torch.set_num_threads(1)
    stop = BOARDS[board]['stop']

    def load(name: str) -> Any:  # an env module of acframe's, loaded as a file (it needs no acframe import)
        spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, 'acframe', 'envs', f'{name}.py'))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    if BOARDS[board]['game'] == 'connect_four':
        from pettingzoo.classic import connect_four_v3
        single_agent = load('pettingzoo_env').PettingZooSingleAgent
        new_env, key = lambda: single_agent(connect_four_v3.env(), 'random', 'first'), 'observation'
    else:
        tictactoe = load('tictactoe')
        size, win = BOARDS[board]['size'], BOARDS[board]['win']
        new_env, key = lambda: tictactoe.TicTacToeEnv(masked=True, size=size, win=win), 'board'

    class BoardOnly(gym.ObservationWrapper):
        """The board as the observation; the mask of the latest observation through ``action_masks()`` (what
        MaskablePPO reads)."""

        def __init__(self, env: gym.Env) -> None:
            super().__init__(env)
            self.observation_space = env.observation_space[key]
            self._mask = np.ones(env.action_space.n, dtype=bool)

        def observation(self, observation: Dict[str, Any]) -> Any:
            self._mask = np.asarray(observation['action_mask']) != 0
            return observation[key]

        def action_masks(self) -> np.ndarray:
            return self._mask

    def make(i: int):
        def thunk():
            env = BoardOnly(new_env())
            env.reset(seed=seed * 1000 + i)
            return env
        return thunk

    venv = DummyVecEnv([make(i) for i in range(8)])
    eval_env = DummyVecEnv([make(100 + i) for i in range(10)])
    curve: List[List[float]] = []
    solved: List[Optional[int]] = [None]

    class Eval(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % EVAL_EVERY:
                return True
            mean, _ = evaluate_policy(self.model, eval_env, n_eval_episodes=EVAL_GAMES, deterministic=True)
            curve.append([self.num_timesteps, float(mean)])
            if mean >= stop:
                confirm, _ = evaluate_policy(self.model, eval_env, n_eval_episodes=CONFIRM_GAMES, deterministic=True)
                if confirm >= stop:
                    solved[0] = self.num_timesteps
                    return False
            return True

    model = MaskablePPO('MlpPolicy', venv, n_steps=128, batch_size=256, n_epochs=10, learning_rate=1e-3, gamma=0.99,
                        gae_lambda=0.95, ent_coef=0.01, clip_range=0.2, max_grad_norm=0.5, seed=seed, device='cpu',
                        policy_kwargs=dict(net_arch=[64, 64], activation_fn=torch.nn.Tanh))
    start = time.time()
    model.learn(total_timesteps=budget, callback=Eval())
    with open(out, 'w') as f:
        json.dump(dict(solved=solved[0] is not None, env_steps=solved[0] or int(model.num_timesteps), curve=curve,
                       wall_s=round(time.time() - start, 1)), f)


def run_peer(python: str, seed: int, budget: int, board: str) -> Dict[str, Any]:
    out = tempfile.mktemp(prefix='masks_peer_', suffix='.json')
    cmd = [python, os.path.abspath(__file__), '--peer-worker', str(seed), str(budget), out, board]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS='1'))
    if proc.returncode != 0:
        raise RuntimeError(f"MaskablePPO seed {seed} failed: {proc.stderr[-2000:]}")
    with open(out) as f:
        result = json.load(f)
    os.remove(out)
    return result


def at(curve: Sequence[Sequence[float]], step: int) -> Optional[float]:
    """The evaluation at ``step`` env steps (the last at or before it); None before the first."""
    values = [v for s, v in curve if s <= step]
    return values[-1] if values else None


def table(results: Dict[str, Dict[str, Any]], board: str = '3x3') -> str:
    import numpy as np

    stop, marks_at = BOARDS[board]['stop'], BOARDS[board]['marks']
    lines = [f'| run | solved (mean {stop} on 100 games, confirmed on 50) | env steps to solved, per seed | median | '
             + ' | '.join(f'greedy return at {m // 1024}k' for m in marks_at) + ' |',
             '|---|---|---|---|' + '---|' * len(marks_at)]
    for name, by_seed in results.items():
        runs = [by_seed[s] for s in sorted(by_seed)]
        solved = [r for r in runs if r['solved']]
        steps = ' / '.join(f"{r['env_steps']:,}" if r['solved'] else f">{r['env_steps']:,}" for r in runs)
        median = f"{int(np.median([r['env_steps'] for r in runs])):,}" if len(solved) == len(runs) else '—'
        marks = []
        for m in marks_at:
            values = [at(r['curve'], m) for r in runs]
            values = [v if v is not None else stop for v in values]  # (a run solved before m: counted at the stop value)
            marks.append(f"{np.mean(values):.2f} ± {np.std(values):.2f}")
        lines.append(f"| {name} | {len(solved)}/{len(runs)} | {steps} | {median} | " + ' | '.join(marks) + ' |')
    return '\n'.join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ['--peer-worker']:
        peer_worker(int(argv[1]), int(argv[2]), argv[3], argv[4])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--board', choices=sorted(BOARDS), default='3x3',
                        help="3x3 (three in a row), 5x5 (four in a row) or connect4 (PettingZoo's connect_four_v3)")
    parser.add_argument('--runs', default=None, help="comma-separated runs (default: the board's, and maskable_ppo)")
    parser.add_argument('--seeds', default='0,1,2')
    parser.add_argument('--budget', type=int, default=None, help="env steps per run (default: the board's)")
    parser.add_argument('--peer-python', default='/work/peers/bin/python',
                        help='an interpreter with sb3-contrib for maskable_ppo (skipped, with a line, when absent)')
    parser.add_argument('--write', action='store_true',
                        help="record the results of a run with another budget than the board's (a trial is not recorded)")
    args = parser.parse_args(argv)
    board = BOARDS[args.board]
    budget = args.budget or board['budget']
    runs = args.runs.split(',') if args.runs else list(board['runs']) + ['maskable_ppo']
    if 'maskable_ppo' in runs and not os.path.isfile(args.peer_python):  # before any run: say it, measure acframe
        print(f"# maskable_ppo skipped: --peer-python {args.peer_python} is not an interpreter here (one with "
              f"sb3-contrib: python -m venv PEERS && PEERS/bin/pip install torch==2.13.0 sb3-contrib)", flush=True)
        runs.remove('maskable_ppo')
    if budget != board['budget'] and not args.write:
        print(f"# a trial budget ({budget}, the board's is {board['budget']}): results not written to "
              f"{board['results']} (--write records them)", flush=True)
    write = budget == board['budget'] or args.write
    results: Dict[str, Dict[str, Any]] = {}
    results_path = board['results']
    if os.path.exists(results_path):
        with open(results_path) as f:
            results = json.load(f)
    for name in runs:
        for seed in [int(s) for s in args.seeds.split(',')]:
            run = (run_peer(args.peer_python, seed, budget, args.board) if name == 'maskable_ppo'
                   else run_acframe(board['prefix'], name, seed, budget))
            results.setdefault(name, {})[str(seed)] = run
            print(f"{name} seed {seed}: {'solved' if run['solved'] else 'not solved'} at {run['env_steps']} env steps "
                  f"({run['wall_s']} s)", flush=True)
            if write:
                os.makedirs(os.path.dirname(results_path), exist_ok=True)
                with open(results_path, 'w') as f:
                    json.dump(results, f, indent=1)
    print(table(results, args.board))
    return 0


if __name__ == '__main__':
    sys.exit(main())
