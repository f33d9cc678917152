"""``python -m tnn_core.generate``: write text with a causal character LM (see ``cli.py``)."""

from tnn_core.generate.cli import main

raise SystemExit(main())
