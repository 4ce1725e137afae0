"""The benchmark ladder (issue 9): acframe's shipped configs and Stable-Baselines3 with the RL-Zoo
hyperparameters, side by side on the same machine, row by row.

    python bench/ladder.py --rows acrobot --algos a2c,impala --seeds 0,1,2
    python bench/ladder.py --rows pendulum --algos a2c --sb3 a2c,ppo --seeds 0,1,2 --budget 200000

For every (row, algorithm, seed) it trains ``dizoo_configs/<row>_<algo>.py`` with the ``acframe`` CLI in a
fresh process (one torch thread, nothing else running), reads the evaluation curve from its output, and
evaluates the best checkpoint on 50 fresh episodes (seeds no evaluation used: the hold-out). ``--sb3``
does the same with SB3 (deterministic evaluation every ``--eval-every`` env steps on 10 episodes, as the
RL Zoo's EvalCallback; VecNormalize statistics synced to the evaluation env). Each run's result is printed;
with ``--write`` it is also recorded in ``bench/results/ladder.json`` (a rerun of the same
row/framework/algo/seed/budget replaces its entry) and the table in docs/benchmarks.md (between the ``ladder``
markers) and ``docs/img/ladder_<row>.png`` (mean ± std over seeds, env steps on x) are rewritten from everything
recorded, so a trial run changes nothing. SB3 is a bench-only dependency
(``pip install -e .[bench]``).
"""
from __future__ import annotations

import argparse
import collections
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple, Union

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, 'results', 'ladder.json')
DOC = os.path.join(ROOT, 'docs', 'benchmarks.md')
IMG_DIR = os.path.join(ROOT, 'docs', 'img')
START, END = '<!-- ladder:start -->', '<!-- ladder:end -->'
#: hold-out episodes use env seeds offset by this from the run seed (evaluations use +100000, confirmations +150000)
HOLDOUT_SEED_OFFSET = 300_000
HOLDOUT_EPISODES = 50

#: row -> env id, target return, the RL Zoo's env-step budget for that score
ROWS: Dict[str, Dict[str, Any]] = {
    'cartpole': dict(env_id='CartPole-v1', target=475.0, budget=100_000),
    'acrobot': dict(env_id='Acrobot-v1', target=-100.0, budget=500_000),
    'lunarlander': dict(env_id='LunarLander-v3', target=200.0, budget=1_000_000),
    'pendulum': dict(env_id='Pendulum-v1', target=-200.0, budget=1_000_000),
    # acframe's cartpole_novel; SB3 gets CartPole-v1 with the same entries kept (the RL Zoo's CartPoleNoVel-v1)
    'cartpole_novel': dict(env_id='CartPole-v1', keep=(0, 2), target=475.0, budget=100_000),
    # acframe's pendulum_novel; SB3 gets Pendulum-v1 with the same entries kept (the RL Zoo's PendulumNoVel-v1)
    'pendulum_novel': dict(env_id='Pendulum-v1', keep=(0, 1), target=-200.0, budget=100_000),
    # acframe's lunarlander_novel; SB3 gets LunarLander-v3 with the same entries kept (the RL Zoo's LunarLanderNoVel-v2)
    'lunarlander_novel': dict(env_id='LunarLander-v3', keep=(0, 1, 4, 6, 7), target=200.0, budget=1_000_000),
    'lunarlander_continuous': dict(env_id='LunarLanderContinuous-v3', target=200.0, budget=1_000_000),
    'halfcheetah': dict(env_id='HalfCheetah-v5', target=3000.0, budget=1_000_000),
    'hopper': dict(env_id='Hopper-v5', target=2000.0, budget=1_000_000),
}

#: the RL Zoo's tuned MuJoCo PPO network ('activation_fn': nn.ReLU, resolved in sb3_worker; SB3 >= 1.8 net_arch form)
_MUJOCO_NET = dict(log_std_init=-2, ortho_init=False, activation_fn='relu', net_arch=dict(pi=[256, 256], vf=[256, 256]))

