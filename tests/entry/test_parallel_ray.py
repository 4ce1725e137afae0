"""Specification of the parallel pipeline's Ray backend, on a two-node Ray cluster bound to the loopback address.

The fixture starts a head node and a second node with ``ray start --node-ip-address=127.0.0.1`` and stops
their processes at the end (only theirs: ``ray stop`` would stop every Ray cluster of the machine's user).
Ray normally swaps 127.0.0.1 for the machine's network address (so other machines can reach the node);
here that translation is switched off, so every node, and the driver, uses 127.0.0.1 and nothing else.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
import torch

ray = pytest.importorskip('ray', reason='Ray is not installed (pip install acframe[ray]); the Ray backend cannot be tested')

from acframe import ConfigError  # noqa: E402
from acframe.cli import main as cli_main  # noqa: E402
from acframe.entry.parallel import parallel_pipeline  # noqa: E402
from acframe.worker import LearnerHook  # noqa: E402
from acframe.errors import EnvTimeoutError  # noqa: E402
from test_parallel import a2c_cartpole, cartpole, hanging  # noqa: E402  (the same IMPALA CartPole-v0 configs, 2 actors)

LOOPBACK = '127.0.0.1'
#: runs Ray's command line with the loopback address kept as given
RAY_CLI = ("import sys, ray._private.services as services; services.resolve_ip_for_localhost = lambda host: host; "
           "from ray.scripts.scripts import main; sys.exit(main())")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def ray_cli(*args: str, timeout: float = 120) -> None:
    result = subprocess.run([sys.executable, '-c', RAY_CLI, *args], capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"ray {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")


#: Ray's authentication settings, which the tests set themselves (whatever the user's environment holds)
RAY_AUTH_VARS = ('RAY_AUTH_MODE', 'RAY_AUTH_TOKEN', 'RAY_AUTH_TOKEN_PATH')
#: an environment variable the test cluster's processes inherit, so the tests touch only its workers
CLUSTER_MARKER = ('ACFRAME_TEST_RAY_CLUSTER', f'{os.getpid()}')


@pytest.fixture(scope='module')
def home_with_a_stale_ray_token(tmp_path_factory):
    """A home folder holding a stale ``~/.ray/auth_token`` (as an earlier local Ray run leaves behind)."""
    home = tmp_path_factory.mktemp('home')
    (home / '.ray').mkdir()
    (home / '.ray' / 'auth_token').write_text('0123456789abcdef' * 4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv('HOME', str(home))
        yield home


@pytest.fixture(scope='module')
def loopback_cluster(home_with_a_stale_ray_token):
    """``127.0.0.1:PORT`` of a head node and a second node, 2 CPUs each, whose processes are stopped at the end.

    Token authentication is off for this loopback-only cluster, explicitly (the nodes and the driver agree on it
    whatever the home folder or the environment holds).
    """
    port = free_port()
    address = f'{LOOPBACK}:{port}'
    common = ['--node-ip-address', LOOPBACK, '--num-cpus', '2', '--object-store-memory', str(100 * 1024 * 1024),
              '--disable-usage-stats']
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr('ray._private.services.resolve_ip_for_localhost', lambda host: host)
        for var in RAY_AUTH_VARS:
            patch.delenv(var, raising=False)
        patch.setenv('RAY_AUTH_MODE', 'disabled')
        patch.setenv(*CLUSTER_MARKER)
        # the nodes' workers import this folder's test modules (import_names=['test_parallel'])
        here = os.path.dirname(os.path.abspath(__file__))
        patch.setenv('PYTHONPATH', os.pathsep.join(p for p in (here, os.environ.get('PYTHONPATH')) if p))
        try:
            ray_cli('start', '--head', '--port', str(port), '--include-dashboard', 'false', *common)
            ray_cli('start', '--address', address, *common)
            yield address
        finally:
            if ray.is_initialized():
                ray.shutdown()
            stop_cluster()


def cluster_pids(cmdline_prefix: bytes = b'') -> list:
    """Processes of the test cluster (they inherited ``CLUSTER_MARKER``) whose command line starts with the
    prefix; never another Ray's on this machine, never this process."""
    pids = []
    marker = f'{CLUSTER_MARKER[0]}={CLUSTER_MARKER[1]}'.encode() + b'\0'
    for entry in os.listdir('/proc'):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f'/proc/{entry}/cmdline', 'rb') as f:
                if not f.read().startswith(cmdline_prefix):
                    continue
            with open(f'/proc/{entry}/environ', 'rb') as f:
                if marker in f.read():
                    pids.append(int(entry))
        except (OSError, ValueError):
            continue
    return pids


