"""Pixels end to end: env-steps/s of IMPALA on Atari Pong (collect + learn) against the bare env loop.

In one run, on the same envs with the same preprocessing (``pong_impala.py``: ALE/Pong-v5, 84x84 grey,
frame skip 4, 4 stacked frames):

* ``bare``: random actions in a gymnasium ``SyncVectorEnv`` (SAME_STEP autoreset) of the run's envs — the
  ceiling (``--manager envpool``: EnvPool stepped directly instead);
* ``serial``: ``serial_pipeline`` (collector → replay buffer → learner, one process);
* ``parallel``: ``parallel_pipeline`` with the local backend, ``--actors`` actor processes (default: the config's
  ``parallel.actor_num``, one per CPU core) and the learner.

Each pipeline runs twice from a cold start, ``--steps`` and ``3 * --steps`` env steps: ``whole_run`` is the long
run's env-steps/s (start-up and the evaluations at the start and the end included), ``steady`` is the rate of
collect + learn alone, ``(3N - N) / (wall(3N) - wall(N))`` — the fixed costs (process start, env construction,
first and last evaluation) cancel; a short warm-up run of each pipeline comes first, so one-time costs of the
process (first ROM load, first kernels) fall on neither. The bare loop is measured before and after the pipelines (the machine is
shared: its speed drifts) and the ratios use their mean. Every env episode is cut at ``--episode-steps`` steps,
so an evaluation (one episode) costs little; this changes no throughput. One torch thread per process
(``--threads N``: N per pipeline process, e.g. 2 to let the serial pipeline's network use the second core).

    python bench/bench_pixels.py [--encoder config|shallow|nature_cnn|impala_resnet] [--steps 6400] [--manager sync|envpool] [--threads 1]

``--learner-step shallow,nature_cnn,impala_resnet`` instead times one IMPALA learner update of the config's batch
(32 unrolls x 21 uint8 frames of 4x84x84; forward, backward, RMSprop step) per network: the minimum of ``--repeats``.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

import numpy as np
import torch


#: the networks ``--encoder`` may name instead of the config's: (encoder, encoder_channels, encoder_hidden_size_list)
NETWORKS = {'nature_cnn': ('nature_cnn', None, [512]), 'shallow': ('nature_cnn', [16, 32], [256]),
            'impala_resnet': ('impala_resnet', None, [256])}


def overrides(args: argparse.Namespace) -> list:
    out = [f'env.collector_env_num={args.envs}', f'env.max_episode_steps={args.episode_steps}',
           'env.evaluator_env_num=1', 'env.n_evaluator_episode=1', 'env.stop_value=None',
           'policy.eval.evaluator.eval_freq=0', f'env.manager={args.manager}',
           'policy.learn.learner.save_ckpt_freq=0', f'policy.learn.torch_threads={args.threads}']
    if args.encoder != 'config':
        encoder, channels, hidden = NETWORKS[args.encoder]
        out += [f'policy.model.encoder={encoder}', f'policy.model.encoder_channels={channels}',
                f'policy.model.encoder_hidden_size_list={hidden}']
    return out


def bare_loop(args: argparse.Namespace) -> float:
    """env-steps/s of random actions on the run's envs, stepped together."""
    import gymnasium as gym

    from acframe.config import compile_config
    from acframe.envs import env_fns, make_env_manager

    cfg = compile_config(args.config, overrides=overrides(args), seed=0)
    seeds = list(range(args.envs))
    if args.manager == 'envpool':
        envs = make_env_manager(cfg, "collector", args.envs, 0)._venv  # EnvPool itself, without the manager
        envs.reset()
        n_actions = envs.action_space.n
    else:
        envs = gym.vector.SyncVectorEnv(env_fns(dict(cfg.env), seeds, 'collector'),
                                        autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
        envs.reset(seed=seeds)
        n_actions = envs.single_action_space.n
    rng = np.random.default_rng(0)
    iterations = args.bare_steps // args.envs
    start = time.perf_counter()
    for _ in range(iterations):
        envs.step(rng.integers(0, n_actions, args.envs))
    elapsed = time.perf_counter() - start
    envs.close()
    return iterations * args.envs / elapsed


def pipeline(args: argparse.Namespace, mode: str, steps: int) -> dict:
    from acframe.entry import serial_pipeline
    from acframe.entry.parallel import parallel_pipeline

    exp_dir = os.path.join(tempfile.mkdtemp(prefix='acframe_bench_pixels_'), mode)
    start = time.perf_counter()
    if mode == 'serial':
        policy = serial_pipeline(args.config, seed=0, overrides=overrides(args), exp_dir=exp_dir,
                                 max_env_step=steps, progress=False)
    else:
        actors = [f'parallel.actor_num={args.actors}'] if args.actors else []  # none given: the config's (one per core)
        policy = parallel_pipeline(args.config, seed=0, overrides=overrides(args) + actors,
                                   exp_dir=exp_dir, backend='local', max_env_step=steps, progress=False)
    wall = time.perf_counter() - start
    summary = policy.summary
    return {'env_steps': summary['env_steps'], 'train_iters': summary['train_iters'], 'wall_s': wall}


def parallel_actor_num(args: argparse.Namespace) -> int:
    """The actors the parallel runs used: ``--actors``, or the config's ``parallel.actor_num`` as the pipeline resolves it."""
    from acframe.config import compile_config
    from acframe.entry.parallel.run import resolve_actor_num

    return args.actors or resolve_actor_num(compile_config(args.config, overrides(args)), 'local')


def learner_step(args: argparse.Namespace, network: str) -> float:
    """Seconds of one IMPALA update on a random batch of the config's shape with ``network`` (min of repeats)."""
    import gymnasium as gym

    from acframe.config import compile_config
    from acframe.data import make_tree
    from acframe.policy import create_policy

    args = argparse.Namespace(**{**vars(args), 'encoder': network})
    cfg = compile_config(args.config, overrides=overrides(args), seed=0)
    frames = gym.spaces.Box(0, 255, (4, 84, 84), dtype=np.uint8)
    policy = create_policy(cfg, frames, gym.spaces.Discrete(6), enable_field=('learn',))
    steps, batch = int(cfg.policy.unroll_len), int(cfg.policy.learn.batch_size)
    generator = torch.Generator().manual_seed(0)
    data = make_tree({
        'obs': torch.randint(0, 256, (steps + 1, batch, 4, 84, 84), dtype=torch.uint8, generator=generator),
        'final_obs': torch.zeros((steps, batch, 4, 84, 84), dtype=torch.uint8),
        'action': torch.randint(0, 6, (steps, batch), generator=generator), 'logit': torch.zeros(steps, batch, 6),
        'reward': torch.zeros(steps, batch), 'terminated': torch.zeros(steps, batch, dtype=torch.bool),
        'truncated': torch.zeros(steps, batch, dtype=torch.bool)})
    best = float('inf')
    for _ in range(args.repeats):
        start = time.perf_counter()
        policy.learn_mode.forward(data)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--config', default='pong_impala.py')
    parser.add_argument('--encoder', default='config', choices=('config',) + tuple(NETWORKS),
                        help="the config's network, or the Nature CNN, the shallow 2013 DQN/A3C network, IMPALA's ResNet")
    parser.add_argument('--envs', type=int, default=8)
    parser.add_argument('--steps', type=int, default=6400, help='env steps of each pipeline run')
    parser.add_argument('--bare-steps', type=int, default=8000)
    parser.add_argument('--episode-steps', type=int, default=400)
    parser.add_argument('--manager', default='sync', choices=('sync', 'envpool'))
    parser.add_argument('--actors', type=int, default=0,
                        help="actor processes of the parallel pipeline (default: the config's parallel.actor_num, one per CPU core)")
    parser.add_argument('--modes', default='serial,parallel')
    parser.add_argument('--learner-step', default='', help='networks to time one learner update of, comma-separated')
    parser.add_argument('--repeats', type=int, default=3)
    parser.add_argument('--threads', type=int, default=1,
                        help="torch threads of each pipeline process (policy.learn.torch_threads); the bare loop has one")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.learner_step:
        times = {net: round(learner_step(args, net), 3) for net in args.learner_step.split(',')}
        print(json.dumps({'config': args.config, 'learner_step_s': times, 'load_avg_1min': round(os.getloadavg()[0], 1)}))
        return
    load_start = os.getloadavg()[0]
    bare_before = bare_loop(args)
    runs = {}
    for mode in args.modes.split(','):
        pipeline(args, mode, args.steps // 2)  # warm-up, not counted: the first run of a process pays one-time costs
        runs[mode] = (pipeline(args, mode, args.steps), pipeline(args, mode, 3 * args.steps))
    bare_after = bare_loop(args)
    bare = (bare_before + bare_after) / 2
    result = {'config': args.config, 'encoder': args.encoder, 'envs': args.envs, 'manager': args.manager,
              'torch_threads': args.threads, 'actors': parallel_actor_num(args),
              'load_avg_1min': [round(load_start, 1), round(os.getloadavg()[0], 1)],
              'bare_loop_steps_per_s': [round(bare_before, 1), round(bare_after, 1)]}
    for mode, (short, long) in runs.items():
        whole = long['env_steps'] / long['wall_s']
        steady = (long['env_steps'] - short['env_steps']) / (long['wall_s'] - short['wall_s'])
        result[mode] = {'env_steps': [short['env_steps'], long['env_steps']], 'wall_s': [round(short['wall_s'], 1),
                        round(long['wall_s'], 1)], 'train_iters': long['train_iters'],
                        'whole_run_steps_per_s': round(whole, 1), 'whole_run_ratio': round(whole / bare, 3),
                        'steady_steps_per_s': round(steady, 1), 'steady_ratio': round(steady / bare, 3)}
    print(json.dumps(result))


if __name__ == '__main__':
    main()
