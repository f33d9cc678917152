"""Lessons: guided steps over the lab's pages, stored as data (one TOML file per lesson).

A lesson file (``tnn_core/lab/lessons/NAME.toml``; the format, with a complete example, is
in docs/lessons.md):

    title = "Toeplitz matrices and the FFT product"
    summary = "One line for the lesson list."

    [[steps]]
    title = "One number per diagonal"
    text = "Markdown ..."                        # required
    latex = ["T_{ij} = t_{i-j}"]                 # optional, shown with st.latex
    view = "basics?preset=Exponential+decay&n=8" # optional: a lab page and its controls
    lock = ["n"]                                 # optional: controls of the view kept fixed
    figures = ["toeplitz"]                       # optional: which of the page's figures
    withhold = ["toeplitz"]                      # optional: kept back until Reveal
    notice = "What to notice ..."                # optional
    [steps.question]                             # optional: predict, then reveal
    prompt = "How many numbers does T hold?"
    choices = ["8", "15", "64"]                  # a choice ...
    answer = "15"
    explain = "One per diagonal: 2n - 1."
    # ... or a typed number: answer = 15, tolerance = 0 (no choices)

``view`` is what the address bar shows on that page (its URL path and query), so a
teacher copies it from the browser. A step draws the view's page's figures (those of
``VIEW_FIGURES``: the first unless ``figures`` names others) in the lesson itself; a view
of another page opens embedded. Its page must be one of ``VIEW_PAGES`` and its
parameters that page's controls; anything else is refused on load. ``withhold`` keeps
back, until the step's question is revealed, figures that show its answer and switches
whose other value is it (``WITHHELD_SWITCHES``: drawn the other way, locked).

``load_lessons`` reads a folder, and no file in it can take the others down: each file is
read with ``tnn_core.files.read_bounded`` (regular files only, never past
``MAX_FILE_BYTES``, a FIFO never waited on), and anything wrong with it (invalid TOML or
UTF-8, nesting too deep for tomllib, a number too large for a float, a field out of place,
or an error nobody foresaw) becomes one sentence naming the file, the step and the field.
A lesson's number is the one its file name starts with (``1-toeplitz-fft.toml``); a title
that starts with a number ("1. Toeplitz ...") must start with the file's. Two files with
one title or one number: the first in lesson order loads and the second is refused with
an error naming both. ``folder_listing`` is what a cache of ``load_lessons`` is keyed by.

Inside: ``content`` (View, Question, Step, Lesson), ``parse`` (a file's text), ``files``
(a folder), ``answers`` (the answers a lesson computes), ``sketch`` (the curves a
student draws first) and ``kept_predictions`` (a step's prediction kept in the Lessons
page's address). The Lessons page and the figures of a step (``pages/lessons/steps.py``)
also use views the Inspect, Compress and Compare pages share with them (``common``); this
interface exposes them.
"""

from tnn_core.analysis.fd_response import fd_response
from tnn_core.lab.common.atlas import (
    BAND_SHARE_NAME,
    SKI_ERROR_NAME,
    atlas_view,
    opening_atlas,
)
from tnn_core.lab.common.band_ablation import BandAblation
from tnn_core.lab.common.checkpoint_summary import summary
from tnn_core.lab.common.conversion import QuickConversion, quick_conversion
from tnn_core.lab.common.decay_pair import DECAY_PAIR
from tnn_core.lab.common.decomposition_figures import SIDES
from tnn_core.lab.common.stored_measurements import stored_or_computed
from tnn_core.lab.lesson import answers, kept_predictions, sketch
from tnn_core.lab.lesson.answers import COMPUTED, OUTCOMES
from tnn_core.lab.lesson.content import (
    DEFAULT_FIGURES,
    MEASUREMENTS,
    VIEW_FIGURES,
    VIEW_PAGES,
    WITHHELD_SWITCHES,
    Lesson,
    LessonError,
    Question,
    Step,
    View,
)
from tnn_core.lab.lesson.files import (
    LESSON_DIR,
    MAX_FILE_BYTES,
    folder_listing,
    load_lesson,
    load_lessons,
)
from tnn_core.lab.lesson.parse import MAX_STEPS, parse_lesson
from tnn_core.lab.lesson.sketch import SKETCHES, Curve, distance

__all__ = [
    # lessons and their files
    "LESSON_DIR", "VIEW_PAGES", "VIEW_FIGURES", "MEASUREMENTS", "DEFAULT_FIGURES",
    "WITHHELD_SWITCHES", "MAX_STEPS",
    "MAX_FILE_BYTES", "LessonError", "View", "Question", "Step", "Lesson", "parse_lesson",
    "load_lesson", "load_lessons", "folder_listing",
    # questions whose answer is computed, and curves sketched first
    "answers", "COMPUTED", "OUTCOMES", "sketch", "SKETCHES", "Curve", "distance",
    # a step's prediction kept in the Lessons page's address
    "kept_predictions",
    # what a step draws from the other pages' views
    "fd_response", "SIDES", "QuickConversion", "quick_conversion", "BandAblation",
    "BAND_SHARE_NAME", "SKI_ERROR_NAME", "DECAY_PAIR", "atlas_view", "opening_atlas", "summary",
    # a lesson's measurement, stored beside the checkpoints or computed once
    "stored_or_computed",
]
