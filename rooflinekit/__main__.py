"""``python -m rooflinekit``: the ``rooflinekit`` command."""

import sys

from rooflinekit import cli

sys.exit(cli.main())
