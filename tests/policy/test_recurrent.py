"""Specification of the recurrent core as a model option of PPO and A2C (``policy.model.rnn``; docs/recurrent.md).

* the learner's recompute of a collected segment (from the state stored at its first step, the state zeroed where
  an episode starts inside it) gives the actors' outputs at collection time, with the same weights;
* PPO's sequence minibatches (``seq_len``), each from its own stored start state, give the full unroll's outputs;
* the collector and the evaluator reset each env's state where its episode starts;
* a recurrent run stopped mid-episode resumes bit for bit;
* what cannot work yet is refused with one line, exit 2, nothing written.
"""
import json
import os

import numpy as np
import pytest
import torch

from acframe.config import compile_config
from acframe.envs import make_env_manager
from acframe.data.buffer import ReplayBuffer
from acframe.entry.serial import serial_pipeline
from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy
from acframe.models.distributions import make_distribution
from acframe.policy import create_policy
from acframe.registry import MODEL_REGISTRY
from acframe.worker import Evaluator, LearnerHook, SampleCollector

B, T, LIMIT = 3, 30, 12
RNN = dict(type='lstm', hidden_size=16)


def build(policy_type='ppo', env_id='cartpole_novel', rnn=None, limit=LIMIT, env_type='gym', share=True, **policy):
    main = dict(env=dict(env_id=env_id, collector_env_num=B, max_episode_steps=limit),
                policy=dict(model=dict(encoder_hidden_size_list=[16], rnn=dict(rnn or RNN), share_encoder=share),
                            collect=dict(n_sample=B * T), **policy))
    if policy_type == 'ppo':
        main['policy'].setdefault('learn', dict(batch_size=T))
    cfg = compile_config((main, dict(env=dict(type=env_type), policy=dict(type=policy_type))), seed=0)
    env = make_env_manager(cfg, 'collector', B, cfg.seed)
    torch.manual_seed(0)
    policy = create_policy(cfg, env.observation_space, env.action_space)
    return cfg, env, policy


def stats_keys(policy):
    return ('mu', 'sigma') if policy._action_space == 'continuous' else ('logit',)


# (share: one encoder and core for actor and critic, or each its own: the state is then both cores' rows;
# norm: a LayerNorm on each core's input, rnn.input_norm)
CASES = [('ppo', 'cartpole_novel', 'lstm', True, False), ('a2c', 'cartpole_novel', 'gru', True, False),
         ('ppo', 'Pendulum-v1', 'gru', True, False), ('a2c', 'Pendulum-v1', 'lstm', True, False),
         ('ppo', 'cartpole_novel', 'lstm', False, False), ('a2c', 'Pendulum-v1', 'gru', False, False),
         ('ppo', 'cartpole_novel', 'lstm', True, True), ('a2c', 'Pendulum-v1', 'lstm', False, True)]


@pytest.mark.parametrize('policy_type, env_id, kind, share, norm', CASES)
def test_the_learner_recomputes_the_actors_outputs_from_the_stored_state(policy_type, env_id, kind, share, norm):
    """Collected with episode starts inside the segment (terminations and truncations at LIMIT steps)."""
    _, env, policy = build(policy_type, env_id, dict(RNN, type=kind, input_norm=norm),
                           limit=LIMIT if env_id != 'Pendulum-v1' else 7, share=share)
    if norm:  # the norm is the last layer of each encoder that feeds a core
        assert isinstance(policy.model.actor_encoder[-1], torch.nn.LayerNorm)
        assert (policy.model.critic_encoder is policy.model.actor_encoder) == share
    policy.collect_stats = True  # the segment then keeps the actor's statistics of collection time, to compare with
    collector = SampleCollector(env, policy.collect_mode, B * T)
    collector.collect(5)  # the next segment starts mid-episode, from non-zero states
    segment = collector.collect()
    env.close()
    done = segment.terminated | segment.truncated
    assert segment.episode_start[1:].any() and segment.truncated.any()
    assert segment.rnn_state[0].abs().sum() > 0
    with torch.no_grad():
        out = policy._evaluate_rollout(segment)  # what A2C's update and PPO's prepare compute
    for key in stats_keys(policy):
        assert torch.allclose(out[key][:-1], segment[key], atol=1e-6), key
    # the values: the critic stepped from the states the actors acted from
    obs = segment.obs[:-1].reshape(T * B, -1)
    with torch.no_grad():
        stepped = policy.model.compute_critic(obs, segment.rnn_state.reshape(T * B, *segment.rnn_state.shape[2:]))
        assert torch.allclose(out['value'][:-1], stepped['value'].view(T, B), atol=1e-6)
        # a truncated episode's final observation is valued from the state after its last step
        t, b = [int(i) for i in torch.nonzero(segment.truncated)[0]]
        after = policy.model.compute_actor(segment.obs[t, b:b + 1], segment.rnn_state[t, b:b + 1])['state']
        assert torch.allclose(out['ends'][t, b], after[0], atol=1e-6)
        assert done[t, b]
    if policy_type == 'ppo':
        plan = policy.learn_mode.prepare(segment)
        dist = make_distribution({k: segment[k] for k in stats_keys(policy)}, policy._action_space, [])
        assert torch.allclose(plan.log_prob_old, dist.log_prob(segment.action), atol=1e-5)


