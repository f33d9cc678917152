"""Every browser figure's sliders, declared once: the name (its key in the URL and the state
the browser sets on release), label, range, step, default and help of each.

From these the figures' Python side (``pages/figures``) mounts its sliders and sends their
specs to the JavaScript, which draws each slider from its spec; the URL table
(``url_controls.URL_CONTROLS``), and so the lessons' view parser (``lesson.VIEW_PAGES``),
takes their names from here. What n allows r and m is one more rule, applied to these
sliders' values: ``tnn_core.analysis.decompose.decomposition_limits``.

Ranges come from what the lab offers: the typed and demo kernels' longest n
(``presets.MAX_TYPED_LENGTH``), the demo operators' channels, the recurrent fit's ladder of
s and the RPE widths the frequency figure sends (``WIDTHS``); r and m stop at
``SLIDER_MAX``, where a drag across the slider still resolves single steps (n itself goes
to 4096, and r and m are clamped to what n allows).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tnn_core.analysis.presets import MAX_TYPED_LENGTH, OPERATOR_CHANNELS
from tnn_core.lab.common.decomposition_figures import SIDES
from tnn_core.lab.common.recurrent_fit import LADDER

__all__ = ["Control", "SLIDER_MAX", "RANK", "BAND", "DECAY", "DECOMPOSITION", "side_controls",
           "MODES", "TOEPLITZ", "WIDTHS", "WIDTH", "names"]

SLIDER_MAX = 512  # r and m on the sliders
WIDTHS = (1, 2, 4, 8, 16, 32, 64, 128)  # MLP widths the kernel figure offers, each sent once


@dataclass(frozen=True)
class Control:
    """One slider of a figure, in the URL under ``name``."""

    name: str  # the URL key and the state name the browser sets on release
    label: str
    low: float
    high: float
    step: float
    default: float
    help: str

    @property
    def whole(self) -> bool:
        return all(float(v).is_integer() for v in (self.low, self.high, self.step,
                                                   self.default))

    def spec(self, value) -> dict:
        """What the browser needs to draw the slider at ``value``."""
        return {"name": self.name, "label": self.label, "min": self.low, "max": self.high,
                "step": self.step, "value": value, "help": self.help}

    def typed(self, value: float):
        return int(value) if self.whole else float(value)


# The band + W A Wᵀ figure (Decomposition; each side of Compare, renamed)
RANK = Control("rank", "Inducing points r", 2, SLIDER_MAX, 1, 32,
               "Rank of W A Wᵀ: r points evenly spaced on [0, n-1], spacing h = (n-1)/(r-1); "
               "at most n.")
BAND = Control("band", "Band m", 1, SLIDER_MAX, 1, 9,
               "Diagonals in the sparse part: lags |k| ≤ m//2 (causal: 0 ≤ k < m), at most "
               "2n − 2. Its taps are the best convolution given the low-rank part.")
DECAY = Control("decay", "Decay λ", 0.5, 1.0, 0.005, 0.99,
                "The kernel's decay λ^|k| (synthetic kernels, redrawn as you drag, and fresh "
                "TNN/SKI operators, whose kernel comes from the server once λ settles). λ = 1: "
                "no decay.")
DECOMPOSITION = (RANK, BAND, DECAY)


def side_controls(side: str, has_decay: bool) -> tuple[Control, ...]:
    """r, m and (a kernel with a λ) λ of one side of Compare (one of ``SIDES``): the band +
    W A Wᵀ figure's, named a_rank, b_band, …"""
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}; got {side!r}")
    upper = side.upper()
    controls = tuple(replace(c, name=f"{side}_{c.name}",
                             label=f"{upper}: {c.label[0].lower()}{c.label[1:]}")
                     for c in DECOMPOSITION)
    return controls if has_decay else controls[:2]


# The recurrent fit's figure: s modes of its ladder
MODES = Control("modes", "Modes s", LADDER[0], LADDER[-1], 1, 4,
                "Complex modes of the recurrence h_{t+1} = z ⊙ h_t + x_t, y_t = d x_t + "
                "Re(c · h_t): its kernel is k_l = Re Σ c z^(l−1). A conjugate pair of poles is "
                "one mode. Every s is fitted once per kernel; the browser redraws as you drag.")

# The Toeplitz figure (Basics, lesson steps)
TOEPLITZ = (
    Control("n", "Sequence length n", 1, MAX_TYPED_LENGTH, 1, 64,
            "The matrix is n × n; the kernel has 2n − 1 lags (typed coefficients set their "
            "own n)."),
    Control("decay", "Decay λ", 0.5, 1.0, 0.01, 0.9,
            "TNN's decay bias: lag k is scaled by λ^|k|. λ = 1 means no decay. For SKI, λ sets "
            "the inverse time warp sign(t)λ^|t|. FD-TNN has no decay bias, and typed "
            "coefficients have their own."),
    Control("channel", "Channel", 0, OPERATOR_CHANNELS - 1, 1, 0,
            "Which of the operator's channels to show; each channel has its own Toeplitz "
            "matrix."),
)

# The FD kernel figure (Frequency, lesson steps)
WIDTH = Control("width", "MLP width", WIDTHS[0], WIDTHS[-1], 1, 32,
                "Hidden units per layer of the RPE MLP (OperatorConfig.rpe_dim), one of "
                f"{', '.join(map(str, WIDTHS))}: the weights of each are sent once, so a drag "
                "redraws in the browser.")


def names(controls: tuple[Control, ...]) -> tuple[str, ...]:
    """The URL keys of ``controls``."""
    return tuple(c.name for c in controls)
