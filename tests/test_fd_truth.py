"""FD-TNN as the Frequency page shows it: the fd_input option, exact causality, the grid N =
fft_size(n), and the decay regimes of Theorems 2-4, against numpy/scipy rebuilt here.

Everything numeric runs in float64.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import torch

from tnn_core.analysis.fd_response import THEOREMS, fd_response
from tnn_core.core.toeplitz import fft_size
from tnn_core.lab.frequency import (
    FIT_FLOOR,
    FIT_SHARE,
    FIT_START,
    decay_curve,
    decay_magnitude,
    frequency_view,
    kernel_fit,
)
from tnn_core.operators import OperatorConfig, build_operator
from tnn_core.training import checkpoint
from tnn_core.training.arguments import config_from_args, parser
from tnn_core.training.tasks import get_task

SIZES = [1, 2, 7, 13, 64, 257]  # 1, 2, odd, prime, a power of two, a prime above it
INPUTS = ["omega", "cosine"]
D = 3


def make_fd(causal: bool, fd_input: str, seed: int = 0, dim: int = D, **overrides):
    torch.manual_seed(seed)
    config = OperatorConfig(kind="fd", causal=causal, fd_input=fd_input, **overrides)
    return build_operator(config, dim).double()


def five_smooth_size(n: int) -> int:
    """The smallest even N >= 2n with no prime factor above 5, by trial division."""
    N = 2 * n
    while True:
        m = N
        for p in (2, 3, 5):
            while m % p == 0:
                m //= p
        if m == 1:
            return N
        N += 2


def kernel_ref(op, n: int) -> np.ndarray:
    """Lags -(n-1)..n-1 of the FD kernel, [D, 2n-1], from the RPE's outputs by numpy alone:
    the grid, the cos ω input, the sin ω weight, the Hilbert weights and the inverse FFT."""
    N, D = five_smooth_size(n), op.dim
    omega = 2 * np.pi * np.arange(N // 2 + 1) / N  # (F,)
    x = np.cos(omega) if op.config.fd_input == "cosine" else omega
    with torch.no_grad():
        out = op.rpe(torch.from_numpy(x)).T.numpy()  # (D or 2D, F)
    if op.config.causal:
        even = np.fft.irfft(out, n=N)  # (D, N)
        circular = even * np.r_[1.0, np.full(N // 2 - 1, 2.0), 1.0, np.zeros(N // 2 - 1)]
    else:
        weight = np.sin(omega) if op.config.fd_input == "cosine" else np.ones_like(omega)
        weight[[0, -1]] = 0  # the response of a real kernel is real at 0 and π
        circular = np.fft.irfft(out[:D] + 1j * out[D:] * weight, n=N)  # (D, N)
    lags = np.arange(-(n - 1), n)
    return circular[:, lags % N]


def toeplitz_product(kernel: np.ndarray, x: np.ndarray) -> np.ndarray:
    """y[b, :, c] = T_c x[b, :, c] with T_c[i, j] = k_c[i - j], by scipy's dense Toeplitz."""
    n = x.shape[1]
    T = np.stack([scipy.linalg.toeplitz(k[n - 1 :], k[n - 1 :: -1]) for k in kernel])  # (D,n,n)
    return np.einsum("cij,bjc->bic", T, x)


# -- the option -------------------------------------------------------------------------


def test_fd_input_is_validated_and_old_configs_load_unchanged():
    with pytest.raises(ValueError, match=r"fd_input must be one of \('omega', 'cosine'\); "
                                         r"got 'sin'"):
        OperatorConfig(kind="fd", fd_input="sin")
    old = OperatorConfig(kind="fd").to_dict()
    del old["fd_input"]  # a config written before the option existed
    assert OperatorConfig.from_dict(old).fd_input == "omega"
    paths = sorted(checkpoint.SHIPPED_DIR.glob("*.safetensors"))
    assert paths, "no shipped checkpoints"
    for info in map(checkpoint.read_info, paths):
        assert info.model_config.operator.fd_input == "omega", info.source


@pytest.mark.parametrize("fd_input", INPUTS)
def test_cli_flag_reaches_the_operator(fd_input):
    args = parser().parse_args(["--task", "charlm", "--operator", "fd", "--fd-input", fd_input])
    assert config_from_args(args, get_task("charlm")).model.operator.fd_input == fd_input


