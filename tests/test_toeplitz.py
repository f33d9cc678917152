"""tnn_core.toeplitz: the dense reference, the FFT product and its FFT sizes.

Every fast product is compared with ``dense`` (itself checked against
``scipy.linalg.toeplitz``) in float64 over awkward sizes: 1, 2, odd, prime,
powers of two.
"""

from __future__ import annotations

import pytest
import scipy.linalg
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tnn_core.core.toeplitz import (
    causal_part,
    check_length,
    circulant_column,
    dense,
    fft_size,
    lags,
    length_from_coeffs,
    matvec,
    matvec_last,
)

SIZES = [1, 2, 3, 7, 64, 100, 257]
F64 = torch.float64


def random_coeffs(D: int, n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(D, 2 * n - 1, generator=g, dtype=F64)  # (D, 2n-1)


def random_x(*shape: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=F64)


def dense_product(coeffs: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The reference: y[..., i, c] = sum_j T_c[i, j] x[..., j, c]."""
    return torch.einsum("cij,...jc->...ic", dense(coeffs), x)


# -- dense ----------------------------------------------------------------------------


@pytest.mark.parametrize("n", SIZES)
def test_dense_matches_scipy_toeplitz(n):
    coeffs = random_coeffs(3, n)
    T = dense(coeffs)
    assert T.shape == (3, n, n)
    for c in range(3):
        lag = coeffs[c].numpy()
        col = lag[n - 1 :]  # t_0 .. t_{n-1}: first column
        row = lag[n - 1 :: -1]  # t_0 .. t_{-(n-1)}: first row
        expected = torch.from_numpy(scipy.linalg.toeplitz(col, row))
        torch.testing.assert_close(T[c], expected, rtol=0, atol=0)


def test_dense_index_convention():
    n = 4
    coeffs = torch.arange(2 * n - 1, dtype=F64)  # coeffs[n-1+k] = n-1+k
    T = dense(coeffs)
    for i in range(n):
        for j in range(n):
            assert T[i, j] == coeffs[n - 1 + i - j]
    # lower triangle holds the positive lags
    assert T[n - 1, 0] == coeffs[-1] and T[0, n - 1] == coeffs[0]


def test_lags_layout():
    assert lags(1).tolist() == [0]
    assert lags(4).tolist() == [-3, -2, -1, 0, 1, 2, 3]
    assert length_from_coeffs(torch.zeros(2, 7)) == 4


# -- matvec ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", SIZES)
def test_matvec_matches_dense(n):
    coeffs = random_coeffs(3, n)
    x = random_x(2, n, 3)
    y = matvec(coeffs, x)
    assert y.shape == (2, n, 3) and y.dtype == F64
    torch.testing.assert_close(y, dense_product(coeffs, x), rtol=0, atol=1e-10)


@pytest.mark.parametrize("n", SIZES)
def test_matvec_extra_batch_dims(n):
    coeffs = random_coeffs(4, n, seed=2)
    x = random_x(2, 3, n, 4, seed=3)
    y = matvec(coeffs, x)
    assert y.shape == (2, 3, n, 4)
    torch.testing.assert_close(y, dense_product(coeffs, x), rtol=0, atol=1e-10)
    # no batch at all: x [n, D]
    torch.testing.assert_close(matvec(coeffs, x[0, 0]), y[0, 0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("n", SIZES)
def test_matvec_causal_kernel_matches_dense(n):
    coeffs = causal_part(random_coeffs(3, n, seed=4))
    T = dense(coeffs)
    assert torch.equal(T, torch.tril(T))
    x = random_x(2, n, 3, seed=5)
    torch.testing.assert_close(matvec(coeffs, x), dense_product(coeffs, x), rtol=0, atol=1e-10)


def test_causal_part_zeroes_negative_lags_only():
    n = 5
    coeffs = random_coeffs(2, n)
    out = causal_part(coeffs)
    assert torch.equal(out[:, : n - 1], torch.zeros(2, n - 1, dtype=F64))
    assert torch.equal(out[:, n - 1 :], coeffs[:, n - 1 :])
    assert not torch.equal(coeffs[:, : n - 1], out[:, : n - 1])  # input left untouched


@pytest.mark.parametrize("n", [2, 7, 64, 257])
def test_causal_output_ignores_the_future(n):
    coeffs = causal_part(random_coeffs(3, n, seed=6))
    x = random_x(2, n, 3, seed=7)
    y = matvec(coeffs, x)
    for t in sorted({0, (n - 2) // 2, n - 2}):
        x2 = x.clone()
        x2[:, t + 1] += 10.0  # change only the input at time t+1
        y2 = matvec(coeffs, x2)
        torch.testing.assert_close(y2[:, : t + 1], y[:, : t + 1], rtol=0, atol=1e-12)
        # ... while the output at t+1 does see it (t_0 != 0)
        assert (y2[:, t + 1] - y[:, t + 1]).abs().min() > 1e-6


# -- fft_size -------------------------------------------------------------------------


def _five_smooth_numbers(limit: int) -> list[int]:
    out = []
    p2 = 1
    while p2 <= limit:
        p3 = p2
        while p3 <= limit:
            p5 = p3
            while p5 <= limit:
                out.append(p5)
                p5 *= 5
            p3 *= 3
        p2 *= 2
    return sorted(out)


def test_fft_size_is_minimal_even_five_smooth():
    smooth_even = [m for m in _five_smooth_numbers(2000) if m % 2 == 0]
    for n in range(1, 301):
        N = fft_size(n)
        expected = min(m for m in smooth_even if m >= 2 * n)  # brute force
        assert N == expected, (n, N, expected)
        assert N % 2 == 0 and N >= 2 * n


def test_fft_size_examples():
    assert [fft_size(n) for n in (1, 2, 3, 4, 7, 64, 100, 257)] == [
        2, 4, 6, 8, 16, 128, 200, 540,
    ]


# -- matvec_last with an explicit FFT size --------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 101])
@pytest.mark.parametrize("extra", [0, 1, 2, 5])  # N = 2n-1+extra: odd and even N
def test_matvec_last_explicit_N(n, extra):
    N = 2 * n - 1 + extra
    coeffs = random_coeffs(3, n, seed=8)
    x = random_x(2, 3, n, seed=9)  # (B, D, n): the contiguous layout
    y = matvec_last(coeffs, x, N)
    expected = torch.einsum("cij,bcj->bci", dense(coeffs), x)
    torch.testing.assert_close(y, expected, rtol=0, atol=1e-10)


def test_matvec_last_rejects_small_N():
    n = 5
    with pytest.raises(ValueError, match="N must be"):
        matvec_last(random_coeffs(1, n), random_x(1, 1, n), 2 * n - 2)


def test_circulant_column_layout():
    n, N = 3, 7
    coeffs = torch.tensor([[-2.0, -1.0, 0.5, 1.0, 2.0]], dtype=F64)  # lags -2..2
    col = circulant_column(coeffs, N)
    assert col.tolist() == [[0.5, 1.0, 2.0, 0.0, 0.0, -2.0, -1.0]]
    assert length_from_coeffs(coeffs) == n


# -- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, -3, 2.0, True, None])
def test_check_length_rejects(bad):
    with pytest.raises(ValueError, match="seq_len must be"):
        check_length(bad, name="seq_len")
    with pytest.raises(ValueError, match="n must be"):
        lags(bad)


def test_check_length_accepts():
    assert check_length(1) == 1 and check_length(257) == 257


@pytest.mark.parametrize("L", [0, 2, 4])
def test_even_length_coeffs_rejected(L):
    coeffs = torch.zeros(2, L, dtype=F64)
    with pytest.raises(ValueError, match="coeffs"):
        dense(coeffs)
    with pytest.raises(ValueError, match="coeffs"):
        matvec(coeffs, torch.zeros(1, max(L // 2, 1), 2, dtype=F64))
    with pytest.raises(ValueError, match="coeffs"):
        causal_part(coeffs)


def test_matvec_rejects_wrong_channel_count():
    coeffs = random_coeffs(3, 5)
    with pytest.raises(ValueError, match="D=3"):
        matvec(coeffs, torch.zeros(2, 5, 4, dtype=F64))


def test_matvec_rejects_wrong_length():
    coeffs = random_coeffs(3, 5)
    with pytest.raises(ValueError, match="n=5"):
        matvec(coeffs, torch.zeros(2, 6, 3, dtype=F64))
    with pytest.raises(ValueError, match="n=5"):
        matvec_last(coeffs, torch.zeros(2, 3, 6, dtype=F64))


def test_matvec_rejects_unbatched_coeffs():
    with pytest.raises(ValueError, match="coeffs"):
        matvec(torch.zeros(9, dtype=F64), torch.zeros(2, 5, 1, dtype=F64))


# -- property -------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(min_value=1, max_value=40),
    D=st.integers(min_value=1, max_value=4),
    B=st.integers(min_value=1, max_value=3),
    seed=st.integers(min_value=0, max_value=2**31 - 1),
)
def test_matvec_equals_dense_property(n, D, B, seed):
    coeffs = random_coeffs(D, n, seed=seed)
    x = random_x(B, n, D, seed=seed + 1)
    torch.testing.assert_close(matvec(coeffs, x), dense_product(coeffs, x), rtol=0, atol=1e-10)