@pytest.mark.parametrize('seq_len', [0, 5, 10])
def test_ppo_sequence_minibatches_from_their_stored_states_equal_the_full_unroll(seq_len):
    _, env, policy = build('ppo', rnn=dict(RNN, seq_len=seq_len), learn=dict(batch_size=T, epoch_per_collect=2))
    segment = SampleCollector(env, policy.collect_mode, B * T).collect()
    env.close()
    plan = policy.learn_mode.prepare(segment)  # log pi_old and V_old of the whole (T+1, B) unroll
    length = seq_len or T
    batches = list(policy.learn_mode.minibatches(plan))
    assert len(batches) == 2 * (T // length * B) // (T // length)  # epochs x sequences / sequences per minibatch
    for batch in batches:
        assert batch.obs.shape[:2] == (length, T // length) and batch.rnn_state.shape[0] == T // length
        assert not batch.episode_start[0].any()
        with torch.no_grad():
            out = policy._evaluate_unroll(batch.obs, batch.rnn_state, batch.episode_start)
        log_prob = policy._distribution(out).log_prob(batch.action)
        assert torch.allclose(log_prob, batch.log_prob_old, atol=1e-5)
        assert torch.allclose(out['value'], batch.value_old, atol=1e-5)
    assert segment.episode_start[1:].any()  # sequences with episode starts inside were among them


@pytest.mark.parametrize('limit, share', [(LIMIT, True), (500, True), (LIMIT, False)])
def test_ppo_gradient_steps_on_one_lane_per_column_equal_those_on_the_padded_fragments(limit, share):
    """PPO's gradient step unrolls without fragment-end states (an LSTM: one lane per column with reset rows,
    ``RecurrentCore.run_lanes``), and so does its prepare where no episode was truncated (``limit=500``); the
    same weights and minibatches through the padded fragments (``ends=True``, the path that returns them) give the
    same losses and the same weights after every step, to float rounding."""
    runs = []
    for lanes in (True, False):
        _, env, policy = build('ppo', learn=dict(batch_size=T, epoch_per_collect=2), limit=limit, share=share)
        segment = SampleCollector(env, policy.collect_mode, B * T).collect()
        env.close()
        calls = []
        if lanes:
            run_lanes = policy.model.core.run_lanes
            policy.model.core.run_lanes = lambda *args: calls.append(1) or run_lanes(*args)
        else:
            evaluate_unroll = policy._evaluate_unroll
            policy._evaluate_unroll = lambda *args, ends=True, **kwargs: evaluate_unroll(*args, **kwargs)
        learn = policy.learn_mode
        plan = learn.prepare(segment)
        truncated = bool(segment.truncated.any())
        assert segment.episode_start[1:].any() and truncated == (limit == LIMIT)
        assert len(calls) == (lanes and not truncated)  # prepare: one lane per column unless it needs the ends
        prepared = len(calls)
        infos = [learn.forward(batch) for batch in learn.minibatches(plan)]
        assert (len(calls) > prepared) == lanes  # the gradient steps on sequences with starts inside
        runs.append((infos, [p.detach().clone() for p in policy.model.parameters()]))
    (lane_infos, lane_params), (padded_infos, padded_params) = runs
    for got, want in zip(lane_infos, padded_infos):
        assert got['total_loss'] == pytest.approx(want['total_loss'], rel=1e-5, abs=1e-6)
    for got, want in zip(lane_params, padded_params):
        assert torch.allclose(got, want, rtol=0, atol=1e-5)


def test_ppo_learns_from_sequence_minibatches():
    _, env, policy = build('ppo', rnn=dict(RNN, seq_len=10), learn=dict(batch_size=20, epoch_per_collect=2))
    segment = SampleCollector(env, policy.collect_mode, B * T).collect()
    env.close()
    before = [p.detach().clone() for p in policy.model.core.parameters()]
    infos = [policy.learn_mode.forward(batch) for batch in policy.learn_mode.minibatches(policy.learn_mode.prepare(segment))]
    assert len(infos) == 2 * 5 and all(np.isfinite(info['total_loss']) for info in infos)  # 9 sequences, 2 a batch
    assert any(not torch.equal(a, b) for a, b in zip(before, policy.model.core.parameters()))


@pytest.mark.parametrize('policy_type', ['ppo', 'a2c'])
def test_the_collector_resets_the_state_of_every_env_whose_episode_starts(policy_type):
    _, env, policy = build(policy_type)
    collector = SampleCollector(env, policy.collect_mode, B * T)
    first, second = collector.collect(), collector.collect()
    env.close()
    assert first.episode_start[0].all()  # the envs were reset before the first step
    assert torch.equal(second.episode_start[0], first.terminated[-1] | first.truncated[-1])
    for segment in (first, second):
        done = segment.terminated | segment.truncated
        assert torch.equal(segment.episode_start[1:], done[:-1])
        per_env = segment.rnn_state.abs().flatten(2).sum(-1)  # (T, B)
        assert (per_env[segment.episode_start] == 0).all()
        assert (per_env[~segment.episode_start] > 0).all()


def test_the_evaluator_resets_the_state_of_every_env_whose_episode_starts():
    """Pendulum episodes capped at 4 steps: the evaluator's actions (the Gaussian's mean) equal a stepped model whose
    state is zeroed every 4 steps, and differ from one whose state runs on."""
    cfg, env, policy = build('ppo', 'Pendulum-v1', limit=4)
    env.close()
    eval_env = make_env_manager(cfg, 'evaluator', 2, 100)
    seen = []

    class Recording:  # the eval mode, its inputs and outputs recorded
        def __init__(self, mode):
            self.mode = mode
            self.reset, self.episode_start = mode.reset, mode.episode_start

        def forward(self, obs):
            out = self.mode.forward(obs)
            seen.append((obs.clone(), out['action'].clone()))
            return out

    evaluator = Evaluator(eval_env, Recording(policy.eval_mode), 4, None, 0)
    for _ in range(2):  # a second evaluation starts from fresh states too
        seen.clear()
        evaluator.run_episodes(4)
        model = policy.model
        with torch.no_grad():
            for reset_every in (4, None):
                state = model.initial_state(2)
                differs = False
                for step, (obs, action) in enumerate(seen):
                    if reset_every and step % reset_every == 0:
                        state = torch.zeros_like(state)
                    out = model.compute_actor(obs, state)
                    state = out['state']
                    if reset_every:
                        assert torch.allclose(out['mu'], action, atol=1e-6), step
                    else:
                        differs |= bool((out['mu'] - action).abs().max() > 1e-4)
                if not reset_every:
                    assert differs
    eval_env.close()


class InfoRecorder(LearnerHook):
    def __init__(self):
        self.infos = []

    def after_iter(self, learner, info):
        self.infos.append((learner.train_iter, dict(info)))


RECURRENT = ['env.env_id=cartpole_novel', 'env.collector_env_num=2', 'env.evaluator_env_num=1',
             'env.n_evaluator_episode=1', 'env.stop_value=None', 'policy.model.share_encoder=True',
             'policy.model.rnn.type=lstm', 'policy.model.rnn.hidden_size=16', 'policy.collect.n_sample=16',
             'policy.eval.evaluator.eval_freq=1000']
RESUME_CASES = [('cartpole_ppo.py', ['policy.learn.epoch_per_collect=3', 'policy.learn.batch_size=8',
                                     'policy.model.rnn.seq_len=4'], 7, 40),
                ('cartpole_a2c.py', [], 3, 12),
                ('cartpole_ppo.py', ['policy.model.share_encoder=False', 'policy.learn.epoch_per_collect=2',  # a core each
                                     'policy.learn.batch_size=8', 'policy.model.rnn.seq_len=4'], 5, 24)]


@pytest.mark.parametrize('config, extra, stop, total', RESUME_CASES)
def test_a_recurrent_run_stopped_mid_episode_resumes_bit_exactly(tmp_path, config, extra, stop, total):
    def train(name, **kwargs):
        recorder = InfoRecorder()
        serial_pipeline_onpolicy(config, seed=0, overrides=RECURRENT + extra, exp_dir=str(tmp_path / name),
                                 progress=False, learner_hooks=[recorder], **kwargs)
        return recorder
    whole = train('whole', max_train_iter=total)
    first_part = train('part', max_train_iter=stop)
    saved = torch.load(tmp_path / 'part' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    states = [v for k, v in _leaves(saved) if k.endswith('rnn.state')]
    assert states and states[0].abs().sum() > 0  # the actors' states, mid-episode, are in the checkpoint
    recorder = InfoRecorder()
    serial_pipeline_onpolicy(None, resume=str(tmp_path / 'part'), max_train_iter=total, progress=False,
                             learner_hooks=[recorder])
    assert first_part.infos == whole.infos[:stop]
    assert recorder.infos == whole.infos[stop:]  # every logged value, bit for bit


def _leaves(tree, prefix=''):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, f"{prefix}{key}.")
    else:
        yield prefix[:-1], tree


EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'examples')


def run_cli(args, capsys):
    from acframe.cli import main as cli_main
    code = cli_main(args)
    out, err = capsys.readouterr()
    return code, out, err


BAD = [
    (['-c', 'cartpole_impala.py', 'policy.model.rnn.type=lstm', 'policy.model.rnn.hiden_size=8'],
     'policy.model.rnn.hidden_size'),
    (['-c', 'cartpole_novel_acer_lstm.py', 'policy.model.rnn.burn_in=16'],
     'policy.model.rnn.burn_in=16 leaves no step to learn from'),
    (['-c', 'cartpole_novel_acer_lstm.py', '-m', 'parallel', '--backend', 'inline', 'policy.model.rnn.burn_in=20'],
     'policy.model.rnn.burn_in=20 leaves no step'),
    (['-c', 'cartpole_ppo.py', 'policy.model.share_encoder=True', 'policy.model.rnn.type=lstm',
      'policy.model.rnn.seq_len=5'], 'policy.model.rnn.seq_len=5 does not divide the 32 steps'),
    (['-c', 'cartpole_ppo.py', 'policy.model.share_encoder=True', 'policy.model.rnn.type=lstm',
      'policy.model.rnn.seq_len=16', 'policy.learn.batch_size=40'], 'policy.learn.batch_size=40 is not a multiple'),
    # whole rollouts of 1024 steps per env beside batch_size 64: the shorter sequence length that fits is offered
    (['-c', 'pendulum_ppo.py', 'policy.model.rnn.type=gru'], "set batch_size to a multiple of 1024, or "
                                                            "policy.model.rnn.seq_len=64 (it divides both)"),
    (['-c', 'cartpole_ppo.py', 'policy.model.rnn.type=rnn'],
     "config key 'policy.model.rnn.type' = 'rnn' is not one of 'lstm', 'gru' or None"),
    (['-c', 'cartpole_ppo.py', 'policy.model.rnn.type=LSTM'],
     "config key 'policy.model.rnn.type' = 'LSTM' is not one of 'lstm', 'gru' or None; did you mean 'lstm'?"),
    (['-c', 'cartpole_ppo.py', 'policy.model.rnn=None'],  # the section stays; its type=None is feed-forward
     "config key 'policy.model.rnn' must be a dict (a section of keys), got NoneType None; set one of its keys, "
     "e.g. policy.model.rnn.type=None"),
    (['-c', 'cartpole_ppo.py', 'policy.model.rnn.hiden_size=8'], "policy.model.rnn.hidden_size"),
    # the core asked for by another name, or by its type alone (a list of 23 valid keys answered them)
    (['-c', 'cartpole_ppo.py', "policy.model.lstm={'type': 'lstm'}"], "unknown config key 'policy.model.lstm' for "
                                                                      "model 'vac'; did you mean 'policy.model.rnn'?"),
    (['-c', 'cartpole_ppo.py', 'policy.model.rnn_type=gru'], "did you mean 'policy.model.rnn.type'?"),
    (['-c', 'cartpole_ppo.py', 'env=CartPole-v1'], "config key 'env' must be a dict (a section of keys), got str "
                                                   "'CartPole-v1'; set one of its keys, e.g. env.env_id='CartPole-v1'"),
    (['-c', 'cartpole_ppo.py', 'policy.model.rnn=lstm'], "config key 'policy.model.rnn' must be a dict (a section of "
                                                         "keys), got str 'lstm'; set one of its keys, e.g. "
                                                         "policy.model.rnn.type='lstm'"),
    # a policy without a recurrent form (the README's custom policy): refused by name, the dotted form too
    (['-c', os.path.join(EXAMPLES, 'custom_policy.py'), 'policy.model.rnn.type=lstm'],
     "policy.model.rnn.type='lstm': policy 'my_pg' has no recurrent form yet (ppo, a2c, impala and acer have) (its "
     "author opts in with supports_rnn = True on"),
    (['-c', os.path.join(EXAMPLES, 'custom_policy.py'), "policy.model.rnn={'type': 'gru'}"],
     "policy.model.rnn.type='gru': policy 'my_pg' has no recurrent form yet"),
    # a recurrent policy given a model without a core (a user's, registered below): refused before it is built
    (['-c', 'cartpole_ppo.py', 'policy.model.type=feed_forward_only_test', 'policy.model.rnn.type=lstm'],
     "policy.model.rnn.type='lstm': model 'feed_forward_only_test' has no recurrent core; use "
     "policy.model.type='vac' (this policy's default) or a model whose constructor takes rnn, or set "
     "policy.model.rnn.type=None"),
    (['-c', 'pendulum_acer.py', 'policy.model.type=feed_forward_only_test', 'policy.model.rnn.type=gru'],
     "use policy.model.type='acer_sdn' (this policy's default)"),
    # sb3-contrib's RecurrentPPO names, and a core's key one level too high, are answered with acframe's keys
    (['-c', 'cartpole_novel_ppo_lstm.py', 'policy.model.lstm_hidden_size=32'],
     "that is sb3-contrib's RecurrentPPO name; acframe's is 'policy.model.rnn.hidden_size'"),
    (['-c', 'cartpole_novel_ppo_lstm.py', 'policy.model.enable_critic_lstm=True'],
     "acframe's is 'policy.model.share_encoder' (its default True with shared_lstm=False is share_encoder=False"),
    (['-c', 'cartpole_novel_ppo_lstm.py', 'policy.model.hidden_size=32'], "did you mean 'policy.model.rnn.hidden_size'?"),
    # burn-in is ACER's (its replayed windows start from stored states); PPO's sequences start from the actors' own
    (['-c', 'cartpole_novel_ppo_lstm.py', 'policy.model.rnn.burn_in=4'], "a key of policy acer, not of this one"),
]


def test_a_recurrent_model_whose_unroll_takes_no_ends_serves_a_policy_that_asks_for_its_faster_unroll(tmp_path, capsys):
    """PPO asks ``unroll(..., ends=False)`` where it values no final observation; ACER's model (``acer_q``: logit and
    value, and an ``unroll(obs, state, starts)`` that always gives the fragment-end states) is unrolled plainly."""
    exp_dir = tmp_path / 'run'
    code, out, err = run_cli(['-c', 'cartpole_ppo.py', '--exp-dir', str(exp_dir), '-q', '--max-env-step', '600',
                              'policy.model.type=acer_q', 'policy.model.rnn.type=lstm'], capsys)
    assert code == 0, err
    assert json.loads((exp_dir / 'summary.json').read_text())['train_iters'] > 0


def test_whether_a_models_unroll_takes_ends_is_read_through_a_wrapper_that_forwards_it():
    from acframe.policy.base import _takes_keyword

    class Plain:
        def unroll(self, obs, state, starts):
            return {}

    class Forwarding:  # a wrapper of a user's (its class defines no unroll)
        def __init__(self, model):
            self.model = model

        def __getattr__(self, name):
            return getattr(self.model, name)

    assert not _takes_keyword(Forwarding(Plain()).unroll, 'ends') and not _takes_keyword(Plain().unroll, 'ends')
    assert _takes_keyword(lambda obs, state, starts, **kwargs: None, 'ends') and not _takes_keyword(len, 'ends')


@MODEL_REGISTRY.register('feed_forward_only_test')
class FeedForwardOnly(torch.nn.Module):
    """A user's model with no recurrent core (its constructor takes no ``rnn``)."""

    def __init__(self, obs_shape, action_shape):
        super().__init__()


@pytest.mark.parametrize('args, message', BAD)
def test_what_cannot_work_is_refused_with_one_line_and_exit_2(tmp_path, capsys, args, message):
    exp_dir = tmp_path / 'run'
    code, out, err = run_cli(args[:2] + ['--exp-dir', str(exp_dir), '-q'] + args[2:], capsys)
    assert code == 2, err
    assert err.count('\n') == 1 and err.startswith('acframe: error: ') and message in err, err
    assert not exp_dir.exists()


@pytest.mark.parametrize('theirs, ours, words', [
    (dict(type='lstm'), dict(type='gru'), "the checkpoint's model has an LSTM core of 16 units, 1 layer, this config's "
                                          "has a GRU core of 16 units, 1 layer (policy.model.rnn)"),
    (dict(type='gru', num_layers=2), dict(type=None), "the checkpoint's model has a GRU core of 16 units, 2 layers, "
                                                      "this config's has no recurrent core (policy.model.rnn)"),
    (dict(type='lstm', hidden_size=4), dict(type='lstm'), "the checkpoint's model has an LSTM core of 4 units, 1 layer, "
                                                          "this config's has an LSTM core of 16 units, 1 layer"),
    (dict(type='lstm', share=False), dict(type='lstm'), "the checkpoint's model has a core each for actor and critic, "
                                                        "this config's has one core for both (policy.model.share_encoder)"),
    # the same core, another env (3 continuous observations, not 2, and a Gaussian head): what differs, by kind
    (dict(type='lstm', env_id='Pendulum-v1'), dict(type='lstm'), "the checkpoint has 1 weight this model lacks "
                                                                 "(e.g. log_sigma); 4 weights differ in shape (e.g. "
                                                                 "actor_encoder.0.weight: [16, 3] in the checkpoint, "
                                                                 "[16, 2] here)"),
])
def test_weights_of_another_model_are_refused_naming_what_differs(theirs, ours, words):
    from acframe.errors import CheckpointError
    theirs = dict(theirs)
    env_id, share = theirs.pop('env_id', 'cartpole_novel'), theirs.pop('share', True)
    weights = build(env_id=env_id, rnn=dict(RNN, **theirs), share=share)[2].get_weights()
    _, env, policy = build(rnn=dict(RNN, **ours))
    env.close()
    with pytest.raises(CheckpointError) as info:
        policy.load_weights(weights)
    assert words in str(info.value) and str(info.value).endswith('use the config the checkpoint was trained with')
    assert '\n' not in str(info.value)


def test_core_keys_without_a_core_warn_that_the_run_is_feed_forward(tmp_path, capsys):
    from acframe.errors import ConfigWarning
    with pytest.warns(ConfigWarning) as record:
        code, out, err = run_cli(['-c', 'cartpole_ppo.py', '--exp-dir', str(tmp_path / 'run'), '-q', '--max-train-iter',
                                  '2', 'policy.model.rnn.seq_len=5', 'policy.model.rnn.input_norm=True'], capsys)
    assert code == 0, err
    # once, though the pipeline compiles the config again
    assert [str(w.message) for w in record if issubclass(w.category, ConfigWarning)] == [
        "policy.model.rnn: input_norm=True, seq_len=5 configure a recurrent core and there is none "
        "(policy.model.rnn.type=None): the run is feed-forward; set policy.model.rnn.type=lstm or gru for a core"]
    # a core turned off on purpose says nothing: a recurrent file's feed-forward baseline, a stored run's config
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter('error', ConfigWarning)
        compile_config('cartpole_novel_ppo_lstm.py', ['policy.model.rnn.type=None'])
        compile_config(('cue_memory_ppo_gru.py'), ["policy.model.rnn={'type': None, 'hidden_size': 8}"])
        code, out, err = run_cli(['--resume', str(tmp_path / 'run'), '--max-train-iter', '3', '-q'], capsys)
    assert code == 0, err


def test_a_recurrent_run_is_evaluated_and_loaded_for_acting_one_env_at_a_time(tmp_path, capsys):
    import gymnasium as gym
    from acframe import load_policy
    from acframe.envs.gym_env import KeepObservationEntries
    run = tmp_path / 'run'
    code, _, err = run_cli(['-c', 'cartpole_a2c.py', '--exp-dir', str(run), '--max-train-iter', '4', '-q',
                            *RECURRENT], capsys)
    assert code == 0, err
    code, out, err = run_cli(['-m', 'eval', '--load', str(run), '-q'], capsys)
    assert code == 0, err
    loaded = load_policy(str(run))
    model = loaded.policy.model
    env = KeepObservationEntries(gym.make('CartPole-v1'), (0, 2))
    for episode in range(2):
        obs, _ = env.reset(seed=episode)
        loaded.reset()
        state = model.initial_state(1)
        for _ in range(5):
            action = loaded.act(obs)
            with torch.no_grad():
                out = model.compute_actor(torch.as_tensor(obs)[None], state)
            state = out['state']
            assert action == int(out['logit'].argmax())
            obs = env.step(action)[0]
    with pytest.raises(ValueError, match='reset'):
        loaded.act(np.zeros((3, 2), dtype=np.float32))
    loaded.reset()
    assert loaded.act(np.zeros((3, 2), dtype=np.float32)).shape == (3,)  # after reset(): states for 3 envs


def test_a_loaded_recurrent_policy_resets_some_envs_of_a_batch(tmp_path, capsys):
    """``reset(envs)`` (indices or a bool array, sb3-contrib's ``episode_start``): those rows act from the zero state
    at the next ``act``, the others keep theirs -- as the explicit form with zeros put back in those rows."""
    from acframe import load_policy
    run = tmp_path / 'run'
    code, _, err = run_cli(['-c', 'cartpole_a2c.py', '--exp-dir', str(run), '--max-train-iter', '4', '-q',
                            *RECURRENT], capsys)
    assert code == 0, err
    loaded = load_policy(str(run))
    rng = np.random.default_rng(0)
    state = loaded.initial_state(4)
    loaded.reset([7])  # before the first act there is nothing to keep: every env starts there anyway
    for starts in (None, [1], np.array([True, False, False, True]), [], None, np.array([2, 0]), np.int64(3)):
        obs = rng.normal(size=(4, 2)).astype(np.float32)
        if starts is not None:
            loaded.reset(starts)
            rows = np.flatnonzero(starts) if np.asarray(starts).dtype == bool else np.asarray(starts, dtype=int)
            state[rows] = 0
        action, state = loaded.act(obs, state)  # the explicit form: the reference
        assert np.array_equal(loaded.act(obs), action)
        assert np.array_equal(loaded.policy._eval_states.state.numpy(), state)  # the states it keeps, row by row
    with pytest.raises(ValueError, match=r'env 4 is not one of the 4 envs'):
        loaded.reset([4])
    with pytest.raises(ValueError, match=r'env -1 is not one of the 4 envs'):
        loaded.reset([-1])
    with pytest.raises(ValueError, match=r'a bool array of 2 envs for a policy acting for 4'):
        loaded.reset(np.array([True, False]))
    with pytest.raises(ValueError, match='indices of the envs'):
        loaded.reset(np.zeros((2, 2), dtype=int))
    with pytest.raises(ValueError, match=r'env 0 is named 2 times; give each index once, or the episode starts as a '
                                         r'bool array'):
        loaded.reset(np.array([0, 1, 0, 1]))  # dones.astype(int): flags, not indices
    with pytest.raises(ValueError, match='reset'):  # still 4 envs until reset()
        loaded.act(np.zeros((3, 2), dtype=np.float32))
    loaded.reset()  # no states held: what is given is checked all the same (it was taken without a word)
    with pytest.raises(ValueError, match=r'env 0 is named 2 times'):
        loaded.reset(np.array([0, 0, 1, 1, 1]))
    with pytest.raises(ValueError, match=r'env -2 is not an env index'):
        loaded.reset([-2])
    loaded.reset(np.array([True, False, True]))  # (any number of flags: the next act says how many envs)
    # (the exported step with the state in and out: tests/test_export.py)


def test_a_recurrent_run_is_filmed_by_eval_video_one_frame_per_step(tmp_path, capsys):
    """``-m eval --video`` of a recurrent run, as a user runs it (a fresh interpreter): an mp4 per counted episode,
    each with a frame per step of the episode the state-carrying policy played."""
    pytest.importorskip('imageio_ffmpeg', reason='--video needs the video extra (pip install acframe[video])')
    import subprocess
    import sys

    import imageio_ffmpeg

    run, videos = tmp_path / 'run', tmp_path / 'videos'
    code, _, err = run_cli(['-c', 'cartpole_a2c.py', '--exp-dir', str(run), '--max-train-iter', '2', '-q',
                            *RECURRENT], capsys)
    assert code == 0, err
    out = subprocess.run([sys.executable, '-m', 'acframe.cli', '-m', 'eval', '--load', str(run), '--episodes', '1',
                          '--video', str(videos), '--out', str(tmp_path / 'r.json')], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    [length] = json.loads((tmp_path / 'r.json').read_text())['lengths']
    [video] = videos.glob('*.mp4')
    assert length <= imageio_ffmpeg.count_frames_and_secs(str(video))[0] <= length + 1


def test_the_core_sits_after_a_pixel_and_dict_encoder(tmp_path):
    """toy_pixel_goal (a uint8 image with a vector, IMPALA ResNet encoder): PPO with a GRU collects, learns in
    sequences and evaluates."""
    main = dict(env=dict(env_id='toy_pixel_goal', collector_env_num=4, evaluator_env_num=1, n_evaluator_episode=1,
                         stop_value=None),
                policy=dict(model=dict(encoder='impala_resnet', encoder_channels=[4], encoder_hidden_size_list=[16],
                                       vector_hidden_size_list=[8], rnn=dict(type='gru', hidden_size=8, seq_len=8)),
                            collect=dict(n_sample=64), learn=dict(batch_size=16, epoch_per_collect=2),
                            eval=dict(evaluator=dict(eval_freq=0))))
    create = dict(env=dict(type='toy_pixel_goal'), policy=dict(type='ppo'))
    policy = serial_pipeline_onpolicy((main, create), seed=0, max_env_step=128, exp_dir=str(tmp_path / 'goal'),
                                      progress=False)
    assert policy.summary['train_iters'] == 2 * 2 * 4  # 2 rollouts x 2 epochs x (8 sequences / 2 per minibatch)
    assert policy.model.core is not None


PIXEL_CORE = ['env.type=toy_pixel_goal', 'env.env_id=toy_pixel_goal', 'env.collector_env_num=4',
              'env.evaluator_env_num=1', 'env.n_evaluator_episode=1', 'env.stop_value=None',
              'policy.model.encoder=impala_resnet', 'policy.model.encoder_channels=[4]',
              'policy.model.encoder_hidden_size_list=[16]', 'policy.model.vector_hidden_size_list=[8]',
              'policy.model.share_encoder=True', 'policy.model.rnn.hidden_size=8', 'policy.eval.evaluator.eval_freq=0']


@pytest.mark.parametrize('config, extra', [
    ('cartpole_a2c.py', ['policy.model.rnn.type=lstm', 'policy.collect.n_sample=32']),
    ('cartpole_impala.py', ['policy.model.rnn.type=gru', 'policy.collect.n_sample=4', 'policy.learn.batch_size=4']),
    ('cartpole_acer.py', ['policy.model.rnn.type=lstm', 'policy.model.rnn.burn_in=2', 'policy.collect.n_sample=4',
                          'policy.learn.batch_size=2', 'policy.other.replay_buffer.unroll_len=8',
                          'policy.other.replay_buffer.replay_start_size=8']),
], ids=['a2c', 'impala', 'acer'])
def test_each_algorithm_takes_the_core_after_a_pixel_and_dict_encoder(tmp_path, config, extra):
    """The other three algorithms on toy_pixel_goal's uint8 image and vector: collect, learn from the stored states,
    checkpoint and evaluate; the run's policy then acts on the env's Dict observation with its state."""
    from acframe import load_policy
    from acframe.entry.serial import serial_pipeline as off_policy
    from acframe.envs import build_env

    pipeline = serial_pipeline_onpolicy if config == 'cartpole_a2c.py' else off_policy
    exp_dir = str(tmp_path / 'run')
    policy = pipeline(config, seed=0, overrides=PIXEL_CORE + extra, max_env_step=320, exp_dir=exp_dir, progress=False)
    assert policy.model.core is not None and policy.summary['train_iters'] > 0
    assert policy.summary['last_eval_return'] is not None
    loaded = load_policy(exp_dir)
    env = build_env(dict(type='toy_pixel_goal', env_id='toy_pixel_goal'), 0, 0, 'evaluator')
    obs, _ = env.reset(seed=1)
    action, state = loaded.act(obs, loaded.initial_state())
    assert env.action_space.contains(int(action)) and np.abs(state).sum() > 0  # a state from the image and vector
    env.close()


@pytest.mark.parametrize('kind', ['lstm', 'gru'])
def test_the_modes_act_on_a_dict_observation_given_as_the_tree_a_gpu_copy_makes(kind):
    """On its way to a GPU a Dict observation becomes a treetensor tree (``to_device``): collect and eval count its
    envs and act on it as on the dict, from the same states (a GPU run's first evaluation failed on the tree)."""
    from acframe.data.tree import make_tree
    from acframe.envs import build_env

    cfg = compile_config('cartpole_impala.py', overrides=PIXEL_CORE + [f'policy.model.rnn.type={kind}'], seed=0)
    env = build_env(dict(type='toy_pixel_goal', env_id='toy_pixel_goal'), 0, 0, 'evaluator')
    obs, _ = env.reset(seed=0)
    batch = {k: torch.as_tensor(np.stack([v, v, v])) for k, v in obs.items()}
    torch.manual_seed(0)
    policy = create_policy(cfg, env.observation_space, env.action_space, enable_field=('collect', 'eval'))
    env.close()
    for mode in (policy.collect_mode, policy.eval_mode):
        with torch.no_grad():
            torch.manual_seed(1)
            as_dict = mode.forward(dict(batch))
            mode.reset()
            torch.manual_seed(1)
            as_tree = mode.forward(make_tree(dict(batch)))
        assert torch.equal(as_dict['action'], as_tree['action'])
        if 'rnn_state' in as_dict:
            assert torch.equal(as_dict['rnn_state'], as_tree['rnn_state'])


def test_the_cue_task_is_solved_with_memory_and_not_without(tmp_path):
    """dizoo_configs/cue_memory_ppo_gru.py: with its GRU, seeds 0-5 solved (all 20 greedy episodes rewarded, confirmed
    on 50 fresh ones) at 6.1k-10.2k env steps (its docstring); the budget here is three times the slowest. Without the
    core the last observation is the same for both cues: chance (0.5), never solved."""
    solved = {}
    for kind in ('gru', None):
        policy = serial_pipeline_onpolicy('cue_memory_ppo_gru.py', seed=0, max_env_step=30_720,
                                          overrides=[f'policy.model.rnn.type={kind}'],
                                          exp_dir=str(tmp_path / str(kind)), progress=False)
        solved[kind] = policy.summary['solved']
    assert solved == {'gru': True, None: False}


# ---- IMPALA: replayed unrolls carry the state at their first step ------------------------------------------------
def build_impala(kind='lstm', env_id='cartpole_novel', limit=LIMIT, unroll=10, share=True, norm=False):
    main = dict(env=dict(env_id=env_id, collector_env_num=B, max_episode_steps=limit),
                policy=dict(unroll_len=unroll, model=dict(encoder_hidden_size_list=[16], share_encoder=share,
                                                          rnn=dict(RNN, type=kind, input_norm=norm)),
                            collect=dict(n_sample=B * 3), learn=dict(batch_size=B * 3)))
    cfg = compile_config((main, dict(env=dict(type='gym'), policy=dict(type='impala'))), seed=0)
    env = make_env_manager(cfg, 'collector', B, cfg.seed)
    torch.manual_seed(0)
    return cfg, env, create_policy(cfg, env.observation_space, env.action_space)


@pytest.mark.parametrize('kind, env_id, share, norm', [('lstm', 'cartpole_novel', True, False),
                                                        ('gru', 'Pendulum-v1', True, False),
                                                        ('lstm', 'Pendulum-v1', False, False),
                                                        ('lstm', 'cartpole_novel', True, True)])
def test_impala_recomputes_replayed_unrolls_from_their_first_state(kind, env_id, share, norm):
    """Unrolls of 10 steps through the replay buffer: each keeps only its first state ``(1, B, R, H)``; the learner's
    recompute from it, starts inside masked, gives the actors' statistics (so V-trace's ratios are 1) and values."""
    _, env, policy = build_impala(kind, env_id, limit=LIMIT if env_id != 'Pendulum-v1' else 7, share=share, norm=norm)
    collector = SampleCollector(env, policy.collect_mode, B * 3)  # 3 unrolls of 10 steps per env
    collector.collect(5)  # the next segment starts mid-episode
    segment = collector.collect()
    env.close()
    samples = policy.collect_mode.get_train_sample(segment)
    rows = policy.model.initial_state(1).shape[1]  # (both cores' rows when the critic has its own)
    assert tuple(samples.rnn_state.shape) == (B * 3, 1, rows, 16)  # the state at each unroll's first step only
    buffer = ReplayBuffer(100)
    buffer.push(samples)
    batch = buffer.sample(B * 3)  # every unroll, time-major, in the order pushed (the buffer sorts its picks)
    assert tuple(batch.rnn_state.shape) == (1, B * 3, rows, 16)
    assert batch.episode_start[1:].any() and batch.truncated.any() and batch.rnn_state.abs().sum() > 0
    with torch.no_grad():
        out = policy._evaluate_rollout(batch)
    for key in stats_keys(policy):
        torch.testing.assert_close(out[key][:-1], batch[key], rtol=0, atol=1e-5)
    # the same unrolls stepped one step at a time from the segment's per-step states (the actors' computation)
    steps = segment.rnn_state.shape[0]
    with torch.no_grad():
        stepped = policy.model.compute_critic(segment.obs[:-1].reshape(steps * B, -1),
                                              segment.rnn_state.reshape(steps * B, rows, 16))['value'].view(steps, B)
    # unroll k of env b is sample k * B + b (split_segment), its steps k*10 .. k*10+9
    values = out['value'][:-1].reshape(10, 3, B).permute(1, 0, 2).reshape(30, B)
    torch.testing.assert_close(values, stepped, rtol=0, atol=1e-5)
    info = policy.learn_mode.forward(batch)
    assert abs(info['mean_rho'] - 1.0) < 1e-5  # the learner's π is the actors' μ: the recompute is exact


OFF_POLICY_SMALL = ['env.collector_env_num=2', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1',
                    'env.stop_value=None', 'policy.model.rnn.hidden_size=16', 'policy.collect.n_sample=2',
                    'policy.learn.batch_size=4', 'policy.eval.evaluator.eval_freq=1000',
                    'policy.other.replay_buffer.save_in_checkpoint=True']
IMPALA_LSTM = ['env.env_id=cartpole_novel', 'policy.model.share_encoder=True', 'policy.model.rnn.type=lstm',
               'policy.learn.update_per_collect=2']
OFF_POLICY_RESUME_CASES = {
    # stopped mid-round (13 is odd, update_per_collect=2): the buffer's unrolls keep their first states
    'impala': ('cartpole_impala.py', IMPALA_LSTM, 13, 30),
    # learning in a second thread while the next segment is collected (pong_impala_lstm.py's way)
    'impala_learner_thread': ('cartpole_impala.py', IMPALA_LSTM + ['policy.learn.learner_thread=True'], 13, 30),
    # episodic replay of sub-trajectories from their stored start states, with a burn-in
    'acer_burn_in': ('cartpole_novel_acer_lstm.py', ['policy.other.replay_buffer.unroll_len=8',
                                                     'policy.other.replay_buffer.replay_start_size=32',
                                                     'policy.model.rnn.burn_in=2'], 23, 60),
}


@pytest.mark.parametrize('case', list(OFF_POLICY_RESUME_CASES))
def test_an_off_policy_recurrent_run_resumes_bit_exactly_mid_episode(tmp_path, case):
    """The serial off-policy pipeline (IMPALA, ACER), stopped mid-episode: the actors' states and the replayed
    segments' start states are in the checkpoint, and the resumed run logs what the unbroken one logged."""
    config, extra, stop, total = OFF_POLICY_RESUME_CASES[case]

    def train(name, **kwargs):
        recorder = InfoRecorder()
        serial_pipeline(config, seed=0, overrides=OFF_POLICY_SMALL + extra, exp_dir=str(tmp_path / name),
                        progress=False, learner_hooks=[recorder], **kwargs)
        return recorder
    whole = train('whole', max_train_iter=total)
    first_part = train('part', max_train_iter=stop)
    saved = torch.load(tmp_path / 'part' / 'ckpt' / 'ckpt_latest.pth', weights_only=True)
    states = [v for k, v in _leaves(saved) if k.endswith('rnn.state')]
    assert states and states[0].abs().sum() > 0
    recorder = InfoRecorder()
    serial_pipeline(None, resume=str(tmp_path / 'part'), max_train_iter=total, progress=False,
                    learner_hooks=[recorder])
    assert len(whole.infos) == total and first_part.infos == whole.infos[:stop]
    assert recorder.infos == whole.infos[stop:]


class _BrokenUnroll:
    """A recurrent VAC whose ``unroll`` (the learner's recompute) breaks the contract its steps keep: ``bug``."""

    def __init__(self, *args, bug='', **kwargs):
        super().__init__(*args, **kwargs)
        self.bug = bug

    def unroll(self, obs, state, starts, ends=True):
        out = super().unroll(obs, state, starts, ends)
        if self.bug == 'narrow':
            out['logit'] = out['logit'][:, :-1]
        elif self.bug == 'unsqueezed':
            out['value'] = out['value'][:, None]
        elif self.bug == 'no_value':
            del out['value']
        return out


@pytest.mark.parametrize('policy_type, bug, message', [
    ('ppo', 'narrow', r"unroll gave 'logit' 1 wide; the action space needs 2 actions \(check the model's action_shape\)"),
    ('a2c', 'unsqueezed', r"unroll gave 'value' of shape \(\d+, 1\); a value is one number per observation, "
                          r"\(\d+,\) here \(squeeze its last dim\)"),
    ('impala', 'no_value', r"unroll gave no 'value' \(its keys: logit, ends\); the learn mode of policy 'impala' reads "
                           r"'value'"),
])
def test_a_recurrent_models_unroll_is_checked_against_the_contract_as_its_steps_are(tmp_path, policy_type, bug, message):
    """The learner's recompute (``unroll``) went unchecked where the collect and eval steps were checked: a logit
    short of the action space was a shape error deep in a loss, a ``(T*B, 1)`` value broadcast into the advantages
    without a word. One line naming the model and the contract, before the first update: no folder."""
    from acframe.errors import PolicyError
    from acframe.models.vac import VAC

    name = f'broken_unroll_{bug}_test'
    MODEL_REGISTRY.register(name, type('BrokenUnroll', (_BrokenUnroll, VAC), {}), force=True)
    run = serial_pipeline if policy_type == 'impala' else serial_pipeline_onpolicy
    try:
        with pytest.raises(PolicyError, match=r"the model \(.*BrokenUnroll\) " + message + r" \(the model contract: "
                                              r"docs/custom_policy.md\)$"):
            run(f'cartpole_novel_{policy_type}_lstm.py', overrides=[f'policy.model.type={name}',
                                                                    f'policy.model.bug={bug}'],
                exp_dir=str(tmp_path / 'run'), max_env_step=3000, progress=False)
    finally:
        MODEL_REGISTRY._entries.pop(name, None)
    assert not (tmp_path / 'run').exists()


BUILT = []


class CountedCartPole:
    """CartPole whose construction is recorded (a gymnasium entry point)."""

    def __new__(cls, **kwargs):
        import gymnasium as gym
        BUILT.append(1)
        return gym.make('CartPole-v1', **kwargs).unwrapped


def test_what_the_policy_refuses_is_said_before_any_env_is_built(tmp_path):
    """The refusal needs no env (a burn-in that leaves no step of ACER's windows): an env was built first (its
    warnings, a simulator's start-up, printed before the one line)."""
    import gymnasium as gym

    from acframe.errors import ConfigError

    gym.register('CountedCartPole-v0', entry_point=f'{__name__}:CountedCartPole', max_episode_steps=50)
    BUILT.clear()
    with pytest.raises(ConfigError, match=r"^policy.model.rnn.burn_in=5 leaves no step to learn from"):
        serial_pipeline('cartpole_acer.py', overrides=['env.env_id=CountedCartPole-v0', 'env.stop_value=None',
                                                       'policy.model.rnn.type=gru', 'policy.model.rnn.burn_in=5'],
                        exp_dir=str(tmp_path / 'run'), max_env_step=100, progress=False)
    assert BUILT == [] and not (tmp_path / 'run').exists()


# ---- a recurrent model of one's own (policy.model.type, rnn.type None) ----------------------------------------------
class ElmanModel(torch.nn.Module):
    """A user's recurrent actor-critic: an Elman tanh core of its own, selected by ``policy.model.type``; it takes
    ``**kwargs`` (so whatever else the config passes would reach it unread)."""

    recurrent = True

    def __init__(self, obs_shape, action_shape, hidden_size=8, **kwargs):
        super().__init__()
        self.hidden_size = hidden_size
        self.w_x = torch.nn.Linear(int(np.prod(obs_shape)), hidden_size)
        self.w_h = torch.nn.Linear(hidden_size, hidden_size, bias=False)
        self.actor, self.critic = torch.nn.Linear(hidden_size, int(action_shape)), torch.nn.Linear(hidden_size, 1)

    def initial_state(self, batch, device=None):
        return torch.zeros(batch, 1, self.hidden_size, device=device)

    def forward(self, obs, mode='compute_actor_critic', state=None):
        state = self.initial_state(obs.shape[0]) if state is None else state
        h = torch.tanh(self.w_x(obs.float()) + self.w_h(state[:, 0]))
        return {'logit': self.actor(h), 'value': self.critic(h).squeeze(-1), 'state': h[:, None]}

    def unroll(self, obs, state, starts, ends=True):
        steps, batch = starts.shape
        x, h, hs = self.w_x(obs.float()).reshape(steps, batch, -1), state[:, 0], []
        for t in range(steps):
            h = torch.tanh(x[t] + self.w_h(torch.where(starts[t, :, None], torch.zeros_like(h), h)))
            hs.append(h)
        hs = torch.stack(hs).reshape(steps * batch, -1)
        out = {'logit': self.actor(hs), 'value': self.critic(hs).squeeze(-1)}
        return dict(out, ends=hs[:, None]) if ends else out


class ElmanWithoutUnroll(ElmanModel):
    unroll = None


class ElmanWithoutInitialState(ElmanModel):
    initial_state = None


OWN_RNN = ['policy.model.type=elman_own_test', 'env.collector_env_num=4', 'policy.collect.n_sample=64',
           'policy.learn.batch_size=32', 'policy.learn.epoch_per_collect=2', 'env.evaluator_env_num=1',
           'env.n_evaluator_episode=1']


@pytest.fixture
def own_models():
    for name, cls in (('elman_own_test', ElmanModel), ('elman_no_unroll_test', ElmanWithoutUnroll),
                      ('elman_no_initial_state_test', ElmanWithoutInitialState)):
        MODEL_REGISTRY.register(name, cls, force=True)
    yield
    for name in ('elman_own_test', 'elman_no_unroll_test', 'elman_no_initial_state_test'):
        MODEL_REGISTRY._entries.pop(name, None)


@pytest.mark.parametrize('extra, message', [
    (['policy.learn.batch_size=24'], r"^policy.learn.batch_size=24 is not a multiple of the sequence length 16 "),
    (['policy.model.rnn.seq_len=5'], r"^policy.model.rnn.seq_len=5 does not divide the 16 steps each env collects "),
    (['policy.model.rnn.type=lstm'], r"^policy.model.rnn.type='lstm' asks for acframe's recurrent core, and model "
                                     r"'elman_own_test' is recurrent of its own and takes no rnn "),
    (['policy.model.type=elman_no_unroll_test'], r"^model 'elman_no_unroll_test' \(.*ElmanWithoutUnroll\) is recurrent "
                                                 r"\(its 'recurrent' attribute is True\) and defines no unroll: "),
    (['policy.model.type=elman_no_initial_state_test'], r"^model 'elman_no_initial_state_test' .* defines no "
                                                        r"initial_state: "),
])
def test_a_recurrent_model_of_ones_own_is_checked_as_acframes_core_is(tmp_path, own_models, extra, message):
    """Its sequences are cut by policy.model.rnn.seq_len as the core's are, so they are checked alike (a batch_size
    that was no multiple of them trained on odd minibatches; a seq_len that did not divide the rollout became whole
    columns); acframe's core asked for beside it reached its **kwargs unread; a model that says it is recurrent and
    lacks initial_state or unroll was a traceback at the first gradient step with the folder left behind."""
    from acframe.errors import ConfigError

    with pytest.raises(ConfigError, match=message):
        serial_pipeline_onpolicy('cartpole_novel_ppo_lstm.py', overrides=OWN_RNN + ['policy.model.rnn.type=None']
                                 + extra, exp_dir=str(tmp_path / 'run'), max_env_step=128, progress=False)
    assert not (tmp_path / 'run').exists()


def test_a_recurrent_model_of_ones_own_trains_on_its_seq_len_and_the_cores_keys_are_said_to_configure_nothing(
        tmp_path, own_models):
    import warnings

    from acframe.errors import ConfigWarning

    with warnings.catch_warnings():
        warnings.simplefilter('error', ConfigWarning)  # (seq_len cuts its sequences: not a key that configures nothing)
        policy = serial_pipeline_onpolicy('cartpole_ppo.py', overrides=OWN_RNN + ['policy.model.rnn.seq_len=8'],
                                          exp_dir=str(tmp_path / 'run'), max_env_step=128, progress=False)
    assert isinstance(policy.model, ElmanModel)
    assert policy._seq_len(16) == 8  # 2 rollouts x 2 epochs x 2 minibatches of 4 sequences of 8 steps
    assert json.loads((tmp_path / 'run' / 'summary.json').read_text())['train_iters'] == 8
    with pytest.warns(ConfigWarning, match=r"^policy.model.rnn: hidden_size=32 configures acframe's recurrent core, and "
                                           r"model 'elman_own_test' is recurrent of its own \(policy.model.rnn.type="
                                           r"None\): it configures nothing"):
        compile_config('cartpole_ppo.py', OWN_RNN + ['policy.model.rnn.hidden_size=32'])


class ElmanByInstance(ElmanModel):
    """Recurrent or not as its constructor is told: the class says neither."""

    recurrent = property(lambda self: self._recurrent)

    def __init__(self, obs_shape, action_shape, hidden_size=8, recurrent=True, **kwargs):
        super().__init__(obs_shape, action_shape, hidden_size)
        self._recurrent = recurrent


def test_a_model_recurrent_per_instance_is_refused_before_its_sequences_pass_unchecked(tmp_path):
    """The start-up checks read the registered class: one whose instances say it (a property) trained on minibatches
    cut anywhere, as a feed-forward model's are."""
    from acframe.errors import ConfigError

    MODEL_REGISTRY.register('elman_by_instance_test', ElmanByInstance, force=True)
    try:
        with pytest.raises(ConfigError, match=r"^model 'elman_by_instance_test' \(.*ElmanByInstance\) is recurrent as "
                                              r"built .* set recurrent = True on the class"):
            serial_pipeline_onpolicy('cartpole_ppo.py', overrides=OWN_RNN + ['policy.model.type=elman_by_instance_test'],
                                     exp_dir=str(tmp_path / 'run'), max_env_step=128, progress=False)
        assert not (tmp_path / 'run').exists()
    finally:
        MODEL_REGISTRY._entries.pop('elman_by_instance_test', None)


def test_a_policy_whose_default_model_is_recurrent_by_class_builds_it(tmp_path):
    """A policy of one's own whose default_model names a registered class saying recurrent = True (no
    policy.model.type in the config) was refused as 'recurrent as built ... its class does not say so'."""
    from acframe import POLICY_REGISTRY
    from acframe.policy.ppo import PPOPolicy

    class ElmanPPO(PPOPolicy):
        def default_model(self):
            return 'elman_default_test', {}

    MODEL_REGISTRY.register('elman_default_test', ElmanModel, force=True)
    POLICY_REGISTRY.register('elman_ppo_test', ElmanPPO, force=True)
    try:
        policy = serial_pipeline_onpolicy('cartpole_ppo.py', overrides=OWN_RNN[1:] + ['policy.type=elman_ppo_test'],
                                          exp_dir=str(tmp_path / 'run'), max_env_step=128, progress=False)
        assert isinstance(policy.model, ElmanModel)
    finally:
        MODEL_REGISTRY._entries.pop('elman_default_test', None)
        POLICY_REGISTRY._entries.pop('elman_ppo_test', None)


class StrictElman(ElmanModel):
    """A recurrent model of one's own whose constructor takes no ``**kwargs`` (and so no ``rnn``)."""

    def __init__(self, obs_shape, action_shape, hidden_size=8):
        super().__init__(obs_shape, action_shape, hidden_size)


def test_a_recurrent_model_given_in_python_is_checked_and_trained_as_a_recurrent_config_is(tmp_path):
    """``model=`` (an instance) is what the run trains, so it decides: its seq_len was silently whole columns, a
    batch_size no multiple of it gave odd minibatches, and its seq_len was said to configure a feed-forward run."""
    import warnings

    from acframe.errors import ConfigError, ConfigWarning

    small = OWN_RNN[1:] + ['policy.model.rnn.type=None']
    with pytest.raises(ConfigError, match=r"^policy.model.rnn.seq_len=5 does not divide the 16 steps each env "):
        serial_pipeline_onpolicy('cartpole_novel_ppo_lstm.py', overrides=small + ['policy.model.rnn.seq_len=5'],
                                 model=ElmanModel(2, 2), exp_dir=str(tmp_path / 'run'), max_env_step=128,
                                 progress=False)
    assert not (tmp_path / 'run').exists()
    with warnings.catch_warnings():
        warnings.simplefilter('error', ConfigWarning)
        policy = serial_pipeline_onpolicy('cartpole_ppo.py', overrides=OWN_RNN[1:] + ['policy.model.rnn.seq_len=8'],
                                          model=ElmanModel(4, 2), exp_dir=str(tmp_path / 'ok'), max_env_step=128,
                                          progress=False)
    assert policy._seq_len(16) == 8


def test_acframes_core_asked_for_beside_a_recurrent_model_without_kwargs_names_the_model_as_recurrent(tmp_path):
    from acframe.errors import ConfigError

    MODEL_REGISTRY.register('strict_elman_test', StrictElman, force=True)
    try:
        with pytest.raises(ConfigError, match=r"^policy.model.rnn.type='lstm' asks for acframe's recurrent core, and "
                                              r"model 'strict_elman_test' is recurrent of its own and takes no rnn; "):
            serial_pipeline_onpolicy('cartpole_novel_ppo_lstm.py', overrides=['policy.model.type=strict_elman_test'],
                                     exp_dir=str(tmp_path / 'run'), max_env_step=128, progress=False)
    finally:
        MODEL_REGISTRY._entries.pop('strict_elman_test', None)


class FeedForwardGiven(torch.nn.Module):
    """A feed-forward model of one's own, given as an instance."""

    def __init__(self, obs_size, actions):
        super().__init__()
        self.actor, self.critic = torch.nn.Linear(obs_size, actions), torch.nn.Linear(obs_size, 1)

    def forward(self, obs, mode='compute_actor_critic'):
        return {'logit': self.actor(obs.float()), 'value': self.critic(obs.float()).squeeze(-1)}


def test_a_given_model_decides_the_data_parallel_split_and_a_feed_forward_one_refuses_a_core(tmp_path):
    """The ranks' split of a given recurrent model's sequences (it was checked as feed-forward: 'batch_size=4 is not
    a multiple', a value the user never set); a feed-forward model given beside rnn.type='lstm' trained feed-forward
    without a word."""
    from acframe.errors import ConfigError

    small = OWN_RNN[1:] + ['policy.model.rnn.type=None']
    with pytest.raises(ConfigError, match=r"^policy.learn.batch_size=8 does not split evenly over "
                                          r"parallel.learner_num=2 ranks \(.* in whole sequences of 8 steps\); set it to a "
                                          r"multiple of 16"):
        serial_pipeline_onpolicy('cartpole_novel_ppo_lstm.py', model=ElmanModel(2, 2), max_env_step=128,
                                 overrides=small + ['policy.model.rnn.seq_len=8', 'policy.learn.batch_size=8',
                                                    'parallel.learner_num=2'], exp_dir=str(tmp_path / 'a'), progress=False)
    with pytest.raises(ConfigError, match=r"^policy.model.rnn.type='lstm': the model given \(FeedForwardGiven\) has no "
                                          r"recurrent core"):
        serial_pipeline_onpolicy('cartpole_novel_ppo_lstm.py', model=FeedForwardGiven(2, 2), overrides=OWN_RNN[1:],
                                 exp_dir=str(tmp_path / 'b'), max_env_step=128, progress=False)
    assert not (tmp_path / 'a').exists() and not (tmp_path / 'b').exists()


def test_a_recurrent_batch_is_read_from_any_container_that_carries_its_states():
    """(A namedtuple or an object with attributes was refused where a treetensor was read.)"""
    import collections
    import types

    from acframe.policy.base import _carries

    Batch = collections.namedtuple('Batch', 'obs rnn_state episode_start')
    for batch in (Batch(1, 2, 3), types.SimpleNamespace(rnn_state=1, episode_start=2), {'rnn_state': 1,
                                                                                       'episode_start': 2}):
        assert _carries(batch, 'rnn_state') and _carries(batch, 'episode_start')
    assert not _carries(torch.zeros(2), 'rnn_state') and not _carries({'obs': 1}, 'episode_start')
