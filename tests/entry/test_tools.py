"""The after-training tools' outputs (``-m eval``, ``-m plot``, ``-m export``; entry/tools.py): a path that cannot
be written is one line naming it, exit 2, said before the work is done, and nothing is written anywhere.

The fault is real: the run is copied into a tmpfs that is then remounted read-only (a run on a read-only mount, or
in another user's folder)."""
import shutil
import subprocess

import pytest

from acframe.cli import main
from fixtures.tmpfs import tmpfs


@pytest.fixture
def read_only_run(trained_run, tmp_path):
    """A copy of ``trained_run`` (no eval/ results) on a real tmpfs remounted read-only."""
    mount = tmp_path / 'ro'
    mount.mkdir()
    with tmpfs(mount, '8m') as refused:
        if refused:
            pytest.skip(refused)
        shutil.copytree(trained_run, mount / 'run', ignore=shutil.ignore_patterns('eval'))
        subprocess.run(['mount', '-o', 'remount,ro', str(mount)], check=True)
        yield mount / 'run'


def test_outputs_that_cannot_be_written_are_one_line_before_the_work_and_nothing_is_written(read_only_run, tmp_path,
                                                                                             capsys):
    """-m eval played every episode (and wrote its videos elsewhere) before its default result path in the run
    failed; -m plot's default and any --out of plot or export under the read-only folder were tracebacks (exit 1),
    export's after the whole trace and its check."""
    run, videos = read_only_run, tmp_path / 'videos'
    cannot = "cannot be written there (a read-only folder or file system, or another user's)"
    for args, said in (
            (['-m', 'eval', '--load', str(run), '--episodes', '1', '--video', str(videos)],
             f"the result's file {run / 'eval' / 'ckpt_best_seed0_1ep.json'} (--out FILE writes it elsewhere)"),
            (['-m', 'plot', str(run)], f"the plot's default file {run / 'curves.png'} (--out FILE writes it elsewhere)"),
            (['-m', 'plot', str(run), '--out', str(run / 'c.svg')], f"--out {run / 'c.svg'}"),
            (['-m', 'export', '--load', str(run), '--out', str(run / 'policy.pt')], f"--out {run / 'policy.pt'}")):
        code = main(args)
        err = capsys.readouterr().err
        assert code == 2 and err == f"acframe: error: {said}: {cannot}; name a file in a folder you can write\n", err
    assert not videos.exists()
    assert main(['-m', 'eval', '--load', str(run), '--episodes', '1', '--out', str(tmp_path / 'r.json')]) == 0


def test_an_export_to_a_folder_or_under_a_file_is_one_line_naming_it(trained_run, tmp_path, capsys):
    (tmp_path / 'policy.pt').mkdir()
    for out, words in ((tmp_path / 'policy.pt', f"that is a folder; name the file to write in it, e.g. "
                                                f"{tmp_path / 'policy.pt' / 'policy.pt'}"),
                       (trained_run / 'summary.json' / 'x.onnx', f"{trained_run / 'summary.json'} is a file, not a "
                                                                 f"folder; pick another path")):
        assert main(['-m', 'export', '--load', str(trained_run), '--out', str(out)]) == 2
        assert capsys.readouterr().err == f"acframe: error: --out {out}: {words}\n"