#: RL-Zoo hyperparameters (rl-baselines3-zoo hyperparams/a2c.yml and ppo.yml; LunarLander*-v2, Pendulum-v0 and the
#: MuJoCo -v3/-v4 entries used for the v3/v1/v5 envs). 'lin_X' is a learning rate decayed linearly from X to 0.
ZOO: Dict[Tuple[str, str], Dict[str, Any]] = {
    ('cartpole', 'a2c'): dict(n_envs=8, ent_coef=0.0),
    ('cartpole', 'ppo'): dict(n_envs=8, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20,
                              ent_coef=0.0, learning_rate='lin_0.001', clip_range='lin_0.2'),
    ('acrobot', 'a2c'): dict(normalize=True, n_envs=16, ent_coef=0.0),
    ('acrobot', 'ppo'): dict(normalize=True, n_envs=16, n_steps=256, gae_lambda=0.94, gamma=0.99, n_epochs=4,
                             ent_coef=0.0),
    ('lunarlander', 'a2c'): dict(n_envs=8, gamma=0.995, n_steps=5, learning_rate='lin_0.00083', ent_coef=0.00001),
    ('lunarlander', 'ppo'): dict(n_envs=16, n_steps=1024, batch_size=64, gae_lambda=0.98, gamma=0.999, n_epochs=4,
                                 ent_coef=0.01),
    ('pendulum', 'a2c'): dict(normalize=True, n_envs=8, ent_coef=0.0, max_grad_norm=0.5, n_steps=8, gae_lambda=0.9,
                              vf_coef=0.4, gamma=0.99, use_rms_prop=True, normalize_advantage=False,
                              learning_rate='lin_7e-4', use_sde=True,
                              policy_kwargs=dict(log_std_init=-2, ortho_init=False)),
    ('pendulum', 'ppo'): dict(n_envs=4, n_steps=1024, gae_lambda=0.95, gamma=0.9, n_epochs=10, ent_coef=0.0,
                              learning_rate=1e-3, clip_range=0.2, use_sde=True, sde_sample_freq=4),
    # hyperparams/ppo_lstm.yml's CartPoleNoVel-v1, for sb3-contrib's RecurrentPPO ('MlpLstmPolicy')
    ('cartpole_novel', 'ppo_lstm'): dict(normalize=True, n_envs=8, n_steps=32, batch_size=256, gae_lambda=0.8,
                                         gamma=0.98, n_epochs=20, ent_coef=0.0, learning_rate='lin_0.001',
                                         clip_range='lin_0.2',
                                         policy_kwargs=dict(ortho_init=False, activation_fn='relu', lstm_hidden_size=64,
                                                            enable_critic_lstm=True, net_arch=dict(pi=[64], vf=[64]))),
    # hyperparams/ppo_lstm.yml's PendulumNoVel-v1, for sb3-contrib's RecurrentPPO ('MlpLstmPolicy', its defaults)
    ('pendulum_novel', 'ppo_lstm'): dict(n_envs=4, n_steps=1024, gae_lambda=0.95, gamma=0.9, n_epochs=10,
                                         ent_coef=0.0, learning_rate=1e-3, clip_range=0.2, use_sde=True,
                                         sde_sample_freq=4),
    # hyperparams/ppo_lstm.yml's LunarLanderNoVel-v2, for sb3-contrib's RecurrentPPO ('MlpLstmPolicy', its defaults)
    ('lunarlander_novel', 'ppo_lstm'): dict(n_envs=16, n_steps=1024, batch_size=64, gae_lambda=0.98, gamma=0.999,
                                            n_epochs=4, ent_coef=0.01),
    ('lunarlander_continuous', 'a2c'): dict(normalize=True, n_envs=4, ent_coef=0.0, max_grad_norm=0.5, n_steps=8,
                                            gae_lambda=0.9, vf_coef=0.4, gamma=0.99, use_rms_prop=True,
                                            normalize_advantage=False, learning_rate='lin_7e-4', use_sde=True,
                                            policy_kwargs=dict(log_std_init=-2, ortho_init=False)),
    ('lunarlander_continuous', 'ppo'): dict(n_envs=16, n_steps=1024, batch_size=64, gae_lambda=0.98, gamma=0.999,
                                            n_epochs=4, ent_coef=0.01),
    # a2c.yml's mujoco-defaults: SB3's A2C defaults; the Zoo's published HalfCheetah-v3 A2C (3096) ran them with
    # normalize_kwargs {'norm_obs': True, 'norm_reward': False}
    ('halfcheetah', 'a2c'): dict(normalize=dict(norm_obs=True, norm_reward=False), n_envs=1),
    ('halfcheetah', 'ppo'): dict(normalize=True, n_envs=1, batch_size=64, n_steps=512, gamma=0.98,
                                 learning_rate=2.0633e-05, ent_coef=0.000401762, clip_range=0.1, n_epochs=20,
                                 gae_lambda=0.92, max_grad_norm=0.8, vf_coef=0.58096, policy_kwargs=_MUJOCO_NET),
    ('hopper', 'a2c'): dict(normalize=True, n_envs=1),
    ('hopper', 'ppo'): dict(normalize=True, n_envs=1, batch_size=32, n_steps=512, gamma=0.999,
                            learning_rate=9.80828e-05, ent_coef=0.00229519, clip_range=0.2, n_epochs=5, gae_lambda=0.99,
                            max_grad_norm=0.7, vf_coef=0.835671, policy_kwargs=_MUJOCO_NET),
}

