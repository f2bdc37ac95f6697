"""``python -m rooflinekit``: the ``rooflinekit`` command."""

import sys

from rooflinekit.cli.main import main

sys.exit(main())