def none_left(cmdline_prefix: bytes, within_s: float = 30.0) -> bool:
    """No test-cluster process with that command-line prefix is left within ``within_s`` (``ray.kill`` returns before
    the actor's process has exited; the process goes a moment later)."""
    deadline = time.monotonic() + within_s
    while cluster_pids(cmdline_prefix) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not cluster_pids(cmdline_prefix)


def with_descendants(pids: list) -> list:
    """``pids`` and every process below them (Ray's dashboard and runtime-env agents do not inherit the marker)."""
    children: dict = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open(f'/proc/{entry}/stat') as f:
                parent = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], list(pids)
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def stop_cluster(grace_s: float = 10.0) -> None:
    """Stop the test cluster's processes only (``ray stop`` would stop every Ray of this machine's user)."""
    pids = with_descendants(cluster_pids())
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    def left() -> list:  # those still there, and still Ray's (a pid is not reused for another program meanwhile)
        still = []
        for pid in pids:
            try:
                with open(f'/proc/{pid}/cmdline', 'rb') as f:
                    if b'ray' in f.read():
                        still.append(pid)
            except OSError:
                continue
        return still

    deadline = time.monotonic() + grace_s
    while left() and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in left():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def ray_actor_pids() -> list:
    """Processes of the test cluster's Ray actors that collect (Ray titles them ``ray::RayActorWorker...``)."""
    return cluster_pids(b'ray::RayActorWorker')


class KillRayActorAt(LearnerHook):
    """At learner iteration ``at``, kill -9 the process of one Ray actor."""

    def __init__(self, at: int) -> None:
        self.at, self.killed = at, None

    def after_iter(self, learner, info) -> None:
        if learner.train_iter == self.at:
            self.killed = ray_actor_pids()[0]
            os.kill(self.killed, signal.SIGKILL)


def test_ray_backend_on_a_two_node_cluster_solves_cartpole_and_replaces_a_lost_actor(tmp_path, loopback_cluster):
    """2 actors and the evaluator reserve 3 CPUs, more than one node has: both nodes work."""
    exp_dir = tmp_path / 'ray'
    killer = KillRayActorAt(at=50)
    policy = parallel_pipeline(cartpole(), exp_dir=str(exp_dir), backend='ray', ray_address=loopback_cluster,
                               max_env_step=150_000, progress=False, learner_hooks=[killer])
    with open(exp_dir / 'summary.json') as f:
        summary = json.load(f)
    assert summary['backend'] == 'ray' and summary['solved'] and summary['best_eval_return'] >= 195, summary
    assert killer.killed is not None and summary['actor_restarts'] == 1, summary  # the lost actor was replaced
    assert summary['worker_failures'][0].startswith('actor') and 'was lost' in summary['worker_failures'][0]
    assert all(rate > 0 for rate in summary['env_steps_per_s_per_actor'])
    assert summary['max_acting_lag'] <= summary['max_policy_lag']  # the learner waits rather than exceed the bound
    assert os.path.isfile(exp_dir / 'ckpt' / 'ckpt_best.pth') and os.path.isfile(exp_dir / 'ckpt' / 'ckpt_latest.pth')
    assert policy.summary == summary
    assert not ray.is_initialized()  # the driver let go of the cluster; its actors were killed


def test_a_ray_actor_whose_env_hangs_fails_the_run_in_one_line(tmp_path, loopback_cluster):
    main, create = hanging('error')
    main['import_names'] = ['test_parallel']  # where hanging_cartpole is registered
    with pytest.raises(EnvTimeoutError, match=r"^actor 0: collector env 0 \(seed 0\) did not return from step within "
                                              r"env.step_timeout_s=0.5 s"):
        parallel_pipeline((main, create), exp_dir=str(tmp_path / 'hang'), backend='ray', ray_address=loopback_cluster,
                          max_train_iter=200, progress=False)
    assert not ray.is_initialized()


