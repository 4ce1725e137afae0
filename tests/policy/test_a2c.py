"""Specification of ``acframe.policy.a2c.A2CPolicy``: its targets, its loss, its optimizer and its action spaces.

The targets are checked against per-element references: an n-step return (or GAE λ-return) that stops at
every episode end and bootstraps a time-limit truncation from V(final_obs) — never from the next entry of
``obs``, which is already the reset observation of a new episode.
"""

import gymnasium as gym
import numpy as np
import pytest
import torch

from acframe.config import compile_config
from acframe.data import make_tree
from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy
from acframe.errors import ConfigError, UnsupportedSpaceError
from acframe.optim import Adam, RMSprop, RMSpropTF
from acframe.policy import create_policy
from acframe.worker import Learner, LinearLRDecayHook

T, B, OBS = 6, 3, 4
GAMMA = 0.9
CARTPOLE_OBS = gym.spaces.Box(-np.inf, np.inf, (OBS,), dtype=np.float32)


def make_cfg(policy=None, model=None, env=None, **top):
    main = dict(env=dict(env_id='CartPole-v1', **(env or {})),
                policy=dict(model=dict(model or {}), **(policy or {})), **top)
    return compile_config((main, dict(policy=dict(type='a2c'))), seed=0)


def make_policy(learn=None, model=None, action_space=gym.spaces.Discrete(2), obs_space=CARTPOLE_OBS, **policy):
    torch.manual_seed(0)
    cfg = make_cfg(policy=dict(learn=dict(discount_factor=GAMMA, **(learn or {})), **policy), model=model)
    return create_policy(cfg, obs_space, action_space)


def make_batch(seed=0):
    """A segment with a termination (t=1, env 0), a truncation inside it (t=3, env 1) and one at its end (t=5, env 2)."""
    gen = torch.Generator().manual_seed(seed)
    terminated = torch.zeros(T, B, dtype=torch.bool)
    truncated = torch.zeros(T, B, dtype=torch.bool)
    terminated[1, 0] = True
    truncated[3, 1] = True
    truncated[T - 1, 2] = True
    final_obs = torch.zeros(T, B, OBS)
    final_obs[terminated | truncated] = torch.randn(3, OBS, generator=gen)
    return make_tree(dict(
        obs=torch.randn(T + 1, B, OBS, generator=gen),
        action=torch.randint(0, 2, (T, B), generator=gen),
        reward=torch.randn(T, B, generator=gen),
        terminated=terminated,
        truncated=truncated,
        final_obs=final_obs,
    ))


def critic(policy, obs):
    with torch.no_grad():
        return policy.model(obs, mode='compute_critic')['value'].double()


def reference_targets(policy, batch, lambda_, truncation_from_final_obs=True):
    """Per-element λ-returns (λ = 1: n-step returns), the episode ends handled one element at a time."""
    values = critic(policy, batch.obs)
    final_values = critic(policy, batch.final_obs)
    returns = torch.zeros(T, B, dtype=torch.float64)
    for b in range(B):
        ret = values[T, b].item()           # the bootstrap at the segment end: V(x_T)
        for t in reversed(range(T)):
            reward = batch.reward[t, b].item()
            if batch.terminated[t, b]:
                next_value, ret = 0.0, 0.0
            elif batch.truncated[t, b]:
                source = final_values[t, b] if truncation_from_final_obs else values[t + 1, b]
                next_value = ret = source.item()
            else:
                next_value = values[t + 1, b].item()
            # λ-return recursion: G_t = r_t + γ((1 − λ) V(x_{t+1}) + λ G_{t+1})
            ret = reward + GAMMA * ((1 - lambda_) * next_value + lambda_ * ret)
            returns[t, b] = ret
    return returns, values[:T]


def value_loss_of(policy, batch):
    return policy.learn_mode.forward(batch)['value_loss']


@pytest.mark.parametrize('lambda_', [1.0, 0.8])
def test_targets_stop_at_episode_ends_and_bootstrap_truncation_from_final_obs(lambda_):
    """The value loss is mean((R − V)²) with R the per-element reference, truncations bootstrapped from V(final_obs)."""
    policy = make_policy(learn=dict(gae_lambda=lambda_))
    batch = make_batch()
    returns, values = reference_targets(policy, batch, lambda_)
    wrong, _ = reference_targets(policy, batch, lambda_, truncation_from_final_obs=False)
    expected = (returns - values).pow(2).mean().item()
    bootstrapped_from_next_obs = (wrong - values).pow(2).mean().item()
    assert abs(expected - bootstrapped_from_next_obs) > 1e-3  # the two conventions differ on this batch
    assert value_loss_of(policy, batch) == pytest.approx(expected, rel=1e-4)


