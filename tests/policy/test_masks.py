"""Invalid-action masks (docs/masks.md): the masked distributions against a per-element reference, the masked path
against the plain one, whole runs of every algorithm on an env that raises on an illegal action, load_policy and
the exported policy, the no-legal-action error and bad input."""
import math
import re
import warnings
from collections import OrderedDict

import gymnasium as gym
import numpy as np
import pytest
import torch

import acframe
from acframe.cli import main
from acframe.config import compile_config
from acframe.config.defaults import ENV
from acframe.data import make_tree
from acframe.envs import build_env
from acframe.envs.masks import InfoActionMask
from acframe.errors import ConfigError, EnvContractError, EnvError
from acframe.models.distributions import Categorical, MultiCategorical, mask_logits
from acframe.policy import create_policy

ALGOS = ('ppo', 'a2c', 'impala', 'acer')


def random_masks(shape, generator, nvec=None):
    """0/1 masks ``shape`` with at least one legal action per row (per dimension of ``nvec``)."""
    mask = (torch.rand(shape, generator=generator) < 0.5).to(torch.uint8)
    starts = np.cumsum([0] + list(nvec or [shape[-1]]))[:-1]
    rows = mask.view(-1, shape[-1])
    for i in range(rows.shape[0]):
        for start, n in zip(starts, nvec or [shape[-1]]):
            if not rows[i, start:start + n].any():
                rows[i, start + int(torch.randint(n, (1,), generator=generator))] = 1
    return mask


def test_masked_log_probs_and_entropy_equal_a_per_element_reference():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 7, generator=g) * 3
    mask = random_masks((64, 7), g)
    dist = Categorical(mask_logits(logits, mask))
    for b in range(64):
        legal = [a for a in range(7) if mask[b, a]]
        norm = sum(math.exp(float(logits[b, a])) for a in legal)
        probs = {a: math.exp(float(logits[b, a])) / norm for a in legal}
        for a in range(7):
            log_prob = float(dist.log_prob(torch.full((64,), a))[b])
            if a in probs:
                assert log_prob == pytest.approx(math.log(probs[a]), abs=1e-5)
            else:
                assert math.exp(log_prob) == 0.0  # an illegal action has probability 0
        assert float(dist.entropy()[b]) == pytest.approx(-sum(p * math.log(p) for p in probs.values()), abs=1e-5)
    actions = torch.stack([dist.sample() for _ in range(200)])  # (200, 64)
    assert mask.gather(1, actions.T.contiguous()).all()  # no illegal action is ever sampled
    assert mask.gather(1, dist.mode()[:, None]).all()
    # gradients: finite, none on the masked entries
    logits.requires_grad_(True)
    masked = Categorical(mask_logits(logits, mask))
    (masked.entropy().sum() + masked.log_prob(dist.mode()).sum()).backward()
    assert torch.isfinite(logits.grad).all() and (logits.grad[mask == 0] == 0).all()


def test_multi_discrete_masks_are_per_dimension():
    g = torch.Generator().manual_seed(1)
    nvec = [3, 4]
    logits = torch.randn(32, 7, generator=g)
    mask = random_masks((32, 7), g, nvec)
    dist = MultiCategorical(mask_logits(logits, mask), nvec)
    ref = [Categorical(mask_logits(part, m)) for part, m in zip(logits.split(nvec, -1), mask.split(nvec, -1))]
    torch.testing.assert_close(dist.entropy(), ref[0].entropy() + ref[1].entropy())
    for _ in range(50):
        action = dist.sample()
        assert mask[:, :3].gather(1, action[:, :1]).all() and mask[:, 3:].gather(1, action[:, 1:]).all()


def _batch(algo, masked, T=6, B=3, seed=0):
    """A time-major segment of CartPole-shaped data; masked: the same with an all-ones mask beside every observation."""
    g = torch.Generator().manual_seed(seed)
    obs, final_obs = torch.randn(T + 1, B, 4, generator=g), torch.randn(T, B, 4, generator=g)
    data = dict(obs=obs, final_obs=final_obs, action=torch.randint(2, (T, B), generator=g),
                reward=torch.randn(T, B, generator=g), terminated=torch.rand(T, B, generator=g) < 0.1,
                truncated=torch.rand(T, B, generator=g) < 0.1)
    if algo in ('impala', 'acer'):
        data['logit'] = torch.randn(T, B, 2, generator=g)
    if masked:
        data['obs'] = {'obs': obs, 'action_mask': torch.ones(T + 1, B, 2, dtype=torch.uint8)}
        data['final_obs'] = {'obs': final_obs, 'action_mask': torch.ones(T, B, 2, dtype=torch.uint8)}
    return make_tree(data)


