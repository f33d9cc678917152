"""``python -m tnn_core.training``: train a model and save it (see ``cli.py``)."""

from tnn_core.training.cli import main

raise SystemExit(main())