def test_gae_with_lambda_one_gives_the_same_update_as_nstep_returns():
    """gae_lambda=1.0 (n-step returns) and a λ a hair below 1 (the GAE path) train to the same weights."""
    batch = make_batch(seed=3)
    weights = []
    for lambda_ in (1.0, 1.0 - 1e-7):
        policy = make_policy(learn=dict(gae_lambda=lambda_))
        policy.learn_mode.forward(batch)
        weights.append(torch.cat([p.detach().flatten() for p in policy.model.parameters()]))
    torch.testing.assert_close(weights[0], weights[1], rtol=1e-5, atol=1e-6)


def test_loss_reduction_sum_scales_the_mean_by_the_number_of_steps():
    batch = make_batch()
    mean = make_policy(learn=dict(loss_reduction='mean')).learn_mode.forward(batch)
    total = make_policy(learn=dict(loss_reduction='sum')).learn_mode.forward(batch)
    for key in ('policy_loss', 'value_loss', 'entropy'):
        assert total[key] == pytest.approx(mean[key] * T * B, rel=1e-4)


def test_advantage_normalisation_centres_the_advantages():
    batch = make_batch()
    raw = make_policy().learn_mode.forward(batch)['advantage']
    normalised = make_policy(learn=dict(adv_norm=True)).learn_mode.forward(batch)['advantage']
    assert abs(raw) > 1e-3
    assert normalised == pytest.approx(0.0, abs=1e-6)


def test_grad_clipping_bounds_the_global_norm():
    """The reported norm is the one before clipping; the step uses gradients of norm at most grad_clip_value."""
    policy = make_policy(learn=dict(grad_clip_value=0.05))
    batch = make_batch()
    batch.reward *= 100.0
    info = policy.learn_mode.forward(batch)
    grads = [p.grad for p in policy.model.parameters() if p.grad is not None]
    assert info['grad_norm'] > 0.05
    assert float(torch.nn.utils.get_total_norm(grads)) <= 0.05 * (1 + 1e-4)


def test_rmsprop_uses_the_a2c_defaults():
    optimizer = make_policy().learn_mode.optimizers()[0]
    assert isinstance(optimizer, RMSprop)
    group = optimizer.param_groups[0]
    assert (group['lr'], group['alpha'], group['eps']) == (0.0007, 0.99, 1e-5)
    assert isinstance(make_policy(learn=dict(optim='adam')).learn_mode.optimizers()[0], Adam)


def test_rmsprop_tf_is_the_tensorflow_rmsprop_with_the_configured_alpha_and_eps():
    optimizer = make_policy(learn=dict(optim='rmsprop_tf', rms_eps=0.001)).learn_mode.optimizers()[0]
    assert isinstance(optimizer, RMSpropTF)
    assert (optimizer.param_groups[0]['alpha'], optimizer.param_groups[0]['eps']) == (0.99, 0.001)


def test_linear_lr_decay_reaches_zero_at_the_configured_iteration():
    policy = make_policy(learn=dict(learning_rate=0.01))
    learner = Learner(policy.learn_mode, hooks=[LinearLRDecayHook(4)])
    batch = make_batch()
    used = [learner.train(batch)['cur_lr'] for _ in range(6)]
    assert used[:4] == pytest.approx([0.01, 0.0075, 0.005, 0.0025])
    assert used[4:] == [0.0, 0.0]  # exactly 0 from iteration 4 on


def test_the_pipeline_decays_actor_and_critic_rates_to_zero(tmp_path):
    overrides = ['policy.learn.lr_decay_iters=12', 'policy.learn.critic_learning_rate=0.002',
                 'policy.model.share_encoder=False', 'policy.eval.evaluator.eval_freq=0', 'env.n_evaluator_episode=1',
                 'env.evaluator_env_num=1']
    policy = serial_pipeline_onpolicy('cartpole_a2c.py', seed=0, overrides=overrides, max_train_iter=12,
                                      exp_dir=str(tmp_path / 'decay'), progress=False)
    groups = policy.learn_mode.optimizers()[0].param_groups
    assert [g['lr'] for g in groups] == [0.0, 0.0]
    assert [g['initial_lr'] for g in groups] == [0.003, 0.002]


def test_separate_critic_learning_rate_needs_separate_networks():
    policy = make_policy(learn=dict(critic_learning_rate=0.01), model=dict(share_encoder=False))
    actor, critic_group = policy.learn_mode.optimizers()[0].param_groups
    assert (actor['lr'], critic_group['lr']) == (0.0007, 0.01)
    critic_params = {id(p) for name, p in policy.model.named_parameters() if name.startswith('critic_')}
    assert {id(p) for p in critic_group['params']} == critic_params
    with pytest.raises(ConfigError, match='share_encoder=False'):
        make_policy(learn=dict(critic_learning_rate=0.01), model=dict(share_encoder=True))


