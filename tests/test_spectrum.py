"""tnn_core.core.spectrum: the discrete Hilbert transform behind causal FD kernels
(Algorithm 2 of "SKI to go Faster") and the spectrum -> lag-kernel map.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.signal
import torch

from tests.references import bidirectional_spectrum
from tnn_core.core.spectrum import (
    causal_kernel,
    causal_spectrum,
    causal_weights,
    frequency_grid,
    kernel_from_spectrum,
)
from tnn_core.core.toeplitz import apply_spectrum, dense, fft_size, kernel_spectrum

F64 = torch.float64
GRIDS = [2, 4, 6, 14, 64, 200]


def random_response(D: int, N: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(D, N // 2 + 1, generator=g, dtype=F64)  # (D, F)


def two_sided(R: np.ndarray, N: int) -> np.ndarray:
    """The even length-N response Rfull[k] = Rfull[N-k] = R[k] from its N//2+1 bins."""
    return np.concatenate([R, R[..., 1 : N // 2][..., ::-1]], axis=-1)  # (..., N)


def minus_hilbert_via_scipy(R: np.ndarray, N: int) -> np.ndarray:
    """The imaginary part a causal spectrum with real part R must have, on bins 0..N/2.

    Derivation. scipy.signal.hilbert(s) = ifft(fft(s) * w) with w = 1 at 0 and N/2,
    2 at 1..N/2-1, 0 at N/2+1..N-1, and returns s + i H{s}. Take s = Rfull (real,
    even, indexed by frequency) and let h = ifft(Rfull), real and even. Then
    fft(Rfull)[t] = N h[-t] = N h[t], so hilbert(Rfull) = N ifft(w h). The causal kernel
    is kappa = w h (keep t = 0, N/2, double 1..N/2-1, zero negative times) and its
    spectrum K = fft(kappa). For real kappa, N ifft(kappa) = conj(fft(kappa)), hence
    hilbert(Rfull) = conj(K): Re K = Rfull and Im K = -imag(hilbert(Rfull)) = -H{R}.
    """
    analytic = scipy.signal.hilbert(two_sided(R, N), axis=-1)  # (..., N)
    return -analytic.imag[..., : N // 2 + 1]


def minus_hilbert_via_cot(R: np.ndarray, N: int) -> np.ndarray:
    """The same, from the closed form of the discrete Hilbert transform for even N:
    H{R}[k] = (2/N) sum over j with k-j odd of cot(pi (k-j) / N) Rfull[j]."""
    Rfull = two_sided(R, N)
    k = np.arange(N)
    m = (k[:, None] - k[None, :]) % N  # (N, N)
    kernel = np.zeros((N, N))
    odd = m % 2 == 1
    kernel[odd] = 2.0 / N / np.tan(np.pi * m[odd] / N)
    return -(Rfull @ kernel.T)[..., : N // 2 + 1]


# -- grids and weights ----------------------------------------------------------------


@pytest.mark.parametrize("N", GRIDS)
def test_frequency_grid_spans_zero_to_pi(N):
    omega = frequency_grid(N, dtype=F64)
    assert omega.shape == (N // 2 + 1,)
    assert omega[0] == 0
    assert math.isclose(omega[-1].item(), math.pi, rel_tol=1e-15)
    torch.testing.assert_close(omega, torch.linspace(0, math.pi, N // 2 + 1, dtype=F64))


@pytest.mark.parametrize("N", GRIDS)
def test_causal_weights(N):
    w = causal_weights(N, dtype=F64)
    expected = torch.zeros(N, dtype=F64)
    expected[0] = 1
    expected[1 : N // 2] = 2
    expected[N // 2] = 1  # weight 1, not 2, at N/2 keeps Re = R
    assert torch.equal(w, expected)


# -- the causal spectrum --------------------------------------------------------------


@pytest.mark.parametrize("N", GRIDS)
def test_causal_kernel_is_zero_at_negative_times(N):
    R = random_response(3, N)
    k = causal_kernel(R, N)
    assert k.shape == (3, N)
    assert torch.equal(k[:, N // 2 + 1 :], torch.zeros(3, N - N // 2 - 1, dtype=F64))
    assert k[:, : N // 2 + 1].abs().max() > 0.1


@pytest.mark.parametrize("N", GRIDS)
def test_causal_spectrum_real_part_is_the_response(N):
    R = random_response(3, N, seed=1)
    S = causal_spectrum(R, N)
    assert S.shape == (3, N // 2 + 1) and S.is_complex()
    torch.testing.assert_close(S.real, R, rtol=0, atol=1e-12)


@pytest.mark.parametrize("N", GRIDS)
def test_causal_spectrum_imaginary_part_is_minus_hilbert(N):
    R = random_response(3, N, seed=2)
    imag = causal_spectrum(R, N).imag.numpy()
    expected = minus_hilbert_via_scipy(R.numpy(), N)
    np.testing.assert_allclose(imag, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(imag, minus_hilbert_via_cot(R.numpy(), N), rtol=0, atol=1e-12)
    if N >= 6:  # the Hilbert part is not trivially zero
        assert np.abs(expected).max() > 0.1


@pytest.mark.parametrize("N", GRIDS)
def test_causal_spectrum_gives_a_causal_toeplitz_kernel(N):
    n = N // 2  # the largest n with fft_size-like N >= 2n
    S = causal_spectrum(random_response(2, N, seed=3), N)
    coeffs = kernel_from_spectrum(S, n, N)  # (2, 2n-1)
    assert torch.all(coeffs[:, : n - 1].abs() <= 1e-12)  # negative lags
    assert coeffs[:, n - 1 :].abs().max() > 0.1


def test_causal_kernel_rejects_wrong_bin_count():
    with pytest.raises(ValueError, match="real_response"):
        causal_kernel(torch.zeros(2, 5, dtype=F64), 10)


# -- spectrum -> lag kernel -----------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 100])
@pytest.mark.parametrize("extra", [0, 4, None])  # N = 2n + extra, or fft_size(n)
def test_kernel_from_spectrum_round_trip(n, extra):
    N = fft_size(n) if extra is None else 2 * n + extra
    g = torch.Generator().manual_seed(n)
    coeffs = torch.randn(3, 2 * n - 1, generator=g, dtype=F64)
    back = kernel_from_spectrum(kernel_spectrum(coeffs, N), n, N)
    torch.testing.assert_close(back, coeffs, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n", [1, 2, 7, 64])
def test_kernel_from_spectrum_is_what_apply_spectrum_applies(n):
    """Any spectrum (not only one of a Toeplitz kernel) acts as dense(kernel_from_spectrum)."""
    N = fft_size(n)
    g = torch.Generator().manual_seed(10 + n)
    S = bidirectional_spectrum(torch.randn(3, N // 2 + 1, generator=g, dtype=F64),
                               torch.randn(3, N // 2 + 1, generator=g, dtype=F64))
    x = torch.randn(2, 3, n, generator=g, dtype=F64)  # (B, D, n)
    T = dense(kernel_from_spectrum(S, n, N))  # (D, n, n)
    expected = torch.einsum("cij,bcj->bci", T, x)
    torch.testing.assert_close(apply_spectrum(S, x, N), expected, rtol=0, atol=1e-10)


# -- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("N, message", [(0, "an integer"), (1, "an integer"),
                                        (3, "an even integer"), (7, "an even integer"),
                                        (2.0, "an integer"), (True, "an integer")])
def test_odd_or_bad_grid_rejected(N, message):
    message = f"N must be {message} in \\[2, inf\\); got {N!r}"
    with pytest.raises(ValueError, match=message):
        frequency_grid(N)
    with pytest.raises(ValueError, match=message):
        causal_weights(N)
    with pytest.raises(ValueError, match=message):
        causal_kernel(torch.zeros(3, 3, dtype=F64), N)
    with pytest.raises(ValueError, match=message):
        kernel_from_spectrum(torch.zeros(3, 3, dtype=torch.complex128), 1, N)


def test_kernel_from_spectrum_rejects_too_small_grid():
    with pytest.raises(ValueError, match="N must be in"):
        kernel_from_spectrum(torch.zeros(1, 4, dtype=torch.complex128), 5, 6)
