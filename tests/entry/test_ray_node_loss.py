"""The Ray backend loses a node mid-run: its actors restart on the other nodes and the run goes on to its budget.

A cluster of this machine (``ray.cluster_utils.Cluster``): a head node (where the driver, i.e. the learner, runs) and
two more nodes, 2 CPUs each; 3 actors of 1 CPU spread over them (``parallel.ray_scheduling='spread'``), on the
``toy_sleep`` env (2 ms steps). After a few updates the learner's hook removes a node that holds an actor.
"""
import json
import os

import pytest

ray = pytest.importorskip('ray', reason='Ray is not installed (pip install acframe[ray]); the Ray backend cannot be tested')

from ray.cluster_utils import Cluster  # noqa: E402

from acframe.entry.parallel import parallel_pipeline  # noqa: E402
from acframe.worker import LearnerHook  # noqa: E402

RAY_AUTH_VARS = ('RAY_AUTH_MODE', 'RAY_AUTH_TOKEN', 'RAY_AUTH_TOKEN_PATH')


@pytest.fixture
def three_node_cluster(monkeypatch):
    """A head node and two more nodes, 2 CPUs each, shut down at the end; yields the cluster and the two nodes."""
    for var in RAY_AUTH_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv('RAY_AUTH_MODE', 'disabled')  # a cluster of this machine only
    store = 80 * 1024 * 1024  # Ray's minimum is 75 MiB
    cluster = Cluster(initialize_head=True, head_node_args=dict(num_cpus=2, object_store_memory=store,
                                                                include_dashboard=False))
    try:
        nodes = [cluster.add_node(num_cpus=2, object_store_memory=store) for _ in range(2)]
        cluster.wait_for_nodes()
        yield cluster, nodes
    finally:
        if ray.is_initialized():
            ray.shutdown()
        cluster.shutdown()


def reserved_cpus() -> dict:
    """CPUs reserved (by actors) on each alive node, by node id."""
    import ray._private.state as state
    total, free = state.total_resources_per_node(), state.available_resources_per_node()
    return {node: res.get('CPU', 0.0) - free.get(node, {}).get('CPU', 0.0) for node, res in total.items()}


class RemoveANodeAt(LearnerHook):
    """At learner iteration ``at``, remove a node that holds actors; later, see where the actors are."""

    def __init__(self, cluster, nodes, at: int) -> None:
        self.cluster, self.nodes, self.at = cluster, nodes, at
        self.before = self.lost = self.after = self.removed = None

    def after_iter(self, learner, info) -> None:
        if learner.train_iter == self.at:
            self.before = reserved_cpus()
            node = next(n for n in self.nodes if self.before.get(n.node_id, 0.0) > 0)
            self.lost = round(self.before[node.node_id])
            self.cluster.remove_node(node)
            self.removed = node.node_id
        elif self.lost is not None and self.after is None:
            now = reserved_cpus()
            if self.removed not in now and sum(now.values()) >= 3:
                self.after = now  # every actor placed again, on the nodes left


def test_a_lost_node_s_actors_restart_on_the_other_nodes_and_the_run_reaches_its_budget(tmp_path, three_node_cluster):
    cluster, nodes = three_node_cluster
    main = dict(
        exp_name='node_loss',
        env=dict(env_id='toy_sleep', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1, stop_value=None,
                 max_episode_steps=50, env_kwargs=dict(step_s=0.002)),
        policy=dict(unroll_len=16, model=dict(encoder_hidden_size_list=[16]),
                    learn=dict(update_per_collect=1, batch_size=4), collect=dict(n_sample=4),
                    eval=dict(evaluator=dict(eval_freq=1_000_000)),
                    other=dict(replay_buffer=dict(replay_buffer_size=64, max_use=1))),
        parallel=dict(actor_num=3, ray_scheduling='spread', actor_num_cpus=1.0, evaluator_num_cpus=0.0,
                      env_steps_per_update=0),
    )
    create = dict(env=dict(type='toy_sleep'), env_manager=dict(type='sync'), policy=dict(type='impala'))
    remover = RemoveANodeAt(cluster, nodes, at=5)
    exp_dir = tmp_path / 'run'
    parallel_pipeline((main, create), exp_dir=str(exp_dir), backend='ray', ray_address=cluster.address,
                      max_env_step=4000, progress=False, learner_hooks=[remover])
    with open(exp_dir / 'summary.json') as f:
        summary = json.load(f)
    # spread: one actor on each node; the removed node held one
    assert sorted(round(cpus) for cpus in remover.before.values()) == [1, 1, 1], remover.before
    assert remover.lost == 1
    lost = [f for f in summary['worker_failures'] if f.startswith('actor')]
    assert len(lost) == remover.lost and all('was lost' in f for f in lost), summary['worker_failures']
    assert summary['actor_restarts'] >= remover.lost, summary
    # the replacement runs on the nodes left (the removed one is gone from the cluster) and collected
    assert remover.after is not None and remover.removed not in remover.after, remover.after
    assert round(sum(remover.after.values())) == 3
    assert 4000 <= summary['env_steps'] <= 4000 + 3, summary['env_steps']  # the budget, within one step per env
    assert all(rate > 0 for rate in summary['env_steps_per_s_per_actor']), summary
    assert os.path.isfile(exp_dir / 'ckpt' / 'ckpt_latest.pth')
    assert not ray.is_initialized()
