"""``python -m acframe ...``: the ``acframe`` command (``acframe.cli.main``)."""
import sys

from .cli import main

if __name__ == '__main__':
    sys.exit(main())
