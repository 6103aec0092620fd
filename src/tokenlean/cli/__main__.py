"""``python -m tokenlean.cli``: the ``tokenlean`` command."""

import sys

from tokenlean.cli import main

sys.exit(main())
