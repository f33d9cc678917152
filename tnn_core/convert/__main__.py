"""``python -m tnn_core.convert``: see ``tnn_core.convert.cli``."""

import sys

from tnn_core.convert.cli import main

sys.exit(main())
