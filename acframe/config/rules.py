"""Config rules: each key's type, range or choices and None-ability, declared in the comment above its default.

Every config key has one comment line above it (``docs/config_reference.md`` is generated from them); the
comment starts with the key's *declaration* in parentheses, the rest is its one-line description::

    # (float in [0, 1]) Discount factor gamma.
    discount_factor=0.99,
    # (int >= 1) Transitions per minibatch.
    batch_size=64,
    # (str in {'adam', 'rmsprop'}) Optimizer.
    optim='adam',
    # (float > 0 or None) Step size of the critic; None uses learning_rate.
    critic_learning_rate=None,

The grammar, ``( TYPE [CONSTRAINT] [or None] )``:

* ``TYPE`` is ``int``, ``float``, ``str``, ``bool``, ``list`` or ``dict`` (an int is accepted for a float, an
  integral float for an int, a tuple for a list);
* ``CONSTRAINT`` (numbers only) is an interval ``in [a, b]`` / ``in (a, b]`` / ... or a bound ``> a``, ``>= a``,
  ``< a``, ``<= a``; (``str`` and numbers) ``in {'x', 'y'}`` lists the choices;
* ``or None`` accepts None (the key's default may then be None).

A float must be finite unless its interval names ``inf``/``-inf`` as a bound (``(float in [-inf, inf] or None)``).
``compile_config`` checks every value against its key's rule, and the config reference shows the rule, so a
policy's keys are validated and documented from its own ``config`` without any edit in ``acframe.config``.
A key whose comment declares nothing is checked against the type of its default (and finiteness) only.
"""
from __future__ import annotations

import ast
import math
import re
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

from ..errors import ConfigError

_TYPES: Dict[str, type] = {'int': int, 'float': float, 'str': str, 'bool': bool, 'list': list, 'dict': dict}
_RULE = re.compile(r'^(?P<type>[a-z]+)(?:\s+(?P<constraint>.*))?$')
_INTERVAL = re.compile(r'^in\s*(?P<open>[\[(])\s*(?P<low>[^,]+?)\s*,\s*(?P<high>[^,]+?)\s*(?P<close>[\])])$')
_BOUND = re.compile(r'^(?P<op>>=|<=|>|<)\s*(?P<value>\S+)$')


