"""A run folder (and a tuning study folder) is data: edited the way an attacker would edit a folder they hand
someone, it never makes acframe run code, never makes it write outside the folder, and never crashes a reader.

Each case of ``fixtures.reliability.tampered_folders()`` runs in a fresh copy of a trained run: the outcome is one
line naming the problem with exit 2 and nothing written anywhere (``-m plot``, which imports nothing, plots), and
the planted module's marker file never appears. A case that plants a module runs from all three ways a user starts
acframe (the console script, ``python -m acframe.cli``/``acframe.tune`` — the working folder on ``sys.path`` — and
the console script with ``PYTHONPATH=.``); the others, where ``sys.path`` plays no part, from ``python -m``.
``python bench/reliability.py`` runs every case from all three; docs/reliability.md counts them.
"""
import pytest

from fixtures.reliability import COMMAND_FORMS, imports_something, run_tampered, tampered_folders

CASES = tampered_folders()


def test_the_catalogue_covers_every_attack_of_issue_46():
    names = ' | '.join(case.name for case in CASES)
    for attack in ('module planted in the folder', 'beside the folder', "'this'", 'tune.json imports', 'lock file is a link',
                   'lock file is a FIFO', 'eval/ is a link', 'nested 900', 'nested 100,000', '4 TB model',
                   '(10^6, 10^6)', 'object dtype', 'RNG state', 'tune.json budget', 'study.db is not', '100,000-character exp_name',
                   'NaN (-m eval)', 'NaN (-m export)'):
        assert attack in names, attack


@pytest.mark.parametrize('case', CASES, ids=[c.name for c in CASES])
def test_a_tampered_folder_runs_no_code_writes_nothing_and_is_one_line(case, trained_run):
    forms = COMMAND_FORMS if imports_something(case) else ('python -m acframe.cli',)
    outcomes = run_tampered(case, str(trained_run), forms=forms)
    wrong = {form: outcome for form, outcome in outcomes.items() if outcome.kind != 'clear'}
    assert not wrong, '\n'.join(f"{form}: {o.kind}: {o.detail}" for form, o in wrong.items())


def test_a_checkpoint_or_json_given_as_a_config_is_refused_and_never_run(tmp_path, capsys):
    """Python runs a zip archive's __main__.py (a checkpoint is a zip archive): -c takes Python source only."""
    import zipfile
    from acframe.cli import main as cli_main
    marker = tmp_path / 'ran'
    for name in ('handed.pth', 'handed.py'):  # (a zip archive named .py too)
        with zipfile.ZipFile(tmp_path / name, 'w') as archive:
            archive.writestr('__main__.py', f"open({str(marker)!r}, 'w').write('ran')\n")
    (tmp_path / 'config.json').write_text('{"config": null}')
    for name, hint in (('handed.pth', 'a checkpoint (or another zip archive)'),
                       ('handed.py', 'a checkpoint (or another zip archive)'), ('config.json', 'a JSON file')):
        assert cli_main(['-c', str(tmp_path / name), '--exp-dir', str(tmp_path / 'run')]) == 2
        err = capsys.readouterr().err
        assert err.count('\n') == 1 and 'not a config file (Python source, in a .py file)' in err and hint in err, err
    assert not marker.exists() and not (tmp_path / 'run').exists()
