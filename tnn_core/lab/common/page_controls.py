"""Every page widget bound to the URL, declared once: its name (the URL key and the widget's
key), label, help, range and default.

``pages/_ui/controls.control(widget, FIELD, ...)`` draws the Streamlit widget from its
declaration here; the URL table (``url_controls.URL_CONTROLS``), and so the lessons' view
parser (``lesson.VIEW_PAGES``), takes each page's widget names from ``PAGE_FIELDS``. A
figure's sliders are declared beside them, in ``figure_controls``.

A range's end that depends on what is open (a model's layers, n − 1, a lesson's steps) is
None here and given at the call (``high=``); so is a help's number in braces (``{count}``),
filled in at the call. Ranges otherwise come from what the lab allows: n up to
``presets.MAX_TYPED_LENGTH``, m and r up to ``OperatorConfig``'s ``MAX_SIZE``, the demo
operators' channels.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tnn_core.analysis.presets import MAX_TYPED_LENGTH, OPERATOR_CHANNELS
from tnn_core.lab.common.decomposition_figures import SIDES
from tnn_core.operators.config import MAX_SIZE

__all__ = ["Field", "PAGE_FIELDS", "names", "side_method", "METHODS", "TYPED_DEFAULT",
           "DEVICE", "SEED", "SIDEBAR", "LESSON", "STEP", "PRESENT", "CHECKPOINT",
           "INSPECT_CHECKPOINT", "COMPRESS_CHECKPOINT", "LAYER", "CHANNEL", "CELL_I", "CELL_J",
           "PRESET", "SOURCE", "OPERATOR_CHANNEL", "COEFFICIENTS", "LENGTH", "CAUSAL", "METHOD",
           "FREQUENCY_LENGTH", "DEPTH", "DRILL_LAYER", "DRILL_CHANNEL", "COMPRESS_BAND",
           "COMPRESS_RANK", "COMPRESS_METHOD", "SHARED_SOURCE", "SHARED_LENGTH", "SHARED_CAUSAL"]

METHODS = ("sample", "fit")  # the low-rank A: sampled from the kernel, or fitted
TYPED_DEFAULT = "0 0.1 0.2 0.4 3 0.4 0.2 0.1 0"  # the coefficients a typed kernel opens with


@dataclass(frozen=True)
class Field:
    """A page's widget bound to the URL under ``name``."""

    name: str  # the URL key and the widget's key
    label: str
    help: str = ""  # may name values the call fills in: "{count} steps"
    low: float | None = None  # number widgets: the range; None where the call gives it
    high: float | None = None
    default: object = None  # None: the widget's own (the first option, the range's low end)
    options: tuple = ()  # select boxes and radios; () where the call lists them


# The sidebar's, on every page
DEVICE = Field("device", "Device", "Where tensors live. 'auto' uses a GPU when one is available; "
               "cuda is offered only when PyTorch can see one.", default="auto")
SEED = Field("seed", "Seed", "Seeds every random choice on the pages: initial weights of the "
             "demo operators and the random inputs.", 0, 2**31 - 1, 0)
SIDEBAR = (DEVICE, SEED)

# Lessons
LESSON = Field("lesson", "Lesson")
STEP = Field("step", "Step", "{count} steps; the address bar links to this step.", low=1)
PRESENT = Field("present", "Presenter mode", "Larger type, no sidebar, one step per screen; the "
                "arrow keys move between steps.", default=False)

# Shared by the pages that open a checkpoint or follow a cell of T
CHECKPOINT = Field("checkpoint", "Checkpoint", "Shipped examples, your saved runs, uploads.")
INSPECT_CHECKPOINT = replace(CHECKPOINT, help="Shipped examples in the order they teach most "
                             "(each says what it shows), your saved runs, and uploads. Links "
                             "carry shipped ones only.")
COMPRESS_CHECKPOINT = replace(CHECKPOINT, help="Shipped examples, your saved runs and this "
                              "session's uploads (upload on the Inspect page). Only tno and fd "
                              "models can be converted: their layers apply one learned Toeplitz "
                              "matrix per channel.")
LAYER = Field("layer", "Layer", "Which of the model's {layers} layers.", low=0)
CHANNEL = Field("channel", "Channel", "Which of the layer's {channels} channels.", low=0)
CELL_I = Field("cell_i", "Cell row i", "Row of the cell of T to follow; or click a cell of T "
               "beside.", low=0)
CELL_J = Field("cell_j", "Cell column j", "Column of the cell of T to follow; or click a cell "
               "of T beside.", low=0)

# Basics
PRESET = Field("preset", "Kernel", "Synthetic shapes, or one channel of a freshly initialised "
               "operator of each kind (seeded from the sidebar), or your own coefficients.")

# Decomposition
SOURCE = Field("source", "Source", "Which Toeplitz kernel to decompose: synthetic shapes, one "
               "channel of a freshly initialised operator (seeded from the sidebar), your "
               "numbers, or a learned channel.")
OPERATOR_CHANNEL = Field("channel", "Channel", "Which channel of the operator (each has its own "
                         "Toeplitz matrix).", 0, OPERATOR_CHANNELS - 1, 0)
COEFFICIENTS = Field(
    "coefficients", "Coefficients t_{-(n-1)}, …, t_{n-1}",
    "An odd number 2n - 1 of numbers, comma or space separated: the middle one is t_0. They "
    "fix n: the length slider is ignored, and r and m are clamped to that n. At most "
    f"{2 * MAX_TYPED_LENGTH - 1} numbers (n ≤ {MAX_TYPED_LENGTH}).", default=TYPED_DEFAULT)
