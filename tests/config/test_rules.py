"""Specification of ``acframe.config.rules``: a key's rule is declared in the comment above its default, and both
``compile_config`` and the config reference read it from there — so a new policy's keys are validated and
documented without any edit in ``acframe.config``."""
import contextlib
import math
import sys
import textwrap

import pytest

from acframe.config import compile_config, default_config
from acframe.config.compile import _all_comments, policy_defaults
from acframe.config.reference import builtin_policies, render_policy
from acframe.config.rules import Rule, declared_rules, parse_rule, rule_of, split_declaration
from acframe.errors import ConfigError
from acframe.registry import POLICY_REGISTRY


# ---- the grammar ---------------------------------------------------------------------------------------
@pytest.mark.parametrize('text, rule', [
    ('float', Rule('float')),
    ('int >= 1', Rule('int', low=1)),
    ('float > 0 or None', Rule('float', nullable=True, low=0, low_open=True)),
    ('float in (0, 1]', Rule('float', low=0, low_open=True, high=1)),
    ('float in [0, 1)', Rule('float', low=0, high=1, high_open=True)),
    ('int in [1, 4_096]', Rule('int', low=1, high=4096)),
    ('float < 10', Rule('float', high=10, high_open=True)),
    ('float in [-inf, inf] or None', Rule('float', nullable=True, low=-math.inf, high=math.inf, accepts_inf=True)),
    ("str in {'adam', 'rmsprop'}", Rule('str', choices=('adam', 'rmsprop'))),
    ("str in {'clip_norm', 'none'} or None", Rule('str', nullable=True, choices=('clip_norm', 'none'))),
    ('list or None', Rule('list', nullable=True)),
])
def test_declarations_parse_into_rules(text, rule):
    assert parse_rule(text) == rule


@pytest.mark.parametrize('text, reason', [
    ('number', 'does not start with a type'),
    ('float between 0 and 1', 'is not a constraint'),
    ('str > 0', 'needs type int or float'),
    ('float in [1, 0]', 'is empty'),
    ('bool in {True}', 'choices need a str or number type'),
])
def test_a_malformed_declaration_says_what_is_wrong(text, reason):
    with pytest.raises(ValueError, match=reason):
        parse_rule(text)


def test_the_declaration_is_the_first_parenthesis_of_the_comment_brackets_nesting():
    assert split_declaration('(float in (0, 1]) Ratio (of something).') == ('float in (0, 1]', 'Ratio (of something).')
    assert split_declaration("(str in {'a)', 'b'}) Mode.") == ("str in {'a)', 'b'}", 'Mode.')
    assert split_declaration('Free text without a declaration.') == ('', 'Free text without a declaration.')


@pytest.mark.parametrize('text, value, message', [
    ('float in (0, 1]', 0.0, "config key 'k' = 0.0 must lie in (0, 1]"),
    ('float in (0, 1]', 1.5, "config key 'k' = 1.5 must lie in (0, 1]"),
    ('int >= 1', 0, "config key 'k' = 0 must be >= 1"),
    ('float > 0 or None', -1, "config key 'k' = -1.0 must be > 0 (or None)"),
    ('float', math.nan, "config key 'k' is NaN; set a number"),
    ('float', math.inf, "config key 'k' is inf; set a finite number"),
    ('int', 2.5, "config key 'k' must be int (like its default 3), got float 2.5"),
    ('bool', 1, "config key 'k' must be bool (like its default 3), got int 1"),
    ('int', None, "config key 'k' must not be None; set a int such as 3"),
    ("str in {'a', 'b'}", 'c', "config key 'k' = 'c' is not one of 'a', 'b'"),
    ('list', 'my_hook', "config key 'k' must be list (like its default 3), got str 'my_hook'; on the command line, "
                        "quoted: \"k=['my_hook']\""),
])
def test_a_value_outside_its_rule_is_one_line_naming_the_key(text, value, message):
    with pytest.raises(ConfigError) as info:
        parse_rule(text).check('k', value, default=3)
    assert str(info.value) == message


def test_accepted_values_are_converted_to_the_declared_type():
    assert parse_rule('float > 0').check('k', 1) == 1.0 and isinstance(parse_rule('float > 0').check('k', 1), float)
    assert parse_rule('int >= 0').check('k', 4.0) == 4 and isinstance(parse_rule('int >= 0').check('k', 4.0), int)
    assert parse_rule('float in [-inf, inf]').check('k', -math.inf) == -math.inf
    assert parse_rule('list or None').check('k', (1, 2)) == (1, 2)
    assert parse_rule('float > 0 or None').check('k', None) is None


def test_a_default_that_breaks_its_own_declaration_is_named():
    with pytest.raises(ConfigError, match=r"the default 0.0 of config key 'policy.learn.x' breaks its own declaration "
                                          r"'\(float > 0\)'"):
        rule_of('policy.learn.x', '(float > 0) X.', 0.0)
    with pytest.raises(ConfigError, match=r"declaration of config key 'policy.learn.x' '\(float positive\)' is not a rule"):
        rule_of('policy.learn.x', '(float positive) X.', 1.0)


@pytest.mark.parametrize('policy', builtin_policies())
def test_every_key_of_every_builtin_policy_declares_a_type_its_default_satisfies(policy):
    _, policy_comments = policy_defaults(policy)
    comments = _all_comments(policy_comments)
    rules = declared_rules(default_config(policy), comments)  # rule_of raises if a default breaks its rule
    undeclared = [key for key, rule in rules if not split_declaration(comments.get(key, ''))[0]
                  and not isinstance(_get(default_config(policy), key), dict)]
    assert undeclared == []
    assert all(rule.type for _, rule in rules)


