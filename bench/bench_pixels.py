"""Pixels end to end: env-steps/s of IMPALA on Atari Pong (collect + learn) against the bare env loop.

In one run, on the same envs with the same preprocessing (``pong_impala.py``: ALE/Pong-v5, 84x84 grey,
frame skip 4, 4 stacked frames):

* ``bare``: random actions in a gymnasium ``SyncVectorEnv`` (SAME_STEP autoreset) of the run's envs — the
  ceiling (``--manager envpool``: EnvPool stepped directly instead);
* ``serial``: ``serial_pipeline`` (collector → replay buffer → learner, one process);
* ``parallel``: ``parallel_pipeline`` with the local backend, ``--actors`` actor processes (default: the config's
  ``parallel.actor_num``, one per CPU core) and the learner;
* ``parallel_pipe`` (only when ``--modes`` names it): the same with ``parallel.shared_memory_segments=False``
  (segments pickled over the pipes and taken in by the learner's loop, the path before shared memory).

Each pipeline runs twice from a cold start, ``--steps`` and ``3 * --steps`` env steps: ``whole_run`` is the long
run's env-steps/s (start-up and the evaluations at the start and the end included), ``steady`` is the rate of
collect + learn alone, ``(3N - N) / (wall(3N) - wall(N))`` — the fixed costs (process start, env construction,
first and last evaluation) cancel; a short warm-up run of each pipeline comes first, so one-time costs of the
process (first ROM load, first kernels) fall on neither. The bare loop is measured before and after the pipelines (the machine is
shared: its speed drifts) and the ratios use their mean. Every env episode is cut at ``--episode-steps`` steps,
so an evaluation (one episode) costs little; this changes no throughput. One torch thread per process
(``--threads N``: N per pipeline process, e.g. 2 to let the serial pipeline's network use the second core).

    python bench/bench_pixels.py [--encoder config|shallow|nature_cnn|impala_resnet] [--steps 6400] [--manager sync|envpool] [--threads 1] [--cuda]

``--cuda`` puts the learner on the GPU (``policy.cuda=True``; the actors and the bare loop stay on the CPU).

``--ingest N`` instead times what the parallel learner does with each segment before its update (receive it from
an actor process, unpack, push into the FIFO buffer, sample a batch, pin it): ms per segment of ``batch_size`` Pong
unrolls (``pong_impala.py``: 8; the figures in docs/benchmarks.md before 2026-11-26 are for its former 32, which
``--override policy.learn.batch_size=32 --override policy.collect.n_sample=32`` brings back).

``--actor-alone SECONDS`` instead times one parallel-pipeline actor (``ActorWorker``: ``--envs`` envs, the collect-mode
network, one torch thread) collecting segments with no learner: the most one actor can give.

``--learner-step shallow,nature_cnn,impala_resnet`` instead times one IMPALA learner update of the config's batch
(``batch_size`` unrolls x 21 uint8 frames of 4x84x84; forward, backward, RMSprop step) per network: the minimum of
``--repeats``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time

from typing import Any, Dict

import numpy as np
import torch

from acframe.data.tree import leaves


#: the networks ``--encoder`` may name instead of the config's: (encoder, encoder_channels, encoder_hidden_size_list)
NETWORKS = {'nature_cnn': ('nature_cnn', None, [512]), 'shallow': ('nature_cnn', [16, 32], [256]),
            'impala_resnet': ('impala_resnet', None, [256])}


def overrides(args: argparse.Namespace) -> list:
    out = [f'env.collector_env_num={args.envs}', f'env.max_episode_steps={args.episode_steps}',
           'env.evaluator_env_num=1', 'env.n_evaluator_episode=1', 'env.stop_value=None',
           'policy.eval.evaluator.eval_freq=0', f'env.manager={args.manager}',
           'policy.learn.learner.save_ckpt_freq=0', f'policy.learn.torch_threads={args.threads}',
           f'policy.cuda={args.cuda}']
    from acframe.config import compile_config

    n_sample = int(compile_config(args.config).policy.collect.n_sample)
    if n_sample % args.envs:  # n_sample counts unrolls across all the envs: a multiple of the envs
        out.append(f'policy.collect.n_sample={args.envs * max(1, n_sample // args.envs)}')
    out += list(args.override)
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

    scratch = tempfile.mkdtemp(prefix='acframe_bench_pixels_')
    exp_dir = os.path.join(scratch, mode)
    start = time.perf_counter()
    try:
        if mode == 'serial':
            policy = serial_pipeline(args.config, seed=0, overrides=overrides(args), exp_dir=exp_dir,
                                     max_env_step=steps, progress=False)
        else:
            actors = [f'parallel.actor_num={args.actors}'] if args.actors else []  # none given: the config's (one per core)
            if mode == 'parallel_pipe':  # segments pickled over the pipes, as before shared memory
                actors.append('parallel.shared_memory_segments=False')
            policy = parallel_pipeline(args.config, seed=0, overrides=overrides(args) + actors,
                                       exp_dir=exp_dir, backend='local', max_env_step=steps, progress=False)
        wall = time.perf_counter() - start
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
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
    if args.cuda:
        policy.learn_mode.forward(data)  # the first update on a GPU pays for its kernels' set-up: not counted
    best = float('inf')
    for _ in range(args.repeats):
        start = time.perf_counter()
        policy.learn_mode.forward(data)  # from the CPU batch, through pinned memory (what a pipeline's learner does)
        if args.cuda:
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def _pong_segment(unrolls: int, unroll_len: int) -> Dict[str, Any]:
    """A random Pong-shaped segment, one episode end, packed as actors pack it (``tree_to_numpy``)."""
    from acframe.data import make_tree
    from acframe.entry.parallel.messages import tree_to_numpy

    frames = torch.randint(0, 256, (unrolls, unroll_len + 1, 4, 84, 84), dtype=torch.uint8)
    final = torch.zeros((unrolls, unroll_len, 4, 84, 84), dtype=torch.uint8)
    final[0, unroll_len // 2] = frames[0, 0]
    done = torch.zeros((unrolls, unroll_len), dtype=torch.bool)
    segment = tree_to_numpy(make_tree({
        'obs': frames, 'final_obs': final, 'action': torch.zeros((unrolls, unroll_len), dtype=torch.int64),
        'logit': torch.zeros((unrolls, unroll_len, 6)), 'reward': torch.zeros((unrolls, unroll_len)),
        'terminated': done, 'truncated': done.clone()}))
    return segment


def _segment_sender(conn: Any, segments: int, unrolls: int, unroll_len: int) -> None:
    """An actor's side of ``--ingest`` on the pipe path (``parallel.shared_memory_segments=False``): pickled segments."""
    torch.set_num_threads(1)
    segment = _pong_segment(unrolls, unroll_len)
    for _ in range(segments):
        conn.send(segment)
    conn.close()