LENGTH = Field("n", "Length n", "T is n × n. Everything on this page is exact at this n; the "
               "pictures show every k-th row and column when n is large. Typed coefficients fix "
               "n.", 1, MAX_TYPED_LENGTH, 512)
CAUSAL = Field("causal", "Causal", "A causal kernel is zero at negative lags. Watch what that "
               "does to the low-rank part.", default=False)
METHOD = Field("method", "Low-rank A", "sample: A_ij = k̃(p_i - p_j), the kernel continued "
               "across the band (as SKI-TNN does), computed in the browser as you drag. fit: the "
               "Toeplitz A that minimises the Frobenius error (least squares), from the server "
               "once a value settles. fit is optimal in Frobenius norm only: in spectral norm it "
               "is worse than sample in about 13 % of settings (up to 1.10×).",
               default="sample", options=METHODS)

# Frequency
FREQUENCY_LENGTH = Field(
    "n", "Sequence length n", "The operator builds the response on N = fft_size(n) frequencies, "
    "the smallest even 5-smooth FFT size ≥ 2n, and applies lags −(n−1) … n−1. The figure "
    "redraws on the new grid once you let go.", 1, MAX_TYPED_LENGTH, 512)
DEPTH = Field("depth", "MLP depth", "Hidden layers between the input and output layers "
              "(OperatorConfig.rpe_layers); the server sends the weights of this depth for every "
              "width.", 0, 4, 1)

# Inspect's drill-down
DRILL_LAYER = Field("layer", "Layer", "Which layer to drill into (in the link).", low=0)
DRILL_CHANNEL = Field("channel", "Channel", "Which channel (any of the layer's {channels}, "
                      "measured or not; in the link).", low=0)

# Compress: m and r stop at what the model's training length n0 allows (the call's high)
COMPRESS_BAND = Field("band", "Band m", "Taps of the band: lags |k| ≤ m//2 (causal: 0 ≤ k < m). "
                      "At most 2 n0 − 2 = {most}.", 1, MAX_SIZE, 9)
COMPRESS_RANK = Field("rank", "Inducing points r", "Rank of the low-rank part (causal: knots of "
                      "the tail), from 2 to n0 = {n0}.", 2, MAX_SIZE, 32)
COMPRESS_METHOD = Field("method", "Low-rank A", "fit: least squares, the smallest Frobenius "
                        "error. sample: the kernel read at the inducing lags, as SKI-TNN does.",
                        default="fit", options=METHODS)

# Compare: the kernel, n and causal both sides share, and each side's low-rank A
SHARED_SOURCE = Field("source", "Kernel (shared)", "The kernel both settings decompose: a "
                      "synthetic shape, or channel 0 of a freshly initialised operator (seeded "
                      "from the sidebar). Each builds it at its own λ.", default="spike_smooth")
SHARED_LENGTH = Field("n", "Length n (shared)", "T is n × n on both sides. Errors are exact at "
                      "this n; pictures show every k-th row and column when n is large. The "
                      "pictures redraw once you let go.", 1, MAX_TYPED_LENGTH, 256)
SHARED_CAUSAL = Field("causal", "Causal (shared)", "A causal kernel is zero at negative lags; "
                      "the band then holds lags 0 ≤ k < m.", default=False)
_SIDE_METHOD = Field("method", "low-rank A", "sample: A_ij = k̃(p_i − p_j), the kernel continued "
                     "across the band, computed in the browser as you drag. fit: the Toeplitz A "
                     "with the least Frobenius error, from the server once a value settles.",
                     options=METHODS)
_SIDE_DEFAULT = {"a": "sample", "b": "fit"}  # Compare opens on a comparison worth seeing


def side_method(side: str) -> Field:
    """Compare's side ``side`` (one of ``SIDES``): its low-rank A, a_method or b_method."""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}; got {side!r}")
    return replace(_SIDE_METHOD, name=f"{side}_method", label=f"{side.upper()}: low-rank A",
                   default=_SIDE_DEFAULT[side])


# page url_path -> its widgets bound to the URL, those of the pages/_ui helpers it draws too
PAGE_FIELDS: dict[str, tuple[Field, ...]] = {
    "basics": (PRESET, CELL_I, CELL_J),
    "decomposition": (SOURCE, OPERATOR_CHANNEL, COEFFICIENTS, CHECKPOINT, LAYER, CHANNEL, LENGTH,
                      CAUSAL, METHOD, CELL_I, CELL_J),
    "frequency": (FREQUENCY_LENGTH, DEPTH),
    "speed": (),
    "train": (),
    "inspect": (INSPECT_CHECKPOINT, DRILL_LAYER, DRILL_CHANNEL),
    "compress": (COMPRESS_CHECKPOINT, COMPRESS_BAND, COMPRESS_RANK, COMPRESS_METHOD),
    "compare": (SHARED_SOURCE, SHARED_LENGTH, SHARED_CAUSAL, *map(side_method, SIDES)),
    "lessons": (LESSON, STEP, PRESENT),
}


def names(fields: tuple[Field, ...]) -> tuple[str, ...]:
    """The URL keys of ``fields``, each once, in order."""
    return tuple(dict.fromkeys(f.name for f in fields))
