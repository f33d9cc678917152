"""Analysis of Toeplitz kernels: SKI decompositions, their errors, and kernel profiles.

    decompose, Decomposition   T ≈ band + W A Wᵀ ("SKI to go Faster", §3.2 and Theorem 1)
    error_curve                relative Frobenius error against rank, sample / fit / optimal
    spectral_norm              ||M||_2 from products alone (Golub–Kahan–Lanczos)
    decay_profile, frequency_response, causality_leakage, channel_kernel
                               what a kernel looks like: decay, DTFT, causality, per channel

Layout: ``gram`` (inner products of the SKI basis, no n × n), ``norms`` (Lanczos,
BLAS threads), ``persymmetric`` (Toeplitz singular values), ``errors``, ``decompose``,
``curves``, ``profiles``, ``bench``. Imports torch, numpy, scipy only.
"""

from tnn_core.analysis.curves import error_curve
from tnn_core.analysis.decompose import Decomposition, decompose
from tnn_core.analysis.norms import spectral_norm, top_singular_values
from tnn_core.analysis.profiles import (
    causality_leakage,
    channel_kernel,
    decay_profile,
    frequency_response,
)

__all__ = [
    "decompose",
    "Decomposition",
    "spectral_norm",
    "top_singular_values",
    "decay_profile",
    "frequency_response",
    "causality_leakage",
    "channel_kernel",
    "error_curve",
]
