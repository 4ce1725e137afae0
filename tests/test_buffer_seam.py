"""The seam for replay buffers: a user's buffer, in the user's own module, with its own config keys (declared in its
class's ``config`` with a rule comment, as a policy declares its keys), named in a config file and run by the CLI —
no core edit, no monkeypatching. Here it is a prioritized buffer that clips the priorities the learner hands back
(``priority_clip``) and counts them into a file: the learner's ``update_priority`` calls reach it. DI-engine's
``priority=True`` / ``priority_IS_weight`` and the prioritized buffers' keys are read as DI-engine means them.
"""
import json
import os
import re
import subprocess
import sys

import pytest
import torch

from acframe.config import compile_config
from acframe.errors import ConfigError, ConfigWarning

USER_MODULE = '''
import json

import numpy as np

from acframe import BUFFER_REGISTRY, POLICY_REGISTRY
from acframe.data.prioritized import PrioritizedReplayBuffer
from acframe.policy.impala import IMPALAPolicy


@BUFFER_REGISTRY.register('clipped_seam')
class ClippedPriorities(PrioritizedReplayBuffer):
    """Prioritized replay whose priorities are clipped to priority_clip."""

    config = dict(
        # (float > 0) Priorities handed back by the learner are clipped to this.
        priority_clip=1.0,
        # (str) A JSON file (in the working folder) counting the priority updates.
        log_file='updates.json',
    )

    def __init__(self, replay_buffer_size, priority_clip=1.0, log_file='updates.json', **kwargs):
        super().__init__(replay_buffer_size, **kwargs)
        self.priority_clip, self.log_file, self.updates = priority_clip, log_file, 0

    def update_priority(self, batch, priority):
        super().update_priority(batch, np.minimum(np.abs(priority.numpy()), self.priority_clip))
        self.updates += 1
        with open(self.log_file, 'w') as f:
            json.dump({'updates': self.updates, 'clip': self.priority_clip, 'alpha': self.priorities.alpha,
                       'max_priority': self.priorities.max_priority}, f)


@BUFFER_REGISTRY.register('tree_state_seam')
class TreeState:
    """From the contract alone: a list of the unrolls pushed, uniform sampling; its state_dict hands back the
    treetensor trees themselves (not plain data)."""

    reuses_data = True
    sample_kind = 'unrolls'

    def __init__(self, replay_buffer_size, seed=0, **kwargs):
        self.items, self.size, self.rng = [], replay_buffer_size, np.random.default_rng(seed)

    def push(self, samples):
        import treetensor.torch as ttorch
        self.items += [samples[i].clone() for i in range(len(next(iter(samples.values()))))]
        self.items = self.items[-self.size:]

    def __len__(self):
        return len(self.items)

    def sample(self, batch_size):
        import treetensor.torch as ttorch
        if len(self.items) < batch_size:
            return None
        return ttorch.stack([self.items[i] for i in self.rng.choice(len(self.items), batch_size)], dim=1)

    def state_dict(self):
        return {'items': list(self.items)}

    def load_state_dict(self, state):
        self.items = list(state['items'])

    def rng_state(self):
        return self.rng.bit_generator.state

    def set_rng_state(self, state):
        self.rng.bit_generator.state = state


@BUFFER_REGISTRY.register('item_major_seam')
class ItemMajor(TreeState):
    """A common mistake: the batch stacked item-major, (batch_size, unroll_len + 1, ...), not time-major."""

    def sample(self, batch_size):
        batch = super().sample(batch_size)
        return None if batch is None else batch.transpose(0, 1)


@BUFFER_REGISTRY.register('dict_batch_seam')
class DictBatch(TreeState):
    """A plain dict of tensors, not a treetensor tree."""

    def sample(self, batch_size):
        from acframe.data.tree import to_dict
        batch = super().sample(batch_size)
        return None if batch is None else to_dict(batch)


@BUFFER_REGISTRY.register('no_final_obs_seam')
class NoFinalObs(TreeState):
    """Drops a key of the pushed samples from its batches (treevalue's compiled code raises on it)."""

    def sample(self, batch_size):
        from acframe.data.tree import make_tree, to_dict
        batch = super().sample(batch_size)
        if batch is None:
            return None
        kept = to_dict(batch)
        kept.pop('final_obs', None)
        return make_tree(kept)


@BUFFER_REGISTRY.register('raising_seam')
class Raising(TreeState):
    """A buffer with a bug: sample() raises once it holds 20 unrolls."""

    def sample(self, batch_size):
        if len(self.items) >= 20:
            raise ValueError('my buffer broke')
        return super().sample(batch_size)


@POLICY_REGISTRY.register('impala_without_priority_seam')
class ImpalaWithoutPriority(IMPALAPolicy):
    """IMPALA whose learn step hands back no priorities (a user's policy written without them)."""

    def _forward_learn(self, batch):
        info = super()._forward_learn(batch)
        info.pop('priority', None)
        return info


@BUFFER_REGISTRY.register('strict_seam')
class Strict(TreeState):
    """A from-scratch buffer whose constructor names only the keys it uses (no **kwargs)."""

    def __init__(self, replay_buffer_size=128, seed=0):
        super().__init__(replay_buffer_size, seed)


@BUFFER_REGISTRY.register('failing_init_seam')
class FailingInit(TreeState):
    def __init__(self, replay_buffer_size=128, seed=0, **kwargs):
        raise RuntimeError('no room on the device')


@BUFFER_REGISTRY.register('opaque_state_seam')
class OpaqueState(TreeState):
    """A state that is never plain data, even empty: the start's checkpoint cannot hold it."""

    def state_dict(self):
        return {'thing': object()}


@BUFFER_REGISTRY.register('never_ready_seam')
class NeverReady(TreeState):
    """A readiness test that never passes: sample() always returns None."""

    def sample(self, batch_size):
        return None
'''