def _get(tree, path):
    for part in path.split('.'):
        tree = tree[part]
    return tree


# ---- a new algorithm declares its own rules: no edit in acframe.config -------------------------------
THROWAWAY = '''
from acframe.policy import Policy


class ThrowawayPolicy(Policy):
    """A policy that exists only to show that its config rules need no core edit."""

    config = dict(
        learn=dict(
            # (float in (0, 1]) My ratio: a share of something, never 0.
            my_ratio=0.5,
            # (str in {'fast', 'slow'} or None) How to go; None: not at all.
            my_mode='fast',
        ),
    )
'''


@pytest.fixture
def throwaway(tmp_path, monkeypatch):
    (tmp_path / 'acframe_throwaway_policy.py').write_text(textwrap.dedent(THROWAWAY))
    monkeypatch.syspath_prepend(str(tmp_path))
    POLICY_REGISTRY.register_lazy('throwaway', 'acframe_throwaway_policy:ThrowawayPolicy')
    yield 'throwaway'
    POLICY_REGISTRY._entries.pop('throwaway', None)
    sys.modules.pop('acframe_throwaway_policy', None)


@contextlib.contextmanager
def registered(name, cls):
    POLICY_REGISTRY.register(name, cls)
    try:
        yield
    finally:
        POLICY_REGISTRY._entries.pop(name, None)


def _compile(policy, main=None, overrides=()):
    return compile_config((main or {}, dict(policy=dict(type=policy))), list(overrides))


@pytest.mark.parametrize('loaded', [False, True])
def test_a_throwaway_policys_own_rule_is_enforced_at_compile_time(throwaway, loaded):
    if loaded:  # read statically before its module is imported, from the loaded class after
        POLICY_REGISTRY.get(throwaway)
    assert _compile(throwaway, overrides=['policy.learn.my_ratio=1']).policy.learn.my_ratio == 1.0
    assert _compile(throwaway, overrides=['policy.learn.my_mode=None']).policy.learn.my_mode is None
    for value, message in (('0', "config key 'policy.learn.my_ratio' = 0.0 must lie in (0, 1]"),
                           ('1.01', "config key 'policy.learn.my_ratio' = 1.01 must lie in (0, 1]"),
                           ("'half'", "config key 'policy.learn.my_ratio' must be float (like its default 0.5), got str 'half'")):
        with pytest.raises(ConfigError) as info:
            _compile(throwaway, overrides=[f'policy.learn.my_ratio={value}'])
        assert str(info.value) == message
    with pytest.raises(ConfigError, match=r"'policy.learn.my_mode' = 'medium' is not one of 'fast', 'slow'"):
        _compile(throwaway, dict(policy=dict(learn=dict(my_mode='medium'))))


def test_a_throwaway_policys_rule_is_in_its_config_reference(throwaway):
    page = render_policy(throwaway)
    assert "| `policy.learn.my_ratio` ★ | float | `in (0, 1]` | `0.5` | My ratio: a share of something, never 0. |" in page
    assert "| `policy.learn.my_mode` ★ | str | `in {'fast', 'slow'}, or None` | `'fast'` |" in page


def test_a_throwaway_policy_from_the_cli_gets_one_line(throwaway, tmp_path, capsys, monkeypatch):
    from acframe.cli import main
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'cfg.py').write_text("main_config = dict()\ncreate_config = dict(policy=dict(type='throwaway'))\n")
    assert main(['-c', 'cfg.py', 'policy.learn.my_ratio=2']) == 2
    assert capsys.readouterr().err == "acframe: error: config key 'policy.learn.my_ratio' = 2.0 must lie in (0, 1]\n"


def test_a_policy_defined_in_a_function_or_a_script_keeps_its_rules():
    """Its module cannot be read by name: the rules come from the loaded class's own source."""
    from acframe.policy import Policy

    class LocalPolicy(Policy):
        config = dict(
            learn=dict(
                # (int in [2, 8]) Local width.
                width=4,
            ),
        )

    with registered('local_throwaway', LocalPolicy), \
            pytest.raises(ConfigError, match=r"'policy.learn.width' = 9 must lie in \[2, 8\]"):
        _compile('local_throwaway', overrides=['policy.learn.width=9'])


def test_a_subclass_inherits_the_rules_of_the_config_it_inherits():
    from acframe.policy.impala import IMPALAPolicy

    class QuietIMPALA(IMPALAPolicy):
        """Nothing of its own."""

    with registered('quiet_impala_throwaway', QuietIMPALA), \
            pytest.raises(ConfigError, match=r"'policy.learn.lambda_' = 2.0 must lie in \[0, 1\]"):
        _compile('quiet_impala_throwaway', overrides=['policy.learn.lambda_=2.0'])


@pytest.mark.parametrize('comment, message', [
    ('(float in (0, 1) unclosed.', "opens a parenthesis it never closes, so it would declare nothing"),
    ('(float in [0, 1] Missing paren.', "opens a parenthesis it never closes"),
    ('(float>0) No spaces.', r"is not a rule: put spaces around its operator: \(float > 0\)"),
    ('(int>=1) No spaces.', r"put spaces around its operator: \(int >= 1\)"),
])
def test_a_declaration_that_is_almost_one_is_refused_naming_the_key_not_read_as_a_description(comment, message):
    """An unclosed declaration was taken as plain text: the key's rule was lost and any value trained; '(float>0)'
    was said not to start with a type."""
    from acframe.config.rules import rule_of
    with pytest.raises(ConfigError, match=rf"^the declaration of config key 'k' .*{message}"):
        rule_of('k', comment, 0.5)