def test_a_module_the_ray_workers_cannot_import_is_named_as_theirs_in_one_line(tmp_path, loopback_cluster, monkeypatch):
    """The learner imported it (its folder on this process's path only): the workers' failure said "put its folder on
    PYTHONPATH", which it was, and nothing said it was a Ray node's."""
    from acframe.errors import RegistryError

    (tmp_path / 'only_here_ray_test.py').write_text('')
    monkeypatch.syspath_prepend(str(tmp_path))
    main, create = cartpole()
    main['import_names'] = ['only_here_ray_test']
    with pytest.raises(RegistryError, match=r"^a Ray worker on node 127.0.0.1: import_names: cannot import module "
                                            r"'only_here_ray_test' .*; the learner imported it, so it is not importable "
                                            r"there: .* every node of the cluster"):
        parallel_pipeline((main, create), exp_dir=str(tmp_path / 'run'), backend='ray', ray_address=loopback_cluster,
                          max_env_step=1000, progress=False)
    assert not ray.is_initialized() and not (tmp_path / 'run').exists()


@pytest.mark.parametrize('overrides, message', [
    ([('policy.cuda', True)], 'policy.cuda is True but CUDA is not available'),
    ([('parallel.actor_num', 1), ('max_env_step', 100)], 'raise max_env_step to at least'),
])
def test_what_a_ray_run_refuses_without_its_cluster_is_refused_before_ray_starts(tmp_path, monkeypatch, overrides,
                                                                                  message):
    """The learner's CUDA and the budget's arithmetic (actor_num given) need no cluster: they came after a Ray
    start-up (about 15 s here) that the run then tore down."""
    if ('policy.cuda', True) in overrides and torch.cuda.is_available():
        pytest.skip('CUDA is available here')
    from acframe.entry.parallel import ray_backend

    def no_cluster(address):
        raise AssertionError('the run connected to Ray before refusing its config')
    monkeypatch.setattr(ray_backend, 'connect', no_cluster)
    with pytest.raises(ConfigError, match=message):
        parallel_pipeline(cartpole(), exp_dir=str(tmp_path / 'run'), backend='ray', overrides=overrides,
                          progress=False)
    assert not (tmp_path / 'run').exists()


def test_domain_randomization_reaches_the_ray_actors_envs(tmp_path, loopback_cluster, tb_scalars):
    """Each Ray actor's envs are built with their drawn parameters (a track 1-2 mm wide: the cart leaves it in a step
    or two), the evaluator's with the nominal ones (episodes of 8 steps or more)."""
    main, create = a2c_cartpole()
    main['env']['stop_value'] = None
    main['env']['domain_randomization'] = dict(enable=True, params={
        'x_threshold': dict(dist='uniform', low=0.001, high=0.002, via='attribute')})
    exp_dir = tmp_path / 'ray_dr'
    parallel_pipeline((main, create), exp_dir=str(exp_dir), backend='ray', ray_address=loopback_cluster,
                      max_env_step=400, progress=False)
    scalars = tb_scalars(str(exp_dir / 'log'))
    collected = [value for tag, _, value in scalars if tag == 'collector/episode_return']
    evaluated = [value for tag, _, value in scalars if tag == 'evaluator/return_mean_by_iter']
    assert len(collected) > 50 and max(collected) <= 3
    assert evaluated and min(evaluated) >= 8
    assert not ray.is_initialized()


