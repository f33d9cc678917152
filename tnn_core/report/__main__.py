"""``python -m tnn_core.report``: see ``tnn_core.report``."""

import sys

from tnn_core.report.cli import main

sys.exit(main())