class Rule(NamedTuple):
    """What a config key accepts (see the module docstring for the grammar it is parsed from)."""

    type: str                                  # 'int', 'float', 'str', 'bool', 'list' or 'dict'
    nullable: bool = False                     # None is accepted
    low: Optional[float] = None                # lower bound (None: unbounded)
    low_open: bool = False                     # the lower bound is excluded
    high: Optional[float] = None               # upper bound (None: unbounded)
    high_open: bool = False                    # the upper bound is excluded
    choices: Optional[Tuple[Any, ...]] = None  # the accepted values, in declared order
    accepts_inf: bool = False                  # a float may be +-inf (an interval bound says inf)

    def constraint_text(self) -> str:
        """The constraint as declared, e.g. ``in [0, 1]``, ``> 0``, ``in {'adam', 'rmsprop'}`` ('' for none)."""
        if self.choices is not None:
            return 'in {' + ', '.join(repr(c) for c in self.choices) + '}'
        if self.low is not None and self.high is not None:
            return f"in {'(' if self.low_open else '['}{_num(self.low)}, {_num(self.high)}{')' if self.high_open else ']'}"
        if self.low is not None:
            return f"{'>' if self.low_open else '>='} {_num(self.low)}"
        if self.high is not None:
            return f"{'<' if self.high_open else '<='} {_num(self.high)}"
        return ''

    def allowed_text(self) -> str:
        """The values the rule accepts beyond its type, for the config reference (``> 0, or None``)."""
        parts = [self.constraint_text()] if self.constraint_text() else []
        if self.nullable:
            parts.append('or None' if parts else 'None')
        return ', '.join(parts) if len(parts) < 2 else f"{parts[0]}, {parts[1]}"

    def check(self, key: str, value: Any, default: Any = None) -> Any:
        """``value`` converted to the rule's type (int -> float, integral float -> int, numpy scalar -> Python),
        or a ``ConfigError`` naming ``key``, what it accepts and the value it got."""
        if type(value).__module__ == 'numpy' and getattr(value, 'shape', None) == ():
            value = value.item()  # a numpy scalar is the Python number it equals
        if value is None:
            if self.nullable or (self.choices is not None and None in self.choices):
                return None
            example = f"such as {default!r}" if default is not None else "value"
            raise ConfigError(f"config key '{key}' must not be None; set a {self.type} {example}")
        value = self._convert(key, value, default)
        if self.type in ('int', 'float'):
            if isinstance(value, float) and math.isnan(value):
                raise ConfigError(f"config key '{key}' is NaN; set a number")
            if isinstance(value, float) and math.isinf(value) and not self.accepts_inf:
                raise ConfigError(f"config key '{key}' is {value}; set a finite number")
            if not self._in_range(value):
                sb3 = ("; SB3's -1 (a draw at each rollout's start only) is the steps each env collects per rollout, "
                       "policy.collect.n_sample / env.collector_env_num" if key.endswith('.sde_sample_freq')
                       and value == -1 else '')
                raise ConfigError(f"config key '{key}' = {_num(value)} must {self._range_phrase()}"
                                  f"{' (or None)' if self.nullable else ''}{sb3}")
        if self.choices is not None and value not in self.choices:
            choices = ', '.join(repr(c) for c in self.choices) + (' or None' if self.nullable else '')
            same = [c for c in self.choices if isinstance(c, str) and isinstance(value, str)
                    and c.lower() == value.strip().lower()]  # ('LSTM' for 'lstm': a case or a space apart)
            near = f"; did you mean {same[0]!r}?" if same else ''
            raise ConfigError(f"config key '{key}' = {value!r} is not one of {choices}{near}")
        return value

    # ---- helpers -------------------------------------------------------------------------------------
    def _convert(self, key: str, value: Any, default: Any) -> Any:
        ok = True
        if self.type == 'bool':
            ok = isinstance(value, bool)
        elif self.type == 'int':
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif self.type == 'float':
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            value = float(value) if ok else value
        elif self.type == 'str':
            ok = isinstance(value, str)
        elif self.type == 'list':
            ok = isinstance(value, (list, tuple))
        elif self.type == 'dict':
            if not isinstance(value, dict):
                raise ConfigError(f"config key '{key}' must be a dict (a section of keys), got {type(value).__name__} {value!r}")
        if not ok:
            example = f"like its default {default!r}" if default is not None else "as declared"
            quoted = (f"; on the command line, quoted: \"{key}=[{value!r}]\"" if self.type == 'list'
                      and isinstance(value, str) else '')  # (a list of one name, as a shell passes it)
            if self.type == 'float' and isinstance(value, str) and value.startswith('lin_'):  # (the RL Zoo's schedule)
                decay = {'learning_rate': 'lr_decay_iters', 'clip_ratio': 'clip_ratio_decay_iters'}.get(
                    key.rsplit('.', 1)[-1])
                quoted = (f"; {value!r} is the RL Zoo's linear schedule: give its start value here ({value[4:]})"
                          + (f" and the gradient steps of its decay to 0 in {key.rsplit('.', 1)[0]}.{decay}"
                             if decay else ' (acframe keeps it constant)'))
            raise ConfigError(f"config key '{key}' must be {self.type} ({example}), got {type(value).__name__} "
                              f"{value!r}{quoted}")
        return value

    def _in_range(self, value: float) -> bool:
        if self.low is not None and (value < self.low or self.low_open and value == self.low):
            return False
        if self.high is not None and (value > self.high or self.high_open and value == self.high):
            return False
        return True

    def _range_phrase(self) -> str:
        if self.low is not None and self.high is not None:
            return f"lie in {self.constraint_text()[3:]}"
        return f"be {self.constraint_text()}"


def _num(value: float) -> str:
    """A bound or value as the declaration writes it: ``1``, ``0.5``, ``inf``; large ints with ``_`` separators."""
    if isinstance(value, float) and math.isinf(value):
        return 'inf' if value > 0 else '-inf'
    if isinstance(value, int) and abs(value) >= 100_000:
        return f"{value:_}"
    return repr(value)


def _bound(text: str) -> float:
    if text in ('inf', '+inf', '-inf'):
        return -math.inf if text.startswith('-') else math.inf
    value = ast.literal_eval(text)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"bound {text!r} is not a number")
    return value


def _choices(text: str) -> Tuple[Any, ...]:
    node = ast.parse(text, mode='eval').body
    if not isinstance(node, ast.Set):
        raise ValueError(f"{text!r} is not a set of choices like {{'a', 'b'}}")
    return tuple(ast.literal_eval(element) for element in node.elts)


def parse_rule(text: str) -> Rule:
    """The ``Rule`` of a declaration's text (the part inside the parentheses); ``ValueError`` saying what is wrong."""
    text = ' '.join(text.split())
    nullable = text.endswith(' or None')
    match = _RULE.match(text[:-len(' or None')] if nullable else text)
    if not match or match.group('type') not in _TYPES:
        raise ValueError(f"'({text})' does not start with a type ({', '.join(_TYPES)})")
    kind, constraint = match.group('type'), (match.group('constraint') or '').strip()
    rule = Rule(kind, nullable)
    if not constraint:
        return rule
    numeric = kind in ('int', 'float')
    if constraint.startswith('in') and constraint[2:].lstrip().startswith('{'):
        if not numeric and kind != 'str':
            raise ValueError(f"choices need a str or number type, not {kind}")
        return rule._replace(choices=_choices(constraint[2:].strip()))
    if not numeric:
        raise ValueError(f"a range '{constraint}' needs type int or float, not {kind}")
    interval, bound = _INTERVAL.match(constraint), _BOUND.match(constraint)
    if interval:
        low, high = _bound(interval.group('low')), _bound(interval.group('high'))
        if low > high:
            raise ValueError(f"the interval '{constraint}' is empty")
        return rule._replace(low=low, low_open=interval.group('open') == '(', high=high,
                             high_open=interval.group('close') == ')',
                             accepts_inf=kind == 'float' and (math.isinf(low) or math.isinf(high)))
    if bound:
        op, value = bound.group('op'), _bound(bound.group('value'))
        if op in ('>', '>='):
            return rule._replace(low=value, low_open=op == '>')
        return rule._replace(high=value, high_open=op == '<')
    raise ValueError(f"'{constraint}' is not a constraint: write 'in [a, b]', '> a', '>= a', '< a', '<= a' or "
                     f"\"in {{'x', 'y'}}\"")


