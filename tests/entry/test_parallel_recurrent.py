"""Recurrent PPO, A2C, IMPALA and ACER (``policy.model.rnn``) in the parallel pipeline (docs/recurrent.md).

* an actor (the role every backend runs) acts from one state per env, zeroed where an episode starts, and its
  segment carries them: after the trip to the learner, the learner's recompute from the segment's first state
  gives the outputs the actors acted with (same weights), episode starts inside included; ACER's too for the
  replayed windows of its episodic buffer, from the state stored at their first step (burn-in or not);
* the parallel evaluator resets its states at every evaluation and every episode start;
* whole runs on the inline and the local backends, and a resume.
"""
import json
import os
import pickle

import numpy as np
import pytest
import torch

from acframe.config import compile_config
from acframe.entry.evaluate import EVAL_SEED_OFFSET
from acframe.entry.parallel import parallel_pipeline
from acframe.entry.parallel.messages import VERSION_KEY, EvalRequest, numpy_to_tree, weights_to_numpy
from acframe.entry.parallel.roles import ActorWorker, EvalWorker, HandedWeights
from acframe.envs import make_env_manager
from acframe.models.distributions import make_distribution
from acframe.policy import create_policy

ENVS, STEPS, LIMIT = 3, 20, 9


def recurrent_config(policy_type='ppo', kind='lstm', limit=LIMIT, share=True, **env):
    """CartPole without velocities, episodes cut at ``limit`` steps (starts inside every segment), 2 actors; one core
    for actor and critic (``share``) or a core each."""
    main = dict(env=dict(env_id='cartpole_novel', collector_env_num=ENVS, evaluator_env_num=2, n_evaluator_episode=4,
                         max_episode_steps=limit, stop_value=None, **env),
                policy=dict(model=dict(encoder_hidden_size_list=[16], share_encoder=share,
                                       rnn=dict(type=kind, hidden_size=8)),
                            collect=dict(n_sample=ENVS * STEPS), eval=dict(evaluator=dict(eval_freq=4))),
                parallel=dict(actor_num=2))
    if policy_type == 'ppo':
        main['policy']['learn'] = dict(batch_size=STEPS, epoch_per_collect=2)
    return main, dict(env=dict(type='gym'), policy=dict(type=policy_type))


def learner_and_weights(cfg):
    """A learn-only policy (seed 0) and the weights source that hands its weights, as version 0, to actors."""
    env = make_env_manager(cfg, 'collector', ENVS, cfg.seed)
    torch.manual_seed(0)
    learner = create_policy(cfg, env.observation_space, env.action_space, enable_field=('learn',))
    env.close()
    source = HandedWeights()
    source.set(learner.learn_mode.get_weights(), 0)
    return learner, source


def collect_through_a_boundary(actor) -> object:
    """Two segments of ``actor`` (an ``ActorWorker``): the second starts mid-episode, from states that are not zeros;
    it comes back pickled and unpickled, as a process or Ray boundary hands it."""
    actor.collect(7)
    return pickle.loads(pickle.dumps(actor.collect()))


def assert_recomputed_from_the_first_state(learner, message, policy_type):
    """The segment's states are zeros where an episode started and else what the previous step left; the learner's
    recompute (A2C's update, PPO's prepare) from the segment's first state alone gives the outputs the actor acted
    with."""
    segment = numpy_to_tree(message.samples)
    segment = type(segment)({k: v for k, v in segment.items() if k != VERSION_KEY})
    model = learner.model
    starts = segment.episode_start.bool()
    assert starts[1:].any() and segment.rnn_state[0].abs().sum() > 0
    # the actor acted from zeros where an episode started, and else from the state its previous step left
    with torch.no_grad():
        steps, envs = starts.shape
        flat = segment.obs[:-1].reshape(steps * envs, -1)
        stepped = model.compute_actor(flat, segment.rnn_state.reshape(steps * envs, *segment.rnn_state.shape[2:]))
        after = stepped['state'].view(steps, envs, *segment.rnn_state.shape[2:])
    assert not segment.rnn_state[starts].any()
    continuing = ~starts[1:]
    torch.testing.assert_close(segment.rnn_state[1:][continuing], after[:-1][continuing], rtol=0, atol=1e-6)
    # the learner's recompute (A2C's update, PPO's prepare) from the segment's first state alone gives the same
    with torch.no_grad():
        out = learner._evaluate_rollout(segment)
    torch.testing.assert_close(out['logit'][:-1].reshape(steps * envs, -1), stepped['logit'], rtol=0, atol=1e-5)
    dist = make_distribution({'logit': stepped['logit']}, 'discrete', [])
    log_prob = dist.log_prob(segment.action.reshape(-1))  # the actions the actor took, at its probabilities
    assert torch.isfinite(log_prob).all()
    if policy_type == 'ppo':
        plan = learner.learn_mode.prepare(segment)
        torch.testing.assert_close(plan.log_prob_old.reshape(-1), log_prob, rtol=0, atol=1e-5)
        for batch in learner.learn_mode.minibatches(plan):  # every minibatch: sequences from their stored states
            assert batch.rnn_state.shape[0] == batch.episode_start.shape[1]
            learner.learn_mode.forward(batch)
    else:
        info = learner.learn_mode.forward(segment)
        assert np.isfinite(info['total_loss'])