def test_continuous_actions_keep_the_unclipped_sample_for_the_loss():
    """Gaussian samples beyond the bounds are stored as sampled (the env manager clips what the env gets)."""
    box = gym.spaces.Box(-2.0, 2.0, (1,), dtype=np.float32)
    policy = make_policy(model=dict(init_sigma=5.0), action_space=box,
                         obs_space=gym.spaces.Box(-np.inf, np.inf, (3,), dtype=np.float32))
    actions = policy.collect_mode.forward(torch.zeros(256, 3))['action']
    assert actions.shape == (256, 1) and actions.abs().max() > 2.0
    assert policy.eval_mode.forward(torch.zeros(4, 3))['action'].shape == (4, 1)


def test_evaluation_takes_the_most_likely_action_unless_told_to_sample():
    obs = torch.zeros(256, OBS)
    assert make_policy().eval_mode.forward(obs)['action'].unique().numel() == 1
    sampling = make_policy(eval=dict(deterministic=False))
    assert sampling.eval_mode.forward(obs)['action'].unique().numel() == 2


def test_multi_discrete_actions_have_one_categorical_per_dimension():
    space = gym.spaces.MultiDiscrete([3, 4])
    policy = make_policy(action_space=space, obs_space=gym.spaces.Box(0, 1, (7,), dtype=np.float32))
    obs = torch.rand(512, 7)
    actions = policy.collect_mode.forward(obs)['action']
    assert actions.shape == (512, 2)
    assert actions[:, 0].max() == 2 and actions[:, 1].max() == 3 and actions.min() == 0
    logits = policy.model(obs, mode='compute_actor')['logit']
    assert logits.shape == (512, 7)  # 3 + 4 logits, split per dimension


@pytest.mark.parametrize('space, what', [
    (gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3))), 'action space'),
    (gym.spaces.MultiBinary(3), 'action space'),
])
def test_an_unsupported_action_space_is_a_clear_error(space, what):
    with pytest.raises(UnsupportedSpaceError, match=f"policy 'a2c' does not support the {what}"):
        make_policy(action_space=space)


def test_image_observations_need_an_image_encoder_and_other_shapes_are_a_clear_error():
    image = gym.spaces.Box(0, 255, (3, 8, 8), dtype=np.uint8)
    with pytest.raises(ConfigError, match="set policy.model.encoder='nature_cnn' or 'impala_resnet'"):
        make_policy(obs_space=image)
    policy = make_policy(obs_space=image, model=dict(encoder='impala_resnet', encoder_channels=[4]))
    assert policy.collect_mode.forward(torch.zeros((5, 3, 8, 8), dtype=torch.uint8))['action'].shape == (5,)
    with pytest.raises(UnsupportedSpaceError, match="policy 'a2c' needs vector"):
        make_policy(obs_space=gym.spaces.Box(0, 255, (2, 3, 8, 8), dtype=np.uint8))


def test_cartpole_reaches_its_stop_value_within_the_step_budget(tmp_path):
    """The shipped config solves CartPole-v1 (deterministic 10-episode mean >= its stop value 490, confirmed on 50
    fresh episodes) within 30k env steps. Seeds 0-7 solved at 3.2k, 1.6k, 10.4k, 3.2k, 6.4k, 4.0k, 2.4k and 9.2k
    (2026-11-27): the budget is three times the slowest, since another CPU can put seed 0 on any of those paths."""
    policy = serial_pipeline_onpolicy('cartpole_a2c.py', seed=0, max_env_step=30_000,
                                      exp_dir=str(tmp_path / 'cartpole'), progress=False)
    assert policy.summary['solved'] and policy.summary['env_steps'] <= 30_000
    assert policy.summary['best_eval_return'] >= 490


ACROBOT = dict(
    exp_name='acrobot_a2c_test',
    env=dict(env_id='Acrobot-v1', collector_env_num=16, evaluator_env_num=8, n_evaluator_episode=8, stop_value=-200),
    policy=dict(model=dict(encoder_hidden_size_list=[64, 64], share_encoder=False),
                learn=dict(optim='rmsprop', learning_rate=0.0007, discount_factor=0.99, entropy_weight=0.0, grad_clip_value=0.5),
                collect=dict(n_sample=80),  # 16 envs x 5 steps
                eval=dict(deterministic=False, evaluator=dict(eval_freq=125))),
)


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_acrobot_climbs_from_minus_500_to_minus_200(tmp_path, seed):
    """A non-CartPole row: the random policy scores -500 (every episode times out); within 60k env steps the
    sampled-action evaluation reaches -200. Measured (seeds 0, 1, 2): -139, -105, -111 after 20k steps, so the
    stop value has a margin of ~60 return and a budget three times what it needs.
    """
    create = dict(env=dict(type='gym'), policy=dict(type='a2c'))
    policy = serial_pipeline_onpolicy((ACROBOT, create), seed=seed, max_env_step=60_000,
                                      exp_dir=str(tmp_path / 'acrobot'), progress=False)
    assert policy.summary['solved'], policy.summary
    assert policy.summary['best_eval_return'] >= -200


