"""``python -m aqmlab.cli``: the ``aqmlab`` command."""

import sys

from .app import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