def split_declaration(comment: str) -> Tuple[str, str]:
    """``'(float in [0, 1]) Discount factor.'`` -> ``('float in [0, 1]', 'Discount factor.')``; ``('', comment)``
    when the comment declares nothing. The declaration ends at the parenthesis that closes the first one (brackets
    and braces inside it nest, whatever their kind: ``(float in (0, 1])``)."""
    comment = comment or ''
    if not comment.startswith('('):
        return '', comment
    depth, quote = 0, ''
    for index, char in enumerate(comment):
        if quote:
            quote = '' if char == quote else quote
        elif char in '\'"':
            quote = char
        elif char in '([{':
            depth += 1
        elif char in ')]}':
            depth -= 1
            if depth == 0:
                return ' '.join(comment[1:index].split()), comment[index + 1:].strip()
    return '', comment


def rule_of(key: str, comment: Optional[str], default: Any) -> Rule:
    """The rule of ``key``: parsed from its comment's declaration, else the type of its default.

    A declaration that does not parse, or that the key's own default breaks, is a ``ConfigError`` naming the key:
    the mistake is in the code that declares it (a policy's ``config`` or ``acframe.config.defaults``).
    """
    text, _ = split_declaration(comment or '')
    if not text and re.match(rf"\(\s*({'|'.join(_TYPES)})\b", comment or ''):  # a declaration that never closes
        raise ConfigError(f"the declaration of config key '{key}' {(comment or '')[:60]!r} opens a parenthesis it never "
                          f"closes, so it would declare nothing; close it: (float in (0, 1)) Description. (grammar: "
                          f"docs/adding_an_algorithm.md)")
    if not text:
        if default is None:
            return Rule('', nullable=True)  # undeclared and None: anything goes
        kind = 'dict' if isinstance(default, dict) else 'list' if isinstance(default, (list, tuple)) else type(default).__name__
        return Rule(kind if kind in _TYPES else '')
    try:
        rule = parse_rule(text)
    except (ValueError, SyntaxError) as exc:
        glued = re.match(rf"({'|'.join(_TYPES)})([<>=!]+)\s*(.*)", text)
        if glued:  # '(float>0)': the type is there, its operator touches it
            kind, operator, rest = glued.groups()
            exc = ValueError(f"put spaces around its operator: ({kind} {operator} {rest})")
        raise ConfigError(f"the declaration of config key '{key}' '({text})' is not a rule: {exc}; fix the comment above "
                          f"the key (grammar: docs/adding_an_algorithm.md)") from None
    try:
        rule.check(key, default, default)
    except ConfigError as exc:
        raise ConfigError(f"the default {default!r} of config key '{key}' breaks its own declaration '({text})' "
                          f"({exc}); fix the declaration or the default") from None
    return rule


def check_config(cfg: Dict[str, Any], reference: Dict[str, Any], comments: Dict[str, str], path: str = '') -> None:
    """Check (and convert, in place) every value of ``cfg`` whose key is in ``reference`` (the defaults) against
    the key's rule; ``comments`` maps full key paths to their comment. Sections are checked key by key; the
    contents of a free-form mapping (a dict whose default is empty) are not checked here."""
    for key, default in reference.items():
        if key not in cfg:
            continue
        full = f"{path}.{key}" if path else key
        rule = rule_of(full, comments.get(full), default)
        if not rule.type:
            continue
        value = rule.check(full, cfg[key], default)
        cfg[key] = value
        if isinstance(default, dict) and default and isinstance(value, dict):
            check_config(value, default, comments, full)


def declared_rules(defaults: Dict[str, Any], comments: Dict[str, str], prefix: str = '') -> List[Tuple[str, Rule]]:
    """``(full key, rule)`` of every key under ``defaults`` (depth first), for tests and tools."""
    out: List[Tuple[str, Rule]] = []
    for key, value in defaults.items():
        full = prefix + str(key)
        out.append((full, rule_of(full, comments.get(full), value)))
        if isinstance(value, dict) and value:
            out.extend(declared_rules(value, comments, full + '.'))
    return out
