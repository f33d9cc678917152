"""FD kernels for the Frequency page: exact causality, the Hilbert pair, the theorems."""

import numpy as np
import pytest
import scipy.signal

from tnn_core.analysis.fd_response import THEOREMS, fd_response


@pytest.mark.parametrize("activation", list(THEOREMS))
@pytest.mark.parametrize("n", [1, 2, 7, 100])
@pytest.mark.parametrize("smooth", [False, True])
def test_response_gives_exactly_causal_kernel_and_hilbert_pair(activation, n, smooth):
    res = fd_response(activation, width=8, depth=1, n=n, seed=3, smooth_extension=smooth)
    N = res.N
    assert N == 2 * n
    assert np.all(res.kernel[res.lags < 0] == 0.0)  # exactly zero, not small
    # The real part of the kernel's spectrum is the MLP response ...
    spectrum = np.fft.rfft(res.kernel)
    np.testing.assert_allclose(spectrum.real, res.real, atol=1e-12)
    # ... and the imaginary part is -Hilbert{R}: scipy's analytic signal of the
    # two-sided response is R + i H{R}, so -imag(hilbert) on bins 0..N/2.
    full = np.concatenate([res.real, res.real[-2:0:-1]])  # even, length N
    expected = -np.imag(scipy.signal.hilbert(full))[: N // 2 + 1]
    np.testing.assert_allclose(res.imag, expected, atol=1e-10)


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


def test_smooth_extension_shows_the_theorems():
    """Fed cos ω, GeLU and SiLU kernels fall far below ReLU's 1/t² tail."""
    tails = {a: np.abs(fd_response(a, 32, 1, 512, seed=0, smooth_extension=True).kernel[200:256])
             .max() for a in THEOREMS}
    assert tails["gelu"] < 1e-12 and tails["silu"] < 1e-12
    assert tails["relu"] > 1e-8


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"activation": "tanh"}, "activation"), ({"width": 0}, "width"),
     ({"depth": -1}, "depth"), ({"n": 0}, "n")],
)
def test_bad_input_names_the_field(kwargs, field):
    args = {"activation": "relu", "width": 4, "depth": 1, "n": 8} | kwargs
    with pytest.raises(ValueError, match=field):
        fd_response(**args)