@pytest.mark.parametrize('policy_type, kind, share', [('ppo', 'lstm', True), ('a2c', 'gru', True), ('ppo', 'lstm', False)])
def test_the_learner_recomputes_what_an_actor_acted_with_from_the_segments_first_state(policy_type, kind, share):
    cfg = compile_config(recurrent_config(policy_type, kind, share=share), seed=0)
    learner, source = learner_and_weights(cfg)
    actor = ActorWorker(cfg, 0, 0, source)
    try:
        message = collect_through_a_boundary(actor)
    finally:
        actor.close()
    assert_recomputed_from_the_first_state(learner, message, policy_type)


def returns_of_a_loop_that_zeroes_each_state_at_its_episode_start(cfg, policy, episodes_per_env=2):
    """Evaluation returns by hand: the explicit recurrent step on the evaluator's envs (seeded as ``EvalWorker``
    seeds them), each env's state set to zeros at its episode start, ``episodes_per_env`` episodes per env."""
    envs = int(cfg.env.evaluator_env_num)
    env = make_env_manager(cfg, 'evaluator', envs, cfg.seed + EVAL_SEED_OFFSET)
    try:
        obs = torch.as_tensor(env.reset())
        state = policy.model.initial_state(envs)
        returns, done = [], np.zeros(envs, dtype=int)
        with torch.no_grad():
            while (done < episodes_per_env).any():
                out = policy.eval_mode.step(obs, state)
                result = env.step(out['action'].numpy())
                state = out['state'].clone()
                state[torch.as_tensor(result.done_index, dtype=torch.long)] = 0.0
                obs = torch.as_tensor(result.obs)
                for ret, _, index in zip(*env.pop_finished()):
                    if done[index] < episodes_per_env:
                        returns.append(ret)
                    done[index] += 1
    finally:
        env.close()
    return returns


def test_the_parallel_evaluator_starts_every_episode_from_zeros(tmp_path):
    """EvalWorker over 4 episodes on 2 envs: its returns equal a loop of the explicit step that zeroes each env's state
    at its episode start, and a second evaluation of the same weights gives the same returns."""
    cfg = compile_config(recurrent_config(limit=40), seed=0)
    worker = EvalWorker(cfg)
    try:
        torch.manual_seed(3)
        policy = create_policy(cfg, worker.env.observation_space, worker.env.action_space, enable_field=('eval',))
        weights = weights_to_numpy(policy.model.state_dict())
        request = EvalRequest(0, 0, 0, weights)
        first = worker.evaluate(request)
        second = worker.evaluate(request)
    finally:
        worker.close()
    assert first.returns == second.returns and len(first.returns) == 4
    returns = returns_of_a_loop_that_zeroes_each_state_at_its_episode_start(cfg, policy)
    assert sorted(returns) == sorted(first.returns)
    assert len(set(first.returns)) > 1  # the episodes differ: equal returns are not a coincidence of constant ones


def read_summary(exp_dir):
    with open(os.path.join(exp_dir, 'summary.json')) as f:
        return json.load(f)


@pytest.mark.parametrize('backend, policy_type', [('inline', 'ppo'), ('local', 'a2c')])
def test_a_recurrent_run_trains_on_a_backend_and_resumes(tmp_path, backend, policy_type):
    exp_dir = str(tmp_path / backend)
    policy = parallel_pipeline(recurrent_config(policy_type), seed=0, exp_dir=exp_dir, backend=backend,
                               max_train_iter=8, progress=False)
    summary = read_summary(exp_dir)
    assert summary['train_iters'] == 8 and summary['sync_mode'] == 'sync' and summary['discarded_segments'] == 0
    assert policy.model.core is not None
    first = torch.load(os.path.join(exp_dir, 'ckpt', 'ckpt_latest.pth'), weights_only=True)
    parallel_pipeline(None, resume=exp_dir, backend=backend, max_train_iter=16, progress=False)
    second = torch.load(os.path.join(exp_dir, 'ckpt', 'ckpt_latest.pth'), weights_only=True)
    assert second['train_iter'] == 16 and second['env_step'] > first['env_step']
    assert first['parallel']['actor_incarnations'] == [1, 1] and second['parallel']['actor_incarnations'] == [2, 2]
    changed = [k for k in first['policy']['model'] if not torch.equal(first['policy']['model'][k],
                                                                     second['policy']['model'][k])]
    assert any(k.startswith('core.') for k in changed)  # the core kept learning after the resume


