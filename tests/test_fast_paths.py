"""The operators' fast paths (tnn_core.operators.fast) against their dense references, in
float64 over awkward sizes, values and gradients; and the W routes the benchmark times
(tnn_core.bench.routes) against the dense W."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tnn_core.bench.routes import ROUTES, route_plan, route_w, route_wt
from tnn_core.core.interpolation import interpolation, interpolation_matrix
from tnn_core.core.toeplitz import apply_spectrum, circulant_column, fft_size, matvec_last
from tnn_core.operators import OperatorConfig, build_operator
from tnn_core.operators.fast.band import band_conv, weight_grad_gemm
from tnn_core.operators.fast.fft_product import circulant_product, spectral_product
from tnn_core.operators.fast.interp import interp_w, interp_wt
from tnn_core.operators.fast.ski_fused import ski_bidirectional

F64 = torch.float64
SIZES = [1, 2, 3, 7, 31, 64, 100, 257]

pytestmark = pytest.mark.usefixtures("one_thread")


def assert_grads_equal(out, ref, inputs, grad_out, atol=1e-11):
    got = torch.autograd.grad(out, inputs, grad_out)
    want = torch.autograd.grad(ref, inputs, grad_out)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=atol)


# -- the FFT product ---------------------------------------------------------------------


@pytest.mark.parametrize("n", SIZES)
def test_products_equal_references(n):
    g = torch.Generator().manual_seed(n)
    N = fft_size(n)
    x = torch.randn(3, 4, n, dtype=F64, generator=g, requires_grad=True)
    c = torch.randn(4, 2 * n - 1, dtype=F64, generator=g, requires_grad=True)
    y, ref = circulant_product(x, circulant_column(c, N), N), matvec_last(c, x, N)
    gy = torch.randn(ref.shape, dtype=F64, generator=g)
    torch.testing.assert_close(y, ref, rtol=0, atol=1e-12)
    assert_grads_equal(y, ref, (x, c), gy)
    K = torch.randn(4, N // 2 + 1, dtype=torch.complex128, generator=g, requires_grad=True)
    y, ref = spectral_product(x, K, N), apply_spectrum(K, x, N)
    torch.testing.assert_close(y, ref, rtol=0, atol=1e-12)
    assert_grads_equal(y, ref, (x, K), gy)
    # a short (causal) column and a per-head column broadcast over channels
    short = torch.randn(2, 1, n, dtype=F64, generator=g, requires_grad=True)
    xh = torch.randn(3, 2, 2, n, dtype=F64, generator=g, requires_grad=True)
    full = torch.cat([short.new_zeros(2, 1, n - 1), short], dim=-1).expand(2, 2, -1)
    ref = torch.stack([matvec_last(full[h], xh[:, h], N) for h in range(2)], dim=1)
    torch.testing.assert_close(circulant_product(xh, short, N), ref, rtol=0, atol=1e-12)


def test_products_gradcheck():
    x = torch.randn(1, 2, 3, dtype=F64, requires_grad=True)
    col = torch.randn(2, 6, dtype=F64, requires_grad=True)
    K = torch.randn(2, 4, dtype=torch.complex128, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, c: circulant_product(x, c, 6), (x, col))
    assert torch.autograd.gradcheck(lambda x, K: spectral_product(x, K, 6), (x, K))
    with pytest.raises(ValueError, match=r"N must be an integer in \[2n-1, inf\) = \[5, inf\)"):
        circulant_product(x, col[:, :4], 4)


@pytest.mark.parametrize("shape, lead", [((5, 4, 33), (4,)), ((3, 2, 3, 17), (2, 1))])
def test_products_in_batch_chunks(monkeypatch, shape, lead):
    """Large products run chunk by chunk over dim 0 (small temporaries); same numbers."""
    import tnn_core.operators.fast.fft_product as fft_product

    monkeypatch.setattr(fft_product, "_CHUNK_BYTES", 1 << 12)
    n = shape[-1]
    N = fft_size(n)
    assert len(fft_product._batch_chunks(torch.zeros(shape, dtype=F64), len(lead), N)) > 1
    g = torch.Generator().manual_seed(0)
    x = torch.randn(shape, dtype=F64, generator=g, requires_grad=True)
    col = torch.randn(*lead, N, dtype=F64, generator=g, requires_grad=True)
    K = torch.randn(*lead, N // 2 + 1, dtype=torch.complex128, generator=g, requires_grad=True)
    for y, spectrum, kernel in [(circulant_product(x, col, N), torch.fft.rfft(col, n=N), col),
                                (spectral_product(x, K, N), K, K)]:
        ref = torch.fft.irfft(torch.fft.rfft(x, n=N) * spectrum, n=N)[..., :n]
        gy = torch.randn(ref.shape, dtype=F64, generator=g)
        torch.testing.assert_close(y, ref, rtol=0, atol=1e-12)
        assert_grads_equal(y, ref, (x, kernel), gy)


# -- W: the operator's route and the benchmark's ------------------------------------------


@pytest.mark.parametrize("n, r", [(1, 2), (2, 2), (3, 8), (7, 3), (31, 5), (64, 8), (100, 16),
                                  (257, 32), (1000, 64), (1024, 64)])
@pytest.mark.parametrize("route", ROUTES)
def test_w_routes_equal_dense_w(route, n, r):
    """Every route's W z and Wᵀ x equal the dense W's; "interpolate" is the operator's own
    ``interp_w`` / ``interp_wt``. Gradients: each direction's backward is the other."""
    g = torch.Generator().manual_seed(n + r)
    plan = route_plan(n, r, F64)
    W = interpolation_matrix(interpolation(n, r))  # (n, r)
    x = torch.randn(2, n, 3, dtype=F64, generator=g, requires_grad=True)
    z = torch.randn(2, r, 3, dtype=F64, generator=g, requires_grad=True)
    torch.testing.assert_close(route_w(plan, z, route), W @ z, rtol=0, atol=1e-12)
    torch.testing.assert_close(route_wt(plan, x, route), W.T @ x, rtol=0, atol=1e-11)
    if n <= 64:
        (gz,) = torch.autograd.grad(route_w(plan, z, route).square().sum(), z)
        torch.testing.assert_close(gz, W.T @ (2 * W @ z), rtol=0, atol=1e-11)
        (gx,) = torch.autograd.grad(route_wt(plan, x, route).square().sum(), x)
        torch.testing.assert_close(gx, W @ (2 * W.T @ x), rtol=0, atol=1e-11)