def _learn_numbers(policy, batch):
    torch.manual_seed(0)
    mode = policy.learn_mode
    if policy.on_policy and type(policy).__name__ == 'PPOPolicy':
        return [mode.forward(b) for b in mode.minibatches(mode.prepare(batch))]
    return [mode.forward(batch) for _ in range(3)]


@pytest.mark.parametrize('algo', ALGOS)
def test_an_all_ones_mask_gives_the_plain_numbers(algo):
    """Same weights, same batch: the masked path with every action legal equals the plain path, number for number
    (collect statistics, eval actions, every learn step's losses)."""
    box, actions = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32), gym.spaces.Discrete(2)
    masked_space = gym.spaces.Dict(OrderedDict(obs=box, action_mask=gym.spaces.Box(0, 1, (2,), np.uint8)))
    overrides = ['policy.learn.batch_size=9', 'policy.learn.epoch_per_collect=2'] if algo == 'ppo' else []
    plain = create_policy(compile_config(f'cartpole_{algo}.py', overrides), box, actions)
    with_mask = create_policy(compile_config(f'cartpole_{algo}.py', overrides), masked_space, actions)
    with_mask.learn_mode.load_state_dict(plain.learn_mode.state_dict())
    obs = torch.randn(5, 4)
    ones = {'obs': obs, 'action_mask': torch.ones(5, 2, dtype=torch.uint8)}
    torch.manual_seed(1)
    a = plain.collect_mode.forward(obs)
    torch.manual_seed(1)
    b = with_mask.collect_mode.forward(ones)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert torch.equal(plain.eval_mode.forward(obs)['action'], with_mask.eval_mode.forward(ones)['action'])
    assert _learn_numbers(plain, _batch(algo, False)) == _learn_numbers(with_mask, _batch(algo, True))


def test_the_mask_changes_the_learn_numbers_of_acer_value_and_ppo_log_probs():
    """The learn path uses the stored mask (a zeroed action changes the numbers; illegal actions get no mass)."""
    box, actions = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32), gym.spaces.Discrete(2)
    masked_space = gym.spaces.Dict(OrderedDict(obs=box, action_mask=gym.spaces.Box(0, 1, (2,), np.uint8)))
    policy = create_policy(compile_config('cartpole_acer.py'), masked_space, actions)
    batch = _batch('acer', True)
    batch.obs.action_mask[..., 1] = 0  # only action 0 legal everywhere
    batch.action.zero_()
    out = policy._evaluate(batch.obs)
    assert (out['logit'].softmax(-1)[..., 1] == 0).all()
    v = (out['logit'].softmax(-1) * out['q_value']).sum(-1)
    terms = policy._discrete_terms(batch)
    torch.testing.assert_close(terms['q_taken'], out['q_value'][:-1, ..., 0])
    assert torch.isfinite(terms['policy_loss']).all() and (terms['entropy'].abs() < 1e-6).all()
    torch.testing.assert_close(v[:-1, ..., None].squeeze(-1), out['q_value'][:-1, ..., 0])  # V = Q(legal action)


def test_acer_bootstraps_a_truncated_episode_from_v_over_the_legal_actions_of_its_final_mask():
    """ACER folds ``γ V(final_obs)`` into a truncated step's reward; with a mask, ``V = Σ_legal π Q`` with π the
    softmax over the legal actions only (per element, by hand); a final mask with no legal action uses every action."""
    box, actions = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32), gym.spaces.Discrete(3)
    masked_space = gym.spaces.Dict(OrderedDict(obs=box, action_mask=gym.spaces.Box(0, 1, (3,), np.uint8)))
    policy = create_policy(compile_config('cartpole_acer.py'), masked_space, actions)
    g = torch.Generator().manual_seed(3)
    T, B = 5, 4
    batch = _batch('acer', True, T=T, B=B, seed=3)
    batch.final_obs.action_mask = torch.stack([random_masks((B, 3), g) for _ in range(T)])
    batch.final_obs.action_mask[0, 0] = 0  # no legal action: every action
    batch.truncated = torch.zeros(T, B, dtype=torch.bool)
    batch.terminated = torch.zeros(T, B, dtype=torch.bool)
    batch.truncated[0, 0] = batch.truncated[2, 1] = batch.truncated[4, :] = True
    batch.logit = torch.randn(T, B, 3, generator=g)
    batch.action = torch.randint(3, (T, B), generator=g)
    reward, _ = policy._rewards_and_discounts(batch)
    gamma = float(policy._cfg.learn.discount_factor)
    with torch.no_grad():
        out = policy._model(batch.final_obs.obs.reshape(T * B, 4), mode='compute_actor_critic')
    logits, q = out['logit'].view(T, B, 3), out['q_value'].view(T, B, 3)
    for t in range(T):
        for b in range(B):
            if not batch.truncated[t, b]:
                assert float(reward[t, b]) == float(batch.reward[t, b])
                continue
            legal = [a for a in range(3) if batch.final_obs.action_mask[t, b, a]] or [0, 1, 2]
            norm = sum(math.exp(float(logits[t, b, a])) for a in legal)
            v = sum(math.exp(float(logits[t, b, a])) / norm * float(q[t, b, a]) for a in legal)
            assert float(reward[t, b]) == pytest.approx(float(batch.reward[t, b]) + gamma * v, abs=1e-5)
    assert not torch.allclose(out['value'].view(T, B)[4], (reward[4] - batch.reward[4]) / gamma)  # not the unmasked V