EVAL_LINE = re.compile(r'^\[eval\] env_step (\d+) iter \d+: return (-?[\d.]+|nan|-?inf)')


# ---- acframe ---------------------------------------------------------------------------------------
def config_name(row: str, algo: str) -> str:
    return f'{row}_{algo}.py'


def run_acframe(row: str, algo: str, seed: int, budget: int, overrides: Sequence[str]) -> Dict[str, Any]:
    """Train the shipped config in a fresh ``acframe`` process; curve from its [eval] lines; hold-out of the best."""
    exp_dir = tempfile.mkdtemp(prefix=f'ladder_{row}_{algo}_s{seed}_')
    cmd = [sys.executable, '-m', 'acframe.cli', '-c', config_name(row, algo), '-s', str(seed), '--exp-dir',
           os.path.join(exp_dir, 'run'), '--max-env-step', str(budget), 'policy.learn.torch_threads=1', *overrides]
    start = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    curve = [(int(m.group(1)), float(m.group(2))) for m in map(EVAL_LINE.match, proc.stdout.splitlines()) if m]
    with open(os.path.join(exp_dir, 'run', 'summary.json')) as f:
        summary = json.load(f)
    holdout = holdout_acframe(row, algo, seed, overrides, os.path.join(exp_dir, 'run', 'ckpt', 'ckpt_best.pth'))
    shutil.rmtree(exp_dir, ignore_errors=True)
    extra = ''.join(f' --override {o}' for o in overrides)
    return dict(curve=curve, best=summary['best_eval_return'], final=summary['last_eval_return'],
                solved=summary['solved'], stop_value=summary['stop_value'], env_steps=summary['env_steps'],
                wall_s=round(wall, 1), holdout=holdout, confirmations=summary.get('confirmations', []),
                eval_deterministic=summary.get('eval_deterministic', True),
                command=f'python bench/ladder.py --rows {row} --algos {algo} --seeds {seed} --budget {budget}{extra}')


def holdout_acframe(row: str, algo: str, seed: int, overrides: Sequence[str], ckpt: str) -> Dict[str, float]:
    """Mean/std return of ``HOLDOUT_EPISODES`` fresh episodes of the best checkpoint (its eval mode, as trained;
    the run folder's config with its overrides, env seeds from ``seed + HOLDOUT_SEED_OFFSET``)."""
    import torch

    from acframe.entry.evaluate import evaluate_run

    torch.set_num_threads(1)
    out = os.path.join(os.path.dirname(os.path.dirname(ckpt)), 'holdout.json')
    result = evaluate_run(ckpt, seed=seed + HOLDOUT_SEED_OFFSET, episodes=HOLDOUT_EPISODES, out=out)
    return {'mean': float(result['mean']), 'std': float(result['std']), 'episodes': int(result['episodes'])}


# ---- Stable-Baselines3 ------------------------------------------------------------------------------
def _schedule(value: Any) -> Any:
    if isinstance(value, str) and value.startswith('lin_'):
        initial = float(value[4:])
        return lambda progress_remaining: progress_remaining * initial
    return value


