"""Every bad input of the reliability catalogue ends in one clear line (exit 2) and writes nothing; the
injected faults not covered by test_failure_semantics.py are survived. docs/reliability.md counts them."""
import glob
import os
import tempfile

import pytest

from fixtures.reliability import bad_inputs, run_fault, run_input

CASES = bad_inputs()


def test_the_catalogue_tries_at_least_150_bad_inputs():
    assert len(CASES) >= 150


def test_every_bad_input_is_one_clear_line_and_writes_nothing():
    failures = []
    for case in CASES:
        outcome = run_input(case, timeout_s=60)
        if outcome.kind != 'clear':
            failures.append(f"{case.name}: {outcome.kind}: {outcome.detail}")
    assert not failures, '\n'.join(failures)


def test_trying_a_bad_input_or_a_fault_leaves_no_folder_behind(tmp_path, monkeypatch):
    monkeypatch.setenv('TMPDIR', str(tmp_path))  # its own temporary folder: another test's scratch is not counted
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))

    def scratch():
        return set(glob.glob(os.path.join(tempfile.gettempdir(), 'acframe_bad_input_*'))
                   + glob.glob(os.path.join(tempfile.gettempdir(), 'acframe_fault_*')))
    run_input(CASES[0], timeout_s=60)
    run_fault('lock file left by a dead process')
    assert scratch() == set() and tempfile.gettempdir() == str(tmp_path)


# (the other faults have their own tests in test_failure_semantics.py; bench/reliability.py runs them all)
@pytest.mark.parametrize('name', ['temporary file left by a killed save', 'lock file left by a dead process',
                                  'async env process dies (os.abort)'])
def test_injected_faults_are_survived(name):
    result = run_fault(name)
    assert result.survived, result.detail
