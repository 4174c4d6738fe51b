"""``python -m memrl``: see :mod:`memrl.cli`."""

import sys

from memrl.cli import main

if __name__ == "__main__":
    sys.exit(main())