def test_a_recurrent_run_trains_and_resumes_on_a_local_ray_instance(tmp_path):
    """``--backend ray`` without an address (a private Ray instance), recurrent PPO, then ``--resume``."""
    pytest.importorskip('ray', reason='Ray is not installed (pip install acframe[ray])')
    import subprocess
    import sys

    home = tmp_path / 'home'
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ('RAY_AUTH_MODE', 'RAY_AUTH_TOKEN', 'RAY_AUTH_TOKEN_PATH')}
    env['HOME'] = str(home)
    exp_dir = tmp_path / 'ray'
    args = ['env.env_id=cartpole_novel', 'env.stop_value=None', 'policy.model.share_encoder=True',
            'policy.model.rnn.type=lstm', 'policy.model.rnn.hidden_size=16', 'parallel.actor_num=2',
            'parallel.actor_num_cpus=0.25', 'parallel.evaluator_num_cpus=0.25']
    for budget, extra in ((1000, ['-c', 'cartpole_ppo.py']), (2000, ['--resume', str(exp_dir)])):
        result = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'parallel', '--backend', 'ray', *extra,
                                 '--exp-dir', str(exp_dir), '--max-env-step', str(budget), '-q',
                                 *(args if '-c' in extra else [])],
                                env=env, capture_output=True, text=True, timeout=180)
        assert result.returncode == 0, result.stderr[-3000:]
        summary = read_summary(str(exp_dir))
        assert summary['backend'] == 'ray' and budget <= summary['env_steps'] < budget + 2 * 8  # (2 actors x 8 envs)
        assert all(rate > 0 for rate in summary['env_steps_per_s_per_actor'])
        latest = torch.load(exp_dir / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
        assert latest['parallel']['actor_incarnations'] == ([1, 1] if budget == 1000 else [2, 2])  # resumed


def test_the_cue_task_is_solved_by_parallel_actors(tmp_path):
    """dizoo_configs/cue_memory_ppo_gru.py on the inline backend (2 actors): seed 0 solved at 11,264 env steps on
    2026-11-28 (the local backend: 17,408); the budget is three times that. Only memory solves it
    (tests/policy/test_recurrent.py: without the core, chance)."""
    exp_dir = tmp_path / 'cue'
    parallel_pipeline('cue_memory_ppo_gru.py', seed=0, exp_dir=str(exp_dir), backend='inline', max_env_step=34_000,
                      progress=False)
    summary = read_summary(str(exp_dir))
    assert summary['solved'] and summary['confirmations'][-1]['mean'] == 1.0, summary


def test_impala_actors_unrolls_keep_their_first_state_and_the_learner_recomputes_them():
    """An IMPALA actor's message (pickled): unrolls with the state at their first step; through the replay buffer the
    learner's recompute gives the actor's statistics (V-trace's ratios are 1 with the acting weights)."""
    from acframe.data.buffer import ReplayBuffer

    main, create = recurrent_config('impala', 'gru')
    main['policy'].update(unroll_len=10, collect=dict(n_sample=ENVS * 2), learn=dict(batch_size=ENVS * 2))
    cfg = compile_config((main, create), seed=0)
    learner, source = learner_and_weights(cfg)
    actor = ActorWorker(cfg, 0, 0, source)
    try:
        actor.collect(3)
        message = pickle.loads(pickle.dumps(actor.collect()))
    finally:
        actor.close()
    buffer = ReplayBuffer(100)
    buffer.push(numpy_to_tree(message.samples))
    batch = buffer.sample(ENVS * 2)
    batch = type(batch)({k: v for k, v in batch.items() if k != VERSION_KEY})
    assert tuple(batch.rnn_state.shape[:2]) == (1, ENVS * 2) and batch.episode_start[1:].any()
    with torch.no_grad():
        out = learner._evaluate_rollout(batch)
    torch.testing.assert_close(out['logit'][:-1], batch.logit, rtol=0, atol=1e-5)
    assert abs(learner.learn_mode.forward(batch)['mean_rho'] - 1.0) < 1e-5


@pytest.mark.parametrize('backend', ['inline', 'local'])
def test_a_recurrent_impala_run_trains_asynchronously(tmp_path, backend):
    main, create = recurrent_config('impala', 'lstm')
    main['policy'].update(unroll_len=10, collect=dict(n_sample=ENVS * 2), learn=dict(batch_size=4))
    exp_dir = str(tmp_path / backend)
    policy = parallel_pipeline((main, create), seed=0, exp_dir=exp_dir, backend=backend, max_train_iter=30,
                               progress=False)
    summary = read_summary(exp_dir)
    assert summary['sync_mode'] == 'async' and summary['train_iters'] == 30 and policy.model.core is not None


@pytest.mark.parametrize('burn_in', [0, 3])
def test_acer_actors_segments_and_replayed_windows_are_recomputed_from_their_stored_states(burn_in):
    """Recurrent ACER (LSTM): two actors' pickled messages pushed into the learner's episodic buffer (their streams
    interleave). With the acting weights, the learner's recompute -- of the fresh segment (mid-episode start) and of
    replayed windows that start mid-episode from their stored state -- gives the actors' logits, the average
    network's too, and rho = 1 on every step (with a burn-in: on the steps after it)."""
    from acframe.entry.run_base import build_buffer

    main, create = recurrent_config('acer', 'lstm')
    main['policy']['model']['rnn']['burn_in'] = burn_in
    main['policy']['other'] = dict(replay_buffer=dict(unroll_len=8, replay_start_size=0))
    cfg = compile_config((main, create), seed=0)
    learner, source = learner_and_weights(cfg)
    buffer = build_buffer(cfg)
    actors = [ActorWorker(cfg, i, 0, source) for i in range(2)]
    try:
        for actor in actors:
            actor.collect(7)  # the segments pushed next start mid-episode
        for _ in range(2):
            for actor in actors:
                buffer.push(numpy_to_tree(pickle.loads(pickle.dumps(actor.collect())).samples))
    finally:
        for actor in actors:
            actor.close()
    fresh, windows = buffer.sample(0), buffer.sample_windows(32)
    assert fresh.rnn_state[0].abs().sum() > 0 and fresh.episode_start[1:].any()
    assert windows.episode_start[1:].any() and (windows.rnn_state[0].abs().flatten(1).sum(-1) > 0).any()
    weights = {k: v.clone() for k, v in learner.model.state_dict().items()}
    for batch in (fresh, windows):
        batch = type(batch)({k: v for k, v in batch.items() if k != VERSION_KEY})
        with torch.no_grad():
            kept, out, average = learner._unroll_windows(batch)
        assert torch.equal(kept.logit, batch.logit[burn_in:])
        torch.testing.assert_close(out['logit'][:-1], kept.logit, rtol=0, atol=1e-5)
        torch.testing.assert_close(average['logit'], kept.logit, rtol=0, atol=1e-5)
        info = learner.learn_mode.forward(batch)
        assert abs(info['mean_rho'] - 1.0) < 1e-5 and info['rho_truncated_fraction'] == 0.0
        learner.model.load_state_dict(weights)  # the acting weights again for the next batch
        learner._average_model.load_state_dict(weights)


@pytest.mark.parametrize('backend', ['inline', 'local'])
def test_a_recurrent_acer_run_trains_on_a_backend_and_resumes(tmp_path, backend):
    """Recurrent ACER (LSTM), asynchronous actors: the fresh segments and replayed windows (with their stored states)
    train the core; a resume continues with the checkpoint's episodic buffer."""
    main, create = recurrent_config('acer', 'lstm')
    main['policy'].update(learn=dict(batch_size=4), collect=dict(n_sample=ENVS * 4),
                          other=dict(replay_buffer=dict(unroll_len=8, replay_start_size=24, save_in_checkpoint=True)))
    exp_dir = str(tmp_path / backend)
    policy = parallel_pipeline((main, create), seed=0, exp_dir=exp_dir, backend=backend, max_train_iter=20,
                               progress=False)
    summary = read_summary(exp_dir)
    assert summary['sync_mode'] == 'async' and summary['train_iters'] == 20 and policy.model.core is not None
    assert summary['samples_trained'] > summary['env_steps']  # replayed windows, not only the fresh segments
    first = torch.load(os.path.join(exp_dir, 'ckpt', 'ckpt_latest.pth'), weights_only=True)
    assert first['buffer']['pushed'] == first['env_step'] and 'rnn_state' in first['buffer']['storage']
    parallel_pipeline(None, resume=exp_dir, backend=backend, max_train_iter=40, progress=False)
    second = torch.load(os.path.join(exp_dir, 'ckpt', 'ckpt_latest.pth'), weights_only=True)
    assert second['train_iter'] == 40 and second['env_step'] > first['env_step']
    assert second['buffer']['pushed'] == second['env_step']  # the resumed run kept the checkpoint's buffer
    assert first['parallel']['actor_incarnations'] == [1, 1] and second['parallel']['actor_incarnations'] == [2, 2]
    changed = [k for k in first['policy']['model'] if not torch.equal(first['policy']['model'][k],
                                                                     second['policy']['model'][k])]
    assert any(k.startswith('core.') for k in changed)  # the core kept learning after the resume
