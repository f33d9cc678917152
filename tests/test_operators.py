"""tnn_core.operators: TNO, SKI-TNO and FD-TNO against their exact matrices and against
references rebuilt here from the papers (TNN §3.3; SKI to go Faster Algorithms 1 and 2).

Everything numeric runs in float64 (``op.double()``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.signal
import torch
from torch.func import functional_call

from tests.references import bidirectional_spectrum
from tnn_core.core.toeplitz import dense, fft_size
from tnn_core.operators import SKI, OperatorConfig, build_operator

F64 = torch.float64
KINDS = ["tno", "ski", "fd"]
SIZES = [1, 2, 3, 7, 64, 100, 257]
D = 3
# rank 8 / band 5 (odd), and rank 32 / band 4 (even band; rank > n for the small sizes)
CONFIGS = {"r8m5": dict(rank=8, band=5), "r32m4": dict(rank=32, band=4, decay=0.9)}


def make_op(kind: str, causal: bool, dim: int = D, seed: int = 0, **overrides):
    torch.manual_seed(seed)
    return build_operator(OperatorConfig(kind=kind, causal=causal, **overrides), dim).double()


def random_x(B: int, n: int, dim: int = D, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, n, dim, generator=g, dtype=F64)


def apply_matrix(M: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.einsum("cij,bjc->bic", M, x)  # (B, n, D)


# -- every operator applies exactly its matrix ----------------------------------------


@pytest.mark.parametrize("config", CONFIGS, ids=list(CONFIGS))
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("kind", KINDS)
def test_forward_equals_matrix(kind, causal, n, config):
    op = make_op(kind, causal, **CONFIGS[config])
    x = random_x(2, n)
    with torch.no_grad():
        y = op(x)
        M = op.matrix(n)
    assert y.shape == (2, n, D) and y.dtype == F64
    assert M.shape == (D, n, n)
    torch.testing.assert_close(y, apply_matrix(M, x), rtol=0, atol=1e-10)
    if n > 1:
        upper = torch.triu(M, diagonal=1)
        if causal:
            assert upper.abs().max() <= 1e-12
        else:  # the bidirectional operators do look ahead
            assert upper.abs().max() > 1e-6


@pytest.mark.parametrize("kind", KINDS)
def test_float32_default(kind):
    torch.manual_seed(0)
    op = build_operator(OperatorConfig(kind=kind, rank=8, band=5), D)
    x = torch.randn(2, 20, D)
    y = op(x)
    assert y.dtype == torch.float32
    torch.testing.assert_close(y, apply_matrix(op.matrix(20), x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("kind", KINDS)
def test_rank_larger_than_length(kind, causal):
    op = make_op(kind, causal, rank=64, band=17)
    x = random_x(2, 3)
    with torch.no_grad():
        torch.testing.assert_close(op(x), apply_matrix(op.matrix(3), x), rtol=0, atol=1e-10)


# -- causality by autograd ------------------------------------------------------------


@pytest.mark.parametrize("config", CONFIGS, ids=list(CONFIGS))
@pytest.mark.parametrize("n", [2, 7, 100])
@pytest.mark.parametrize("kind", KINDS)
def test_causal_by_autograd(kind, n, config):
    op = make_op(kind, True, **CONFIGS[config])
    x = random_x(2, n).requires_grad_(True)
    y = op(x)
    for t in sorted({0, (n - 1) // 2, n - 2}):
        (grad,) = torch.autograd.grad(y[:, t, :].sum(), x, retain_graph=True)
        assert grad[:, t + 1 :].abs().max() <= 1e-12, f"output {t} sees the future"
        assert grad[:, : t + 1].abs().max() > 1e-6  # it does see the past


# -- TNO ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 9, 64])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_tno_kernel_is_decayed_rpe(causal, n):
    decay = 0.9
    op = make_op("tno", causal, decay=decay)
    k = torch.arange(-(n - 1), n, dtype=F64)  # (2n-1,) lags
    with torch.no_grad():
        expected = (op.rpe(k) * (decay ** k.abs())[:, None]).T  # (D, 2n-1)
        if causal:
            expected[:, : n - 1] = 0
        kernel = op.kernel(n)
        assert kernel.shape == (D, 2 * n - 1)
        torch.testing.assert_close(kernel, expected, rtol=0, atol=1e-12)
        # the zero lag is not decayed
        torch.testing.assert_close(kernel[:, n - 1], op.rpe(torch.zeros(1, dtype=F64))[0],
                                   rtol=0, atol=1e-14)


@pytest.mark.parametrize("dim, width", [(3, 32), (16, 32), (256, 32), (300, 37), (512, 64)])
def test_tno_default_rpe_width(dim, width):
    op = build_operator(OperatorConfig(kind="tno"), dim)
    assert op.rpe.inp.out_features == width
    assert op.rpe.out.out_features == dim
    fd = build_operator(OperatorConfig(kind="fd"), dim)
    assert fd.rpe.inp.out_features == width


def test_rpe_width_and_layers_override():
    op = build_operator(OperatorConfig(kind="tno", rpe_dim=7, rpe_layers=3), 16)
    assert op.rpe.inp.out_features == 7
    assert len(op.rpe.hidden) == 3
    assert all(layer.in_features == layer.out_features == 7 for layer in op.rpe.hidden)


@pytest.mark.parametrize("kind", KINDS)
def test_decay_is_not_a_parameter(kind):
    op = make_op(kind, False, rank=8, band=5)
    names = [name for name, _ in op.named_parameters()]
    assert names and not any("decay" in name for name in names)
    if kind in ("tno", "fd"):
        assert all(name.startswith("rpe.") for name in names)
    else:
        assert sorted(names) == ["band_weight", "knots"]


def test_tno_decay_changes_the_kernel_as_lambda_to_the_lag():
    op_a = make_op("tno", False, seed=3, decay=0.5)
    op_b = make_op("tno", False, seed=3, decay=1.0)
    n = 6
    k = torch.arange(-(n - 1), n, dtype=F64)
    with torch.no_grad():
        torch.testing.assert_close(op_a.kernel(n), op_b.kernel(n) * 0.5 ** k.abs(),
                                   rtol=0, atol=1e-12)


# -- FD -------------------------------------------------------------------------------


def minus_hilbert(R: np.ndarray, N: int) -> np.ndarray:
    """-H{R} on bins 0..N/2 via scipy; see tests/test_spectrum.py for the derivation
    (scipy.signal.hilbert of the two-sided even response is conj of the causal spectrum)."""
    Rfull = np.concatenate([R, R[..., 1 : N // 2][..., ::-1]], axis=-1)  # (..., N)
    return -scipy.signal.hilbert(Rfull, axis=-1).imag[..., : N // 2 + 1]


def record_rpe_inputs(op) -> list:
    seen = []
    op.rpe.register_forward_hook(lambda module, args, out: seen.append(args[0].detach()))
    return seen


@pytest.mark.parametrize("n", [1, 2, 7, 64, 257])
def test_fd_causal_spectrum_is_hilbert_of_rpe(n):
    op = make_op("fd", True)
    N = fft_size(n)
    omega = torch.linspace(0, math.pi, N // 2 + 1, dtype=F64)  # ω_k = 2πk/N
    seen = record_rpe_inputs(op)
    with torch.no_grad():
        op(random_x(1, n))
        S = op.spectrum(N)  # (D, N//2+1)
        R = op.rpe(omega).T  # (D, N//2+1)
    # the RPE is evaluated on ω in [0, π], N//2+1 points, N = fft_size(n)
    assert seen[0].shape == (N // 2 + 1,)
    torch.testing.assert_close(seen[0], omega, rtol=0, atol=1e-14)
    assert seen[0][0] == 0 and math.isclose(seen[0][-1].item(), math.pi, rel_tol=1e-15)
    assert S.shape == (D, N // 2 + 1)
    torch.testing.assert_close(S.real, R, rtol=0, atol=1e-12)
    np.testing.assert_allclose(S.imag.numpy(), minus_hilbert(R.numpy(), N), rtol=0, atol=1e-12)
    # and the time kernel is causal: exact zeros, not an irfft's round-off
    with torch.no_grad():
        kernel = op.kernel(n)
    assert torch.all(kernel[:, : n - 1] == 0)


@pytest.mark.parametrize("n", [1, 2, 7, 64, 257])
def test_fd_bidirectional_spectrum(n):
    op = make_op("fd", False)
    N = fft_size(n)
    omega = torch.linspace(0, math.pi, N // 2 + 1, dtype=F64)
    with torch.no_grad():
        S = op.spectrum(N)
        out = op.rpe(omega).T  # (2D, F): real parts then imaginary parts
    assert torch.equal(S.imag[:, 0], torch.zeros(D, dtype=F64))
    assert torch.equal(S.imag[:, -1], torch.zeros(D, dtype=F64))
    torch.testing.assert_close(S.real, out[:D], rtol=0, atol=1e-12)
    torch.testing.assert_close(S.imag[:, 1:-1], out[D:, 1:-1], rtol=0, atol=1e-12)
    # the spectrum of a real kernel: the round trip closes only because the imaginary part
    # vanishes at DC and Nyquist
    kernel = torch.fft.irfft(S, n=N)  # (D, N) real
    torch.testing.assert_close(torch.fft.rfft(kernel, n=N), S, rtol=0, atol=1e-12)
    if N > 2:  # the halves as the RPE gives them, imaginary at DC: no real kernel has them
        raw = torch.complex(out[:D], out[D:])
        assert not torch.allclose(torch.fft.rfft(torch.fft.irfft(raw, n=N), n=N), raw,
                                  atol=1e-6)


@pytest.mark.parametrize("n", [1, 2, 7, 64])
def test_fd_bidirectional_spectrum_node_equals_reference(n):
    """FD.spectrum (its output layer applied as W hᵀ) gives the values and the parameter
    gradients of the plain two-halves spectrum (tests/references.py) on the RPE's output."""
    op = make_op("fd", False)
    N = fft_size(n)
    omega = torch.linspace(0, math.pi, N // 2 + 1, dtype=F64)
    g = torch.Generator().manual_seed(n)
    G = torch.randn(D, N // 2 + 1, dtype=torch.complex128, generator=g)
    params = list(op.parameters())
    fast = op.spectrum(N)
    out = op.rpe(omega).T
    ref = bidirectional_spectrum(out[:D], out[D:])
    torch.testing.assert_close(fast, ref, rtol=0, atol=1e-12)
    loss = lambda S: (S * G).real.sum()  # noqa: E731 - a real function of the spectrum
    for a, b in zip(torch.autograd.grad(loss(fast), params),
                    torch.autograd.grad(loss(ref), params), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-11)


def test_fd_longer_sequence_is_a_finer_grid():
    op = make_op("fd", True)
    seen = record_rpe_inputs(op)
    with torch.no_grad():
        op(random_x(1, 16))
        op(random_x(1, 64))
    assert len(seen[0]) == fft_size(16) // 2 + 1
    assert len(seen[1]) == fft_size(64) // 2 + 1
    assert seen[1][-1] == seen[0][-1]  # both end at π


# -- SKI ------------------------------------------------------------------------------


def my_interpolation_matrix(n: int, r: int) -> np.ndarray:
    """W [n, r]: linear interpolation of positions 0..n-1 onto linspace(0, n-1, r)."""
    if n == 1:
        W = np.zeros((1, r))
        W[0, 0] = 1.0
        return W
    p = np.linspace(0, n - 1, r)
    return np.stack([np.interp(np.arange(n), p, e) for e in np.eye(r)], axis=1)


def my_rpe(knots: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Piecewise-linear on r knots evenly spaced on [-1, 1], shifted so RPE(0) = 0.
    knots [D, r], u [...] -> [D, ...]."""
    grid = np.linspace(-1, 1, knots.shape[-1])
    return np.stack([np.interp(u, grid, v) - np.interp(0.0, grid, v) for v in knots])


def my_band_matrix(band_weight: np.ndarray, n: int, lag_of_tap) -> np.ndarray:
    dim, m = band_weight.shape
    T = np.zeros((dim, n, n))
    for j in range(m):
        lag = lag_of_tap(j, m)
        for i in range(n):
            if 0 <= i - lag < n:
                T[:, i, i - lag] += band_weight[:, j]
    return T


def ski_reference(op: SKI, n: int) -> np.ndarray:
    """Band + W A Wᵀ (bidirectional), or band + k(t) for t >= 0 (causal), rebuilt here."""
    c = op.config
    band_weight = op.band_weight.detach().numpy()
    knots = op.knots.detach().numpy()
    if c.causal:
        band = my_band_matrix(band_weight, n, lambda j, m: m - 1 - j)
        t = np.subtract.outer(np.arange(n), np.arange(n)).astype(float)  # i - j
        low = my_rpe(knots, np.sign(t) * c.decay ** np.abs(t)) * (t >= 0)
        return band + low
    band = my_band_matrix(band_weight, n, lambda j, m: m // 2 - j)
    p = np.linspace(0, n - 1, c.rank)
    dp = np.subtract.outer(p, p)  # p_i - p_j
    A = my_rpe(knots, np.sign(dp) * c.decay ** np.abs(dp))  # (D, r, r)
    W = my_interpolation_matrix(n, c.rank)
    return band + W @ A @ W.T


@pytest.mark.parametrize("config", [*CONFIGS, "r7m1", "r64m17"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_ski_matches_independent_reference(causal, n, config):
    extra = {"r7m1": dict(rank=7, band=1, decay=0.95), "r64m17": dict(rank=64, band=17)}
    op = make_op("ski", causal, **{**CONFIGS, **extra}[config])
    expected = ski_reference(op, n)
    x = random_x(2, n)
    with torch.no_grad():
        np.testing.assert_allclose(op.matrix(n).numpy(), expected, rtol=0, atol=1e-10)
        y = op(x)
    np.testing.assert_allclose(y.numpy(), np.einsum("cij,bjc->bic", expected, x.numpy()),
                               rtol=0, atol=1e-10)


def test_ski_far_block_is_low_rank():
    n, r, m = 257, 8, 5
    op = make_op("ski", False, rank=r, band=m)
    with torch.no_grad():
        M = op.matrix(n)
    half = n // 2
    block = M[:, : half - m, half:]  # every entry has |i - j| > m: no band there
    for c in range(D):
        s = torch.linalg.svdvals(block[c])
        assert s[0] > 1e-3
        assert s[r] <= 1e-10 * s[0], f"channel {c}: σ_r/σ_0 = {(s[r] / s[0]).item():.2e}"
    # the full matrix, with its band, is not low rank
    s_full = torch.linalg.svdvals(M[0])
    assert s_full[r + m] > 1e-6 * s_full[0]


@pytest.mark.parametrize("rank", [7, 8])  # odd r has a knot at 0, even r does not
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_ski_rpe_is_zero_at_zero_lag(causal, rank):
    n = 50
    op = make_op("ski", causal, rank=rank, band=5)
    with torch.no_grad():
        assert op.low_rank_kernel(torch.zeros(1, dtype=F64)).abs().max() == 0
        low = op.kernel(n) - op.band_kernel(n)  # (D, 2n-1): k(t), lags >= 0 compared only
        assert low[:, n - 1].abs().max() <= 1e-15
        assert low[:, n].abs().max() > 1e-3  # lag 1 is not zero
        a = op.inducing_kernel(n)  # (D, 2r-1): A's lags
        assert a[:, rank - 1].abs().max() <= 1e-15


def test_ski_low_rank_part_equals_kernel_on_inducing_points():
    """Where both positions sit on inducing points, W A Wᵀ is exactly k(i - j)."""
    n, r = 15, 8  # h = 2: even positions are inducing points
    op = make_op("ski", False, rank=r, band=5)
    with torch.no_grad():
        low = op.matrix(n) - dense(op.band_kernel(n))  # (D, n, n): W A Wᵀ
        kernel = op.kernel(n) - op.band_kernel(n)  # (D, 2n-1): k(t)
    for a in range(0, n, 2):
        for b in range(0, n, 2):
            torch.testing.assert_close(low[:, a, b], kernel[:, n - 1 + a - b], rtol=0,
                                       atol=1e-12)


# -- gradients ------------------------------------------------------------------------


GRAD_CONFIG = dict(rank=4, band=3, rpe_dim=4)


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("kind", KINDS)
def test_gradcheck_input(kind, causal):
    op = make_op(kind, causal, dim=2, **GRAD_CONFIG)
    x = random_x(1, 5, dim=2).requires_grad_(True)
    assert torch.autograd.gradcheck(op, (x,), eps=1e-6, atol=1e-7)


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize(
    "kind, activation", [("tno", "relu"), ("tno", "silu"), ("fd", "relu"), ("fd", "gelu"),
                         ("ski", "relu")]  # SKI has no MLP: its activation is unused
)
def test_gradcheck_parameters(kind, activation, causal):
    op = make_op(kind, causal, dim=2, activation=activation, **GRAD_CONFIG)
    names = [name for name, _ in op.named_parameters()]
    params = tuple(p.detach().clone().requires_grad_(True) for p in op.parameters())
    x = random_x(1, 5, dim=2)

    def f(*values):
        return functional_call(op, dict(zip(names, values, strict=True)), (x,))

    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-7)
