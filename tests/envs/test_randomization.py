"""Specification of ``acframe.envs.randomization``: domain randomization declared in ``env.domain_randomization``.

Each collector env gets its own parameters, drawn from the declared distributions (normal clipped to
[low, high], uniform, choice), reproducibly from the run seed; draws are logged and saved in the
experiment folder; the evaluator keeps the nominal parameters unless told otherwise.
"""
import json
import math

import pytest

from acframe.config import compile_config
from acframe.entry.serial_onpolicy import serial_pipeline_onpolicy
from acframe.envs.randomization import (DomainRandomizer, build_randomized_env, draw_params, parse_params,
                                        randomized_env_fns)
from acframe.errors import ConfigError

LUNAR_PARAMS = dict(
    gravity=dict(dist='normal', mean=-10.0, std=1.0, low=-11.99, high=-0.01),
    enable_wind=dict(dist='choice', values=[True, False]),
    wind_power=dict(dist='uniform', low=5.0, high=20.0),
)


def test_each_env_gets_its_own_parameters_from_the_declared_distributions():
    specs = parse_params(LUNAR_PARAMS)
    params = draw_params(specs, seed=0, draw_index=0, num_envs=8)
    assert len(params) == 8
    assert len({(p['gravity'], p['wind_power']) for p in params}) == 8
    for p in params:
        assert set(p) == {'gravity', 'enable_wind', 'wind_power'}
        assert -11.99 <= p['gravity'] <= -0.01
        assert 5.0 <= p['wind_power'] < 20.0
        assert p['enable_wind'] in (True, False) and isinstance(p['enable_wind'], bool)
    assert {p['enable_wind'] for p in draw_params(specs, 0, 0, 64)} == {True, False}


def test_draws_are_reproducible_from_the_seed_and_differ_across_seeds_and_draws():
    specs = parse_params(LUNAR_PARAMS)
    assert draw_params(specs, 3, 0, 4) == draw_params(specs, 3, 0, 4)
    assert draw_params(specs, 3, 0, 4) != draw_params(specs, 4, 0, 4)
    assert draw_params(specs, 3, 0, 4) != draw_params(specs, 3, 1, 4)
    assert draw_params(specs, 3, 0, 4) != draw_params(specs, 3, 0, 4, role='evaluator')


def test_normal_draws_are_clipped_to_their_bounds():
    specs = parse_params(dict(g=dict(dist='normal', mean=0.0, std=100.0, low=-1.0, high=2.0)))
    values = [p['g'] for p in draw_params(specs, 0, 0, 500)]
    assert min(values) == -1.0 and max(values) == 2.0  # the wide normal lands outside often: clipped
    assert all(-1.0 <= v <= 2.0 for v in values)
    one_sided = parse_params(dict(g=dict(dist='normal', mean=0.0, std=10.0, high=0.5)))
    assert max(p['g'] for p in draw_params(one_sided, 0, 0, 200)) == 0.5


def test_choice_follows_its_probabilities():
    specs = parse_params(dict(mode=dict(dist='choice', values=['a', 'b', 'c'], p=[0.0, 1.0, 0.0])))
    assert {p['mode'] for p in draw_params(specs, 0, 0, 20)} == {'b'}


