"""``python -m tnn_core.training``: train a model and save it (see ``cli.py``)."""

import os
import sys

from tnn_core.training.cli import main
from tnn_core.training.distributed import torchrun_ranks

status = main()
if torchrun_ranks()[1] > 1:
    # A torchrun rank leaves without the interpreter's teardown: its checkpoint and digests
    # are closed on disk and the process group is gone, but gloo's threads can still abort
    # a finished rank while the interpreter tears down ("terminate called without an
    # active exception", seen in about one whole-suite run in ten), and torchrun would then
    # report a completed run as failed. torchrun runs Python unbuffered (-u) unless it is
    # given --no-python, so the flushes matter only then.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
raise SystemExit(status)
