"""``python -m tokenlean``: the ``tokenlean`` command."""

import sys

from tokenlean.cli import main

sys.exit(main())
