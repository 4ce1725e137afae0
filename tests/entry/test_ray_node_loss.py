"""The Ray backend loses a node mid-run: its actors restart on the other nodes and the run goes on to its budget.

A cluster of this machine (``ray.cluster_utils.Cluster``): a head node (where the driver, i.e. the learner, runs) and
two more nodes, 2 CPUs each; 3 actors of 1 CPU spread over them (``parallel.ray_scheduling='spread'``), on the
``toy_sleep`` env (2 ms steps). After a few updates the learner's hook removes a node that holds an actor.
"""
import json
import os
import time

import pytest

ray = pytest.importorskip('ray', reason='Ray is not installed (pip install acframe[ray]); the Ray backend cannot be tested')

from ray.cluster_utils import Cluster  # noqa: E402

from acframe.entry.parallel import parallel_pipeline  # noqa: E402
from acframe.worker import LearnerHook  # noqa: E402

RAY_AUTH_VARS = ('RAY_AUTH_MODE', 'RAY_AUTH_TOKEN', 'RAY_AUTH_TOKEN_PATH')


@pytest.fixture(scope='module')
def three_node_cluster():
    """A head node and two more nodes, 2 CPUs each, shut down at the end; yields the cluster and the two nodes."""
    saved = {var: os.environ.pop(var, None) for var in RAY_AUTH_VARS}
    os.environ['RAY_AUTH_MODE'] = 'disabled'  # a cluster of this machine only
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
        for var, value in saved.items():
            os.environ.pop(var, None)
            if value is not None:
                os.environ[var] = value


def reserved_cpus() -> dict:
    """CPUs reserved (by actors) on each alive node, by node id."""
    import ray._private.state as state
    total, free = state.total_resources_per_node(), state.available_resources_per_node()
    return {node: res.get('CPU', 0.0) - free.get(node, {}).get('CPU', 0.0) for node, res in total.items()}


class RemoveANodeAt(LearnerHook):
    """At learner iteration ``at``, remove a node that holds actors; later, see where the actors are."""

    def __init__(self, cluster, at: int) -> None:
        self.cluster, self.at = cluster, at
        self.before = self.lost = self.after = self.removed = None

    def after_iter(self, learner, info) -> None:
        if learner.train_iter == self.at:
            self.before = reserved_cpus()
            node = next(n for n in self.cluster.worker_nodes if self.before.get(n.node_id, 0.0) > 0)
            self.lost = round(self.before[node.node_id])
            self.cluster.remove_node(node)
            self.removed = node.node_id
            self.actors = round(sum(self.before.values()))
        elif self.lost is not None and self.after is None:
            now = reserved_cpus()
            if self.removed not in now and sum(now.values()) >= self.actors:
                self.after = now  # every actor placed again, on the nodes left


def sleep_impala(actors: int):
    """IMPALA on toy_sleep (2 ms steps), 4 envs per actor, actors of 1 CPU spread over the nodes."""
    main = dict(
        exp_name='node_loss',
        env=dict(env_id='toy_sleep', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1, stop_value=None,
                 max_episode_steps=50, env_kwargs=dict(step_s=0.002)),
        policy=dict(unroll_len=16, model=dict(encoder_hidden_size_list=[16]),
                    learn=dict(update_per_collect=1, batch_size=4), collect=dict(n_sample=4),
                    eval=dict(evaluator=dict(eval_freq=1_000_000)),
                    other=dict(replay_buffer=dict(replay_buffer_size=64, max_use=1))),
        parallel=dict(actor_num=actors, ray_scheduling='spread', actor_num_cpus=1.0, evaluator_num_cpus=0.0,
                      env_steps_per_update=0),
    )
    create = dict(env=dict(type='toy_sleep'), env_manager=dict(type='sync'), policy=dict(type='impala'))
    return main, create


def test_a_lost_node_s_actors_restart_on_the_other_nodes_and_the_run_reaches_its_budget(tmp_path, three_node_cluster):
    cluster, nodes = three_node_cluster
    main, create = sleep_impala(actors=3)
    remover = RemoveANodeAt(cluster, at=5)
    exp_dir = tmp_path / 'run'
    parallel_pipeline((main, create), exp_dir=str(exp_dir), backend='ray', ray_address=cluster.address,
                      max_env_step=3000, progress=False, learner_hooks=[remover])
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
    assert 3000 <= summary['env_steps'] <= 3000 + 3, summary['env_steps']  # the budget, within one step per env
    assert all(rate > 0 for rate in summary['env_steps_per_s_per_actor']), summary
    assert os.path.isfile(exp_dir / 'ckpt' / 'ckpt_latest.pth')
    assert not ray.is_initialized()


