"""An env that is already vectorized: CartPole-v1 for hundreds of envs at once in numpy, plugged in by name.

``NumpyCartPole`` is a ``gymnasium.vector.VectorEnv`` subclass stepping ``num_envs`` carts as arrays (gymnasium's
CartPole-v1 equations, its thresholds and its 500-step limit), with gymnasium's SAME_STEP autoreset. Registering it
in ``ENV_MANAGER_REGISTRY`` is all it takes: a config names it with ``create_config.env_manager.type`` (or
``env.manager=numpy_cartpole``) and lists this module in ``import_names``; acframe's env factory then builds it
for the serial and the parallel pipelines' collectors and evaluators, as ``NumpyCartPole(num_envs=N,
**env.env_kwargs)`` — with ``params=`` each env's own physics when ``env.domain_randomization`` is on.

    python examples/vector_cartpole.py [--pipeline serial|parallel] [--num-envs 256] [--max-env-step 200000]
        [--seed 0] [--exp-dir DIR]

Measured (seeds 0 1 2, 256 envs, serial): solved (10-episode greedy mean >= 475) at 81,920 / 163,840 / 81,920 env
steps. Its throughput against gymnasium's ``SyncVectorEnv`` of CartPole-v1 (30x at 256 envs, bare):
``python bench/bench_vector_env.py`` (docs/benchmarks.md).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from acframe import ENV_MANAGER_REGISTRY

#: CartPole-v1's physical constants (gymnasium/envs/classic_control/cartpole.py); each can be a per-env parameter
PHYSICS = dict(gravity=9.8, masscart=1.0, masspole=0.1, length=0.5, force_mag=10.0)
TAU = 0.02  # seconds between state updates
THETA_THRESHOLD = 12 * 2 * math.pi / 360  # the pole falls past 12 degrees
X_THRESHOLD = 2.4  # the cart leaves the track


class NumpyCartPole(VectorEnv):
    """``num_envs`` CartPole-v1 envs stepped together as numpy arrays.

    ``params``: one dict per env of ``PHYSICS`` values (domain randomization); ``max_episode_steps``: the time
    limit (CartPole-v1's 500). ``reset(seed=[s_0, ...])`` seeds env ``i`` with ``s_i`` (its own generator, which
    also draws its later episodes' starts).
    """

    metadata = {'autoreset_mode': AutoresetMode.SAME_STEP}

    def __init__(self, num_envs: int, max_episode_steps: int = 500,
                 params: Optional[Sequence[Dict[str, float]]] = None) -> None:
        self.num_envs = int(num_envs)
        self.max_episode_steps = int(max_episode_steps)
        high = np.array([X_THRESHOLD * 2, np.finfo(np.float32).max, THETA_THRESHOLD * 2, np.finfo(np.float32).max],
                        dtype=np.float32)
        self.single_observation_space = spaces.Box(-high, high, dtype=np.float32)
        self.single_action_space = spaces.Discrete(2)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        for i, env_params in enumerate(params or ()):
            unknown = set(env_params) - set(PHYSICS)
            if unknown:
                raise ValueError(f"env {i}: unknown parameters {sorted(unknown)}; NumpyCartPole takes {sorted(PHYSICS)}")
        physics = {name: np.array([(params[i] if params else {}).get(name, default) for i in range(self.num_envs)],
                                  dtype=np.float64) for name, default in PHYSICS.items()}
        self.gravity, self.length, self.force_mag = physics['gravity'], physics['length'], physics['force_mag']
        self.masspole = physics['masspole']
        self.total_mass = physics['masspole'] + physics['masscart']
        self.polemass_length = physics['masspole'] * physics['length']
        self.state = np.zeros((self.num_envs, 4), dtype=np.float64)
        self.elapsed = np.zeros(self.num_envs, dtype=np.int64)
        self._rngs: List[np.random.Generator] = [np.random.default_rng() for _ in range(self.num_envs)]

    def _start(self, index: np.ndarray) -> None:
        """New episodes for the envs at ``index``: states uniform in [-0.05, 0.05], as CartPole-v1's reset."""
        for i in index:
            self.state[i] = self._rngs[i].uniform(-0.05, 0.05, size=4)
        self.elapsed[index] = 0

    def reset(self, *, seed: Union[int, Sequence[int], None] = None, options: Optional[Dict[str, Any]] = None):
        if seed is not None:
            seeds = [int(seed) + i for i in range(self.num_envs)] if isinstance(seed, int) else list(seed)
            self._rngs = [np.random.default_rng(s) for s in seeds]
        self._start(np.arange(self.num_envs))
        return self.state.astype(np.float32), {}

    def step(self, actions: np.ndarray):
        x, x_dot, theta, theta_dot = self.state.T
        force = np.where(np.asarray(actions) == 1, self.force_mag, -self.force_mag)
        costheta, sintheta = np.cos(theta), np.sin(theta)
        temp = (force + self.polemass_length * theta_dot ** 2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta ** 2 / self.total_mass))
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass
        # CartPole-v1's explicit Euler step, in its order
        self.state = np.stack([x + TAU * x_dot, x_dot + TAU * xacc, theta + TAU * theta_dot,
                               theta_dot + TAU * thetaacc], axis=1)
        self.elapsed += 1
        terminated = (np.abs(self.state[:, 0]) > X_THRESHOLD) | (np.abs(self.state[:, 2]) > THETA_THRESHOLD)
        truncated = (self.elapsed >= self.max_episode_steps) & ~terminated
        reward = np.ones(self.num_envs, dtype=np.float64)
        obs = self.state.astype(np.float32)
        info: Dict[str, Any] = {}
        done = terminated | truncated
        if done.any():  # SAME_STEP autoreset: the last observations in info, the next episodes' first ones returned
            index = np.flatnonzero(done)
            final_obs = np.empty(self.num_envs, dtype=object)
            for i in index:
                final_obs[i] = obs[i].copy()
            info = {'final_obs': final_obs, '_final_obs': done}
            self._start(index)
            obs[index] = self.state[index].astype(np.float32)
        return obs, reward, terminated, truncated, info


