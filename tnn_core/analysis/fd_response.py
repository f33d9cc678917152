"""FD-TNN kernels for inspection: an RPE MLP frequency response, its Hilbert pair,
and the causal kernel it defines.

Algorithm 2 of "SKI to go Faster": an MLP gives the real part R(ω) of the
response on ω_k = 2πk/N, k = 0..N/2; the imaginary part is -Hilbert{R}; the
inverse transform is a causal kernel. Theorems 2-4 tie the MLP's activation to
the decay of the kernel in time:

    gelu  k[t] = O(exp(-a t)) for every a > 0   (faster than any exponential)
    silu  |k[t]| <= ||R^(N)||_1 / (2π |t|^N)     (faster than any polynomial)
    relu  Σ k[t]² < ∞                            (square summable)

The theorems treat the response as a smooth function on the whole circle. On the
grid the MLP sees only ω in [0, π] and the response is extended evenly, so a
nonzero slope at ω = 0 or π is a kink of the periodic response, and a kink limits
the decay to about 1/t². ``profiles.decay_fit`` measures what actually happens, and
``fd_response(..., smooth_extension=True)`` feeds the MLP cos ω to remove the kinks.

Letters: N FFT size (even), F = N//2 + 1 frequency bins, t time lag.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tnn_core.checks import check_choice, check_int
from tnn_core.core.rpe import RpeMLP
from tnn_core.core.spectrum import causal_kernel, frequency_grid

__all__ = ["THEOREMS", "FdResponse", "fd_response"]

THEOREMS = {
    "gelu": ("Theorem 2", "faster than any exponential: |k[t]| = O(e^{-a t}) for all a > 0"),
    "silu": ("Theorem 3", "faster than any polynomial: |k[t]| ≤ ‖R^{(N)}‖₁ / (2π|t|^N) for all N"),
    "relu": ("Theorem 4", "square summable: Σ k[t]² < ∞"),
}


@dataclass(frozen=True)
class FdResponse:
    """float64 numpy arrays of one seeded MLP's response on the grid of size N = 2n."""

    N: int
    omega: np.ndarray  # [F] ω_j = 2πj/N, 0..π
    real: np.ndarray  # [F] R(ω), the MLP's output
    imag: np.ndarray  # [F] -Hilbert{R}(ω)
    kernel: np.ndarray  # [N] time lags 0..N-1; exactly 0 for t > N/2, the negative times
    lags: np.ndarray  # [N] signed: 0..N/2, then -(N/2-1)..-1, the circular order


def fd_response(activation: str, width: int, depth: int, n: int, seed: int = 0,
                smooth_extension: bool = False) -> FdResponse:
    """A seeded RPE MLP's real response on the size-N grid, N = 2n, and its causal kernel.

    With ``smooth_extension`` the MLP is fed cos ω instead of ω (as FD-TNN does), so
    its even periodic extension is as smooth as the MLP: the theorems' setting.
    """
    check_choice("activation", activation, tuple(THEOREMS))
    width, depth = check_int("width", width, 1), check_int("depth", depth, 0)
    N = 2 * check_int("n", n, 1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        mlp = RpeMLP(width, 1, depth, activation).double()
    with torch.no_grad():
        omega = frequency_grid(N, dtype=torch.float64)  # (F,)
        real = mlp(torch.cos(omega) if smooth_extension else omega)[:, 0]  # (F,)
        kernel = causal_kernel(real, N)  # (N,)
        spectrum = torch.fft.rfft(kernel)  # (F,)
    t = np.arange(N)
    return FdResponse(N=N, omega=omega.numpy(), real=real.numpy(), imag=spectrum.imag.numpy(),
                      kernel=kernel.numpy(), lags=np.where(t <= N // 2, t, t - N))