def _shm_segment_sender(conn: Any, segments: int, unrolls: int, unroll_len: int) -> None:
    """An actor's side of ``--ingest`` on the shared-memory path (the default): the first segment pickled, then, once
    the learner sent its slots, each segment written into a free slot and announced by a header (an actor with no free
    slot sends pickled; this one waits, so that every timed segment is a shared-memory one)."""
    from acframe.entry.parallel.messages import SegmentMessage
    from acframe.entry.parallel.shm_segments import read_pool_note, to_slot

    torch.set_num_threads(1)
    segment = _pong_segment(unrolls, unroll_len)
    conn.send(SegmentMessage(0, 0, segment, unrolls * unroll_len, 0, 0))
    pool = read_pool_note(conn.recv_bytes())
    for _ in range(segments - 1):
        while True:
            message = to_slot(pool, SegmentMessage(0, 0, segment, unrolls * unroll_len, 0, 0))
            if message.slot is not None:
                break
            time.sleep(0.0005)
        conn.send(message)
    conn.recv()


def ingest(args: argparse.Namespace) -> Dict[str, Any]:
    """Milliseconds the parallel learner spends per segment of ``batch_size`` Pong unrolls before its update, by the
    two paths, one segment of each in turn (mean of ``--ingest`` segments each, after two warm-ups):

    * ``pipe`` (``parallel.shared_memory_segments=False``): receive the pickled segment from an actor process over a
      pipe, unpack it, push it into the FIFO replay buffer, sample a batch, copy the batch to pinned memory
      (``--cuda``; else a plain copy, standing in for it);
    * ``shared_memory`` (the default): receive the header, view the slot, push from the slot into the buffer (and
      free the slot), sample the batch straight into a preallocated batch (page-locked with ``--cuda``): no pinning
      copy. In the pipeline the push runs in the ingest thread during the update, so the learner's own critical path
      is ``critical_path`` = receive + unpack + sample (+ waiting for the thread when the update is shorter).
    """
    import multiprocessing as mp

    from acframe.config import compile_config
    from acframe.data.buffer import ReplayBuffer
    from acframe.entry.parallel.messages import numpy_to_tree
    from acframe.entry.parallel.shm_segments import LearnerPools

    cfg = compile_config(args.config, overrides=overrides(args), seed=0)
    unrolls, unroll_len = int(cfg.policy.learn.batch_size), int(cfg.policy.unroll_len)
    ctx = mp.get_context('spawn')
    pipe_ours, pipe_theirs = ctx.Pipe()
    shm_ours, shm_theirs = ctx.Pipe()
    senders = [ctx.Process(target=_segment_sender, args=(pipe_theirs, args.ingest + 2, unrolls, unroll_len)),
               ctx.Process(target=_shm_segment_sender, args=(shm_theirs, args.ingest + 2, unrolls, unroll_len))]
    for sender in senders:
        sender.start()
    buffers = {'pipe': ReplayBuffer(2 * unrolls, max_use=1), 'shared_memory': ReplayBuffer(2 * unrolls, max_use=1)}
    pools, batch_out = LearnerPools(), None
    steps = ('receive', 'unpack', 'push', 'sample', 'pin')
    totals = {path: dict.fromkeys(steps, 0.0) for path in buffers}
    for i in range(args.ingest + 2):
        # the pipe path, as before
        buffer = buffers['pipe']
        t0 = time.perf_counter()
        message = pipe_ours.recv()
        t1 = time.perf_counter()
        samples = numpy_to_tree(message)
        t2 = time.perf_counter()
        buffer.push(samples)
        t3 = time.perf_counter()
        batch = buffer.sample(unrolls)
        t4 = time.perf_counter()
        for _, leaf in leaves(batch):
            leaf.pin_memory() if args.cuda else leaf.clone()
        t5 = time.perf_counter()
        if i >= 2:
            for key, seconds in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
                totals['pipe'][key] += seconds
        # the shared-memory path
        buffer = buffers['shared_memory']
        t0 = time.perf_counter()
        message = shm_ours.recv()
        pools.arrived(message, 0, shm_ours)  # the first (pickled) segment: the learner makes the slots, sends them
        t1 = time.perf_counter()
        samples = numpy_to_tree(message.samples)
        t2 = time.perf_counter()
        buffer.push(samples)
        if message.release is not None:
            message.release()
        t3 = time.perf_counter()
        if batch_out is None:
            batch_out = buffer.batch_buffer(unrolls, pin_memory=args.cuda)
        batch = buffer.sample(unrolls, out=batch_out)
        t4 = time.perf_counter()
        if i >= 2:
            for key, seconds in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t4 - t4)):
                totals['shared_memory'][key] += seconds
    shm_ours.send(None)
    for sender in senders:
        sender.join(timeout=60)
    result: Dict[str, Any] = {}
    for path, parts in totals.items():
        result[path] = {key: round(1000 * value / args.ingest, 2) for key, value in parts.items()}
        result[path]['total'] = round(sum(result[path].values()), 2)
        result[path]['us_per_env_step'] = round(1000 * result[path]['total'] / (unrolls * unroll_len), 2)
    shm = result['shared_memory']
    shm['critical_path'] = round(shm['receive'] + shm['unpack'] + shm['sample'], 2)
    result['pipe_over_shared_memory'] = round(result['pipe']['total'] / shm['total'], 2)
    result['pipe_over_critical_path'] = round(result['pipe']['total'] / shm['critical_path'], 2)
    result['segments_through_shared_memory'] = pools.shared
    return result