def zoo_kwargs(row: str, algo: str) -> Tuple[int, Union[bool, Dict[str, bool]], Dict[str, Any]]:
    """``(n_envs, normalize, SB3 constructor kwargs)`` of a ZOO entry: 'lin_X' as schedules, an activation name as
    its ``torch.nn`` class."""
    import torch

    hp = copy.deepcopy(ZOO[(row, algo)])
    n_envs, normalize = hp.pop('n_envs'), hp.pop('normalize', False)
    hp = {k: _schedule(v) for k, v in hp.items()}
    if 'activation_fn' in hp.get('policy_kwargs', {}):
        name = hp['policy_kwargs']['activation_fn']
        hp['policy_kwargs']['activation_fn'] = {'relu': torch.nn.ReLU, 'tanh': torch.nn.Tanh}[name]
    return n_envs, normalize, hp


def sb3_worker(row: str, algo: str, seed: int, budget: int, eval_every: int, out: str) -> None:
    """Train SB3 ``algo`` with the RL-Zoo hyperparameters; write the curve and the hold-out of the best to ``out``."""
    import numpy as np
    import torch
    from stable_baselines3 import A2C, PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecNormalize, sync_envs_normalization

    torch.set_num_threads(1)
    n_envs, normalize, hp = zoo_kwargs(row, algo)
    env_id = ROWS[row]['env_id']
    wrapper = keep_entries_wrapper(ROWS[row].get('keep'))
    env = make_vec_env(env_id, n_envs=n_envs, seed=seed, wrapper_class=wrapper)
    eval_env = make_vec_env(env_id, n_envs=1, seed=seed + 100_000, wrapper_class=wrapper)
    if normalize:
        # normalize: True, or the Zoo's normalize_kwargs as a dict (e.g. norm_reward=False)
        env = VecNormalize(env, gamma=hp.get('gamma', 0.99), **(normalize if isinstance(normalize, dict) else {}))
        eval_env = VecNormalize(eval_env, training=False, norm_reward=False)
    if algo == 'ppo_lstm':  # sb3-contrib (the peer venv: --sb3-python)
        from sb3_contrib import RecurrentPPO
        model = RecurrentPPO('MlpLstmPolicy', env, seed=seed, device='cpu', verbose=0, **hp)
    else:
        model = (A2C if algo == 'a2c' else PPO)('MlpPolicy', env, seed=seed, device='cpu', verbose=0, **hp)
    curve: List[Tuple[int, float]] = []
    best: Dict[str, Any] = {'mean': -float('inf')}

    def evaluate() -> None:
        if normalize:
            sync_envs_normalization(model.get_env(), eval_env)
        mean, _ = evaluate_policy(model, eval_env, n_eval_episodes=10, deterministic=True)
        curve.append((int(model.num_timesteps), float(mean)))
        # progress on stderr, which run_sb3 passes through: a run cut short still shows its curve
        print(f'# sb3 {algo} {row} seed {seed}: env_step {model.num_timesteps} eval {mean:.1f} '
              f'({time.perf_counter() - start:.0f} s)', file=sys.stderr, flush=True)
        if mean > best['mean']:
            best.update(mean=float(mean), policy=copy.deepcopy(model.policy.state_dict()),
                        obs_rms=copy.deepcopy(model.get_env().obs_rms) if normalize else None)

    class Curve(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps // eval_every > (self.num_timesteps - self.training_env.num_envs) // eval_every:
                evaluate()
            return True

    start = time.perf_counter()
    evaluate()
    model.learn(budget, callback=Curve())
    if curve[-1][0] != model.num_timesteps:
        evaluate()
    wall = time.perf_counter() - start
    model.policy.load_state_dict(best['policy'])
    holdout_env = make_vec_env(env_id, n_envs=1, seed=seed + HOLDOUT_SEED_OFFSET, wrapper_class=wrapper)
    if normalize:
        holdout_env = VecNormalize(holdout_env, training=False, norm_reward=False)
        holdout_env.obs_rms = best['obs_rms']
    returns, _ = evaluate_policy(model, holdout_env, n_eval_episodes=HOLDOUT_EPISODES, deterministic=True,
                                 return_episode_rewards=True)
    result = dict(curve=curve, best=best['mean'], final=curve[-1][1], env_steps=int(model.num_timesteps),
                  wall_s=round(wall, 1), solved=None,
                  holdout={'mean': float(np.mean(returns)), 'std': float(np.std(returns)), 'episodes': len(returns)},
                  command=f'python bench/ladder.py --rows {row} --algos none --sb3 {algo} --seeds {seed} --budget {budget} --eval-every {eval_every}'
                          + (f' --sb3-python {sys.executable}' if algo == 'ppo_lstm' else ''))
    with open(out, 'w') as f:
        json.dump(result, f)


def keep_entries_wrapper(keep: Optional[Sequence[int]]) -> Any:
    """None, or a gymnasium wrapper class keeping the observation entries ``keep`` (the SB3 side of a row whose acframe
    env is a ``NO_VELOCITY`` short name)."""
    if keep is None:
        return None
    import gymnasium as gym
    import numpy as np

    index = np.asarray(keep, dtype=np.int64)

    class KeepEntries(gym.ObservationWrapper):
        def __init__(self, env: Any) -> None:
            super().__init__(env)
            space = env.observation_space
            self.observation_space = gym.spaces.Box(space.low[index], space.high[index], dtype=space.dtype)

        def observation(self, observation: Any) -> Any:
            return observation[index]

    return KeepEntries


def run_sb3(row: str, algo: str, seed: int, budget: int, eval_every: int,
            python: Optional[str] = None) -> Dict[str, Any]:
    """One SB3 worker process (``python``: its interpreter, default this one) and its result."""
    out = tempfile.mktemp(prefix='ladder_sb3_', suffix='.json')
    cmd = [python or sys.executable, os.path.abspath(__file__), '--sb3-worker', row, algo, str(seed), str(budget),
           str(eval_every), out]
    tail: Deque[str] = collections.deque(maxlen=40)
    with subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:  # passed through as it comes (the evaluations), the tail kept for an error
            sys.stderr.write(line)
            tail.append(line)
    if proc.returncode != 0:
        raise RuntimeError(f"SB3 {algo} on {row} seed {seed} failed: {''.join(tail)[-2000:]}")
    with open(out) as f:
        result = json.load(f)
    os.remove(out)
    return result


# ---- results, table, plots ---------------------------------------------------------------------------
def load_results() -> Dict[str, Any]:
    if os.path.exists(RESULTS):
        with open(RESULTS) as f:
            return json.load(f)
    return {'runs': []}


def save_results(results: Dict[str, Any]) -> None:
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    tmp = RESULTS + '.tmp'
    with open(tmp, 'w') as f:
        json.dump(results, f, indent=1)
    os.replace(tmp, RESULTS)


def record(results: Dict[str, Any], run: Dict[str, Any]) -> None:
    """Replace the run with the same (row, framework, algo, seed, budget) in the results file by ``run`` (a run at
    another budget is another row of the table). The file is read again under a lock first, so ladder processes
    running side by side keep each other's runs."""
    import fcntl

    def key_of(r: Dict[str, Any]) -> Tuple[Any, ...]:
        return r['row'], r['framework'], r['algo'], r['seed'], r['budget']

    key = key_of(run)
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS + '.lock', 'w') as lock:
        deadline = time.monotonic() + 60.0
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{RESULTS}.lock: another ladder process held it for 60 s") from None
                time.sleep(0.1)
        fresh = load_results()
        fresh['runs'] = [r for r in fresh['runs'] if key_of(r) != key]
        fresh['runs'].append(run)
        save_results(fresh)
    results['runs'] = fresh['runs']


