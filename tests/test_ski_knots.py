"""operators.SKIKnots: SKI whose A reads knots on integer lags (a converted model's mixer),
against a reference rebuilt here with numpy, in float64 over awkward sizes."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.func import functional_call

from tnn_core.operators import OperatorConfig, SKIKnots, build_operator

F64 = torch.float64
D = 3
SIZES = [1, 2, 3, 7, 13, 64, 101]  # lengths the operator runs at
# (rank, band, knot_length): odd and even bands, rank = knot_length, a prime n0
SHAPES = {"r5m3n13": (5, 3, 13), "r4m4n7": (4, 4, 7), "r7m1n7": (7, 1, 7), "r8m9n41": (8, 9, 41)}


def make_op(causal: bool, rank: int, band: int, knot_length: int, dim: int = D, seed: int = 0
            ) -> SKIKnots:
    config = OperatorConfig(kind="ski", causal=causal, rank=rank, band=band, low_rank="knots",
                            knot_length=knot_length)
    op = build_operator(config, dim).double()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        op.band_weight.copy_(torch.randn(op.band_weight.shape, generator=g, dtype=F64))
        op.lag_knots.copy_(torch.randn(op.lag_knots.shape, generator=g, dtype=F64))
    return op


def knot_kernel(op: SKIKnots, t: np.ndarray) -> np.ndarray:
    """k(t) [D, P] by np.interp through the knots (l h0, c_l), zero beyond n0 - 1."""
    c = op.config
    h0 = (c.knot_length - 1) / (c.rank - 1)
    first = 0 if c.causal else -(c.rank - 1)
    lags = (first + np.arange(op.lag_knots.shape[1])) * h0
    knots = op.lag_knots.detach().numpy()
    inside = (np.abs(t) <= c.knot_length - 1) & ((t >= 0) if c.causal else True)
    return np.stack([np.interp(t, lags, row) for row in knots]) * inside


def reference_matrix(op: SKIKnots, n: int) -> np.ndarray:
    """Band + W A Wᵀ (bidirectional) or band + k(t), t >= 0 (causal): [D, n, n]."""
    c = op.config
    taps = op.band_weight.detach().numpy()
    top = c.band - 1 if c.causal else c.band // 2
    T = np.zeros((D, n, n))
    for j in range(c.band):
        lag = top - j
        for i in range(n):
            if 0 <= i - lag < n:
                T[:, i, i - lag] += taps[:, j]
    if c.causal:
        lag = np.subtract.outer(np.arange(n), np.arange(n)).astype(float)
        return T + knot_kernel(op, lag.ravel()).reshape(D, n, n) * (lag >= 0)
    p = np.linspace(0, n - 1, c.rank)  # inducing points
    A = knot_kernel(op, np.subtract.outer(p, p).ravel()).reshape(D, c.rank, c.rank)
    W = np.zeros((n, c.rank))
    for i in range(n):  # linear interpolation of position i onto its two neighbours
        s = i * (c.rank - 1) / (n - 1) if n > 1 else 0.0
        left = min(int(np.floor(s)), c.rank - 2)
        W[i, left] += 1 - (s - left)
        W[i, left + 1] += s - left
    return T + W @ A @ W.T


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_matrix_and_forward_match_the_reference(causal, n, shape):
    op = make_op(causal, *SHAPES[shape])
    expected = reference_matrix(op, n)
    x = torch.randn(2, n, D, generator=torch.Generator().manual_seed(1), dtype=F64)
    with torch.no_grad():
        np.testing.assert_allclose(op.matrix(n).numpy(), expected, rtol=0, atol=1e-10)
        y = op(x)
    np.testing.assert_allclose(y.numpy(), np.einsum("cij,bjc->bic", expected, x.numpy()),
                               rtol=0, atol=1e-10)


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_at_the_knot_length_a_reads_the_knots_themselves(causal):
    rank, n0 = 6, 31
    op = make_op(causal, rank, 3, n0)
    with torch.no_grad():
        a = op.inducing_kernel(n0)  # (D, 2r-1) lags -(r-1)..r-1
        knots = op.lag_knots
    got = a[:, rank - 1:] if causal else a  # causal: the knots hold lags 0..r-1 only
    torch.testing.assert_close(got, knots, rtol=0, atol=1e-12)
    with torch.no_grad():
        far = op.low_rank_kernel(torch.tensor([n0 - 1.5, n0 - 0.5, 3.0 * n0], dtype=F64))
    assert far[:, 0].abs().max() > 0
    assert far[:, 1:].abs().max() == 0  # nothing beyond the source's lags, n0 - 1


def test_causal_knots_are_the_tail_only():
    op = make_op(True, 5, 3, 17)
    assert op.lag_knots.shape == (D, 5)
    with torch.no_grad():
        assert op.low_rank_kernel(torch.tensor([-1.0, -16.0], dtype=F64)).abs().max() == 0
    assert make_op(False, 5, 3, 17).lag_knots.shape == (D, 9)


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_gradcheck_input_and_parameters(causal):
    op = make_op(causal, 4, 3, 9, dim=2)
    x = torch.randn(1, 6, 2, generator=torch.Generator().manual_seed(2), dtype=F64)
    assert torch.autograd.gradcheck(op, (x.clone().requires_grad_(True),), eps=1e-6, atol=1e-7)
    names = [name for name, _ in op.named_parameters()]
    assert names == ["band_weight", "lag_knots"]
    params = tuple(p.detach().clone().requires_grad_(True) for p in op.parameters())

    def f(*values):
        return functional_call(op, dict(zip(names, values, strict=True)), (x,))

    assert torch.autograd.gradcheck(f, params, eps=1e-6, atol=1e-7)


@pytest.mark.parametrize("fields, message", [
    (dict(low_rank="knots", rank=9, knot_length=8), "rank must be in [2, knot_length = 8]"),
    (dict(low_rank="other"), "low_rank must be one of"),
    (dict(low_rank="knots", knot_length=1), "knot_length must be an integer in [2,"),
])
def test_config_refuses(fields, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        OperatorConfig(kind="ski", **fields)
