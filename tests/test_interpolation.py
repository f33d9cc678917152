"""tnn_core.interpolation: the sparse linear-interpolation W of SKI (§3.2.1 of "SKI to go
Faster"), against its dense form and against numpy's own linear interpolation.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tnn_core.core.interpolation import (
    Interpolation,
    apply_w,
    apply_wt,
    inducing_points,
    interpolation,
    interpolation_matrix,
)

F64 = torch.float64

# (n, r): n = 1, n = 2, n < r, n = r, n > r, prime n, r = 2, (n-1) a multiple of (r-1)
COMBOS = [
    (1, 2), (1, 8), (2, 2), (2, 5), (3, 8), (5, 64), (8, 8), (5, 5), (9, 3), (15, 8),
    (64, 8), (97, 8), (100, 16), (101, 11), (257, 32), (13, 2),
]


def dense_w(n: int, r: int) -> torch.Tensor:
    return interpolation_matrix(interpolation(n, r))  # (n, r)


@pytest.mark.parametrize("n, r", COMBOS)
def test_rows_are_convex_pairs(n, r):
    W = dense_w(n, r)
    assert W.shape == (n, r) and W.dtype == F64
    assert ((W != 0).sum(dim=1) <= 2).all()
    torch.testing.assert_close(W.sum(dim=1), torch.ones(n, dtype=F64), rtol=0, atol=1e-12)
    assert (W >= -1e-12).all()
    assert (W <= 1 + 1e-12).all()


@pytest.mark.parametrize("n, r", COMBOS)
def test_reproduces_linear_functions(n, r):
    W = dense_w(n, r)
    p = inducing_points(n, r)
    torch.testing.assert_close(W @ p, torch.arange(n, dtype=F64), rtol=0, atol=1e-12)
    constants = torch.full((r,), 3.5, dtype=F64)
    torch.testing.assert_close(W @ constants, torch.full((n,), 3.5, dtype=F64),
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("n, r", [c for c in COMBOS if c[0] > 1])
def test_matches_numpy_interp(n, r):
    """W f(p) is the piecewise-linear interpolant of f at 0..n-1: it pins W down entirely."""
    rng = np.random.default_rng(n * 1000 + r)
    p = np.linspace(0, n - 1, r)
    values = rng.standard_normal((3, r))
    expected = np.stack([np.interp(np.arange(n), p, v) for v in values])  # (3, n)
    W = dense_w(n, r).numpy()
    np.testing.assert_allclose(values @ W.T, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n, r", COMBOS)
def test_position_on_an_inducing_point_is_a_unit_row(n, r):
    """Catches swapped weights: a position sitting on p_j must take all its weight from p_j."""
    W = dense_w(n, r)
    hits = 0
    for i in range(n):
        if n == 1:
            j = 0  # every inducing point sits at 0; W = e_0
        elif (i * (r - 1)) % (n - 1) == 0:  # exact: i == p_j for j = i (r-1)/(n-1)
            j = i * (r - 1) // (n - 1)
        else:
            continue
        hits += 1
        torch.testing.assert_close(W[i], torch.eye(r, dtype=F64)[j], rtol=0, atol=1e-12)
    assert hits >= 1  # position 0 always sits on p_0 (and n-1 on p_{r-1})


@pytest.mark.parametrize("n, r", [c for c in COMBOS if c[0] > 1])
def test_neighbours_bracket_the_position(n, r):
    interp = interpolation(n, r)
    p = inducing_points(n, r)
    i = torch.arange(n, dtype=F64)
    assert interp.index.min() >= 0 and interp.index.max() <= r - 2
    assert (p[interp.index] <= i + 1e-9).all()
    assert (i <= p[interp.index + 1] + 1e-9).all()


def test_small_exact_case():
    # n = 5 on r = 3 inducing points {0, 2, 4}: halfway positions get (1/2, 1/2)
    W = dense_w(5, 3)
    expected = torch.tensor(
        [[1, 0, 0], [0.5, 0.5, 0], [0, 1, 0], [0, 0.5, 0.5], [0, 0, 1]], dtype=F64
    )
    torch.testing.assert_close(W, expected, rtol=0, atol=1e-15)
    # n = 4 on r = 2 inducing points {0, 3}: position 1 is 2/3 of p_0 and 1/3 of p_1
    W = dense_w(4, 2)
    expected = torch.tensor([[1, 0], [2 / 3, 1 / 3], [1 / 3, 2 / 3], [0, 1]], dtype=F64)
    torch.testing.assert_close(W, expected, rtol=0, atol=1e-15)


def test_sweep_of_sizes():
    for n in range(1, 60):
        for r in range(2, 13):
            W = dense_w(n, r)
            p = inducing_points(n, r)
            assert ((W != 0).sum(dim=1) <= 2).all(), (n, r)
            assert (W >= -1e-12).all(), (n, r)
            assert torch.allclose(W.sum(dim=1), torch.ones(n, dtype=F64), rtol=0, atol=1e-12)
            assert torch.allclose(W @ p, torch.arange(n, dtype=F64), rtol=0, atol=1e-12), (n, r)


def test_inducing_points_and_spacing():
    p = inducing_points(9, 5)
    assert p.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    assert interpolation(9, 5).spacing == 2.0
    assert inducing_points(1, 4).tolist() == [0.0] * 4


# -- sparse application ---------------------------------------------------------------


@pytest.mark.parametrize("n, r", COMBOS)
def test_apply_w_and_wt_match_dense(n, r):
    interp = interpolation(n, r)
    W = interpolation_matrix(interp)
    g = torch.Generator().manual_seed(n + 7 * r)
    y = torch.randn(2, 3, r, generator=g, dtype=F64)
    x = torch.randn(2, 3, n, generator=g, dtype=F64)
    Wy = apply_w(interp, y)
    Wtx = apply_wt(interp, x)
    assert Wy.shape == (2, 3, n) and Wtx.shape == (2, 3, r)
    torch.testing.assert_close(Wy, y @ W.T, rtol=0, atol=1e-12)
    torch.testing.assert_close(Wtx, x @ W, rtol=0, atol=1e-12)
    # adjoint: <W y, x> == <y, Wᵀ x>
    torch.testing.assert_close((Wy * x).sum(-1), (y * Wtx).sum(-1), rtol=0, atol=1e-12)
    # unbatched
    torch.testing.assert_close(apply_w(interp, y[0, 0]), Wy[0, 0], rtol=0, atol=0)
    torch.testing.assert_close(apply_wt(interp, x[0, 0]), Wtx[0, 0], rtol=0, atol=0)


def test_float32_and_to():
    interp = interpolation(10, 4, dtype=torch.float32)
    assert interp.weight.dtype == torch.float32 and interp.index.dtype == torch.long
    moved = interp.to("cpu", F64)
    assert isinstance(moved, Interpolation)
    assert moved.weight.dtype == F64 and (moved.n, moved.r) == (10, 4)
    torch.testing.assert_close(moved.weight, interpolation(10, 4).weight, rtol=0, atol=1e-7)


def test_apply_rejects_wrong_sizes():
    interp = interpolation(10, 4)
    with pytest.raises(ValueError, match="r=4"):
        apply_w(interp, torch.zeros(2, 5, dtype=F64))
    with pytest.raises(ValueError, match="n=10"):
        apply_wt(interp, torch.zeros(2, 9, dtype=F64))


@pytest.mark.parametrize("r", [1, 0, -2, 2.0, True])
def test_rank_below_two_rejected(r):
    with pytest.raises(ValueError, match="rank"):
        interpolation(10, r)
    with pytest.raises(ValueError, match="rank"):
        inducing_points(10, r)


def test_bad_length_rejected():
    with pytest.raises(ValueError, match="n must be"):
        interpolation(0, 4)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 13, 64])
@pytest.mark.parametrize("r", [2, 3, 5, 16, 61, 200])
def test_used_columns_give_the_same_w_a_wt_with_a_only_as_large_as_n_allows(n, r):
    """W_u A[u][:, u] W_uᵀ == W A Wᵀ exactly, and u <= min(r, 2n): a rank far above n
    (a hostile checkpoint's r = 65536) never makes a dense r x r A."""
    from tnn_core.core.interpolation import used_columns
    from tnn_core.core.toeplitz import dense

    interp = interpolation(n, r)
    g = torch.Generator().manual_seed(n * 1000 + r)
    coeffs = torch.randn(2 * r - 1, generator=g, dtype=torch.float64)  # A's lags
    W = interpolation_matrix(interp)  # (n, r)
    full = W @ dense(coeffs) @ W.T  # (n, n)
    columns, W_u = used_columns(interp)
    assert columns.numel() <= min(r, 2 * n)
    A_u = coeffs[columns[:, None] - columns[None, :] + r - 1]  # (u, u)
    torch.testing.assert_close(W_u @ A_u @ W_u.T, full, rtol=0, atol=1e-12)
