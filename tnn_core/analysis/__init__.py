"""Analysis of Toeplitz kernels: SKI decompositions, their errors, and kernel profiles.

    decompose, Decomposition   T ≈ band + W A Wᵀ ("SKI to go Faster", §3.2 and Theorem 1)
    error_curve                relative Frobenius error against rank, sample / fit / optimal
    decay_profile, frequency_response, channel_kernel
                               what a kernel looks like: decay, DTFT, causality, per channel

Layout: ``dense`` (numpy Toeplitz, heatmap indices), ``low_rank`` (W A Wᵀ), ``gram``
(inner products of the SKI basis, no n × n), ``norms`` (Lanczos, BLAS threads),
``persymmetric`` (Toeplitz singular values), ``errors``, ``decompose``, ``curves``,
``profiles`` (decay fit, DTFT), ``fd_response`` (FD-TNN kernels, Theorems 2-4), ``atlas``,
``presets``. Imports torch, numpy, scipy and ``tnn_core.core``/``operators`` only.
"""

from tnn_core.analysis.curves import error_curve
from tnn_core.analysis.decompose import Decomposition, decompose
from tnn_core.analysis.profiles import (
    channel_kernel,
    decay_profile,
    frequency_response,
)

__all__ = [
    "decompose",
    "Decomposition",
    "decay_profile",
    "frequency_response",
    "channel_kernel",
    "error_curve",
]