def test_acers_masked_critic_is_probed_once_not_at_every_batch_without_a_truncation():
    """The first batch without a truncation checks the critic on one final observation; masked ACER's V (over the
    legal actions, not the model's compute_critic) left it unmarked, so every such batch ran the model again."""
    box, actions = gym.spaces.Box(-np.inf, np.inf, (4,), np.float32), gym.spaces.Discrete(2)
    masked_space = gym.spaces.Dict(OrderedDict(obs=box, action_mask=gym.spaces.Box(0, 1, (2,), np.uint8)))
    policy = create_policy(compile_config('cartpole_acer.py'), masked_space, actions)
    calls = []
    model_forward = policy._model.forward
    policy._model.forward = lambda *args, **kwargs: calls.append(kwargs.get('mode')) or model_forward(*args, **kwargs)
    batch = _batch('acer', True, T=5, B=4, seed=3)
    batch.truncated = torch.zeros(5, 4, dtype=torch.bool)
    for _ in range(3):
        policy._rewards_and_discounts(batch)
    assert calls == ['compute_actor_critic']  # (the one probe)


# ---- whole runs: the env raises on an illegal action, so a finished run took none ------------------------------
TTT = ['env.type=toy_tictactoe', 'env.env_id=toy_tictactoe', 'env.stop_value=None', 'env.collector_env_num=4',
       'env.evaluator_env_num=4', 'env.n_evaluator_episode=8', 'policy.eval.evaluator.eval_freq=5']
RUNS = {'ppo': ['policy.collect.n_sample=128', 'policy.learn.epoch_per_collect=2', 'policy.learn.batch_size=64'],
        'a2c': [], 'impala': [],
        'acer': ['policy.other.replay_buffer.replay_start_size=64', 'policy.learn.update_per_collect=2'],
        'ppo_lstm': ['policy.model.rnn.type=lstm', 'policy.model.rnn.hidden_size=16', 'policy.collect.n_sample=128',
                     'policy.learn.epoch_per_collect=2', 'policy.learn.batch_size=64', 'policy.model.share_encoder=True'],
        # recurrent ACER: replayed windows and the average network's unroll over masked logits
        'acer_lstm': ['policy.model.rnn.type=lstm', 'policy.model.rnn.hidden_size=16',
                      'policy.other.replay_buffer.replay_start_size=64', 'policy.learn.update_per_collect=2']}


@pytest.fixture(scope='module')
def masked_runs(tmp_path_factory):
    """A short run of every algorithm (and PPO and ACER with an LSTM) on the masked tic-tac-toe, from the CLI."""
    root = tmp_path_factory.mktemp('masked')
    runs = {}
    for name, extra in RUNS.items():
        algo = name.split('_')[0]
        runs[name] = root / name
        assert main(['-c', f'cartpole_{algo}.py', '--exp-dir', str(runs[name]), '--max-env-step', '1200', '-q',
                     *TTT, *extra]) == 0, name
    return runs


def test_no_illegal_action_is_taken_in_whole_runs_and_load_policy_acts_legally(masked_runs):
    env = build_env(dict(ENV, type='toy_tictactoe', env_id='toy_tictactoe'), 0, 0, 'test')
    raw = env.unwrapped
    for name, run_dir in masked_runs.items():
        policy = acframe.load_policy(run_dir)
        for deterministic in (True, False):
            for episode in range(15):  # the raw env's Dict observation, as a user's script holds it
                obs, _ = raw.reset(seed=episode)
                policy.reset()
                done = False
                while not done:
                    action = policy.act(obs, deterministic=deterministic)
                    assert obs['action_mask'][action] == 1, name
                    obs, _, terminated, truncated, _ = raw.step(action)
                    done = terminated or truncated
        assert raw.illegal_actions == 0


