"""``python -m opencode_restore.hooks``: the hook receiver without the console script."""

import sys

from .receiver import main

sys.exit(main())
