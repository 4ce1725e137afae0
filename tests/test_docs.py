"""The code blocks of the documentation marked runnable run as written.

A fence's info string says what to do with a block (plain ``python`` / ``bash`` blocks are not run):

* ```` ```python runnable ```` — run as a script (in its own interpreter: every block carries its imports);
* ```` ```python runnable file=NAME ```` / ```` append=NAME ```` — write / append the block to ``NAME`` (a module
  the later blocks import, or a config file; ``NAME`` may be in a subfolder);
* ```` ```bash runnable ```` — run with ``bash -e``, the ``acframe`` command of this interpreter on ``PATH``.

The blocks of one page run in order in one fresh folder; each page has its own.
"""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FENCE = re.compile(r'^```(\w+)([^\n]*)\n(.*?)^```\s*$', re.S | re.M)


def runnable_blocks(path):
    """``(language, options, code)`` of each runnable block of a Markdown file, in order."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    blocks = []
    for language, info, code in FENCE.findall(text):
        words = info.split()
        if 'runnable' in words:
            options = dict(w.split('=', 1) for w in words if '=' in w)
            blocks.append((language, options, code))
    return blocks


def pages():
    docs = [os.path.join('docs', name) for name in sorted(os.listdir(os.path.join(ROOT, 'docs'))) if name.endswith('.md')]
    return [p for p in ['README.md', *docs] if runnable_blocks(os.path.join(ROOT, p))]


def test_the_pages_that_promise_runnable_code_have_it():
    assert {'docs/custom_env.md', 'docs/custom_policy.md', 'docs/quickstart.md'} <= set(pages())


@pytest.mark.parametrize('page', pages())
def test_runnable_blocks_run_as_written(page, tmp_path):
    env = dict(os.environ)
    env['PATH'] = os.path.dirname(sys.executable) + os.pathsep + env.get('PATH', '')
    env['PYTHONPATH'] = os.pathsep.join(p for p in (ROOT, env.get('PYTHONPATH')) if p)
    for index, (language, options, code) in enumerate(runnable_blocks(os.path.join(ROOT, page))):
        where = f"{page}, runnable block {index + 1}"
        if 'file' in options or 'append' in options:
            target = tmp_path / options.get('file', options.get('append'))
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, 'w' if 'file' in options else 'a') as f:
                f.write(code)
            continue
        if language == 'python':
            script = tmp_path / f'_block{index + 1}.py'
            script.write_text(code)
            command = [sys.executable, str(script)]
        elif language == 'bash':
            command = ['bash', '-e', '-c', code]
        else:
            raise AssertionError(f"{where}: cannot run a {language} block")
        out = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, f"{where} failed:\n{code}\n--- stdout\n{out.stdout}\n--- stderr\n{out.stderr}"