CONFIG = '''
from dizoo_configs.cartpole_impala import main_config, create_config

main_config['env'].update(collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1, n_confirm_episode=0)
main_config['policy']['collect']['n_sample'] = 4
main_config['policy']['other']['replay_buffer'].update(type='clipped_seam', priority_clip=0.25, alpha=0.5,
                                                       log_file='seam.json')
main_config['import_names'] = ['user_buffers']
'''


@pytest.fixture
def user_setup(tmp_path):
    folder = tmp_path / 'user_code'
    folder.mkdir()
    (folder / 'user_buffers.py').write_text(USER_MODULE)
    (tmp_path / 'cfg.py').write_text(CONFIG)
    return folder


#: what a run whose override switches cfg.py's buffer says first: the file's keys for 'clipped_seam' are dropped
SWITCHED = "acframe: warning: policy.other.replay_buffer.type="


def cli(tmp_path, user_module, *args):
    """The CLI's run; its stderr without the switch's warning (said once the config compiles, before what the tests
    here look at; ``test_switching_the_buffer_type_...`` checks it)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(user_module), os.environ.get('PYTHONPATH', '')]))
    command = [sys.executable, '-c', "import sys; from acframe.cli import main; sys.exit(main(sys.argv[1:]))",
               *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    switched = any(str(arg).startswith('policy.other.replay_buffer.type=') for arg in args)
    if switched:
        kept = [line for line in done.stderr.splitlines(keepends=True)
                if not (line.startswith(SWITCHED) and "replaces the file's 'clipped_seam'" in line)]
        done.stderr = ''.join(kept)
    return done


def test_a_user_buffer_with_its_own_keys_runs_from_the_cli_and_gets_the_learners_priorities(tmp_path, user_setup):
    out = cli(tmp_path, user_setup, '-c', 'cfg.py', '--exp-dir', 'run', '--max-train-iter', '12', '-q')
    assert out.returncode == 0, out.stderr
    with open(tmp_path / 'seam.json') as f:
        seen = json.load(f)
    assert seen['updates'] == 12 and seen['clip'] == 0.25 and seen['alpha'] == 0.5
    assert seen['max_priority'] == pytest.approx(1.0)  # new data's first priority; every update was clipped below it
    with open(tmp_path / 'run' / 'config.json') as f:
        assert json.load(f)['config']['policy']['other']['replay_buffer']['priority_clip'] == 0.25
    written = (tmp_path / 'run' / 'config.py').read_text()  # the run's config file documents the buffer's keys
    lines = [line.strip() for line in written.splitlines()]
    at = lines.index("'priority_clip': 0.25,")
    assert lines[at - 1] == '# (float > 0) Priorities handed back by the learner are clipped to this.'


KEEPING_MODULE = '''
import torch

from acframe import BUFFER_REGISTRY
from acframe.data import leaves, ttorch


@BUFFER_REGISTRY.register('keeping_seam')
class KeepingBuffer:
    """A buffer written from the contract alone, that keeps the samples it is pushed (no copy of its own) and checks,
    at every draw, that none of them changed since its push."""
    reuses_data = True

    def __init__(self, replay_buffer_size, seed=0, **_):
        self.capacity, self.items, self.copies = min(int(replay_buffer_size), 64), [], []
        self.generator = torch.Generator().manual_seed(int(seed))

    def push(self, samples):
        for i in range(int(samples.reward.shape[0])):
            self.items.append(samples[i])
            self.copies.append(samples[i].clone())
        del self.items[:-self.capacity], self.copies[:-self.capacity]

    def sample(self, batch_size):
        for item, copy in zip(self.items, self.copies):
            kept = dict(leaves(copy))
            for key, a in leaves(item):  # (NaN where a leaf holds no value)
                if not torch.equal(a.nan_to_num(1e9), kept[key].nan_to_num(1e9)):
                    raise RuntimeError(f'a pushed sample changed after its push: {key}')
        if len(self.items) < batch_size:
            return None
        index = torch.randint(len(self.items), (batch_size,), generator=self.generator).tolist()
        return ttorch.stack([self.items[i] for i in index], dim=1)

    def __len__(self):
        return len(self.items)

    def state_dict(self):
        return {}

    def load_state_dict(self, state):
        pass

    def rng_state(self):
        return self.generator.get_state()

    def set_rng_state(self, state):
        self.generator.set_state(state)


@BUFFER_REGISTRY.register('keeping_prioritized_seam')
class KeepingPrioritized(KeepingBuffer):
    """The same with update_priority (the learner's main thread pushes it, not the ingest thread)."""

    def update_priority(self, batch, priority):
        pass
'''


def test_a_run_whose_buffer_a_script_registered_is_evaluated_without_it_and_its_resume_names_the_buffer(tmp_path):
    """A buffer with keys of its own, registered in the training script (no module lists it): acting (-m eval,
    load_policy, export) builds no buffer, so its keys are dropped, not refused; a resume needs it, and says so by its
    type, not as unknown keys."""
    (tmp_path / 'cfg.py').write_text(CONFIG.replace("main_config['import_names'] = ['user_buffers']", ''))
    (tmp_path / 'train.py').write_text(USER_MODULE + "\nfrom acframe.entry import serial_pipeline\n"
                                       "serial_pipeline('cfg.py', exp_dir='run', max_train_iter=4, progress=False)\n")
    env = dict(os.environ, PYTHONPATH=os.environ.get('PYTHONPATH', ''))
    trained = subprocess.run([sys.executable, 'train.py'], capture_output=True, text=True, timeout=300, env=env,
                             cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    out = cli(tmp_path, tmp_path / 'nowhere', '-m', 'eval', '--load', 'run', '--episodes', '2', '-q')
    assert out.returncode == 0 and out.stdout.startswith('[eval] return '), out.stderr
    out = cli(tmp_path, tmp_path / 'nowhere', '-m', 'eval', '--load', 'run/ckpt/ckpt_latest.pth', '-c', 'cfg.py',
              '--episodes', '2', '-q')  # (the config given again: the same)
    assert out.returncode == 0 and out.stdout.startswith('[eval] return '), out.stderr
    out = cli(tmp_path, tmp_path / 'nowhere', '-m', 'export', '--load', 'run', '--out', 'policy.pt', '-q')
    assert out.returncode == 0 and (tmp_path / 'policy.pt').is_file(), out.stderr
    out = cli(tmp_path, tmp_path / 'nowhere', '--resume', 'run', '--max-train-iter', '8', '-q')
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [  # (no --import can bring back a script's own)
        "acframe: error: run was trained by a script that registered buffer 'clipped_seam' in itself (__main__), which "
        "acframe cannot import: resume it from that script (serial_pipeline(None, resume=RUN) after the class is "
        "registered), or move that class into a module and name it with --import MODULE (in a script: the override "
        "\"import_names=['MODULE']\")"], out.stderr


@pytest.mark.parametrize('buffer', ['keeping_seam', 'keeping_prioritized_seam'])
def test_a_buffer_that_keeps_what_it_is_pushed_gets_samples_that_never_change_in_parallel_runs(tmp_path, buffer):
    """-m parallel reads segments in place from shared-memory slots that actors write again: a buffer whose push
    keeps them (acframe's own copy, ``push_copies``) is pushed copies."""
    folder = tmp_path / 'user_code'
    folder.mkdir()
    (folder / 'keeping_buffers.py').write_text(KEEPING_MODULE)
    out = cli(tmp_path, folder, '-m', 'parallel', '-c', 'cartpole_impala.py', '--exp-dir', 'run', '--import',
              'keeping_buffers', '--max-train-iter', '60', '-q', f'policy.other.replay_buffer.type={buffer}',
              'env.stop_value=None', 'parallel.env_steps_per_update=0')
    assert out.returncode == 0, out.stderr
    summary = json.loads((tmp_path / 'run' / 'summary.json').read_text())
    assert summary['train_iters'] == 60 and summary['segments'] > 8  # slots were written again meanwhile


@pytest.mark.parametrize('override, message', [
    ('policy.other.replay_buffer.priority_clip=-1.0', "'policy.other.replay_buffer.priority_clip' = -1.0 must be > 0"),
    ('policy.other.replay_buffer.priority_clp=1.0', "did you mean 'policy.other.replay_buffer.priority_clip'?"),
    ('policy.other.replay_buffer.beta=3', "'policy.other.replay_buffer.beta' = 3"),
])
def test_a_bad_value_of_a_buffers_key_is_one_line_exit_2_and_nothing_written(tmp_path, user_setup, override, message):
    out = cli(tmp_path, user_setup, '-c', 'cfg.py', '--exp-dir', 'run', '--max-train-iter', '12', override)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not (tmp_path / 'run').exists()


def test_the_prioritized_buffers_keys_are_keys_only_of_a_prioritized_buffer():
    cfg = compile_config('cartpole_impala.py', ['policy.other.replay_buffer.type=prioritized',
                                                'policy.other.replay_buffer.anneal_step=100'])
    assert cfg.policy.other.replay_buffer.anneal_step == 100 and cfg.policy.other.replay_buffer.alpha == 0.6
    with pytest.raises(ConfigError, match="unknown config key 'policy.other.replay_buffer.alpha'"):
        compile_config('cartpole_impala.py', ['policy.other.replay_buffer.alpha=0.5'])
    cfg = compile_config('cartpole_acer.py', ['policy.other.replay_buffer.type=episodic_prioritized'])
    assert cfg.policy.other.replay_buffer.unroll_len == 5 and cfg.policy.other.replay_buffer.beta == 0.4
    with pytest.raises(ConfigError, match="policy .acer. replays trajectories"):
        from acframe.entry.serial import serial_pipeline
        serial_pipeline('cartpole_acer.py', overrides=['policy.other.replay_buffer.type=prioritized'], progress=False)


def test_switching_the_buffer_type_drops_the_former_buffers_own_keys_and_only_those():
    """A resume with --accept-config-change (or a tuned type) compiles the stored config with the new type: the
    prioritized buffer's alpha is not the fifo buffer's, so it goes, said where it was set away from its default (it
    went without a word); the keys both have stay."""
    from acframe.config.compile import to_plain

    stored = to_plain(compile_config('cartpole_impala.py', ['policy.other.replay_buffer.type=prioritized',
                                                            'policy.other.replay_buffer.alpha=0.7',
                                                            'policy.other.replay_buffer.replay_buffer_size=500']))
    with pytest.warns(ConfigWarning, match=r"^policy.other.replay_buffer.type='fifo' replaces the file's "
                                           r"'prioritized': its key alpha=0.7 is dropped \('fifo' does not take it\)$"):
        switched = compile_config(stored, ['policy.other.replay_buffer.type=fifo']).policy.other.replay_buffer
    assert switched.type == 'fifo' and 'alpha' not in switched and switched.replay_buffer_size == 500
    with pytest.raises(ConfigError, match="unknown config key 'policy.other.replay_buffer.alpha'"):
        compile_config(stored, ['policy.other.replay_buffer.type=fifo', 'policy.other.replay_buffer.alpha=0.5'])


def test_a_buffer_of_another_sample_kind_than_the_policy_gives_is_refused_at_start_a_users_subclass_too(tmp_path):
    """IMPALA gives fixed unrolls, ACER whole trajectories; a buffer class says what it stores (``sample_kind``,
    inherited by a user's subclass), and a mismatch is one line before anything is written."""
    from acframe import BUFFER_REGISTRY
    from acframe.data.prioritized import PrioritizedReplayBuffer
    from acframe.entry.serial import serial_pipeline

    @BUFFER_REGISTRY.register('users_unrolls_kind_test')
    class UsersUnrolls(PrioritizedReplayBuffer):
        pass
    try:
        for config, buffer, message in (
                ('cartpole_impala.py', 'episodic', "policy.other.replay_buffer.type 'episodic' stores whole "
                 "trajectories (time-major segments); policy 'impala' trains on fixed unrolls: set it to 'fifo' "
                 "(or 'prioritized')"),
                ('cartpole_impala.py', 'episodic_prioritized', "policy 'impala' trains on fixed unrolls"),
                ('pendulum_acer.py', 'users_unrolls_kind_test', "policy.other.replay_buffer.type "
                 "'users_unrolls_kind_test' stores fixed unrolls; policy 'acer' replays trajectories: set it to "
                 "'episodic' (or 'episodic_prioritized')")):
            with pytest.raises(ConfigError) as raised:
                serial_pipeline(config, exp_dir=str(tmp_path / 'run'), progress=False,
                                overrides=[f'policy.other.replay_buffer.type={buffer}'])
            assert message in str(raised.value) and not (tmp_path / 'run').exists()
    finally:
        BUFFER_REGISTRY._entries.pop('users_unrolls_kind_test', None)


DING_MAIN = dict(
    env=dict(collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5, stop_value=195),
    policy=dict(cuda=False, model=dict(obs_shape=4, action_shape=2),
                other=dict(replay_buffer=dict(replay_buffer_size=1000, alpha=0.7, beta=0.5))))


def ding(policy_type, **policy):
    import copy

    main = copy.deepcopy(DING_MAIN)
    main['policy'].update(policy)
    create = dict(env=dict(type='cartpole'), env_manager=dict(type='base'), policy=dict(type=policy_type),
                  replay_buffer=dict(type='naive'))
    return compile_config((main, create)).policy.other.replay_buffer


def test_di_engines_priority_switches_mean_what_they_mean_there():
    buffer = ding('impala', priority=True, priority_IS_weight=False)
    assert (buffer.type, buffer.alpha, buffer.beta, buffer.is_weight) == ('prioritized', 0.7, 0.5, False)
    buffer = ding('acer', priority=True, priority_IS_weight=True)
    assert (buffer.type, buffer.is_weight, buffer.alpha) == ('episodic_prioritized', True, 0.7)
    buffer = ding('impala', priority=False, priority_IS_weight=False)  # uniform: alpha and beta are unused
    assert buffer.type == 'fifo' and 'alpha' not in buffer
    with pytest.raises(ConfigError, match='must be True or False'):
        ding('impala', priority='yes')
    with pytest.raises(ConfigError, match='this policy is on-policy and has no replay buffer'):
        ding('ppo', priority=True)


HALF_BUFFER = '''
from acframe import BUFFER_REGISTRY


@BUFFER_REGISTRY.register('half_buffer')
class HalfBuffer:
    """Stores, but cannot sample, count or be checkpointed."""
    config = dict()
    reuses_data = True

    def __init__(self, seed=0, **kwargs):
        self.items = []

    def push(self, samples):
        self.items.append(samples)
'''


@pytest.mark.parametrize('override, message', [
    ('policy.other.replay_buffer.type=half_buffer',
     "policy.other.replay_buffer.type='half_buffer': HalfBuffer lacks sample, __len__, state_dict, load_state_dict, "
     "rng_state, set_rng_state; a buffer provides push, sample, __len__"),
    ('policy.other.replay_buffer.type=fifoo', "config key 'policy.other.replay_buffer.type': unknown buffer 'fifoo'. "
                                              "Did you mean 'fifo'?"),
])
def test_a_buffer_that_cannot_serve_the_run_is_refused_before_anything_is_written(tmp_path, user_setup, override, message):
    (user_setup / 'half_buffers.py').write_text(HALF_BUFFER)
    out = cli(tmp_path, user_setup, '-c', 'cartpole_impala.py', '--import', 'half_buffers', '--exp-dir', 'run',
              '--max-train-iter', '12', override)
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not (tmp_path / 'run').exists()


def test_a_buffer_state_the_starts_checkpoint_cannot_hold_is_one_line_and_the_new_run_writes_nothing(tmp_path,
                                                                                                       user_setup):
    """No checkpoint came before it: the line does not say the previous one is intact (it did)."""
    out = cli(tmp_path, user_setup, '-c', 'cfg.py', '--exp-dir', 'run', '--max-train-iter', '12', '-q',
              'policy.other.replay_buffer.type=opaque_state_seam', 'policy.other.replay_buffer.save_in_checkpoint=True')
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and 'buffer.thing is a builtins.object, which a checkpoint cannot hold' \
        in lines[0], out.stderr
    assert 'intact' not in lines[0] and not (tmp_path / 'run').exists()


def test_a_user_buffer_whose_state_is_not_plain_data_stops_the_run_after_its_first_updates_in_one_line(tmp_path,
                                                                                                    user_setup):
    out = cli(tmp_path, user_setup, '-c', 'cfg.py', '--exp-dir', 'run', '--max-train-iter', '5000', '-q',
              'policy.other.replay_buffer.type=tree_state_seam', 'policy.other.replay_buffer.save_in_checkpoint=True',
              'policy.learn.learner.save_ckpt_freq=1000', 'policy.learn.learner.log_freq=1')
    lines = out.stderr.strip().splitlines()
    assert out.returncode != 0 and len(lines) == 1 and 'Traceback' not in out.stderr, out.stderr
    path = tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth'
    assert lines[0].startswith(f"acframe: error: cannot write the checkpoint run/ckpt/ckpt_latest.pth: buffer.items[0] is a "
                               f"treetensor.torch.tensor.Tensor, which a checkpoint cannot hold"), lines
    assert "the replay buffer's state_dict() (policy.other.replay_buffer.save_in_checkpoint=True) must return plain " \
           "data" in lines[0] and lines[0].endswith('(the previous one is intact)')
    import torch
    assert torch.load(path, weights_only=True)['train_iter'] == 0  # the start's checkpoint, intact and loadable
    from acframe.logs import read_scalars
    steps = [s.step for s in read_scalars(str(tmp_path / 'run' / 'log')) if s.tag.startswith('learner/')]
    assert 0 < max(steps) < 50  # found after the first round's updates, not 1000 iterations later


def test_a_user_buffer_whose_constructor_takes_not_every_key_or_raises_is_one_line_and_nothing_written(tmp_path,
                                                                                                         user_setup):
    """A buffer is built with every key of policy.other.replay_buffer (the common ones too: max_use, dedup_frames,
    save_in_checkpoint): one without **kwargs got a traceback ('got an unexpected keyword argument')."""
    out = cli(tmp_path, user_setup, '-c', 'cfg.py', '--exp-dir', 'run', '-q', 'policy.other.replay_buffer.type=strict_seam')
    assert out.returncode == 2 and out.stderr.count('\n') == 1, out.stderr
    assert out.stderr.startswith("acframe: error: policy.other.replay_buffer.type='strict_seam': Strict() does not take "), out.stderr
    assert 'max_use' in out.stderr and 'take **kwargs for those it ignores (docs/replay.md)' in out.stderr
    out = cli(tmp_path, user_setup, '-c', 'cfg.py', '--exp-dir', 'run', '-q', 'policy.other.replay_buffer.type=failing_init_seam')
    assert out.returncode == 2 and out.stderr.count('\n') == 1, out.stderr
    assert re.match(r"acframe: error: the replay buffer 'failing_init_seam' \(FailingInit\) while it was built raised "
                    r"RuntimeError: no room on the device \(at .*user_buffers.py:\d+ in __init__", out.stderr), out.stderr
    assert not (tmp_path / 'run').exists()


def test_a_run_whose_buffer_never_gives_a_batch_ends_with_a_warning_that_it_learned_nothing(tmp_path, user_setup):
    out = cli(tmp_path, user_setup, '-c', 'cfg.py', '--exp-dir', 'run', '--max-env-step', '400', '-q',
              'policy.other.replay_buffer.type=never_ready_seam')
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if 'warning' in line]
    assert warnings == ["acframe: warning: the run made no gradient step in 400 env steps, so it learned nothing: its "
                        "replay buffer 'never_ready_seam' (len() 24) gave no batch (sample() returned None "
                        "every time); check the buffer's sample() or its sizes (policy.other.replay_buffer, "
                        "docs/replay.md), or give the run a larger budget"], out.stderr


@pytest.mark.parametrize('mode', [[], ['-m', 'parallel', '--backend', 'inline']], ids=['serial', 'parallel'])
def test_a_policy_that_returns_no_priorities_to_a_prioritized_buffer_is_warned_about_once(tmp_path, user_setup, mode):
    """The buffer's draws would stay uniform (every item keeps the first priority) without a word."""
    (tmp_path / 'no_priority.py').write_text(CONFIG + "create_config['policy']['type'] = 'impala_without_priority_seam'\n")
    out = cli(tmp_path, user_setup, '-c', 'no_priority.py', '--exp-dir', 'run', '--max-train-iter', '12', '-q',
              *mode)
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if 'warning' in line]
    assert warnings == ["acframe: warning: the prioritized replay buffer drew a batch and the policy's learn step "
                        "returned no info['priority'], so every priority stays the same and the draws stay uniform: "
                        "return one priority per sequence (shape (B,)) from the learn forward, or use a uniform buffer "
                        "(policy.other.replay_buffer.type; docs/replay.md)"], out.stderr
    assert not (tmp_path / 'seam.json').exists()  # no priority reached the buffer
    plain = cli(tmp_path, user_setup, '-c', 'cfg.py', '--exp-dir', 'run2', '--max-train-iter', '12', '-q', *mode)
    assert plain.returncode == 0 and 'warning' not in plain.stderr, plain.stderr  # IMPALA's own priorities: no word


@pytest.mark.parametrize('buffer', ['item_major_seam', 'dict_batch_seam', 'no_final_obs_seam'])
def test_a_batch_of_a_user_buffer_that_the_learn_mode_cannot_read_is_one_line_naming_the_buffer(tmp_path, user_setup,
                                                                                                 buffer):
    """The learn mode of acframe's IMPALA raises inside acframe or treevalue on such a batch (a size mismatch, a dict
    with no .obs, a missing key): the buffer is named with the contract, not the policy (or a .pyx file as user code)."""
    out = cli(tmp_path, user_setup, '-c', 'cfg.py', '--exp-dir', 'run', '--max-env-step', '2000', '-q',
              f'policy.other.replay_buffer.type={buffer}')
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and 'Traceback' not in out.stderr, out.stderr
    assert lines[0].startswith(f"acframe: error: the policy's learn mode could not read a batch of replay buffer "
                               f"'{buffer}' (user_buffers."), lines
    assert 'follows the contract' in lines[0] and 'time-major (docs/replay.md, "The contract")' in lines[0]
    assert '.pyx' not in lines[0]


@pytest.mark.parametrize('mode', [[], ['-m', 'parallel', '--backend', 'inline']], ids=['serial', 'parallel'])
def test_a_user_buffer_that_raises_is_one_line_naming_it_and_its_line(tmp_path, user_setup, mode):
    out = cli(tmp_path, user_setup, '-c', 'cfg.py', '--exp-dir', 'run', '--max-env-step', '2000', '-q',
              'policy.other.replay_buffer.type=raising_seam', *mode)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and 'Traceback' not in out.stderr, out.stderr
    assert re.match(r"acframe: error: replay buffer 'raising_seam' raised ValueError: my buffer broke \(at .*"
                    r"user_buffers.py:\d+ in sample; --debug shows the traceback\)", lines[0]), lines
    # the checkpoint holds no buffer (save_in_checkpoint False, the default): the learner is sound, so the training
    # so far is kept as an env failure keeps it
    state = torch.load(tmp_path / 'run' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    assert state['train_iter'] > 0 and (f"; the final checkpoint was written first (env step {state['env_step']}, "
                                        f"train iter {state['train_iter']}): --resume ") in lines[0], lines
    out = cli(tmp_path, user_setup, '-c', 'cfg.py', '--exp-dir', 'saved', '--max-env-step', '2000', '-q',
              'policy.other.replay_buffer.type=raising_seam', 'policy.other.replay_buffer.save_in_checkpoint=True',
              *mode)  # a checkpoint would hold the buffer as it broke: the last periodic one stays
    assert out.returncode == 2 and 'final checkpoint was written first' not in out.stderr, out.stderr