class NoNodeHasRoom:
    """Stands in for the ``ray`` module: actors are created, and never start (``wait`` finds nothing ready)."""

    class exceptions:
        RayError = GetTimeoutError = Exception

    def remote(self, cls):
        return cls

    def wait(self, refs, num_returns=1, timeout=None):
        return [], list(refs)

    def put(self, value):
        return 'weights'


class FakeActor:
    """A started actor's handle: ``collect.remote`` records the call."""

    def __init__(self, calls, actor_id):
        self.collect = self
        self.calls, self.actor_id = calls, actor_id

    def remote(self, *args):
        self.calls.append(self.actor_id)
        return f'segment-{self.actor_id}-{len(self.calls)}'


@pytest.mark.parametrize('sync_mode, restarting, fails', [
    ('sync', [1], True),          # every round needs every actor
    ('async', [0, 1, 2], True),   # no actor left working
    ('async', [1], False),        # the others go on; a warning
])
def test_a_replacement_no_node_starts_in_time_fails_the_run_only_when_it_cannot_go_on(sync_mode, restarting, fails):
    from acframe.config.compile import compile_config
    from acframe.entry.parallel.ray_backend import RayBackend
    from acframe.errors import EnvError

    main, create = sleep_impala(actors=3)
    main['parallel'].update(sync_mode=sync_mode, start_timeout=2.0)
    cfg = compile_config((main, create))
    warnings = []
    backend = RayBackend(cfg, dict, warnings.append, sync_mode == 'sync', ray=NoNodeHasRoom())
    backend._restarting = {actor_id: (f'ready-{actor_id}', time.monotonic() - 0.1) for actor_id in restarting}
    if fails:
        with pytest.raises(EnvError, match=r"^actor \d was lost and its replacement did not start within "
                                           r"parallel.start_timeout=2.0 s: no node of the Ray cluster has the "
                                           r"parallel.actor_num_cpus=1 CPUs it reserves \(a node was lost\?\); add a node"):
            backend._check_restarts()
    else:
        backend._check_restarts()
        backend._check_restarts()
        assert len(warnings) == 1 and warnings[0].startswith('acframe: warning: actor 1 was lost and its replacement')
        assert warnings[0].endswith('the other actors go on, it joins when a node has room')


def test_a_replacement_gets_no_work_until_it_started():
    """Its grants of the budget would never arrive while no node has room for it: the other actors collect them."""
    from acframe.config.compile import compile_config
    from acframe.entry.parallel.ray_backend import RayBackend

    main, create = sleep_impala(actors=3)
    cfg = compile_config((main, create))
    backend = RayBackend(cfg, dict, print, False, ray=NoNodeHasRoom())
    calls = []
    backend.actors = [FakeActor(calls, actor_id) for actor_id in range(3)]
    backend._restarting = {1: ('ready-1', time.monotonic() + 60)}
    backend.version = 0
    backend._dispatch_idle()
    assert calls == [0, 2]
    backend._restarting.clear()  # it started
    backend._dispatch_idle()
    assert calls == [0, 2, 1]


def test_a_replacement_evaluator_no_node_starts_in_time_fails_the_run():
    """Without an evaluator the run can neither be judged nor end (its final evaluation): one line, not a wait."""
    from acframe.config.compile import compile_config
    from acframe.entry.parallel.ray_backend import RayBackend
    from acframe.errors import EnvError

    main, create = sleep_impala(actors=2)
    main['parallel'].update(start_timeout=2.0)
    backend = RayBackend(compile_config((main, create)), dict, print, False, ray=NoNodeHasRoom())
    backend._eval_restart = ('ready-evaluator', time.monotonic() + 60)
    backend._check_restarts()  # not yet due: waited for
    backend._eval_restart = ('ready-evaluator', time.monotonic() - 0.1)
    with pytest.raises(EnvError, match=r"^the evaluator was lost and its replacement did not start within "
                                       r"parallel.start_timeout=2.0 s: no node of the Ray cluster has the "
                                       r"parallel.evaluator_num_cpus=\S+ CPUs it reserves \(a node was lost\?\)"):
        backend._check_restarts()
