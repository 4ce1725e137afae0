"""Invalid-action masks in the parallel pipeline (docs/masks.md): whole short runs on envs that raise on an illegal
action, tic-tac-toe (Discrete) and a MultiDiscrete toy with per-dimension masks, on the local backend (and one on
Ray). An actor whose env raises is restarted, so a run with no actor restart and no failure took no illegal action
in any actor or in the evaluator; the trained policy then acts legally through ``load_policy``."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import acframe
from acframe.config.defaults import ENV
from acframe.entry.parallel import parallel_pipeline
from acframe.envs import build_env

#: (env, policy): tic-tac-toe's Discrete(9) moves with IMPALA (asynchronous actors), the MultiDiscrete([3, 4]) toy
#: with PPO (synchronous rounds)
RUNS = {
    'tictactoe_impala': ('toy_tictactoe', 'impala', dict(unroll_len=8, collect=dict(n_sample=8),
                                                         learn=dict(batch_size=8))),
    'multidiscrete_ppo': ('toy_multidiscrete_masked', 'ppo', dict(collect=dict(n_sample=64),
                                                                  learn=dict(batch_size=32, epoch_per_collect=2))),
}


def _config(env_id: str, algo: str, policy: dict) -> tuple:
    main = dict(env=dict(env_id=env_id, collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=4,
                         stop_value=None),
                parallel=dict(actor_num=2),
                policy=dict(**policy, eval=dict(evaluator=dict(eval_freq=5))))
    return main, dict(env=dict(type=env_id), policy=dict(type=algo))


def _check_run(exp_dir, env_id: str) -> None:
    """The run's summary shows no actor restart; its policy acts legally on the env (greedy and sampled)."""
    with open(os.path.join(exp_dir, 'summary.json')) as f:
        summary = json.load(f)
    assert summary['env_steps'] >= 1500 and summary['train_iters'] > 0, summary
    assert summary['actor_restarts'] == 0, summary  # an illegal action raises in the env: the actor would restart
    policy = acframe.load_policy(exp_dir)
    env = build_env(dict(ENV, type=env_id, env_id=env_id), 0, 0, 'test').unwrapped
    nvec = getattr(env.action_space, 'nvec', None)
    for episode in range(5):
        obs, _ = env.reset(seed=episode)
        done = False
        while not done:
            action = policy.act(obs, deterministic=episode % 2 == 0)
            if nvec is not None:  # per dimension: the dimension's own slice of the mask
                starts = np.concatenate([[0], np.cumsum(nvec)[:-1]])
                assert obs['action_mask'][starts + np.asarray(action)].all()
            else:
                assert obs['action_mask'][action] == 1
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
    assert env.illegal_actions == 0


@pytest.mark.parametrize('name', sorted(RUNS))
def test_a_parallel_run_on_an_env_that_raises_on_illegal_actions_takes_none(tmp_path, name):
    env_id, algo, policy_cfg = RUNS[name]
    exp_dir = tmp_path / name
    parallel_pipeline(_config(env_id, algo, policy_cfg), exp_dir=str(exp_dir), backend='local', progress=False,
                      max_env_step=1500, seed=0)
    _check_run(exp_dir, env_id)


def test_a_ray_run_with_multi_discrete_masks_takes_no_illegal_action(tmp_path):
    """The Ray backend (a private local instance, from the CLI): masks reach the Ray actors and the evaluator."""
    pytest.importorskip('ray', reason='Ray is not installed (pip install acframe[ray])')
    home = tmp_path / 'home'
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ('RAY_AUTH_MODE', 'RAY_AUTH_TOKEN', 'RAY_AUTH_TOKEN_PATH')}
    env['HOME'] = str(home)  # (nothing of Ray's lands in the user's home folder)
    env_id, exp_dir = 'toy_multidiscrete_masked', tmp_path / 'ray'
    result = subprocess.run(
        [sys.executable, '-m', 'acframe.cli', '-m', 'parallel', '--backend', 'ray', '-c', 'cartpole_ppo.py', '-s', '0',
         '--exp-dir', str(exp_dir), '--max-env-step', '1500', '-q', f'env.type={env_id}', f'env.env_id={env_id}',
         'env.stop_value=None', 'env.collector_env_num=4', 'env.evaluator_env_num=2', 'env.n_evaluator_episode=4',
         'policy.eval.evaluator.eval_freq=5', 'parallel.actor_num=2', 'parallel.actor_num_cpus=0.25',
         'parallel.evaluator_num_cpus=0.25', 'policy.collect.n_sample=64', 'policy.learn.batch_size=32',
         'policy.learn.epoch_per_collect=2'],
        env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(exp_dir / 'summary.json') as f:
        assert json.load(f)['backend'] == 'ray'
    _check_run(exp_dir, env_id)
