"""FD kernels for the Frequency page: exact causality, the Hilbert pair, the theorems."""

import numpy as np
import pytest
import scipy.signal

from tnn_core.analysis.fd_response import THEOREMS, fd_response
from tnn_core.core.toeplitz import fft_size


@pytest.mark.parametrize("activation", list(THEOREMS))
@pytest.mark.parametrize("n", [1, 2, 7, 100])
@pytest.mark.parametrize("fd_input", ["omega", "cosine"])
def test_response_gives_exactly_causal_kernel_and_hilbert_pair(activation, n, fd_input):
    res = fd_response(activation, width=8, depth=1, n=n, seed=3, fd_input=fd_input)
    N = res.N
    assert N == fft_size(n)  # the operator's grid, not 2n
    assert np.all(res.kernel[res.lags < 0] == 0.0)  # exactly zero, not small
    # The lags the kernel shows are those of the circular kernel irfft(R - iH{R}) ...
    full = np.concatenate([res.real, res.real[-2:0:-1]])  # even, length N
    # ... scipy's analytic signal of the two-sided response is R + i H{R}, so the causal
    # spectrum is its conjugate on bins 0..N/2.
    expected = -np.imag(scipy.signal.hilbert(full))[: N // 2 + 1]
    np.testing.assert_allclose(res.imag, expected, atol=1e-10)
    circular = np.fft.irfft(res.real + 1j * expected, n=N)
    np.testing.assert_allclose(res.kernel, circular[res.lags % N], atol=1e-12)
    # the FFT path leaves round-off at the negative lags where kernel(n) has zeros
    assert np.abs(res.spectral_kernel[res.lags < 0]).max(initial=0.0) < 1e-14


def test_response_is_seeded_and_leaves_global_rng_alone():
    import torch

    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = fd_response("gelu", 16, 2, 50, seed=7)
    after = torch.rand(1)
    b = fd_response("gelu", 16, 2, 50, seed=7)
    c = fd_response("gelu", 16, 2, 50, seed=8)
    assert torch.equal(before, after)
    np.testing.assert_array_equal(a.kernel, b.kernel)
    assert not np.allclose(a.kernel, c.kernel)


@pytest.mark.parametrize("causal", [True, False])
def test_cosine_input_shows_the_theorems(causal):
    """Fed cos ω, GeLU and SiLU kernels fall far below ReLU's 1/t² tail."""
    tails = {a: np.abs(fd_response(a, 32, 1, 512, seed=0, fd_input="cosine", causal=causal)
                       .kernel[np.abs(np.arange(-511, 512)) >= 200]).max() for a in THEOREMS}
    assert tails["gelu"] < 1e-12 and tails["silu"] < 1e-12
    assert tails["relu"] > 1e-8


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"activation": "tanh"}, "activation"), ({"width": 0}, "width"),
     ({"depth": -1}, "depth"), ({"n": 0}, "n"), ({"fd_input": "sin"}, "fd_input"),
     ({"causal": 1}, "causal")],
)
def test_bad_input_names_the_field(kwargs, field):
    args = {"activation": "relu", "width": 4, "depth": 1, "n": 8} | kwargs
    with pytest.raises(ValueError, match=field):
        fd_response(**args)