@pytest.mark.parametrize('policy_type', ['impala', 'acer'])
def test_recurrent_impala_and_acer_actors_on_ray_train_and_resume(tmp_path, loopback_cluster, policy_type):
    """The Ray backend carries a recurrent model's actors as the local and inline ones do (tests/entry/
    test_parallel_recurrent.py): asynchronous LSTM actors on both nodes train the core, and a resume continues it
    with fresh actors (ACER with the checkpoint's episodic buffer, whose windows keep their stored states)."""
    from test_parallel_recurrent import ENVS, recurrent_config

    main, create = recurrent_config(policy_type, 'lstm')
    if policy_type == 'impala':
        main['policy'].update(unroll_len=10, collect=dict(n_sample=ENVS * 2), learn=dict(batch_size=4))
    else:
        main['policy'].update(learn=dict(batch_size=4), collect=dict(n_sample=ENVS * 4),
                              other=dict(replay_buffer=dict(unroll_len=8, replay_start_size=24, save_in_checkpoint=True)))
    exp_dir = tmp_path / policy_type
    policy = parallel_pipeline((main, create), seed=0, exp_dir=str(exp_dir), backend='ray',
                               ray_address=loopback_cluster, max_train_iter=20, progress=False)
    summary = policy.summary
    assert summary['backend'] == 'ray' and summary['sync_mode'] == 'async' and summary['train_iters'] == 20, summary
    assert policy.model.core is not None and all(rate > 0 for rate in summary['env_steps_per_s_per_actor'])
    first = torch.load(exp_dir / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    if policy_type == 'acer':
        # every step trained on 4 replayed windows of 8 steps (their count against the env steps collected meanwhile
        # is the actors' pace: on a loaded machine they collected as many as were trained, 960 and 960)
        assert summary['samples_trained'] >= 20 * 4 * 8, summary
        assert 'rnn_state' in first['buffer']['storage']
    resumed = parallel_pipeline(None, resume=str(exp_dir), backend='ray', ray_address=loopback_cluster,
                                max_train_iter=40, progress=False)
    second = torch.load(exp_dir / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert resumed.summary['train_iters'] == 40 and second['env_step'] > first['env_step']
    assert first['parallel']['actor_incarnations'] == [1, 1] and second['parallel']['actor_incarnations'] == [2, 2]
    if policy_type == 'acer':
        assert second['buffer']['pushed'] == second['env_step']  # the resumed run kept the checkpoint's buffer
    changed = [k for k in first['policy']['model'] if not torch.equal(first['policy']['model'][k],
                                                                     second['policy']['model'][k])]
    assert any(k.startswith('core.') for k in changed)  # the core kept learning after the resume
    assert not ray.is_initialized()


def test_recurrent_ray_workers_zero_each_state_where_an_episode_starts(loopback_cluster):
    """The Ray backend's own workers (``RayActorWorker``, ``RayEvalWorker``, in Ray's worker processes, weights handed
    through the object store): an actor's segment zeroes the state where an episode starts and else carries what the
    previous step left, and the learner recomputes from its first state what the actor acted with; the evaluator's
    returns equal a loop that zeroes each env's state at its episode start, twice in a row (the checks of
    test_parallel_recurrent.py, there on the in-process workers)."""
    from acframe.config import compile_config
    from acframe.entry.parallel.messages import EvalRequest, weights_to_numpy
    from acframe.entry.parallel.ray_backend import RayActorWorker, RayEvalWorker
    from acframe.envs import make_env_manager
    from acframe.policy import create_policy
    from test_parallel_recurrent import (assert_recomputed_from_the_first_state, learner_and_weights, recurrent_config,
                                         returns_of_a_loop_that_zeroes_each_state_at_its_episode_start)

    cfg = compile_config(recurrent_config('ppo', 'lstm'), seed=0)
    learner, _ = learner_and_weights(cfg)
    eval_cfg = compile_config(recurrent_config(limit=40), seed=0)
    env = make_env_manager(eval_cfg, 'evaluator', 2, 0)
    spaces = env.observation_space, env.action_space
    env.close()
    ray.init(address=loopback_cluster, log_to_driver=False)
    try:
        actor = ray.remote(RayActorWorker).remote(dict(cfg), 0, 0)
        evaluator = ray.remote(RayEvalWorker).remote(dict(eval_cfg))
        weights = [ray.put(weights_to_numpy(learner.learn_mode.get_weights()))]
        assert ray.get(actor.ready.remote(), timeout=120).role == 'actor'
        ray.get(actor.collect.remote(weights, 1, 7), timeout=120)  # the next segment starts mid-episode
        message = ray.get(actor.collect.remote(weights, 1, None), timeout=120)
        torch.manual_seed(3)
        policy = create_policy(eval_cfg, *spaces, enable_field=('eval',))
        eval_weights = [ray.put(weights_to_numpy(policy.model.state_dict()))]
        answers = [ray.get(evaluator.evaluate.remote(EvalRequest(0, 0, 0), eval_weights), timeout=120) for _ in range(2)]
    finally:
        ray.shutdown()
    assert type(message).__name__ == 'SegmentMessage', message
    assert_recomputed_from_the_first_state(learner, message, 'ppo')
    assert all(type(a).__name__ == 'EvalResult' for a in answers), answers
    returns = returns_of_a_loop_that_zeroes_each_state_at_its_episode_start(eval_cfg, policy)
    assert sorted(answers[0].returns) == sorted(returns) == sorted(answers[1].returns)
    assert len(set(returns)) > 1  # the episodes differ: equal returns are not a coincidence of constant ones


def test_an_unreachable_ray_address_fails_at_start_up_in_one_line(tmp_path, capsys):
    address = f'{LOOPBACK}:{free_port()}'  # nothing listens there
    with pytest.raises(ConfigError, match=rf"--ray-address {address}: no Ray cluster answers there"):
        parallel_pipeline(cartpole(), exp_dir=str(tmp_path / 'x'), backend='ray', ray_address=address, progress=False)
    assert not os.path.exists(tmp_path / 'x')
    code = cli_main(['-m', 'parallel', '--backend', 'ray', '--ray-address', address, '-c', 'cartpole_impala.py', '-q'])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f'acframe: error: --ray-address {address}: no Ray cluster')
    with pytest.raises(ConfigError, match=r"is not HOST:PORT with a port from 1 to 65535"):  # not 'ray start --port=99999'
        parallel_pipeline(cartpole(), exp_dir=str(tmp_path / 'x'), backend='ray', ray_address=f'{LOOPBACK}:99999',
                          progress=False)


def refused_within_seconds(tmp_path, address: str, message: str) -> None:
    """The parallel pipeline refuses ``address`` with a ``ConfigError`` starting ``--ray-address ADDRESS: message``
    within 30 s, and writes nothing."""
    import time

    start = time.monotonic()
    with pytest.raises(ConfigError, match=rf"^--ray-address {address}: {message}"):
        parallel_pipeline(cartpole(), exp_dir=str(tmp_path / 'x'), backend='ray', ray_address=address, progress=False)
    assert time.monotonic() - start < 30 and not os.path.exists(tmp_path / 'x')


def test_an_address_where_another_service_listens_fails_at_start_up_in_one_line(tmp_path):
    """An HTTP server on the port: Ray's own connection retried for minutes (about 13 with its defaults); the
    address check now asks for a gRPC answer (a Ray cluster's GCS) and refuses in one line within seconds."""
    import http.server
    import threading

    server = http.server.HTTPServer((LOOPBACK, 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        refused_within_seconds(tmp_path, f'{LOOPBACK}:{server.server_address[1]}',
                               'something listens there but it is not a Ray cluster')
    finally:
        server.shutdown()
        server.server_close()


def test_an_address_where_a_listener_never_answers_fails_in_one_line_after_the_probes_wait(tmp_path):
    """A host that accepts the connection and stays silent (a firewall that drops): named as such, not as another
    service, after the probe's wait (5 s), instead of Ray's minutes of retries."""
    import socket

    listener = socket.socket()
    listener.bind((LOOPBACK, 0))
    listener.listen(1)  # accepted by the kernel, never answered
    try:
        refused_within_seconds(tmp_path, f'{LOOPBACK}:{listener.getsockname()[1]}',
                               'the connection opened but nothing answered within 5 s')
    finally:
        listener.close()


def test_ray_address_alone_means_the_ray_backend_for_a_parallel_run(tmp_path, capsys):
    """``-m parallel --ray-address ADDR`` without ``--backend``: the Ray backend (its address check answers), where it
    was refused as an address the local backend does not use; a serial run still refuses it."""
    address = f'{LOOPBACK}:{free_port()}'
    code = cli_main(['-m', 'parallel', '--ray-address', address, '-c', 'cartpole_impala.py', '-q',
                     '--exp-dir', str(tmp_path / 'run')])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f'acframe: error: --ray-address {address}: no Ray cluster answers there'), err


def test_a_local_ray_run_starts_every_actor_and_leaves_nothing_in_the_home_folder(tmp_path):
    """``acframe --backend ray`` without an address: a private Ray instance with its own token, 4 actors all collecting,
    collection stopped at the env-step budget."""
    home = tmp_path / 'home'
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in RAY_AUTH_VARS}
    env['HOME'] = str(home)
    exp_dir = tmp_path / 'ray_local'
    result = subprocess.run(
        [sys.executable, '-m', 'acframe.cli', '-m', 'parallel', '--backend', 'ray', '-c', 'cartpole_impala.py',
         '--exp-dir', str(exp_dir), '--max-env-step', '2003', '-q', 'env.stop_value=None', 'parallel.actor_num=4',
         'parallel.actor_num_cpus=0.25', 'parallel.evaluator_num_cpus=0.25'],
        env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(exp_dir / 'summary.json') as f:
        summary = json.load(f)
    assert summary['backend'] == 'ray'
    # the budget: the last segment is cut to the steps left (within one step per env of the 8), not a round added
    assert 2003 <= summary['env_steps'] <= 2003 + 7, summary['env_steps']
    assert len(summary['env_steps_per_s_per_actor']) == 4
    assert all(rate > 0 for rate in summary['env_steps_per_s_per_actor']), summary['env_steps_per_s_per_actor']
    assert not (home / '.ray' / 'auth_token').exists()  # no token written where later clusters would pick it up


# ---- data-parallel learner ranks on Ray (parallel.learner_num=2: rank 1 a Ray actor; docs/ddp.md) ---------------
#: 2 ranks of one actor each; every Ray worker reserves a quarter CPU (the loopback cluster has 4)
TWO_RANKS = [('parallel.learner_num', 2), ('parallel.actor_num', 2), ('parallel.actor_num_cpus', 0.25),
             ('parallel.evaluator_num_cpus', 0.25), ('parallel.learner_num_cpus', 0.25),
             ('parallel.collective_timeout_s', 60.0), ('env.stop_value', None)]


def test_two_learner_ranks_on_ray_end_identical_rank_1_writes_nothing_and_resume_continues(tmp_path, monkeypatch,
                                                                                          loopback_cluster):
    from test_data_parallel import _RecordWeights
    from test_parallel_learners import _records, _same_weights

    monkeypatch.chdir(tmp_path)
    seen = tmp_path / 'seen'
    seen.mkdir()
    policy = parallel_pipeline('cartpole_impala.py', backend='ray', ray_address=loopback_cluster, max_env_step=1500,
                               overrides=TWO_RANKS + [('policy.learn.learner.save_ckpt_freq', 20)], progress=False,
                               exp_dir='run', learner_hooks=[_RecordWeights(str(seen))])
    summary = policy.summary
    assert summary['backend'] == 'ray' and summary['learner_num'] == 2 and summary['train_iters'] > 0, summary
    assert 1500 <= summary['env_steps'] <= 1500 + 2 * 8, summary['env_steps']  # both ranks' actors, 8 envs each
    records = _records(seen)
    assert os.getpid() in [record['pid'] for record in records]  # rank 0 is this process, rank 1 a Ray actor
    _same_weights(records, summary['train_iters'])
    assert sorted(os.listdir(tmp_path)) == ['run', 'seen']  # rank 1 wrote nothing, anywhere
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    own = [state['parallel']['own_env_step'], state['data_parallel']['ranks'][0]['parallel']['own_env_step']]
    assert sum(own) == state['env_step'] == summary['env_steps'] and min(own) > 0  # both ranks' actors collected
    assert not ray.is_initialized()

    again = tmp_path / 'again'
    again.mkdir()
    # a folder relative to the driver's working folder: rank 1 works in the one its Ray node gives it (on another
    # node it does not see the driver's disk at all), so it gets its share of the checkpoint from rank 0, which alone
    # reads it (before, every rank read the file at that path itself, and rank 1 failed: it does not exist)
    resumed = parallel_pipeline(resume='run', backend='ray', ray_address=loopback_cluster,
                                max_env_step=2200, progress=False, learner_hooks=[_RecordWeights(str(again))])
    assert 2200 <= resumed.summary['env_steps'] <= 2200 + 2 * 8
    assert resumed.summary['train_iters'] > summary['train_iters']
    _same_weights(_records(again), resumed.summary['train_iters'])


class KillRankActorAt(LearnerHook):
    """On rank 0 (this process), at learner iteration ``at``: kill -9 the process of the rank 1 Ray actor."""

    def __init__(self, at: int) -> None:
        self.at, self.driver, self.killed, self.when = at, os.getpid(), None, None

    def after_iter(self, learner, info) -> None:
        if os.getpid() == self.driver and learner.train_iter == self.at:
            deadline = time.monotonic() + 10
            while len(cluster_pids(b'ray::RayLearnerRank')) > 1 and time.monotonic() < deadline:
                time.sleep(0.1)  # an earlier test's rank actor, killed, on its way out
            [self.killed] = cluster_pids(b'ray::RayLearnerRank')
            os.kill(self.killed, signal.SIGKILL)
            self.when = time.monotonic()


def test_a_killed_learner_rank_actor_ends_the_run_in_one_line_naming_it(tmp_path, loopback_cluster):
    from acframe.entry.data_parallel import DataParallelError

    killer = KillRankActorAt(at=10)
    with pytest.raises(DataParallelError) as caught:
        parallel_pipeline('cartpole_impala.py', backend='ray', ray_address=loopback_cluster, max_env_step=100_000,
                          overrides=TWO_RANKS, progress=False, exp_dir=str(tmp_path / 'run'), learner_hooks=[killer])
    took = time.monotonic() - killer.when
    line = str(caught.value)
    assert '\n' not in line and line.startswith(f'data-parallel rank 1 (Ray actor on {LOOPBACK}, pid {killer.killed}) '
                                                f'was lost'), line
    assert f'--resume {tmp_path / "run"}' in line, line
    assert took < 15, took  # at once, not after the collective timeout (60 s)
    assert not ray.is_initialized() and none_left(b'ray::RayLearnerRank')


class RaisesBeforeItsRun:
    """A rank actor whose ``run`` raises before ``run_rank`` can turn the error into its line."""

    def run(self):
        raise ModuleNotFoundError("No module named 'my_plugin'\n(on the rank's node)")


def test_a_rank_actor_that_raises_before_its_run_is_named_with_its_error_not_as_lost(loopback_cluster):
    """A real Ray actor raising (``RayTaskError``) is a failed rank with its error's first line, exit code 1; a dead
    process (``RayActorError``) stays 'was lost' (the SIGKILL test above)."""
    import queue

    from acframe.entry.parallel.ray_ranks import RayRank

    ray.init(address=loopback_cluster, log_to_driver=False)
    try:
        handle = ray.remote(RaisesBeforeItsRun).remote()
        errors = queue.SimpleQueue()
        rank = RayRank(ray, 1, handle, errors)
        rank.ref = handle.run.remote()
        rank.join(60)
        assert rank.exitcode == 1 and rank.exit_reason is None
        assert errors.get_nowait() == (1, "ModuleNotFoundError: No module named 'my_plugin'")
    finally:
        ray.shutdown()


@pytest.mark.parametrize('overrides, line', [
    ([('parallel.actor_num', 3)], 'parallel.actor_num=3 does not split evenly over parallel.learner_num=2 ranks'),
    ([('parallel.learner_num_cpus', 8.0)], 'the Ray cluster has 4 CPUs but 1 learner rank(s) x parallel.learner_num_cpus=8'),
    ([('policy.cuda', True), ('parallel.learner_num_cpus', 0.25)], 'parallel.learner_num=2 with policy.cuda on Ray: '
                                                                   'ranks 1..1 are Ray actors with a GPU each and the cluster has 0'),
])
def test_what_ray_ranks_cannot_run_is_refused_in_one_line_exit_2(tmp_path, monkeypatch, capsys, loopback_cluster,
                                                                 overrides, line):
    monkeypatch.chdir(tmp_path)
    args = [f'{key}={value}' for key, value in TWO_RANKS + overrides]
    code = cli_main(['-m', 'parallel', '--backend', 'ray', '--ray-address', loopback_cluster, '-c', 'cartpole_impala.py',
                     '-q', *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f'acframe: error: {line}'), err
    assert os.listdir(tmp_path) == [] and not ray.is_initialized()


def test_async_workers_on_ray_are_refused_in_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = cli_main(['-m', 'async', '--backend', 'ray', '-c', 'cartpole_a3c.py', '-q'])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith('acframe: error: -m async runs its workers on this machine '
                                                             'only'), err
    assert os.listdir(tmp_path) == []


# ---- a serial pipeline's data-parallel ranks on Ray (parallel.learner_num=2 --backend ray: rank 1 a Ray actor) ----
def test_two_serial_ppo_ranks_on_ray_end_identical_and_rank_1_writes_nothing(tmp_path, monkeypatch, loopback_cluster):
    from acframe.entry import data_parallel
    from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy
    from test_data_parallel import TWO, _RecordWeights
    from test_parallel_learners import _records, _same_weights

    def no_local_ranks(*args, **kwargs):
        raise AssertionError('backend ray started the ranks as local processes')

    monkeypatch.setattr(data_parallel.LocalRanks, 'start', no_local_ranks)
    monkeypatch.chdir(tmp_path)
    seen = tmp_path / 'seen'
    seen.mkdir()
    overrides = TWO + [('parallel.learner_num_cpus', 0.25), ('policy.learn.learner.save_ckpt_freq', 10),
                       ('policy.model.obs_norm', True)]  # the statistics agree too
    policy = serial_pipeline_onpolicy('cartpole_ppo.py', overrides=overrides, max_env_step=1024, progress=False,
                                      exp_dir=str(tmp_path / 'run'), learner_hooks=[_RecordWeights(str(seen))],
                                      backend='ray', ray_address=loopback_cluster)
    assert policy.summary['env_steps'] == 1024 and policy.summary['train_iters'] == 80  # 4 rollouts x 20 epochs
    records = _records(seen)
    assert os.getpid() in [record['pid'] for record in records]  # rank 0 is this process, rank 1 a Ray actor
    _same_weights(records, 80)
    assert float(records[0]['weights']['obs_normalizer.count']) == pytest.approx(1024, abs=1e-3)  # both ranks' steps
    assert sorted(os.listdir(tmp_path)) == ['run', 'seen']  # rank 1 wrote nothing, anywhere
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['data_parallel']['learner_num'] == 2 and len(state['data_parallel']['ranks']) == 1
    assert not ray.is_initialized() and none_left(b'ray::RayLearnerRank')


#: the CLI in a process whose Ray rank actors take 4 s to answer ``ready`` and which gets a SIGTERM 1 s into that wait
#: (the class is defined in ``__main__``, so Ray ships it by value to the cluster's workers)
TERMINATED_WHILE_RANKS_START = """
import os, signal, sys, threading, time
import ray._private.services as services
services.resolve_ip_for_localhost = lambda host: host  # 127.0.0.1 kept, as the cluster's nodes keep it (RAY_CLI)
from acframe.entry.parallel import ray_ranks

class SlowToStart(ray_ranks.RayLearnerRank):
    def ready(self):
        time.sleep(4)
        return super().ready()

start = ray_ranks.RayRanks.start

def start_and_terminate(self, *args, **kwargs):
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    answer = start(self, *args, **kwargs)
    print('the ranks started', file=sys.stderr, flush=True)
    return answer

ray_ranks.RayLearnerRank, ray_ranks.RayRanks.start = SlowToStart, start_and_terminate
from acframe.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_sigterm_while_the_ray_rank_actors_start_stops_the_run_as_ctrl_c_does(tmp_path, loopback_cluster):
    """SIGTERM is Ctrl-C from the moment Ray starts: Ray's own handlers (a native stack dump, the process killed at
    once) never replace acframe's, and a plain ``KeyboardInterrupt`` out of ``ray.get`` is still the SIGTERM."""
    proc = subprocess.run([sys.executable, '-c', TERMINATED_WHILE_RANKS_START, '-c', 'cartpole_ppo.py', '-q',
                           '--backend', 'ray', '--ray-address', loopback_cluster, 'parallel.learner_num=2',
                           'parallel.learner_num_cpus=0.25', '--exp-dir', str(tmp_path / 'run')],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 143, proc.stderr
    assert err[-1] == 'acframe: terminated (SIGTERM)', proc.stderr
    assert 'the ranks started' not in proc.stderr and 'SIGTERM received' not in proc.stderr, proc.stderr
    assert os.listdir(tmp_path) == []  # a failed start writes nothing
    assert none_left(b'ray::SlowToStart')  # the rank actor goes with the driver's job


@pytest.mark.parametrize('args, line', [
    (['--backend', 'ray'], "--backend ray runs a serial pipeline's data-parallel ranks on Ray and "
                           "parallel.learner_num=1; set parallel.learner_num=2 or more, or add -m parallel"),
    (['--backend', 'inline', 'parallel.learner_num=2'], "backend 'inline' (--backend inline) runs the parallel "
                                                        "pipeline; add -m parallel"),
    (['--ray-address', '127.0.0.1:1'], "ray_address (--ray-address) is only used by backend 'ray' (--backend ray); the backend is 'local'"),
])
def test_a_serial_backend_the_pipeline_cannot_use_is_refused_in_one_line_exit_2(tmp_path, monkeypatch, capsys, args,
                                                                                line):
    monkeypatch.chdir(tmp_path)
    code = cli_main(['-c', 'cartpole_ppo.py', '-q', *args])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(f'acframe: error: {line}'), err
    assert os.listdir(tmp_path) == [] and not ray.is_initialized()


def test_serial_ranks_the_ray_cluster_cannot_hold_are_refused_in_one_line_exit_2(tmp_path, monkeypatch, capsys,
                                                                               loopback_cluster):
    monkeypatch.chdir(tmp_path)
    code = cli_main(['-c', 'cartpole_ppo.py', '--backend', 'ray', '--ray-address', loopback_cluster, '-q',
                     'parallel.learner_num=2', 'parallel.learner_num_cpus=8'])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == ['acframe: error: the Ray cluster has 4 CPUs but 1 learner rank(s) x '
                                 'parallel.learner_num_cpus=8 need 8; lower parallel.learner_num or the CPUs per '
                                 'worker'], err
    assert os.listdir(tmp_path) == [] and not ray.is_initialized()