def test_the_exported_policy_takes_the_mask(masked_runs, tmp_path, capsys):
    for name in ('ppo', 'ppo_lstm'):
        out = tmp_path / f'{name}.pt'
        capsys.readouterr()
        assert main(['-m', 'export', '--load', str(masked_runs[name]), '--out', str(out)]) == 0
        # the input 'obs' is the env's own key, named (the env's dict given as it is was a bare "key 'obs' is missing")
        assert "obs {'obs': (27,), 'action_mask': (9,)} ('obs': the env's 'board')" in capsys.readouterr().out
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', DeprecationWarning)
            model = torch.jit.load(str(out))
        g = torch.Generator().manual_seed(0)
        obs = torch.rand(200, 27, generator=g)
        mask = random_masks((200, 9), g)
        mask[0] = 0  # no legal action: -1
        inputs = {'obs': obs, 'action_mask': mask}
        if name == 'ppo_lstm':
            action, _ = model(inputs, torch.zeros(200, 2, 16))
        else:
            action = model(inputs)
        assert action[0] == -1 and mask[1:].gather(1, action[1:, None]).all()
        state = (torch.zeros(200, 2, 16),) if name == 'ppo_lstm' else ()
        for wrong, says in (({'obs': obs}, "obs: key 'action_mask' is missing; the model takes ['obs', 'action_mask']"),
                            ({'board': obs, 'action_mask': mask},
                             "obs: key 'obs' is missing; the model takes ['obs', 'action_mask'] ('obs' is the env's "
                             "'board')"),
                            ({'obs': obs, 'action_mask': mask[0]},
                             "obs['action_mask']: a batch of shape (B, 9) is expected, not [9] (one observation is "
                             "obs[None])"),
                            ({'obs': obs, 'action_mask': mask[:10]},
                             "obs: every key must hold the same batch size; obs['action_mask'] holds 10, not 200"),
                            (torch.cat([obs, mask.float()], 1),  # (one tensor: it was "dictionary update sequence
                             # element #0 has length 36; 2 is required")
                             "obs: a dict of batches is expected, {key: (B, *shape)} for the keys ['obs', "
                             "'action_mask'], not one tensor of shape [200, 36]")):
            with pytest.raises(torch.jit.Error, match=re.escape(says)):  # one line naming the key, not the graph's error
                model(wrong, *state)
        if name == 'ppo_lstm':
            with pytest.raises(torch.jit.Error, match=re.escape('state: shape (200, 2, 16) is expected')):
                model(inputs, torch.zeros(200, 16))
    pytest.importorskip('onnxscript', reason='ONNX export needs the onnx extra')
    ort = pytest.importorskip('onnxruntime', reason='running the ONNX model needs onnxruntime')
    out = tmp_path / 'ppo.onnx'
    assert main(['-m', 'export', '--load', str(masked_runs['ppo']), '--out', str(out), '-q']) == 0
    session = ort.InferenceSession(str(out), providers=['CPUExecutionProvider'])
    (action,) = session.run(['action'], {'obs': obs.numpy(), 'action_mask': mask.numpy()})
    assert action[0] == -1 and mask[1:].gather(1, torch.as_tensor(action[1:, None])).all()


def test_an_exported_multi_discrete_policy_gives_minus_one_for_a_row_with_no_legal_action(tmp_path):
    """docs/masks.md: a row with no legal action gets action -1 -- for MultiDiscrete actions, a row with no legal
    choice in any dimension gets -1 in every dimension (it got choices the mask forbids); the other rows stay legal."""
    from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy

    env_id, run = 'toy_multidiscrete_masked', tmp_path / 'run'
    serial_pipeline_onpolicy((dict(env=dict(env_id=env_id, collector_env_num=2, evaluator_env_num=1,
                                            n_evaluator_episode=1, stop_value=None),
                                   policy=dict(collect=dict(n_sample=32), learn=dict(batch_size=32))),
                              dict(env=dict(type=env_id), policy=dict(type='ppo'))),
                             exp_dir=str(run), max_env_step=64, progress=False)
    out = tmp_path / 'md.pt'
    assert main(['-m', 'export', '--load', str(run), '--out', str(out), '-q']) == 0
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        model = torch.jit.load(str(out))
    env = build_env(dict(ENV, type=env_id, env_id=env_id), 0, 0, 'test')
    obs_size, (n0, n1) = env.observation_space['obs'].shape[0], env.action_space.nvec.tolist()
    g = torch.Generator().manual_seed(0)
    mask = random_masks((50, n0 + n1), g, [n0, n1])
    mask[0, n0:] = 0  # dimension 1 has no legal choice
    mask[1, :n0] = 0  # dimension 0 has none
    mask[2] = 0
    obs = torch.rand(50, obs_size, generator=g)
    action = model({'obs': obs, 'action_mask': mask})
    assert action.shape == (50, 2) and (action[:3] == -1).all()
    assert mask[3:, :n0].gather(1, action[3:, :1]).all() and mask[3:, n0:].gather(1, action[3:, 1:]).all()
    pytest.importorskip('onnxscript', reason='ONNX export needs the onnx extra')
    ort = pytest.importorskip('onnxruntime', reason='running the ONNX model needs onnxruntime')
    assert main(['-m', 'export', '--load', str(run), '--out', str(tmp_path / 'md.onnx'), '-q']) == 0
    session = ort.InferenceSession(str(tmp_path / 'md.onnx'), providers=['CPUExecutionProvider'])
    (onnx_action,) = session.run(['action'], {'obs': obs.numpy(), 'action_mask': mask.numpy()})
    assert (onnx_action == action.numpy()).all()


