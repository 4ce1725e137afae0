"""Specification of ``acframe.config.reference``: the generated config docs match the code and cover every key."""
import os
import subprocess
import sys

import pytest

from acframe.config.reference import builtin_policies, expected_docs, main, missing_comments, rows

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), 'docs')


@pytest.mark.parametrize('relative', sorted(expected_docs()))
def test_generated_docs_in_the_repository_are_up_to_date(relative):
    path = os.path.join(DOCS, relative)
    assert os.path.isfile(path), f"{relative} is missing: run `python -m acframe.config.reference --write docs`"
    with open(path, encoding='utf-8') as f:
        on_disk = f.read()
    assert on_disk == expected_docs()[relative], \
        f"docs/{relative} is stale: run `python -m acframe.config.reference --write docs`"


def test_every_builtin_policy_has_a_reference_page():
    assert {'impala'} <= set(builtin_policies())
    pages = {f'{name}_config.md' for name in builtin_policies()}
    on_disk = {f for f in os.listdir(os.path.join(DOCS, 'algorithms')) if f.endswith('_config.md')}
    assert on_disk == pages


@pytest.mark.parametrize('policy', builtin_policies())
def test_every_default_key_has_a_comment(policy):
    assert missing_comments(policy) == []


def test_declarations_become_type_allowed_values_default_and_description():
    table = rows({'learn': {'learning_rate': 0.001, 'clip': None}, 'model': {}}, {
        'policy.learn.learning_rate': '(float > 0) Step size.', 'policy.learn.clip': '(float in (0, 1] or None) A clip.',
        'policy.model': '(dict) Model kwargs.'}, 'policy.')
    assert [tuple(r) for r in table] == [('policy.learn.learning_rate', 'float', '> 0', '0.001', 'Step size.'),
                                         ('policy.learn.clip', 'float', 'in (0, 1], or None', 'None', 'A clip.'),
                                         ('policy.model', 'dict', '', '{}', 'Model kwargs.')]


def test_the_command_prints_every_key_with_default_and_comment(capsys):
    assert main(['--policy', 'impala']) == 0
    out = capsys.readouterr().out
    assert "policy.learn.discount_factor = 0.99  # (float in [0, 1]) Discount factor gamma." in out
    assert 'env.collector_env_num = 8  # (int in [1, 4096])' in out
    assert main(['--policy', 'impalla']) == 2
    assert "Did you mean 'impala'?" in capsys.readouterr().err


def test_generating_the_reference_does_not_import_torch(tmp_path):
    probe = ("import sys\nfrom acframe.config.reference import expected_docs\nexpected_docs()\n"
             "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.stdout.strip() == 'False', out.stderr


def test_the_reference_of_a_users_policy_imports_its_module_first(tmp_path, monkeypatch, capsys):
    (tmp_path / 'reference_user_policy.py').write_text(
        "from acframe import POLICY_REGISTRY\nfrom acframe.policy.a2c import A2CPolicy\n\n\n"
        "@POLICY_REGISTRY.register('reference_user_a2c')\nclass Mine(A2CPolicy):\n    config = dict(\n"
        "        learn=dict(\n            # (float > 0) The user's own key.\n            my_key=0.5,\n        ),\n    )\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from acframe import POLICY_REGISTRY
    try:
        assert main(['--policy', 'reference_user_a2c', '--import', 'reference_user_policy']) == 0
    finally:
        POLICY_REGISTRY._entries.pop('reference_user_a2c', None)
    out = capsys.readouterr().out
    assert "my_key = 0.5  # (float > 0) The user's own key." in out and 'gae_lambda = 1.0' in out  # and A2C's keys