@pytest.mark.parametrize('spec, message', [
    (dict(dist='gauss', mean=0, std=1), "params.g.dist' = 'gauss' is not one of"),
    (dict(dist='normal', mean=0), "needs 'std'"),
    (dict(dist='normal', mean=0, std=-1), "params.g.std' = -1.0 must be >= 0"),
    (dict(dist='uniform', low=2, high=1), 'low \\(2.0\\) must not exceed high \\(1.0\\)'),
    (dict(dist='uniform', low=0, hihg=1), "unknown config key 'env.domain_randomization.params.g.hihg'; did you mean"),
    (dict(dist='choice', values=[]), 'must be a non-empty list'),
    (dict(dist='choice', values=[1, 2], p=[0.5, 0.6]), 'sum to 1'),
    (dict(dist='uniform', low='a', high=1), "params.g.low' = 'a' must be a number"),
    (dict(dist='uniform', low=0, high=1, via='setattr'), "params.g.via' = 'setattr' is not one of"),
])
def test_a_bad_declaration_names_the_key(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_params(dict(g=spec))


def test_parameters_reach_the_env_as_keywords_or_attributes():
    lunar = build_randomized_env(dict(env_id='LunarLander-v3'), 0, 0, 'collector',
                                 kwargs=dict(gravity=-7.5, enable_wind=True), attributes={})
    assert lunar.unwrapped.gravity == -7.5 and lunar.unwrapped.enable_wind
    lunar.close()
    cartpole = build_randomized_env(dict(env_id='CartPole-v1'), 0, 0, 'collector', kwargs={},
                                    attributes=dict(gravity=12.5))
    assert cartpole.unwrapped.gravity == 12.5
    with pytest.raises(ConfigError, match="has no attribute 'gravityy'"):
        build_randomized_env(dict(env_id='CartPole-v1'), 0, 0, 'collector', kwargs={}, attributes=dict(gravityy=1.0))
    with pytest.raises(ConfigError, match="rejected the drawn keywords \\['gravity'\\].*via='attribute'"):
        build_randomized_env(dict(env_id='CartPole-v1'), 0, 0, 'collector', kwargs=dict(gravity=9.0), attributes={})


def test_env_constructors_apply_each_envs_own_draw():
    specs = parse_params(dict(gravity=dict(dist='uniform', low=5.0, high=15.0, via='attribute')))
    params = draw_params(specs, 0, 0, 3)
    fns = randomized_env_fns(dict(env_id='CartPole-v1'), specs, params, seeds=[0, 1, 2], role='collector')
    envs = [fn() for fn in fns]
    assert [env.unwrapped.gravity for env in envs] == [p['gravity'] for p in params]
    for env in envs:
        env.close()


def test_enabled_without_parameters_is_an_error():
    main = dict(env=dict(domain_randomization=dict(enable=True)))
    cfg = compile_config((main, dict(policy=dict(type='a2c'))))
    with pytest.raises(ConfigError, match='params is empty'):
        DomainRandomizer.from_config(cfg)


def test_a_parameter_can_be_added_by_a_command_line_override():
    cfg = compile_config('cartpole_a2c.py', [
        'env.domain_randomization.enable=True',
        "env.domain_randomization.params.gravity={'dist': 'uniform', 'low': 9.0, 'high': 11.0, 'via': 'attribute'}",
    ])
    assert DomainRandomizer.from_config(cfg).specs[0].name == 'gravity'


def dr_run(tmp_path, name, **dr):
    params = dict(gravity=dict(dist='uniform', low=5.0, high=15.0, via='attribute'),
                  length=dict(dist='normal', mean=0.5, std=0.3, low=0.2, high=0.8, via='attribute'))
    overrides = [('env.domain_randomization.enable', True), ('env.domain_randomization.params', params),
                 *[(f'env.domain_randomization.{k}', v) for k, v in dr.items()],
                 ('env.collector_env_num', 4), ('policy.collect.n_sample', 20), ('env.evaluator_env_num', 2), ('env.n_evaluator_episode', 2),
                 ('policy.eval.evaluator.eval_freq', 0)]
    exp_dir = tmp_path / name
    serial_pipeline_onpolicy('cartpole_a2c.py', seed=5, overrides=overrides, max_train_iter=7,
                             exp_dir=str(exp_dir), progress=False)
    with open(exp_dir / 'domain_randomization.json') as f:
        return json.load(f), exp_dir


def test_a_run_saves_its_draws_and_redraws_every_k_collections(tmp_path):
    saved, exp_dir = dr_run(tmp_path, 'redraw', resample_every=3)
    draws = saved['collector']
    assert [d['draw'] for d in draws] == [0, 1, 2]   # 7 collections: drawn at the start, after the 3rd and the 6th
    assert [d['collections'] for d in draws] == [0, 3, 6]
    specs = parse_params(saved['distributions'])
    for d in draws:
        assert d['params'] == draw_params(specs, 5, d['draw'], 4)  # reproducible from the run seed
        assert len(d['seeds']) == 4
    assert draws[0]['seeds'] != draws[1]['seeds']
    assert saved['evaluator'] is None             # the evaluator keeps the nominal parameters
    assert any(name.startswith('events') for name in (p.name for p in (exp_dir / 'log').iterdir()))


def test_the_evaluator_can_be_randomized_too(tmp_path):
    saved, _ = dr_run(tmp_path, 'eval', apply_to_evaluator=True)
    assert [d['draw'] for d in saved['collector']] == [0]  # resample_every=0: one draw
    evaluator = saved['evaluator']['params']
    assert len(evaluator) == 2 and evaluator != saved['collector'][0]['params'][:2]
    assert all(5.0 <= p['gravity'] <= 15.0 and 0.2 <= p['length'] <= 0.8 for p in evaluator)
    assert not any(math.isnan(p['gravity']) for p in evaluator)


def test_a_parallel_actors_re_draw_is_reported_as_one():
    """The learner's record of its actors' draws: a re-draw of actor 0's env set printed as 'draw 0' again."""
    cfg = compile_config('cartpole_a2c.py', [
        'env.domain_randomization.enable=True', 'env.domain_randomization.resample_every=2',
        "env.domain_randomization.params.gravity={'dist': 'uniform', 'low': 9.0, 'high': 11.0, 'via': 'attribute'}"])
    randomizer, said = DomainRandomizer.from_config(cfg), []
    randomizer.attach(echo=said.append)
    for step in (100, 200, 300):  # segments 1, 2, 3 of actor 0: its draw, then its first re-draw at the third
        randomizer.note_actor_segment(0, 0, 1, step)
    headers = [line for line in said if line.startswith('[domain randomization]')]
    assert headers == ['[domain randomization] actor0 draw 0 at env step 100:',
                       '[domain randomization] actor0 draw 0 (re-draw 1) at env step 300:']
    assert [h['redraw'] for h in randomizer.history] == [0, 1]