def actor_alone(args: argparse.Namespace) -> float:
    """Env steps/s of one parallel-pipeline actor (``ActorWorker``: its envs, its collect-mode network, one torch
    thread) collecting segments for ``--actor-alone`` seconds with no learner: the most one actor can give."""
    from acframe.config import compile_config
    from acframe.entry.parallel.roles import ActorWorker, HandedWeights

    cfg = compile_config(args.config, overrides=overrides(args) + ['parallel.actor_num=1'], seed=0)
    worker = ActorWorker(cfg, 0, 0, HandedWeights())
    try:
        worker.collect()  # the first segment pays the envs' first reset: not counted
        steps, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.actor_alone:
            steps += worker.collect().env_steps
        return steps / (time.perf_counter() - start)
    finally:
        worker.close()


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
    parser.add_argument('--override', action='append', default=[], metavar='KEY=VALUE',
                        help='a config override for every run (repeatable), e.g. policy.learn.learner_thread=True')
    parser.add_argument('--cuda', action='store_true', help='the learner on the GPU (policy.cuda=True); actors stay on the CPU')
    parser.add_argument('--threads', type=int, default=1,
                        help="torch threads of each pipeline process (policy.learn.torch_threads); the bare loop has one")
    parser.add_argument('--ingest', type=int, default=0,
                        help="instead: ms per segment of the parallel learner's receive/unpack/push/sample/pin (N segments)")
    parser.add_argument('--actor-alone', type=float, default=0, metavar='SECONDS',
                        help="instead: env steps/s of one parallel-pipeline actor collecting alone for SECONDS")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.actor_alone:
        print(json.dumps({'config': args.config, 'envs': args.envs, 'manager': args.manager,
                          'actor_alone_steps_per_s': round(actor_alone(args), 1),
                          'load_avg_1min': round(os.getloadavg()[0], 1)}))
        return
    if args.ingest:
        print(json.dumps({'config': args.config, 'ingest_ms_per_segment': ingest(args),
                          'load_avg_1min': round(os.getloadavg()[0], 1)}))
        return
    if args.learner_step:
        times = {net: round(learner_step(args, net), 3) for net in args.learner_step.split(',')}
        print(json.dumps({'config': args.config, 'learner_step_s': times, 'cuda': args.cuda,
                          'device': torch.cuda.get_device_name() if args.cuda else 'cpu',
                          'load_avg_1min': round(os.getloadavg()[0], 1)}))
        return
    load_start = os.getloadavg()[0]
    bare_before = bare_loop(args)
    runs = {}
    for mode in filter(None, args.modes.split(',')):  # --modes '': the bare loop alone
        pipeline(args, mode, args.steps // 2)  # warm-up, not counted: the first run of a process pays one-time costs
        runs[mode] = (pipeline(args, mode, args.steps), pipeline(args, mode, 3 * args.steps))
    bare_after = bare_loop(args)
    bare = (bare_before + bare_after) / 2
    result = {'config': args.config, 'encoder': args.encoder, 'envs': args.envs, 'manager': args.manager, 'cuda': args.cuda,
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