def groups(results: Dict[str, Any]) -> Dict[Tuple[str, str, str, int], List[Dict[str, Any]]]:
    out: Dict[Tuple[str, str, str, int], List[Dict[str, Any]]] = {}
    for run in results['runs']:
        out.setdefault((run['row'], run['framework'], run['algo'], run['budget']), []).append(run)
    return out


def _fmt(values: Sequence[float]) -> str:
    import numpy as np

    return f"{np.mean(values):.0f} ± {np.std(values):.0f}"


def table(results: Dict[str, Any]) -> str:
    lines = ['| row (target) | framework, algo | budget | seeds | solved at the config\'s stop value, confirmed '
             '(env steps per seed) | best eval ≥ target | best eval (mean ± std) | final eval | '
             'hold-out 50 ep. of best (per seed) | wall s (median) |',
             '|---|---|---|---|---|---|---|---|---|---|']
    import numpy as np

    for (row, framework, algo, budget), runs in sorted(groups(results).items()):
        runs = sorted(runs, key=lambda r: r['seed'])
        target = ROWS[row]['target']
        reached = sum(r['best'] is not None and r['best'] >= target for r in runs)
        holdout = ' / '.join(f"{r['holdout']['mean']:.0f}" for r in runs)
        held = sum(r['holdout']['mean'] >= target for r in runs)
        if runs[0].get('stop_value') is None:
            solved = '— (no stop value)'
        else:
            steps = ' / '.join(f"{r['env_steps'] / 1000:.0f}k" if r['solved'] else 'no' for r in runs)
            solved = f"{sum(bool(r['solved']) for r in runs)}/{len(runs)} at {runs[0]['stop_value']:g} ({steps})"
        sampled = ', sampled eval' if runs[0].get('eval_deterministic') is False else ''
        lines.append(
            f"| {row} ({target:g}) | {framework} {algo}{sampled} | {budget:,} | {','.join(str(r['seed']) for r in runs)} | "
            f"{solved} | {reached}/{len(runs)} | {_fmt([r['best'] for r in runs])} | {_fmt([r['final'] for r in runs])} | "
            f"{holdout} ({held}/{len(runs)} ≥ target) | {np.median([r['wall_s'] for r in runs]):.0f} |")
    return '\n'.join(lines)