def test_interpolate_route_is_the_operators():
    plan = route_plan(31, 5, F64)
    z = torch.randn(2, 5, 3, dtype=F64)
    x = torch.randn(2, 31, 3, dtype=F64)
    torch.testing.assert_close(route_w(plan, z, "interpolate"), interp_w(z, 31), rtol=0, atol=0)
    torch.testing.assert_close(route_wt(plan, x, "interpolate"), interp_wt(x, 5), rtol=0, atol=0)
    with pytest.raises(ValueError, match="route must be one of"):
        route_w(plan, z, "bogus")


# -- the band --------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 7, 31, 100])
def test_band_conv_equals_conv1d(n):
    g = torch.Generator().manual_seed(n)
    for m in (1, 2, 5, 8, 17, 32):  # m >= 14: the tap gradient by the blocked GEMM
        w = torch.randn(4, m, dtype=F64, generator=g, requires_grad=True)
        x = torch.randn(2, n, 4, dtype=F64, generator=g, requires_grad=True)
        for left in sorted({0, m // 2, m - 1}):
            ref = F.conv1d(F.pad(x.transpose(1, 2), (left, m - 1 - left)), w[:, None],
                           groups=4).transpose(1, 2)
            y = band_conv(x, w, left)
            torch.testing.assert_close(y, ref, rtol=0, atol=1e-12)
            assert_grads_equal(y, ref, (x, w), torch.randn(ref.shape, dtype=F64, generator=g))


@pytest.mark.parametrize("n", [1, 2, 5, 13])
@pytest.mark.parametrize("m, left", [(64, 0), (64, 63), (65, 32), (65_536, 32_768)])
def test_a_band_longer_than_the_sequence_keeps_only_the_taps_in_reach(n, m, left):
    """SKI's m may pass n (the config allows 65,536): taps of lag ≥ n meet no row and
    get gradient 0, and nothing of m's size beyond the taps is built (a band of 65,536 at
    n = 64 asked 3 TB of the tap gradient before)."""
    g = torch.Generator().manual_seed(n + m)
    w = torch.randn(3, m, dtype=F64, generator=g, requires_grad=True)
    x = torch.randn(2, n, 3, dtype=F64, generator=g, requires_grad=True)
    near = slice(max(0, left - n + 1), min(m, left + n))  # the taps of lag < n
    ref = F.conv1d(F.pad(x.transpose(1, 2), (left - near.start, near.stop - 1 - left)),
                   w[:, None, near], groups=3).transpose(1, 2)  # conv1d on those taps alone
    y = band_conv(x, w, left)
    torch.testing.assert_close(y, ref, rtol=0, atol=1e-12)
    grad_out = torch.randn(ref.shape, dtype=F64, generator=g)
    (gw,) = torch.autograd.grad(y, (w,), grad_out)
    (gw_ref,) = torch.autograd.grad(ref, (w,), grad_out)
    torch.testing.assert_close(gw, gw_ref, rtol=0, atol=1e-12)
    outside = torch.ones(m, dtype=torch.bool)
    outside[near] = False
    assert not gw[:, outside].any()


@pytest.mark.parametrize("n", [1, 2, 3, 7, 31, 100, 257])
@pytest.mark.parametrize("pad", [0, 1, 4, 7, 16])
def test_band_weight_grad_gemm_equals_direct_sum(n, pad):
    """The blocked-GEMM tap gradient equals Σ_b Σ_i g[b, i, d] x[b, i + k - pad, d]."""
    g = torch.Generator().manual_seed(n + pad)
    x = torch.randn(3, n, 5, dtype=F64, generator=g)
    gy = torch.randn(3, n, 5, dtype=F64, generator=g)
    want = torch.zeros(5, 2 * pad + 1, dtype=F64)
    for k in range(2 * pad + 1):
        s = k - pad
        lo, hi = max(0, -s), min(n, n - s)
        if lo < hi:
            want[:, k] = (gy[:, lo:hi] * x[:, lo + s : hi + s]).sum((0, 1))
    torch.testing.assert_close(weight_grad_gemm(gy, x, pad), want, rtol=0, atol=1e-12)


# -- SKI as one node -------------------------------------------------------------------------


@pytest.mark.parametrize("n, band", [(1, 4), (2, 3), (31, 4), (100, 5), (257, 17)])
def test_ski_fused_node_equals_parts(n, band):
    """The one-node SKI equals band_conv + W (A (Wᵀ x)) composed by autograd, values and
    every gradient; with no band it is the low-rank part alone."""
    g = torch.Generator().manual_seed(n + band)
    r, D = 8, 3
    Nr = fft_size(r)
    x = torch.randn(2, n, D, dtype=F64, generator=g, requires_grad=True)
    w = torch.randn(D, band, dtype=F64, generator=g, requires_grad=True)
    column = circulant_column(torch.randn(D, 2 * r - 1, dtype=F64, generator=g), Nr)
    column.requires_grad_(True)
    gy = torch.randn(2, n, D, dtype=F64, generator=g)
    W = interpolation_matrix(interpolation(n, r))  # (n, r): the dense reference

    def low_rank(inp):
        z = circulant_product((W.T @ inp).transpose(1, 2), column, Nr)  # (B, D, r)
        return W @ z.transpose(1, 2)  # (B, n, D)

    left = band // 2
    ref = band_conv(x, w, left) + low_rank(x)
    fused = ski_bidirectional(x, w, column, r, left)
    torch.testing.assert_close(fused, ref, rtol=0, atol=1e-12)
    assert_grads_equal(fused, ref, (x, w, column), gy)
    alone = ski_bidirectional(x, None, column, r, 0)
    torch.testing.assert_close(alone, low_rank(x), rtol=0, atol=1e-12)
    assert_grads_equal(alone, low_rank(x), (x, column), gy)


@pytest.mark.parametrize("n", [1, 2, 7, 100])
def test_ski_operator_equals_its_matrix(n):
    """Bidirectional SKI applies exactly matrix(n) = band + W A Wᵀ, gradients included
    (the dense matrix is differentiable in the taps and the knots)."""
    torch.manual_seed(0)
    op = build_operator(OperatorConfig(kind="ski", rank=8, band=5), 3).double()
    x = torch.randn(2, n, 3, dtype=F64, requires_grad=True)
    gy = torch.randn(2, n, 3, dtype=F64)
    ref = torch.einsum("cij,bjc->bic", op.matrix(n), x)
    y = op(x)
    torch.testing.assert_close(y, ref, rtol=0, atol=1e-12)
    assert_grads_equal(y, ref, (x, op.band_weight, op.knots), gy)


@pytest.mark.parametrize("kind", ["tno", "ski", "fd"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_no_grad_cache_is_invalidated_by_parameter_changes(kind, causal):
    torch.manual_seed(0)
    op = build_operator(OperatorConfig(kind=kind, causal=causal, rank=8, band=5), 3).double()
    x = torch.randn(2, 50, 3, dtype=F64)
    with torch.no_grad():
        first = op(x)
        torch.testing.assert_close(op(x), first, rtol=0, atol=0)  # served from the cache
        for p in op.parameters():
            p.data.mul_(1.5)  # through .data: no version bump, still caught
        second = op(x)
    torch.testing.assert_close(second, op(x), rtol=0, atol=1e-12)  # equals the autograd path
    assert not torch.allclose(first, second)
