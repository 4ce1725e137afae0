"""Scaling of the parallel pipeline's Ray backend past one machine, measured on a simulated cluster (issue 45).

A Ray cluster of ``--nodes`` nodes, each with ``--cpus-per-node`` logical CPUs of its own, runs on this machine
(``ray.cluster_utils.Cluster``: one raylet and object store per node). The env is ``toy_sleep``: each step sleeps
``--step-ms`` milliseconds and costs almost no CPU, so 16 actors fit on 2 cores — what is measured is the pipeline
(the actors' collectors and forward passes, Ray's transport, the learner), not the simulator. The actors are
spread over the nodes (``parallel.ray_scheduling='spread'``).

1. Scaling: ``parallel_pipeline(..., backend='ray', ray_address=<the cluster>)`` (what ``acframe -m parallel
   --backend ray --ray-address ADDR`` runs) with 1, 2, 4, 8, 16 actors, each stepping ``env.collector_env_num``
   envs; IMPALA, a 32x32 MLP, every sample trained on once (``max_use=1``), the actors running free
   (``parallel.env_steps_per_update=0``). Per run: env steps/s while the workers ran (the summary's
   ``env_steps_per_s``), its efficiency against linear (``rate(n) / (n * rate(1))``) and against the sleep alone
   (``n * collector steps a sleeping actor could make``), the learner's idle fraction, how many nodes held actors.
2. The learner's ingest ceiling: actors that send instantly. Each actor collects one real segment (0 ms env) and
   then answers every collect call with a copy of it at once, so the learner's side alone is measured:
   ``ray.wait``/``ray.get`` of the segments, turning them into tensors, the buffer, one update per batch, the weights
   published per version. Segments/s and env steps/s taken in.

    python bench/bench_cluster.py                      # 4 nodes x 4 CPUs, actors 1 2 4 8 16, 5 ms steps
    python bench/bench_cluster.py --quick              # a small run to check the script
    python bench/bench_cluster.py    # (this machine: both CPU slots)

The results are printed as a Markdown table and written to ``bench/results/cluster.json``.
"""
from __future__ import annotations

import argparse
import copy
import datetime
import json
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

import torch

from acframe.worker import LearnerHook

ENV_STEP_MS = 5.0
#: IMPALA on ``toy_sleep``: 8 envs per actor, segments of 8 unrolls x 16 steps (128 env steps), a small model
BASE_MAIN = dict(
    exp_name='bench_cluster',
    env=dict(env_id='toy_sleep', collector_env_num=8, evaluator_env_num=1, n_evaluator_episode=1, stop_value=None,
             max_episode_steps=100, env_kwargs=dict(n=4, step_s=ENV_STEP_MS / 1000)),
    policy=dict(
        unroll_len=16,
        model=dict(encoder_hidden_size_list=[32, 32]),
        learn=dict(update_per_collect=1, batch_size=16, learning_rate=0.001),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=1_000_000)),
        other=dict(replay_buffer=dict(replay_buffer_size=512, max_use=1)),
    ),
    parallel=dict(env_steps_per_update=0, ray_scheduling='spread', actor_num_cpus=1.0, evaluator_num_cpus=0.0),
)
BASE_CREATE = dict(env=dict(type='toy_sleep'), env_manager=dict(type='sync'), policy=dict(type='impala'))


def config(actors: int, step_ms: float) -> tuple:
    main = copy.deepcopy(BASE_MAIN)
    main['env']['env_kwargs']['step_s'] = step_ms / 1000
    main['parallel']['actor_num'] = actors
    return main, copy.deepcopy(BASE_CREATE)


class NodesInUse(LearnerHook):
    """A learner hook: over the first ``until`` updates, the most nodes seen with CPUs reserved (by the run's actors)."""

    def __init__(self, until: int = 10) -> None:
        self.until = until
        self.nodes = 0

    def after_iter(self, learner: Any, info: Dict[str, float]) -> None:
        if learner.train_iter <= self.until:
            import ray._private.state as state
            total = state.total_resources_per_node()
            free = state.available_resources_per_node()
            self.nodes = max(self.nodes, sum(1 for node, res in total.items()
                                             if res.get('CPU', 0) - free.get(node, {}).get('CPU', 0) > 1e-6))


def run(address: str, actors: int, step_ms: float, max_env_step: int) -> Dict[str, Any]:
    from acframe.entry.parallel import parallel_pipeline

    nodes = NodesInUse()
    exp_dir = tempfile.mkdtemp(prefix='acframe_bench_cluster_')
    start = time.perf_counter()
    policy = parallel_pipeline(config(actors, step_ms), seed=0, exp_dir=os.path.join(exp_dir, 'run'), backend='ray',
                               ray_address=address, max_env_step=max_env_step, progress=False, learner_hooks=[nodes])
    summary = dict(policy.summary)
    summary['process_s'] = round(time.perf_counter() - start, 2)
    summary['nodes_with_actors'] = nodes.nodes
    running_s = summary['env_steps'] / max(summary['env_steps_per_s'], 1e-9)  # while the workers ran
    summary['segments_per_s'] = round(summary['segments'] / running_s, 2)
    summary['updates_per_s'] = round(summary['train_iters'] / running_s, 2)
    return summary


