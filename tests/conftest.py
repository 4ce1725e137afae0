"""Shared test fixtures."""
import signal
from typing import Callable, List, Tuple

import pytest
import torch

# A suite started in the background of a non-interactive shell (`make test &`, `(pytest ... &)`) inherits SIGINT
# ignored, and so would every acframe process the tests start: the tests that press Ctrl-C (a SIGINT to the run's
# process group) would wait for a run that, as a nohup'd process must, ignores it. Handled here, it is reset to the
# default in every process the tests exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# One torch thread in every test process, as acframe's runs use: a child forked from a process whose intra-op thread
# pool had run hangs at its first threaded op, and the parallel tests fork their workers from the test process (a
# fresh-clone suite once saw every worker of tests/entry/test_parallel_shm.py miss its 120 s start after an earlier
# test of the same process had run multi-threaded ops); two test processes on two cores need no more anyway.
torch.set_num_threads(1)


def read_scalars(log_dir: str) -> List[Tuple[str, int, float]]:
    """``(tag, step, value)`` of every scalar in the tensorboardX event files of ``log_dir``, in write order."""
    from acframe.logs import read_scalars as read

    return [(s.tag, s.step, s.value) for s in read(log_dir)]


@pytest.fixture
def tb_scalars() -> Callable[[str], List[Tuple[str, int, float]]]:
    """A reader of tensorboard scalars (tensorboard itself is not a dependency)."""
    return read_scalars


#: a CartPole A2C run small enough for the tests of finished runs (eval, plot, load_policy, export): 4 evaluator
#: envs with one episode each, so evaluator env i plays exactly one episode from seed + 100_000 + i
TRAINED_RUN = ['env.collector_env_num=4', 'env.evaluator_env_num=4', 'env.n_evaluator_episode=4',
               'policy.eval.evaluator.eval_freq=10', 'policy.learn.learner.log_freq=10']


@pytest.fixture(scope='session')
def trained_run(tmp_path_factory):
    """The folder of a finished CartPole A2C run (1,600 env steps from the CLI, seed 0, in its own interpreter)."""
    import subprocess
    import sys

    run_dir = tmp_path_factory.mktemp('trained') / 'cartpole_a2c'
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-c', 'cartpole_a2c.py', '--exp-dir', str(run_dir),
                          '--max-env-step', '1600', '-q', *TRAINED_RUN], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return run_dir
