"""``python -m tnn_core.compress``: convert a checkpoint to band + low rank (see ``cli.py``)."""

from tnn_core.compress.cli import main

raise SystemExit(main())
