"""Fast paths of the operators, one module per concept, re-exported here.

Each computes exactly what a reference in the functional core computes (up to
rounding); ``tests/test_bench.py`` checks every one against it in float64:

    fft_product     circulant_product == toeplitz.matvec_last, spectral_product ==
                    toeplitz.apply_spectrum (TNO, FD, SKI causal, Togeipi)
    interp_routes   interp_w, interp_wt == interpolation.apply_w / apply_wt (SKI's W)
    band            band_conv == the depthwise F.conv1d of SKI's sparse part
    ski_fused       ski_bidirectional == band_conv + interp_w(A interp_wt(x))

Each module's docstring says why its path is faster than plain autograd.

Letters: B batch (any leading dims), D channels, n length, N FFT size, F = N//2+1,
r inducing points, m band taps.
"""

from __future__ import annotations

from .band import BAND_METHODS, BandMethod, band_conv
from .fft_product import circulant_product, spectral_product
from .interp_routes import (
    INTERP_METHODS,
    InterpMethod,
    InterpPlan,
    chunk_size,
    interp_plan,
    interp_w,
    interp_wt,
)
from .ski_fused import ski_bidirectional

__all__ = [
    "circulant_product",
    "spectral_product",
    "InterpMethod",
    "INTERP_METHODS",
    "InterpPlan",
    "interp_plan",
    "chunk_size",
    "interp_w",
    "interp_wt",
    "BandMethod",
    "BAND_METHODS",
    "band_conv",
    "ski_bidirectional",
]
