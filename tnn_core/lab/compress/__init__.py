"""Page "Compress": a trained TNN or FD-TNN made band + low rank (or, causal, a recurrence of
s modes per channel), and what it costs the task.

The work is ``tnn_core.compress`` (convert, measure, search); this unit builds the plan
from the page's controls, starts the work on a background thread in a place of the server's
heavy work (``jobs``), and turns its
results into what the page draws (``results``, ``search``); a recurrent form's errors for
every s it tries are fitted in the background (``state_sweep``); a kernels-only checkpoint (no
task) gets each layer's error instead (``kernels_only``). Metric values are shown in
display units (``units``): an accuracy as a percentage (a drop in percentage points), bits
per character as they are.
"""

from tnn_core.analysis.errors import RELATIVE_ERROR
from tnn_core.compress.guard import added_parameters, larger_model_sentence
from tnn_core.compress.measure import FINETUNE_PARAMETERS
from tnn_core.compress.plan import METHODS
from tnn_core.compress.planner import GRID_BANDS, GRID_RANKS, SPEED_ROUNDS, default_delta
from tnn_core.compress.recurrent_study import error_sweep
from tnn_core.lab.common.background import JOB_THREADS, BackgroundJob
from tnn_core.lab.common.conversion import QuickConversion, convertible, quick_conversion
from tnn_core.lab.common.work_slots import NoPlace
from tnn_core.lab.compress.jobs import (
    conversion_job,
    make_plan,
    methods,
    progress_text,
    search_job,
    search_points,
    start_in_place,
)
from tnn_core.lab.compress.kernels_only import (
    BAND_COLUMN,
    RECURRENT_COLUMN,
    band_errors,
    error_rows,
    is_kernels_only,
    kernels_length,
    kernels_only_reason,
    recurrent_errors,
)
from tnn_core.lab.compress.results import (
    ResultView,
    SpeedRow,
    result_view,
    save,
    save_name,
    speed_row,
)
from tnn_core.lab.compress.search import SEARCH_EXPLAINED, Candidate, SearchView, search_view
from tnn_core.lab.compress.state_sweep import (
    NEVER_DECAYING,
    PAGE_STATES,
    SWEEP_WAITING,
    sweep_caption,
    sweep_table,
)
from tnn_core.lab.compress.units import Unit
from tnn_core.operators.config import MAX_SIZE, MAX_STATE
from tnn_core.training.checkpoint import CheckpointError
from tnn_core.training.verdicts import amount

__all__ = ["JOB_THREADS", "Unit", "amount", "convertible", "methods", "make_plan",
           "added_parameters", "larger_model_sentence", "default_delta", "conversion_job",
           "QuickConversion", "quick_conversion", "search_points", "search_job",
           "start_in_place", "progress_text", "SpeedRow", "speed_row",
           "ResultView", "result_view", "SEARCH_EXPLAINED", "Candidate", "SearchView",
           "search_view", "save_name",
           "save", "error_sweep", "PAGE_STATES", "NEVER_DECAYING", "SWEEP_WAITING",
           "sweep_table", "sweep_caption", "is_kernels_only", "kernels_only_reason",
           "kernels_length", "band_errors",
           "recurrent_errors", "error_rows", "BAND_COLUMN", "RECURRENT_COLUMN", "RELATIVE_ERROR",
           # the page's choices and limits, the job it watches, and a file refused
           "FINETUNE_PARAMETERS", "METHODS", "GRID_BANDS", "GRID_RANKS", "SPEED_ROUNDS",
           "MAX_SIZE", "MAX_STATE", "BackgroundJob", "CheckpointError", "NoPlace"]