# -- the operator applies exactly its kernel ---------------------------------------------


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("fd_input", INPUTS)
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidir"])
def test_kernel_is_the_numpy_construction(causal, fd_input, n):
    op = make_fd(causal, fd_input)
    with torch.no_grad():
        kernel = op.kernel(n).numpy()
    assert kernel.shape == (D, 2 * n - 1)
    np.testing.assert_allclose(kernel, kernel_ref(op, n), rtol=0, atol=1e-12)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("fd_input", INPUTS)
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidir"])
@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_forward_is_the_dense_toeplitz_product_of_its_kernel(grad, causal, fd_input, n):
    """Both forward paths (the cached spectrum under no_grad; the circulant column or the
    spectral node with autograd) apply scipy's dense Toeplitz matrix of kernel(n)."""
    op = make_fd(causal, fd_input)
    x = torch.randn(2, n, D, dtype=torch.float64, generator=torch.Generator().manual_seed(n))
    with torch.no_grad():
        kernel = op.kernel(n).numpy()
    with torch.set_grad_enabled(grad):
        y = op(x).detach().numpy()
    np.testing.assert_allclose(y, toeplitz_product(kernel, x.numpy()), rtol=0, atol=1e-12)


# -- causality -----------------------------------------------------------------------------


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("fd_input", INPUTS)
def test_causal_kernel_is_exactly_zero_at_negative_lags(fd_input, n):
    op = make_fd(True, fd_input)
    with torch.no_grad():
        kernel = op.kernel(n)
        M = op.matrix(n)
    assert torch.all(kernel[:, : n - 1] == 0)  # exactly, not round-off
    assert torch.all(torch.triu(M, diagonal=1) == 0)
    # the forward pass: output t does not depend on inputs after t (to FFT round-off)
    x = torch.randn(1, n, D, dtype=torch.float64, requires_grad=True)
    for t in range(n - 1):
        (grad,) = torch.autograd.grad(op(x)[0, t].sum(), x)
        assert grad[0, t + 1 :].abs().max() <= 1e-14 * kernel.abs().max()


@pytest.mark.parametrize("n", [7, 64])
def test_cosine_bidirectional_response_is_smooth_on_the_circle(n):
    """Fed cos ω, the real part is even and the imaginary part sin ω · (even): both are
    2π-periodic with no jump at 0 and π, and exactly 0 there for the imaginary part."""
    op = make_fd(False, "cosine")
    N = fft_size(n)
    with torch.no_grad():
        S = op.spectrum(N).numpy()
    assert np.all(S.imag[:, [0, -1]] == 0)
    # a smooth odd function near 0 is O(ω): the first bins approach 0 linearly
    assert np.all(np.abs(S.imag[:, 1]) <= 2 * np.abs(S.imag[:, 2]) + 1e-15)


# -- the decay regimes the Frequency page reports ---------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidir"])
@pytest.mark.parametrize("activation", ["silu", "gelu"])
def test_cosine_fed_smooth_activations_decay_far_faster_than_omega_fed(activation, causal,
                                                                      seed):
    """Theorems 2-3 apply to the cosine-fed operator: past lag 128 its kernel is at
    round-off, while the omega-fed one (kinks or jumps at 0 and π) still carries a power-law
    tail of at least 1e-7 of its peak."""
    n = 1024
    tails = {}
    for fd_input in INPUTS:
        op = make_fd(causal, fd_input, seed=seed, activation=activation)
        with torch.no_grad():
            k = op.kernel(n).numpy()
        far = np.abs(k[:, np.abs(np.arange(-(n - 1), n)) >= 128])  # (D, lags)
        tails[fd_input] = far.max(axis=1) / np.abs(k).max(axis=1)  # (D,)
    assert np.all(tails["cosine"] < 1e-12), tails
    assert np.all(tails["omega"] > 1e-7), tails


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("causal", "fd_input", "activation", "low", "high"), [
    (True, "omega", "silu", 1.7, 2.3),  # kinks of the even extension: 1/t²
    (True, "omega", "relu", 1.7, 2.3),
    (False, "omega", "gelu", 0.8, 1.35),  # the imaginary half's jumps: 1/t
    (False, "omega", "relu", 0.8, 1.35),
    (True, "cosine", "relu", 1.7, 2.3),  # ReLU's own kinks inside (0, π): 1/t² still
])
def test_power_law_regimes(causal, fd_input, activation, low, high, seed):
    view = frequency_view(activation, 32, 1, 1024, seed, fd_input, causal)
    fit = kernel_fit(view.kernels[0][1], view.N)  # what the decay figure fits
    assert fit.better_law == "power law"
    assert low <= fit.exponent <= high
    assert all(decay_curve(decay_magnitude(kernel)).roundoff_from is None
               for name, kernel in view.kernels if name == "relu")