TOY = dict(collector_env_num=8, evaluator_env_num=4, n_evaluator_episode=4)


def test_multi_discrete_toy_env_improves_its_return(tmp_path):
    """nvec (3, 4), 16-step episodes: random play scores 16 * (1/3 + 1/4) / 2 ≈ 4.7; the run must reach 14."""
    main = dict(env=dict(env_id='toy_multidiscrete', stop_value=14, **TOY),
                policy=dict(learn=dict(learning_rate=0.003, entropy_weight=0.0, discount_factor=0.5),
                            collect=dict(n_sample=64),  # 8 steps from each of the 8 envs
                            eval=dict(evaluator=dict(eval_freq=10))))
    create = dict(env=dict(type='toy_multidiscrete'), policy=dict(type='a2c'))
    policy = serial_pipeline_onpolicy((main, create), seed=0, max_env_step=10_000,
                                      exp_dir=str(tmp_path / 'toy_md'), progress=False)
    assert policy.summary['solved'], policy.summary


def test_dict_observations_are_flattened_by_the_chosen_keys(tmp_path):
    """obs_keys picks 'target' (4) and 'noise' (2) and drops 'distractor': the model sees 6 inputs and learns."""
    main = dict(env=dict(env_id='toy_dict', obs_keys=['target', 'noise'], stop_value=14, **TOY),
                policy=dict(learn=dict(learning_rate=0.003, entropy_weight=0.0, discount_factor=0.5),
                            collect=dict(n_sample=64),  # 8 steps from each of the 8 envs
                            eval=dict(evaluator=dict(eval_freq=10))))
    create = dict(env=dict(type='toy_dict'), policy=dict(type='a2c'))
    policy = serial_pipeline_onpolicy((main, create), seed=0, max_env_step=10_000,
                                      exp_dir=str(tmp_path / 'toy_dict'), progress=False)
    assert policy.model.actor_encoder[0].in_features == 6
    assert policy.summary['solved'], policy.summary


def test_learns_from_pixels_on_the_moving_dot_env(tmp_path):
    """uint8 (2, 16, 16) frames, the direction of the dot's last move: random play scores 4 per 16-step episode.
    Seeds 0, 1, 2 reached 12 after 14.7k, 16.0k and 21.1k env steps; the budget is 40k."""
    model = dict(encoder='impala_resnet', encoder_channels=[16], encoder_hidden_size_list=[64], activation='relu')
    main = dict(env=dict(env_id='toy_pixel_dot', stop_value=12, **TOY),
                policy=dict(model=model, learn=dict(optim='adam', learning_rate=0.003, entropy_weight=0.003,
                                                    discount_factor=0.5),
                            collect=dict(n_sample=64), eval=dict(evaluator=dict(eval_freq=10))))  # 8 envs x 8 steps
    create = dict(env=dict(type='toy_pixel_dot'), policy=dict(type='a2c'))
    policy = serial_pipeline_onpolicy((main, create), seed=0, max_env_step=40_000, exp_dir=str(tmp_path / 'dot'),
                                      progress=False)
    assert policy.summary['solved'], policy.summary


def test_learns_from_a_dict_observation_mixing_an_image_and_a_vector(tmp_path):
    """toy_pixel_goal: the dot's uint8 image and the target's float vector, which the task needs both of
    (random play ~7, the image alone ~9, perfect 16 per episode). Seeds 0, 1, 2 reached 13 after
    26.9k, 25.6k and 24.3k env steps; the budget is 60k."""
    model = dict(encoder='impala_resnet', encoder_channels=[8], encoder_hidden_size_list=[32], vector_hidden_size_list=[32],
                 activation='relu')
    main = dict(env=dict(env_id='toy_pixel_goal', collector_env_num=8, evaluator_env_num=4, n_evaluator_episode=8,
                         stop_value=13),
                policy=dict(model=model, learn=dict(optim='adam', learning_rate=0.002, entropy_weight=0.003,
                                                    discount_factor=0.5),
                            collect=dict(n_sample=64), eval=dict(evaluator=dict(eval_freq=20))))  # 8 envs x 8 steps
    create = dict(env=dict(type='toy_pixel_goal'), policy=dict(type='a2c'))
    policy = serial_pipeline_onpolicy((main, create), seed=0, max_env_step=60_000, exp_dir=str(tmp_path / 'goal'),
                                      progress=False)
    assert policy.summary['solved'], policy.summary
