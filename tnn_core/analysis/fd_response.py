"""FD-TNN kernels for inspection: one seeded FD operator's frequency response and the
kernel it applies.

Algorithm 2 of "SKI to go Faster" (causal): an RPE MLP gives the real part R of the
response on ω_k = 2πk/N, k = 0..N/2, N = ``fft_size(n)``; the imaginary part is
-Hilbert{R}; the inverse transform is a causal kernel. §3.3.2 (bidirectional): the MLP
gives both halves, the imaginary one forced to 0 at ω = 0 and π. The response is read
from a one-channel ``operators.FD`` itself, so what is shown is what the operator applies.

Theorems 2-4 tie the MLP's activation to the decay of the kernel in time, for a response
that is an MLP of ω on the whole circle [-π, π]:

    gelu  k[t] = O(exp(-a t)) for every a > 0   (faster than any exponential)
    silu  |k[t]| <= ||k̂^(N)||_1 / (2π |t|^N)   (faster than any polynomial)
    relu  Σ k[t]² < ∞                            (square summable)

Algorithm 2 feeds the MLP ω in [0, π] (``fd_input="omega"``). A real kernel's response is
even in its real part and odd in its imaginary part, so on the circle a nonzero slope of R
at ω = 0 or π is a kink (decay about 1/t²), and an imaginary half forced to 0 at 0 and π
is a jump (about 1/t). The premise of Theorems 2-3 fails there. ``fd_input="cosine"``
feeds cos ω (and weights the imaginary half by sin ω), which makes the response as smooth
on the circle as the MLP: Theorem 3's premise holds. Theorem 2's needs more, a response
analytic in the whole complex plane, and the RPE's RMS norm between layers,
h / √(mean h²), has branch points where mean h² = 0 off the real axis: the response is
analytic in a strip only, and the kernel falls like e^{-a t} at a fixed rate a (set by
the strip's width), faster than any power but not faster than every exponential.

Letters: n length, N FFT size (even, >= 2n), F = N//2 + 1 frequency bins, t time lag.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tnn_core.checks import check_choice, check_int
from tnn_core.core.spectrum import frequency_grid, kernel_from_spectrum
from tnn_core.core.toeplitz import fft_size
from tnn_core.operators import seeded_weights
from tnn_core.operators.config import FD_INPUTS, OperatorConfig
from tnn_core.operators.fd import FD

__all__ = ["THEOREMS", "Theorem", "FdResponse", "fd_response"]


@dataclass(frozen=True)
class Theorem:
    name: str  # "Theorem 2" .. "Theorem 4" of "SKI to go Faster"
    conclusion: str  # what it says about k[t]
    premise: str  # what it needs of the response k̂


THEOREMS = {
    "gelu": Theorem("Theorem 2", "faster than any exponential: k[t] = O(e^{-a t}) for all a > 0",
                    "k̂ is a GeLU MLP of ω, 2π-periodic and analytic in the whole complex "
                    "plane (the proof, Appendix E.1, uses that erf is entire)"),
    "silu": Theorem("Theorem 3",
                    "faster than any polynomial: |k[t]| ≤ ‖k̂^{(N)}‖₁ / (2π|t|^N) for all N",
                    "k̂ is a SiLU MLP of ω on the whole circle, smooth and 2π-periodic"),
    "relu": Theorem("Theorem 4", "square summable: Σ k[t]² < ∞",
                    "k̂ is bounded (a ReLU MLP is continuous), so square integrable (Parseval)"),
}


@dataclass(frozen=True)
class FdResponse:
    """float64 numpy arrays of one seeded one-channel FD operator at length n."""

    n: int
    N: int  # fft_size(n): the grid the operator uses
    omega: np.ndarray  # [F] ω_k = 2πk/N, 0..π
    real: np.ndarray  # [F] real part of the response (causal: R from the MLP)
    imag: np.ndarray  # [F] imaginary part (causal: -Hilbert{R}; else the MLP's, 0 at 0 and π)
    lags: np.ndarray  # [2n-1] -(n-1)..n-1
    kernel: np.ndarray  # [2n-1] FD.kernel(n): the map applied; causal: exactly 0 at lags < 0
    spectral_kernel: np.ndarray  # [2n-1] the same lags through irfft of the spectrum, which
    # the forward applies under no_grad: causal, the negative lags are round-off, not 0


def fd_response(activation: str, width: int, depth: int, n: int, seed: int = 0,
                fd_input: str = "omega", causal: bool = True) -> FdResponse:
    """A seeded one-channel FD operator's response and kernel at length n (float64).

    The operator is ``FD(OperatorConfig(kind="fd", causal, activation, rpe_dim=width,
    rpe_layers=depth, fd_input), dim=1)``, its weights drawn under
    ``operators.seeded_weights(seed)``, which leaves the global generator as it was.
    """
    check_choice("activation", activation, tuple(THEOREMS))
    check_choice("fd_input", fd_input, FD_INPUTS)
    width, depth = check_int("width", width, 1), check_int("depth", depth, 0)
    n = check_int("n", n, 1)
    if not isinstance(causal, bool):
        raise ValueError(f"causal must be True or False; got {causal!r}")
    config = OperatorConfig(kind="fd", causal=causal, activation=activation, rpe_dim=width,
                            rpe_layers=depth, fd_input=fd_input)
    with seeded_weights(seed):
        op = FD(config, dim=1).double()
    N = fft_size(n)
    with torch.no_grad():
        spectrum = op.spectrum(N)[0]  # (F,) complex
        real = op.real_response(N)[0] if causal else spectrum.real  # (F,) R itself, no rfft
        kernel = op.kernel(n)[0]  # (2n-1,)
        spectral_kernel = kernel_from_spectrum(spectrum, n, N)  # (2n-1,)
        omega = frequency_grid(N, dtype=torch.float64)  # (F,)
    return FdResponse(n=n, N=N, omega=omega.numpy(), real=real.numpy(),
                      imag=spectrum.imag.numpy(), lags=np.arange(-(n - 1), n),
                      kernel=kernel.numpy(), spectral_kernel=spectral_kernel.numpy())