def test_load_policy_acts_on_a_batch_of_the_envs_own_observations_row_by_row(masked_runs):
    """A batch as a gymnasium vector env gives it (every key of the env's Dict observation stacked) acts as its rows
    one by one; a missing mask is one line naming it."""
    env = build_env(dict(ENV, type='toy_tictactoe', env_id='toy_tictactoe'), 0, 0, 'test')
    raw, rows, rng = env.unwrapped, [], np.random.default_rng(0)
    obs, _ = raw.reset(seed=0)
    while len(rows) < 6:
        rows.append(obs)
        obs, _, terminated, truncated, _ = raw.step(int(rng.choice(np.flatnonzero(obs['action_mask']))))
        if terminated or truncated:
            obs, _ = raw.reset(seed=len(rows))
    batch = {key: np.stack([row[key] for row in rows]) for key in rows[0]}
    for name in ('a2c', 'ppo'):
        policy = acframe.load_policy(masked_runs[name])
        actions = policy.act(batch)
        assert actions.shape == (6,) and actions.tolist() == [int(policy.act(row)) for row in rows], name
        assert all(row['action_mask'][a] == 1 for row, a in zip(rows, actions))
    with pytest.raises(ValueError, match=r"^act: the observation lacks key\(s\) \['action_mask'\]"):
        policy.act({key: value for key, value in batch.items() if key != 'action_mask'})
    with pytest.raises(ValueError, match=r"^act: a Dict observation with keys \['action_mask', 'board'\] was "
                                         r"expected, got ndarray$"):  # the env's keys, not the policy's own 'obs'
        policy.act(batch['board'])


def test_load_policy_refuses_an_observation_with_no_legal_action(masked_runs):
    policy = acframe.load_policy(masked_runs['a2c'])
    obs = {'board': np.zeros(27, np.float32), 'action_mask': np.zeros(9, np.int8)}
    with pytest.raises(ValueError, match="^act: the observation has no legal action: its 'action_mask' is all zeros"):
        policy.act(obs)
    # the policy's own form with a key of neither form: both forms named (it said the env's 'board' was missing)
    with pytest.raises(ValueError, match=r"^act: the observation's keys \['action_mask', 'extra', 'obs'\] are neither "
                                         r"the env's \['action_mask', 'board'\] nor the policy's own "
                                         r"\['action_mask', 'obs'\]; give one of the two, and no other key$"):
        policy.act({'obs': np.zeros(27, np.float32), 'action_mask': np.ones(9, np.int8), 'extra': 0})
    # a NaN in the env's own form: named by the env's key (flattened, it was the policy's own 'obs' and its index)
    board = np.zeros(27, np.float32)
    board[5] = np.nan
    with pytest.raises(ValueError, match=r"^act: observation 'board' holds nan at index 5; observations must be finite"):
        policy.act({'board': board, 'action_mask': np.ones(9, np.int8)})
    # a mask off its space in the env's own form: said as act's (it read "its observation's ...", no act:)
    with pytest.raises(ValueError, match=r"^act: the observation's 'action_mask' has shape \(8,\), but its observation "
                                         r"space declares \(9,\)"):
        policy.act({'board': np.zeros(27, np.float32), 'action_mask': np.ones(8, np.int8)})


@pytest.mark.parametrize('value, shown', [(-1.0, '-1.0'), (0.5, '0.5'), (2, '2.0')])
def test_a_mask_in_the_policys_own_form_is_checked_as_the_envs_is(masked_runs, value, shown):
    """The stored form ``{'obs', 'action_mask'}`` cast its mask to uint8: -1 read as every action legal (255), 0.5 as
    none ("all zeros"); the env's own form refused them."""
    policy = acframe.load_policy(masked_runs['a2c'])
    mask = np.ones(9, np.float32)
    mask[3] = value
    for obs in ({'obs': np.zeros(27, np.float32), 'action_mask': mask},
                {'obs': np.zeros((2, 27), np.float32), 'action_mask': np.stack([np.ones(9, np.float32), mask])}):
        with pytest.raises(ValueError, match=rf"^act: observation 'action_mask' holds {re.escape(shown)}, not 0 or 1: "
                                             rf"1 for each legal action, 0 for the others$"):
            policy.act(obs)
    assert policy.act({'obs': np.zeros(27, np.float32), 'action_mask': np.eye(9, dtype=bool)[4]}) == 4


