"""OperatorConfig: one dataclass configures every token mixer."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Literal

from tnn_core.checks import check_choice, check_fraction, check_int, check_number, config_from_dict
from tnn_core.core.rpe import ACTIVATIONS

__all__ = ["OperatorKind", "KINDS", "ALL_KINDS", "TRAINED_KINDS", "CHANNEL_KINDS", "FD_INPUTS",
           "SKI_LOW_RANKS", "TNO_POSITIONS", "DECAY_MODES", "FFT_GRIDS", "OperatorConfig"]

OperatorKind = Literal["tno", "ski", "fd", "togeipi", "ssm"]
KINDS: tuple[str, ...] = ("tno", "ski", "fd")  # the Toeplitz kinds: kernel(n), matrix(n) [D, n, n]
ALL_KINDS: tuple[str, ...] = KINDS + ("togeipi", "ssm")  # plus the Togeipi mixer (course
# project) and the diagonal SSM a causal model is converted to (compress.recurrent)
TRAINED_KINDS: tuple[str, ...] = KINDS + ("togeipi",)  # what a training run builds
CHANNEL_KINDS: tuple[str, ...] = KINDS + ("ssm",)  # one n x n Toeplitz matrix per channel
_ACTIVATIONS = tuple(ACTIVATIONS)  # the RPE's and the TNO kernel's (core.rpe)
_PSF_ACTIVATIONS = ("none", "gelu")
FD_INPUTS = ("omega", "cosine")  # what the FD RPE reads: ω (Algorithm 2) or cos ω
# ski: where A's lag coefficients come from: the warped RPE (the paper's SKI-TNN) or knots
# held directly (a model converted by tnn_core.compress)
SKI_LOW_RANKS = ("rpe", "knots")
# tno: what the RPE reads at lag k of a length-n kernel: k, k/(n-1) or exp(k/(n-1))
# (tnn-pytorch Tno par_type 1, 2, 3; at n = 1 the only lag 0 reads 0, 0 and 1)
TNO_POSITIONS = ("lag", "fraction", "exp_fraction")
# tno: γ^|k| with one γ = decay, a fixed γ per channel, or γ = decay + (1 - decay)·σ(logit)
# learned per channel (tnn-pytorch Tno: no decay flag / use_decay / use_multi_decay)
DECAY_MODES = ("scalar", "channel", "learned")
# fd: the FFT size N for length n: fft_size(n) (5-smooth) or the next power of two >= 2n
# (ski-tnn TnoFD); the RPE reads N/2+1 frequencies, so the grid changes the kernel
FFT_GRIDS = ("smooth", "power_of_two")
# Upper bounds of the size fields, far above what the lab trains; a parameter or memory
# limit on the whole model belongs to its user (the checkpoint loader has one).
MAX_SIZE = 65_536  # rank, band, max_length
MAX_RPE_DIM = 8_192
MAX_RPE_LAYERS = 64
MAX_HEADS = 4_096
MAX_STATE = 4_096  # ssm: modes per channel
# the fields each kind reads, beside kind and causal (grep its module: ``config.<field>``)
_USED = {
    "tno": ("decay", "rpe_dim", "rpe_layers", "activation", "positions", "decay_mode",
            "rpe_residual", "kernel_activation"),
    "fd": ("rpe_dim", "rpe_layers", "activation", "fd_input", "rpe_residual", "fft_grid"),
    "ski": ("decay", "rank", "band", "low_rank"),  # A from the RPE on the time warp λ
    "ski knots": ("rank", "band", "low_rank", "knot_length"),  # A held as knots: no λ
    "togeipi": ("heads", "sparse_density", "max_length", "sparse_l1", "psf_activation"),
    "ssm": ("state",),
}


@dataclass(frozen=True)
class OperatorConfig:
    """Configuration of a token mixer. Unknown fields raise (no **kwargs)."""

    kind: OperatorKind = "tno"  # tno (TNN), ski (SKI-TNN), fd (FD-TNN), togeipi or ssm
    causal: bool = False  # lower-triangular: output t sees inputs <= t only
    decay: float = 0.99  # λ in (0, 1]: TNO decay λ^|k|, SKI inverse time warp sign(t)λ^|t|
    rank: int = 64  # SKI: r inducing points and r RPE knots, >= 2
    band: int = 17  # SKI: m taps of the sparse (banded) convolution, >= 1
    # ski: "rpe" takes A's lag coefficients from the piecewise-linear RPE on the inverse
    # time warp (§3.2.2); "knots" holds them as knots on the integer lags of knot_length,
    # the length a converted model was trained at (operators.ski_knots)
    low_rank: str = "rpe"
    knot_length: int = 2  # ski, low_rank="knots": n0, with knots at the lags l (n0-1)/(r-1)
    rpe_dim: int | None = None  # RPE MLP width e; None means max(D // 8, 32) (official README)
    rpe_layers: int = 1  # hidden layers of the RPE MLP (tno, fd)
    activation: str = "relu"  # RPE MLP activation, a name of core.rpe.ACTIVATIONS
    rpe_residual: bool = False  # tno, fd: each hidden RPE layer is x = layer(x) + x
    positions: str = "lag"  # tno: the RPE reads k, k/(n-1) or exp(k/(n-1)) (TNO_POSITIONS)
    decay_mode: str = "scalar"  # tno: λ^|k|, or γ_c^|k| per channel fixed/learned (DECAY_MODES)
    # tno: applied to every t_k after the decay (tnn-pytorch act_type); causal zeros stay 0
    kernel_activation: str = "identity"
    # fd: the RPE reads "omega" (ω in [0, π], Algorithm 2: the response's periodic extension
    # has kinks at 0 and π) or "cosine" (cos ω, and sin ω times the imaginary half when
    # bidirectional: a response as smooth as the MLP on the whole circle, Theorems 2-3)
    fd_input: str = "omega"
    fft_grid: str = "smooth"  # fd: N = fft_size(n), or the next power of two >= 2n (FFT_GRIDS)
    heads: int = 8  # togeipi: H heads, one Toeplitz point spread function each; D % H == 0
    sparse_density: float = 0.3  # togeipi: fraction of the sparse matrix's entries kept (top |.|)
    max_length: int = 1024  # togeipi: longest n (the sparse matrix is max_length x max_length)
    sparse_l1: float = 1e-5  # togeipi: weight of l1_penalty() = sparse_l1 * sum |S_ij|
    psf_activation: str = "none"  # togeipi: "none" keeps mixing linear; "gelu" as the project
    state: int = 16  # ssm: s complex modes per channel (causal only)

    def __post_init__(self):
        check_choice("kind", self.kind, ALL_KINDS)
        if not isinstance(self.causal, bool):
            raise ValueError(f"causal must be True or False; got {self.causal!r}")
        check_fraction("decay", self.decay)
        check_int("rank", self.rank, 2, MAX_SIZE)
        check_int("band", self.band, 1, MAX_SIZE)
        check_choice("low_rank", self.low_rank, SKI_LOW_RANKS)
        check_int("knot_length", self.knot_length, 2, MAX_SIZE)
        if self.low_rank == "knots" and self.rank > self.knot_length:
            raise ValueError(f"rank must be in [2, knot_length = {self.knot_length}] for "
                             f"low_rank='knots' (one inducing point per lag at most); got "
                             f"{self.rank}")
        check_int("rpe_layers", self.rpe_layers, 0, MAX_RPE_LAYERS)
        if self.rpe_dim is not None:
            check_int("rpe_dim", self.rpe_dim, 1, MAX_RPE_DIM)
        check_choice("activation", self.activation, _ACTIVATIONS)
        check_choice("fd_input", self.fd_input, FD_INPUTS)
        if not isinstance(self.rpe_residual, bool):
            raise ValueError(f"rpe_residual must be True or False; got {self.rpe_residual!r}")
        check_choice("positions", self.positions, TNO_POSITIONS)
        check_choice("decay_mode", self.decay_mode, DECAY_MODES)
        check_choice("kernel_activation", self.kernel_activation, _ACTIVATIONS)
        check_choice("fft_grid", self.fft_grid, FFT_GRIDS)
        check_int("heads", self.heads, 1, MAX_HEADS)
        check_fraction("sparse_density", self.sparse_density)
        check_int("max_length", self.max_length, 1, MAX_SIZE)
        check_number("sparse_l1", self.sparse_l1, 0, 1)
        check_choice("psf_activation", self.psf_activation, _PSF_ACTIVATIONS)
        check_int("state", self.state, 1, MAX_STATE)
        if self.kind == "ssm" and not self.causal:
            raise ValueError("causal must be True for kind='ssm' (a recurrence runs forward "
                             "in time); got False")
        used = self.used_fields()
        for f in fields(self):  # a setting the kind never reads is its default: one config
            if f.name not in used:  # per operator, and to_dict round-trips
                object.__setattr__(self, f.name, f.default)
        if self.positions == "exp_fraction" and not self.causal:
            raise ValueError("positions must be 'lag' or 'fraction' for a bidirectional "
                             "operator (exp_fraction has no negative lags, as par_type 3); "
                             "got 'exp_fraction' with causal=False")

    def rpe_width(self, dim: int) -> int:
        return self.rpe_dim if self.rpe_dim is not None else max(dim // 8, 32)

    def used_fields(self) -> tuple[str, ...]:
        """The fields this kind of operator reads (kind and causal always)."""
        if self.kind == "ski":
            return ("kind", "causal") + (_USED["ski knots"] if self.low_rank == "knots"
                                         else _USED["ski"])
        if self.kind == "tno" and self.decay_mode == "channel":  # each channel's own γ_c
            return ("kind", "causal") + tuple(f for f in _USED["tno"] if f != "decay")
        return ("kind", "causal") + _USED[self.kind]

    def to_dict(self) -> dict:
        """The fields the operator reads; the others are left out, so a checkpoint's header
        never carries a setting its model ignores (``from_dict`` gives them defaults)."""
        data = asdict(self)
        return {name: data[name] for name in self.used_fields()}

    @classmethod
    def from_dict(cls, data: dict) -> OperatorConfig:
        """Build from a plain dict; an unknown field is a ValueError naming it."""
        return config_from_dict(cls, data)