def plot_row(results: Dict[str, Any], row: str) -> Optional[str]:
    """``docs/img/ladder_<row>.png``: mean ± std over seeds of the eval curves (step-wise; a run that stopped
    early keeps its last value), one line per framework/algo/budget."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    import numpy as np

    entries = [(key, runs) for key, runs in sorted(groups(results).items()) if key[0] == row]
    if not entries:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for (_, framework, algo, budget), runs in entries:
        grid = np.linspace(0, budget, 101)
        curves = []
        for run in runs:
            steps = np.array([s for s, _ in run['curve']], dtype=float)
            values = np.array([v for _, v in run['curve']], dtype=float)
            index = np.clip(np.searchsorted(steps, grid, side='right') - 1, 0, len(values) - 1)
            curves.append(values[index])
        curves = np.array(curves)
        mean, std = curves.mean(0), curves.std(0)
        line, = ax.plot(grid, mean, label=f'{framework} {algo} ({len(runs)} seeds)')
        ax.fill_between(grid, mean - std, mean + std, color=line.get_color(), alpha=0.2)
    ax.axhline(ROWS[row]['target'], color='grey', linestyle='--', linewidth=1, label='target')
    ax.set_xlabel('env steps')
    ax.set_ylabel('evaluation return')
    keep = ROWS[row].get('keep')
    task = ROWS[row]['env_id'] + (f" without velocities (observation entries {list(keep)} kept)\n" if keep else ': ')
    ax.set_title(f"{task}evaluation return, mean ± std over seeds", fontsize=10 if keep else None)
    ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(IMG_DIR, exist_ok=True)
    path = os.path.join(IMG_DIR, f'ladder_{row}.png')
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_docs(results: Dict[str, Any]) -> None:
    rows = sorted({r['row'] for r in results['runs']})
    images = '\n'.join(f'![{row}](img/ladder_{row}.png)' for row in rows if plot_row(results, row))
    commands = sorted({re.sub(r'--seeds \d+', '--seeds ' + ','.join(str(r['seed']) for r in sorted(runs, key=lambda r: r['seed'])),
                              runs[0]['command']) for runs in groups(results).values()})
    block = '\n'.join([START, table(results), '', 'Runs (each a fresh process, one torch thread; at most two side by side on the 2 cores):', '',
                       *[f'* `{c}`' for c in commands], '', images, END])
    with open(DOC) as f:
        text = f.read()
    if START in text and END in text:
        text = text[:text.index(START)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip('\n') + '\n\n## The ladder (issue 9)\n\n`python bench/ladder.py` (see its docstring).\n\n' + block + '\n'
    tmp = DOC + '.tmp'
    with open(tmp, 'w') as f:
        f.write(text)
    os.replace(tmp, DOC)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ['--sb3-worker']:
        row, algo, seed, budget, eval_every, out = argv[1:7]
        sb3_worker(row, algo, int(seed), int(budget), int(eval_every), out)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--rows', required=True, help=f"comma-separated rows: {', '.join(ROWS)}")
    parser.add_argument('--algos', default='a2c', help="acframe algorithms (dizoo_configs/<row>_<algo>.py); 'none' for none")
    parser.add_argument('--sb3', default='', help="SB3 algorithms with RL-Zoo settings: a2c, ppo, ppo_lstm "
                                                  "(sb3-contrib's RecurrentPPO) (comma-separated)")
    parser.add_argument('--sb3-python', default=None, help="the Python that runs the SB3 workers (default this one; "
                                                           "e.g. a venv with sb3-contrib for ppo_lstm)")
    parser.add_argument('--seeds', default='0,1,2')
    parser.add_argument('--budget', type=int, default=None, help="env steps per run (default: the row's RL-Zoo budget)")
    parser.add_argument('--eval-every', type=int, default=10_000, help="SB3: env steps between evaluations")
    parser.add_argument('--override', action='append', default=[], help="acframe key.path=value override (repeatable)")
    parser.add_argument('--write', action='store_true', help="record the runs in bench/results/ladder.json and rewrite "
                        "docs/benchmarks.md's table and plots (without it a run only prints its results)")
    parser.add_argument('--docs-only', action='store_true', help="only rewrite the table and plots from the results")
    args = parser.parse_args(argv)
    results = load_results()

    def keep(run: Dict[str, Any]) -> None:
        if args.write:
            record(results, run)

    if not args.docs_only:
        rows = [r for r in args.rows.split(',') if r]
        unknown = [r for r in rows if r not in ROWS]
        if unknown:
            parser.error(f"unknown rows {unknown}; rows are {', '.join(ROWS)}")
        seeds = [int(s) for s in args.seeds.split(',')]
        algos = [a for a in args.algos.split(',') if a and a != 'none']
        sb3 = [a for a in args.sb3.split(',') if a]
        for row in rows:
            budget = args.budget or ROWS[row]['budget']
            for algo in algos:
                from acframe.config.compile import load_config_file
                try:
                    load_config_file(config_name(row, algo))
                except Exception as exc:  # no shipped config for this row yet
                    print(f"[ladder] skip acframe {algo} on {row}: {exc}")
                    continue
                for seed in seeds:
                    run = run_acframe(row, algo, seed, budget, args.override)
                    keep(dict(row=row, framework='acframe', algo=algo, seed=seed, budget=budget, **run))
                    print(f"[ladder] acframe {algo} {row} seed {seed}: best {run['best']:.1f}, hold-out "
                          f"{run['holdout']['mean']:.1f}, {run['wall_s']} s", flush=True)
            for algo in sb3:
                if (row, algo) not in ZOO:
                    print(f"[ladder] skip SB3 {algo} on {row}: no RL-Zoo entry")
                    continue
                for seed in seeds:
                    run = run_sb3(row, algo, seed, budget, args.eval_every, args.sb3_python)
                    keep(dict(row=row, framework='sb3', algo=algo, seed=seed, budget=budget, **run))
                    print(f"[ladder] SB3 {algo} {row} seed {seed}: best {run['best']:.1f}, hold-out "
                          f"{run['holdout']['mean']:.1f}, {run['wall_s']} s", flush=True)
    if not (args.write or args.docs_only):
        print(f"[ladder] recorded nothing: --write records the runs in {os.path.relpath(RESULTS, ROOT)} and rewrites "
              f"{os.path.relpath(DOC, ROOT)}'s table", flush=True)
        return 0
    write_docs(results)
    print(f"[ladder] wrote {os.path.relpath(DOC, ROOT)} and docs/img/ladder_<row>.png")
    return 0


if __name__ == '__main__':
    sys.exit(main())