# -- the Frequency page's kernels against an independent FFT ----------------------------


@pytest.mark.parametrize(("activation", "width", "depth", "n", "fd_input", "causal"), [
    ("gelu", 16, 1, 64, "omega", True), ("silu", 8, 2, 301, "cosine", True),
    ("relu", 32, 0, 2, "omega", False), ("silu", 16, 1, 1, "cosine", False),
    ("gelu", 32, 1, 500, "cosine", False),
])
def test_frequency_view_is_the_operators(activation, width, depth, n, fd_input, causal):
    """fd_response (what the kernel figure computes in the browser, tests/test_figure_fd.py)
    and the settled view's kernels (what the decay figure fits) are the operator's."""
    seed = 5
    view = frequency_view(activation, width, depth, n, seed, fd_input, causal)
    response = fd_response(activation, width, depth, n, seed, fd_input, causal)
    N = five_smooth_size(n)
    assert view.N == response.N == N and (view.fd_input, view.causal) == (fd_input, causal)
    np.testing.assert_allclose(response.omega, 2 * np.pi * np.arange(N // 2 + 1) / N, atol=1e-15)
    op = make_fd(causal, fd_input, seed=seed, dim=1, activation=activation, rpe_dim=width,
                 rpe_layers=depth)
    np.testing.assert_array_equal(response.lags, np.arange(-(n - 1), n))
    np.testing.assert_allclose(response.kernel, kernel_ref(op, n)[0], rtol=0, atol=1e-12)
    with torch.no_grad():
        spectrum = op.spectrum(N)[0].numpy()  # (F,)
    np.testing.assert_allclose(response.real, spectrum.real, rtol=0, atol=1e-12)
    np.testing.assert_allclose(response.imag, spectrum.imag, rtol=0, atol=1e-12)
    negative = response.lags < 0
    if causal:
        assert np.all(response.kernel[negative] == 0.0)
        leak = np.abs(response.spectral_kernel[negative]).max(initial=0.0)
        assert leak <= 1e-14 * np.abs(response.kernel).max()
    else:
        assert np.all(response.imag[[0, -1]] == 0)
    # the decay figure's kernels: this activation first, then the others, one MLP's weights
    assert [name for name, _ in view.kernels] == [activation] + [
        a for a in THEOREMS if a != activation]
    np.testing.assert_array_equal(view.kernels[0][1], response.kernel)
    for name, kernel in view.kernels[1:]:
        np.testing.assert_array_equal(
            kernel, fd_response(name, width, depth, n, seed, fd_input, causal).kernel)
    # the decay curves: lags >= 1 above the stated floor only, so a log axis stays on data
    for _, kernel in view.kernels:
        curve = decay_curve(decay_magnitude(kernel))
        assert np.all(curve.t >= 1) and np.all(curve.magnitude > 0)
        assert curve.t.shape == curve.magnitude.shape
    head = np.abs(response.kernel[response.lags >= 0])  # (n,)
    if not causal:
        head = np.maximum(head, np.abs(response.kernel[response.lags <= 0][::-1]))
    mine = decay_curve(decay_magnitude(response.kernel))
    keep = (np.arange(n) >= 1) & (head > FIT_FLOOR * head.max())
    np.testing.assert_array_equal(mine.t, np.arange(n)[keep])
    np.testing.assert_array_equal(mine.magnitude, head[keep])
    # the fit: lags FIT_START .. min(N/8, n-1) above the floor, by numpy least squares
    assert view.fit_end == min(N // FIT_SHARE, n - 1)
    fit = kernel_fit(response.kernel, N)
    t = np.arange(view.fit_end + 1)
    part = head[: view.fit_end + 1]
    use = (t >= FIT_START) & (part > FIT_FLOOR * part.max())
    assert fit.points == use.sum()
    if use.sum() >= 2:
        power, _ = np.polyfit(np.log(t[use]), np.log(part[use]), 1)
        assert fit.exponent == pytest.approx(-power, rel=1e-9)