def instant_backend_class() -> type:
    """A ``RayBackend`` whose actors collect one real segment, then answer every collect call with a copy of it."""
    from acframe.entry.parallel import ray_backend

    class InstantActorWorker(ray_backend.RayActorWorker):
        def collect(self, weights_box: List[Any], version: int, steps: int) -> Any:
            cached = getattr(self, '_cached', None)
            if cached is not None and cached[0] == steps:
                message = copy.copy(cached[1])
                message.episode_returns, message.episode_lengths = [], []
                return message
            answer = super().collect(weights_box, version, steps)
            if hasattr(answer, 'samples'):
                self._cached = (steps, answer)
            return answer

    class InstantRayBackend(ray_backend.RayBackend):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._actor_cls = self.ray.remote(InstantActorWorker)

    return InstantRayBackend


def ingest_ceiling(address: str, actors: int, max_env_step: int) -> Dict[str, Any]:
    """The scaling run's pipeline with instant actors (``ParallelRun`` builds this backend instead of ``RayBackend``)."""
    from acframe.entry.parallel import ray_backend

    original = ray_backend.RayBackend
    ray_backend.RayBackend = instant_backend_class()
    try:
        summary = run(address, actors, 0.0, max_env_step)
    finally:
        ray_backend.RayBackend = original
    return summary


def start_cluster(nodes: int, cpus_per_node: int) -> Any:
    os.environ.setdefault('RAY_AUTH_MODE', 'disabled')  # a cluster of this machine only
    from ray.cluster_utils import Cluster

    store = 80 * 1024 * 1024
    cluster = Cluster(initialize_head=True, head_node_args=dict(num_cpus=cpus_per_node, object_store_memory=store,
                                                                include_dashboard=False))
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=cpus_per_node, object_store_memory=store)
    cluster.wait_for_nodes()
    return cluster


def table(rows: List[Dict[str, Any]], step_ms: float, envs: int) -> str:
    base = rows[0]['env_steps_per_s'] / rows[0]['actor_num']
    sleep_only = 1000.0 / step_ms  # env steps/s of one actor whose collector costs nothing but the sleeps
    lines = ['| actors | nodes with actors | env steps | env steps/s | per actor | vs linear | vs sleep alone | '
             'segments/s | learner idle | samples evicted unused | restarts |', '|' + '---|' * 11]
    for r in rows:
        n = r['actor_num']
        lines.append(f"| {n} | {r['nodes_with_actors']} | {r['env_steps']} | {r['env_steps_per_s']:,.0f} | "
                     f"{r['env_steps_per_s'] / n:,.0f} | {r['env_steps_per_s'] / (n * base):.2f} | "
                     f"{r['env_steps_per_s'] / (n * sleep_only):.2f} | {r['segments_per_s']:.1f} | "
                     f"{r['learner_idle_fraction']:.0%} | {r['samples_evicted_unused']} | {r['actor_restarts']} |")
    return '\n'.join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--nodes', type=int, default=4)
    parser.add_argument('--cpus-per-node', type=int, default=4)
    parser.add_argument('--actors', type=int, nargs='+', default=[1, 2, 4, 8, 16])
    parser.add_argument('--step-ms', type=float, default=ENV_STEP_MS)
    parser.add_argument('--seconds', type=float, default=15.0, help='collection time per run (sets its env-step budget)')
    parser.add_argument('--ingest-actors', type=int, default=4, help='instant actors of the ingest-ceiling run (0: skip)')
    parser.add_argument('--ingest-steps', type=int, default=200_000)
    parser.add_argument('--out', default='cluster.json', help='file in bench/results/ the results go to')
    parser.add_argument('--quick', action='store_true')
    args = parser.parse_args()
    if args.quick:
        args.nodes, args.cpus_per_node, args.actors, args.seconds, args.ingest_steps = 2, 2, [1, 2], 3.0, 5_000
        args.ingest_actors = 2
    torch.set_num_threads(1)
    envs = BASE_MAIN['env']['collector_env_num']
    cluster = start_cluster(args.nodes, args.cpus_per_node)
    rows, ingest = [], None
    try:
        for actors in args.actors:
            budget = int(actors * 1000.0 / args.step_ms * args.seconds)
            rows.append(run(cluster.address, actors, args.step_ms, budget))
            print(json.dumps({k: rows[-1][k] for k in ('actor_num', 'env_steps', 'env_steps_per_s', 'wall_s',
                                                        'learner_idle_fraction', 'nodes_with_actors')}), flush=True)
        if args.ingest_actors:
            ingest = ingest_ceiling(cluster.address, args.ingest_actors, args.ingest_steps)
    finally:
        cluster.shutdown()
    load = os.getloadavg()
    header = (f"{datetime.date.today()}, {os.cpu_count()} cores, load average {load[0]:.2f} / {load[1]:.2f} / "
              f"{load[2]:.2f} after the runs; {args.nodes} Ray nodes x {args.cpus_per_node} logical CPUs; "
              f"toy_sleep {args.step_ms:g} ms steps, {envs} envs per actor, segments of {envs * 16} env steps")
    print(header)
    print(table(rows, args.step_ms, envs))
    if ingest is not None:
        print(f"\ningest ceiling ({args.ingest_actors} instant actors): {ingest['segments_per_s']:.1f} "
              f"segments/s, {ingest['env_steps_per_s']:,.0f} env steps/s, {ingest['updates_per_s']:.1f} "
              f"updates/s, learner idle {ingest['learner_idle_fraction']:.0%}")
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'results', args.out)
    if not args.quick:
        with open(out, 'w') as f:
            json.dump({'header': header, 'args': vars(args), 'rows': rows, 'ingest': ingest}, f, indent=1)


if __name__ == '__main__':
    main()