@pytest.mark.parametrize('name', ['ppo', 'ppo_lstm'])
def test_a_batch_row_with_no_legal_action_gets_minus_one_as_from_the_exported_model(masked_runs, name):
    """A gymnasium vector env's batch holds an ended game's last observation (NEXT_STEP autoreset: its action is not
    used), whose mask may be all zeros (a full board): that row gets -1, the exported model's answer, greedy or
    sampled, with kept or explicit state; the other rows act as they do alone."""
    policy = acframe.load_policy(masked_runs[name])
    raw = build_env(dict(ENV, type='toy_tictactoe', env_id='toy_tictactoe'), 0, 0, 'test').unwrapped
    first, _ = raw.reset(seed=0)
    full = {'board': first['board'], 'action_mask': np.zeros(9, np.int8)}
    batch = {key: np.stack([first[key], full[key], first[key]]) for key in first}
    for deterministic in (True, False):
        policy.reset()
        actions = policy.act(batch, deterministic=deterministic)
        assert actions[1] == -1 and first['action_mask'][actions[[0, 2]]].all()
        actions, _ = policy.act(batch, policy.initial_state(3), deterministic=deterministic)
        assert actions[1] == -1 and first['action_mask'][actions[[0, 2]]].all()
    policy.reset()
    greedy = policy.act(batch)
    policy.reset()
    assert greedy[0] == policy.act(first)


class NoMoveEnv(gym.Env):
    """A masked env whose 3rd observation leaves no legal action."""
    observation_space = gym.spaces.Dict({'x': gym.spaces.Box(0, 1, (2,), np.float32),
                                         'action_mask': gym.spaces.MultiBinary(3)})
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return {'x': np.zeros(2, np.float32), 'action_mask': np.ones(3, np.int8)}, {}

    def step(self, action):
        self.t += 1
        mask = np.zeros(3, np.int8) if self.t == 3 else np.ones(3, np.int8)
        return {'x': np.zeros(2, np.float32), 'action_mask': mask}, 0.0, False, False, {}


def test_a_state_with_no_legal_action_is_one_error_naming_the_env_its_seed_and_the_step():
    from acframe.envs.gym_env import FlattenDictObservation
    from acframe.envs.masks import ActionMaskCheck
    env = ActionMaskCheck(FlattenDictObservation(NoMoveEnv()), 'nomove', 3, 17, 'collector')
    env.reset(seed=17)
    env.step(0)
    env.step(0)
    with pytest.raises(EnvError, match=r"collector env 3 of 'nomove' \(seed 17\) has no legal action at step 3 of its "
                                       r"episode"):
        env.step(0)


class ShiftingEnv(gym.Env):
    """A masked env of Discrete(3) whose observations break their space at step 2: ``what`` 'mask' (4 entries),
    'no_mask' (the key left out), 'two' (a mask entry 2, read as legal before) or 'x' (3 numbers where the space
    has 2; with ``y``, two vector keys)."""
    action_space = gym.spaces.Discrete(3)

    def __init__(self, what):
        self.what = what
        spaces = {'x': gym.spaces.Box(0, 1, (2,), np.float32), 'y': gym.spaces.Box(0, 1, (1,), np.float32),
                  'action_mask': gym.spaces.MultiBinary(3)}
        self.observation_space = gym.spaces.Dict(spaces)

    def _obs(self, t):
        obs = {'x': np.zeros(2, np.float32), 'y': np.zeros(1, np.float32), 'action_mask': np.ones(3, np.int8)}
        if t == 2:
            if self.what == 'mask':
                obs['action_mask'] = np.ones(4, np.int8)
            elif self.what == 'no_mask':
                del obs['action_mask']
            elif self.what == 'two':
                obs['action_mask'] = np.array([2, 1, 1], np.int8)
            else:
                obs['x'] = np.zeros(3, np.float32)
        return obs

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(0), {}

    def step(self, action):
        self.t += 1
        return self._obs(self.t), 0.0, False, False, {}


