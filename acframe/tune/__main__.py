"""``python -m acframe.tune ...`` is ``acframe -m tune ...``."""
import sys

from ..cli import main

if __name__ == '__main__':
    sys.exit(main(['-m', 'tune'] + sys.argv[1:]))