if __name__ != '__main__':  # (run as a script, main() imports this module by its name, which registers it)
    ENV_MANAGER_REGISTRY.register('numpy_cartpole', NumpyCartPole)


def config(num_envs: int, seed: int = 0) -> tuple:
    """PPO on ``num_envs`` numpy CartPoles: 16 steps per env per rollout, 10 epochs of minibatches of 512."""
    main = dict(
        exp_name='vector_cartpole_ppo',
        env=dict(collector_env_num=num_envs, evaluator_env_num=10, n_evaluator_episode=10, stop_value=475,
                 n_confirm_episode=0),
        policy=dict(
            model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False),
            learn=dict(epoch_per_collect=10, batch_size=512, learning_rate=0.001, discount_factor=0.98,
                       gae_lambda=0.8, clip_ratio=0.2, entropy_weight=0.0),
            collect=dict(n_sample=num_envs * 16),
            eval=dict(evaluator=dict(eval_freq=20)),
        ),
        parallel=dict(actor_num=2),
        import_names=['vector_cartpole'],  # this module: registers 'numpy_cartpole' (in every worker process too)
        seed=seed,
    )
    create = dict(env=dict(type='gym'), env_manager=dict(type='numpy_cartpole'), policy=dict(type='ppo'))
    return main, create


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--pipeline', choices=('serial', 'parallel'), default='serial')
    parser.add_argument('--num-envs', type=int, default=256)
    parser.add_argument('--max-env-step', type=int, default=200_000)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--exp-dir', default=None)
    args = parser.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # import_names finds this module by name
    from vector_cartpole import config  # noqa: F811 - the module by its name: it registers 'numpy_cartpole'
    if args.pipeline == 'serial':
        from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy as pipeline
        kwargs: Dict[str, Any] = {}
    else:
        from acframe.entry.parallel import parallel_pipeline as pipeline
        kwargs = dict(backend='local')
    policy = pipeline(config(args.num_envs, args.seed), exp_dir=args.exp_dir, max_env_step=args.max_env_step,
                      progress=False, **kwargs)
    summary = policy.summary  # this run's (its folder may be <name>_1 when <name> holds an earlier run)
    print(f"numpy_cartpole x {args.num_envs} ({args.pipeline}): {summary['env_steps']} env steps, "
          f"last eval return {summary['last_eval_return']}, best {summary.get('best_eval_return')} "
          f"-> {summary['exp_dir']}")


if __name__ == '__main__':
    main()