@pytest.mark.parametrize('what, message', [
    ('mask', r"its observation's 'action_mask' has shape \(4,\), but its observation space declares \(3,\)"),
    ('no_mask', r"its observation has no 'action_mask' key, which its observation space declares"),
    ('two', r"its observation's 'action_mask' holds 2, not 0 or 1: 1 for each legal action, 0 for the others"),
    ('x', r"its observation's 'x' has shape \(3,\), but its observation space declares \(2,\)"),
])
def test_an_observation_that_breaks_its_space_mid_episode_is_one_line_naming_the_env_and_the_key(what, message):
    """A sync manager stacked the envs' observations and said only 'Output array is the wrong shape' (or a bare
    KeyError), naming no env and no key."""
    from acframe.envs import SyncEnvManager
    from acframe.registry import ENV_REGISTRY, import_names

    import_names(['fixtures.faulty_envs'])  # (a module the run imported: the hint's command names it)
    ENV_REGISTRY.register('shifting_mask_test', lambda cfg, **kw: ShiftingEnv(cfg['env_kwargs']['what']))
    try:
        env = SyncEnvManager.from_config(dict(ENV, type='shifting_mask_test', env_id='shifting',
                                              env_kwargs=dict(what=what)), 'collector', [7, 8])
        env.reset()
        env.step(np.zeros(2, np.int64))
        with pytest.raises(EnvContractError, match=r"^collector env 0 \(seed 7\), in step: " + message
                           + r".* \(acframe -m check-env shifting_mask_test env.env_id=shifting( --import \S+)* --import "
                           + r"fixtures\.faulty_envs( --import \S+)* "
                           + rf"env.env_kwargs.what={what} runs every check of the env\)$"):  # (the whole command)
            env.step(np.zeros(2, np.int64))  # (a contract error: a parallel run stops rather than restart the actor)
        env.close()
    finally:
        ENV_REGISTRY._entries.pop('shifting_mask_test', None)


def test_info_action_mask_becomes_the_dict_form():
    class InfoEnv(gym.Env):
        observation_space = gym.spaces.Box(0, 1, (2,), np.float32)
        action_space = gym.spaces.Discrete(4)

        def reset(self, *, seed=None, options=None):
            return np.zeros(2, np.float32), {'action_mask': np.array([1, 0, 1, 0])}

        def step(self, action):
            return np.ones(2, np.float32), 0.0, False, False, {'action_mask': np.array([0, 0, 0, 1])}

    env = InfoActionMask(InfoEnv())
    obs, _ = env.reset()
    assert obs['action_mask'].tolist() == [1, 0, 1, 0] and obs['obs'].shape == (2,)
    assert env.step(0)[0]['action_mask'].tolist() == [0, 0, 0, 1]


class DroppingInfoMask(gym.Env):
    """An env giving its mask in info, which forgets it from its second step on."""
    observation_space = gym.spaces.Box(0, 1, (2,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {'action_mask': np.ones(3, np.int8)}

    def step(self, action):
        self.t += 1
        info = {'action_mask': np.ones(3, np.int8)} if self.t < 2 else {}
        return np.zeros(2, np.float32), 0.0, False, False, info


def test_an_info_mask_that_goes_missing_is_one_line_naming_the_env_not_acframes_line():
    """It was a KeyError 'at acframe/envs/masks.py:188 in _obs ... fix the env there'."""
    from acframe.envs import SyncEnvManager
    from acframe.registry import ENV_REGISTRY

    ENV_REGISTRY.register('dropping_info_mask_test', lambda cfg, **kw: InfoActionMask(DroppingInfoMask()))
    try:
        env = SyncEnvManager.from_config(dict(ENV, type='dropping_info_mask_test', env_id='dropping'), 'collector', [7])
        env.reset()
        env.step(np.zeros(1, np.int64))
        with pytest.raises(EnvContractError, match=r"^collector env 0 \(seed 7\), in step: its step returned no "
                                                   r"info\['action_mask'\] \(InfoActionMask takes the mask from info "
                                                   r"after reset and every step\); return it there \(acframe -m check-env "
                                                   r"dropping_info_mask_test env.env_id=dropping( --import \S+)* runs "
                                                   r"every check of the env\)$"):
            env.step(np.zeros(1, np.int64))
        env.close()
    finally:
        ENV_REGISTRY._entries.pop('dropping_info_mask_test', None)


def test_bad_mask_input_is_one_config_error(tmp_path):
    base = dict(ENV, type='toy_tictactoe', env_id='toy_tictactoe')
    with pytest.raises(ConfigError, match="env.obs_keys names 'action_mask'"):
        build_env(dict(base, obs_keys=['board', 'action_mask']), 0, 0, 'collector')

    class BadMask(NoMoveEnv):
        observation_space = gym.spaces.Dict({'x': gym.spaces.Box(0, 1, (2,), np.float32),
                                             'action_mask': gym.spaces.MultiBinary(5)})

    class Continuous(NoMoveEnv):
        action_space = gym.spaces.Box(-1, 1, (3,), np.float32)

    from acframe.envs.masks import check_mask_space
    from acframe.envs.gym_env import FlattenDictObservation
    with pytest.raises(ConfigError, match="a mask of Discrete\\(3\\) is a 1-D 0/1 Box or MultiBinary of 3 entries"):
        check_mask_space(FlattenDictObservation(BadMask()).mask_space, BadMask.action_space, 'bad')
    with pytest.raises(ConfigError, match="masks are for Discrete and MultiDiscrete actions"):
        check_mask_space(FlattenDictObservation(Continuous()).mask_space, Continuous.action_space, 'bad')
    # from the CLI: exit 2, one line, nothing written
    run_dir = tmp_path / 'run'
    assert main(['-c', 'tictactoe_ppo_masked.py', '--exp-dir', str(run_dir), "env.obs_keys=['action_mask']"]) == 2
    assert not run_dir.exists()


def test_tictactoe_masks_the_taken_cells_and_the_unmasked_variant_ends_on_an_illegal_move():
    masked = build_env(dict(ENV, type='toy_tictactoe', env_id='toy_tictactoe'), 0, 0, 'collector')
    obs, _ = masked.reset(seed=0)
    assert set(obs) == {'obs', 'action_mask'} and obs['action_mask'].tolist() == [1] * 9
    obs, *_ = masked.step(4)
    assert obs['action_mask'].sum() == 7 and obs['action_mask'][4] == 0  # X and O took a cell each
    taken = int(np.flatnonzero((obs['action_mask'] == 0) & (np.arange(9) != 4))[0])
    with pytest.raises(EnvError, match='illegal action'):
        masked.step(taken)
    plain = build_env(dict(ENV, type='toy_tictactoe_nomask', env_id='toy_tictactoe_nomask'), 0, 0, 'collector')
    obs, _ = plain.reset(seed=0)
    assert obs.shape == (27,)
    plain.step(4)
    _, reward, terminated, _, info = plain.step(4)
    assert reward == -1.0 and terminated and info['illegal']


def test_make_env_with_a_render_mode_the_env_does_not_take_names_the_call(masked_runs):
    """It blamed env.env_kwargs, a key the user never set."""
    from acframe import load_policy
    from acframe.errors import ConfigError

    policy = load_policy(str(masked_runs['ppo']))
    with pytest.raises(ConfigError, match=r"^make_env\(render_mode='rgb_array'\): env 'toy_tictactoe' takes no "
                                          r"render_mode \(it draws no frames\); call make_env\(\) without it$"):
        policy.make_env(render_mode='rgb_array')
    policy.make_env().reset(seed=0)


def test_a_masked_run_resumes_bit_exactly_with_its_envs_state(tmp_path):
    """The Dict observation's wrapper holds only plain data, so a masked env's state is in the checkpoint: a run
    stopped between collections and resumed logs what an unbroken run logs (its envs were reset instead: a set
    among the wrapper's attributes made the whole state unrestorable)."""
    from acframe.entry import serial_pipeline_onpolicy
    from acframe.envs.snapshot import capture
    from acframe.worker import LearnerHook

    class Recorder(LearnerHook):
        def __init__(self):
            self.infos = []

        def after_iter(self, learner, info):
            self.infos.append((learner.train_iter, dict(info)))

    assert capture(build_env(dict(ENV, type='toy_tictactoe', env_id='toy_tictactoe'), 0, 0, 'test')) is not None
    overrides = TTT + RUNS['a2c'] + ['policy.eval.evaluator.eval_freq=1000']

    def train(name, **kwargs):
        recorder = Recorder()
        serial_pipeline_onpolicy('cartpole_a2c.py', seed=0, overrides=overrides, progress=False,
                                 learner_hooks=[recorder], **kwargs)
        return recorder.infos
    whole = train('whole', exp_dir=str(tmp_path / 'whole'), max_train_iter=12)
    part = train('part', exp_dir=str(tmp_path / 'part'), max_train_iter=5)
    resumed = train('resumed', resume=str(tmp_path / 'part'), max_train_iter=12)
    assert part == whole[:5] and resumed == whole[5:]


def test_a_misspelled_obs_key_names_the_nearest_and_lists_the_keys_without_the_mask():
    """The mask was listed among the keys to choose from, and env.obs_keys then refused it."""
    from acframe.envs.gym_env import FlattenDictObservation

    class Board(gym.Env):
        observation_space = gym.spaces.Dict({'board': gym.spaces.Box(0, 1, (9,), np.float32),
                                             'action_mask': gym.spaces.MultiBinary(9)})
        action_space = gym.spaces.Discrete(9)

    with pytest.raises(ConfigError, match=r"^env.obs_keys: 'bord' is not a key of the observation; did you mean "
                                          r"'board'\? its keys are \['board'\]$"):
        FlattenDictObservation(Board(), ['bord'])
