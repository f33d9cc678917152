"""Togeipi: a Toeplitz-plus-sparse token mixer in place of multi-head attention.

From the Cornell CS 5223 course project "Togeipi" (Gangavarapu and Molter, 2023), which
approximates attention by

    softmax(Q Kᵀ / √d) V  ≈  S (X Wˣ) Wˢ + Z* Σ Z (X Wˣ) Wᵗ

a learned Toeplitz "point spread function" (PSF) applied by FFT (the "Toeplitz
augmentation unit") plus a learned sparse matrix S for long-range links. Here:

    u = x W_in                                   pre-projection      [B, n, D]
    core_h = (T_h + S) u_h      per head h       T_h Toeplitz, PSF p_h [2 max_length - 1]
    y = core W_out                               post-projection     [B, n, D]

* T_h[i, j] = p_h[i - j], one kernel per head shared by its d = D / H channels,
  applied by the circulant embedding (``fast.fft_product.circulant_product``). Causal:
  negative lags are zeroed.
* S [max_length, max_length] is learned densely; at length n the block S[:n, :n]
  keeps only its top ``sparse_density`` (30 %) entries by magnitude (counted among
  the allowed entries: all, or the lower triangle incl. the diagonal when causal);
  gradients reach the kept entries. ``l1_penalty()`` = sparse_l1 · Σ|S_ij| pushes the
  rest towards zero (the project's "regularization"). The kept entries are applied as a
  dense matmul, faster than torch.sparse.mm at 30 % density (docs/benchmarks.md).
* ``max_length`` bounds n, since S is n x n; a longer input raises ValueError
  (``check_length``, part of the input contract every operator shares: ``base``).

Differences from the project's code, on purpose: the mixing is linear (``psf_activation=
"none"``; the project applies a gelu after the convolution, available as "gelu", then
``mixing_matrix`` no longer describes the operator); one post-projection for both
branches (the project has a pre-projection of its own on the sparse branch and a
post-projection on the convolution only; since S and T act on time and the
projections on channels, ours is the same form with the two channel maps tied, and
gives one [H, n, n] matrix per head); a 1-D PSF along time (the project's fftn over
(time, channel) also convolves circularly across a head's channels); no bias, norm,
residual or dropout inside the mixer (the TNN layer owns those).

The dense reference: ``mixing_matrix(n)`` [H, n, n] = T_h + S_kept, and
``dense_forward(x)`` applies it by einsum.

Letters: B batch, n length, D channels, H heads, d = D/H, L = max_length, N FFT size.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tnn_core.checks import check_int
from tnn_core.core.toeplitz import circulant_column, dense, fft_size
from tnn_core.operators.base import TokenMixer
from tnn_core.operators.config import OperatorConfig
from tnn_core.operators.fast.fft_product import circulant_product, spectral_product

__all__ = ["Togeipi", "top_magnitude_mask"]


def top_magnitude_mask(values: torch.Tensor, density: float, causal: bool) -> torch.Tensor:
    """Boolean mask of the ``round(density · count)`` (at least 1) largest |values| among the
    allowed entries of a square matrix: all of them, or the lower triangle when causal.

    values: [n, n]  ->  bool [n, n]. Exactly that many entries are True.
    """
    n = values.shape[-1]
    a = values.detach().abs()  # (n, n)
    count = n * (n + 1) // 2 if causal else n * n
    if causal:
        a = a.masked_fill(~torch.ones(n, n, dtype=torch.bool, device=a.device).tril(), -1.0)
    k = max(1, round(density * count))
    index = torch.topk(a.flatten(), k, sorted=False).indices  # (k,)
    mask = torch.zeros(n * n, dtype=torch.bool, device=a.device)
    return mask.index_fill_(0, index, True).view(n, n)


class Togeipi(TokenMixer):
    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__(config, dim)
        H, L = config.heads, config.max_length
        if dim % H:
            raise ValueError(f"dim must be divisible by heads={H}; got dim={dim}")
        self.in_proj = nn.Linear(dim, dim, bias=False)
        self.out_proj = nn.Linear(dim, dim, bias=False)
        # scaled in place, as SKI's band (ski.py: the meta device)
        self.psf = nn.Parameter(torch.randn(H, 2 * L - 1).div_(math.sqrt(L)))  # lags -(L-1)..L-1
        self.sparse = nn.Parameter(torch.randn(L, L).div_(math.sqrt(L)))

    @property
    def heads(self) -> int:
        return self.config.heads

    def check_length(self, n: int) -> int:
        """n in [1, max_length]: the sparse matrix is max_length x max_length."""
        return check_int("n", n, 1, self.config.max_length, span="[1, max_length]")

    # -- the two parts of the core ---------------------------------------------------
    def psf_kernel(self, n: int) -> torch.Tensor:
        """Lag coefficients [H, 2n-1] of T_h at length n (causal: negative lags zero)."""
        L = self.config.max_length
        t = self.psf[:, L - self.check_length(n) : L + n - 1]  # (H, 2n-1): lags -(n-1)..n-1
        if self.config.causal:
            t = torch.cat([t.new_zeros(self.heads, n - 1), t[:, n - 1 :]], dim=-1)
        return t

    def _psf_column(self, n: int, N: int) -> torch.Tensor:
        L = self.config.max_length
        if self.config.causal:
            return self.psf[:, L - 1 : L - 1 + n]  # (H, n): lags 0..n-1
        return circulant_column(self.psf[:, L - n : L + n - 1], N)  # (H, N)

    def sparse_matrix(self, n: int) -> torch.Tensor:
        """S at length n with only its top ``sparse_density`` entries kept, [n, n]."""
        block = self.sparse[: self.check_length(n), :n]  # (n, n)
        mask = top_magnitude_mask(block, self.config.sparse_density, self.config.causal)
        return block * mask

    def l1_penalty(self) -> torch.Tensor:
        """sparse_l1 · Σ|S_ij| over the allowed entries (lower triangle when causal)."""
        S = self.sparse.tril() if self.config.causal else self.sparse
        return self.config.sparse_l1 * S.abs().sum()

    # -- the operator ----------------------------------------------------------------
    def checked_forward(self, x: torch.Tensor) -> torch.Tensor:
        B, n, D = x.shape
        H, d, N = self.heads, D // self.heads, fft_size(n)
        u = self.in_proj(x)  # (B, n, D)
        uh = u.view(B, n, H, d).permute(0, 2, 3, 1)  # (B, H, d, n)
        if torch.is_grad_enabled():
            conv = circulant_product(uh, self._psf_column(n, N)[:, None, :], N)  # (B, H, d, n)
            S = self.sparse_matrix(n)  # (n, n)
        else:
            spectrum = self.cached(("psf", n), lambda: torch.fft.rfft(
                self._psf_column(n, N), n=N)[:, None, :])  # (H, 1, F)
            conv = spectral_product(uh, spectrum, N)  # (B, H, d, n)
            S = self.cached(("sparse", n), lambda: self.sparse_matrix(n))  # (n, n)
        if self.config.psf_activation == "gelu":
            conv = F.gelu(conv)
        core = torch.matmul(S, u) + conv.reshape(B, D, n).transpose(1, 2)  # (B, n, D)
        return self.out_proj(core)  # (B, n, D)

    def mixing_matrix(self, n: int) -> torch.Tensor:
        """The core's time mixing per head, T_h + S_kept: [H, n, n] (the dense reference)."""
        self._require_linear()
        self.check_dense_length(n, self.heads)
        return dense(self.psf_kernel(n)) + self.sparse_matrix(n)  # (H, n, n)

    def dense_forward(self, x: torch.Tensor) -> torch.Tensor:
        """``forward`` through ``mixing_matrix``: O(n² D), for tests. x [B, n, D] -> [B, n, D]."""
        x = x.to(self.check_input(x))
        B, n, D = x.shape
        H, d = self.heads, D // self.heads
        u = self.in_proj(x).view(B, n, H, d)  # (B, n, H, d)
        core = torch.einsum("hij,bjhe->bihe", self.mixing_matrix(n), u)  # (B, n, H, d)
        return self.out_proj(core.reshape(B, n, D))  # (B, n, D)

    def kernel(self, n: int) -> torch.Tensor:
        raise NotImplementedError("togeipi is not channel-wise Toeplitz: use mixing_matrix(n) "
                                  "[H, n, n] and dense_forward(x)")

    def matrix(self, n: int) -> torch.Tensor:
        raise NotImplementedError("togeipi is not channel-wise Toeplitz: use mixing_matrix(n) "
                                  "[H, n, n] and dense_forward(x)")

    def _require_linear(self) -> None:
        if self.config.psf_activation != "none":
            raise ValueError("mixing_matrix describes the operator only when psf_activation is "
                             f"'none'; got {self.config.psf_activation!r}")

    def extra_repr(self) -> str:
        c = self.config
        return (f"dim={self.dim}, causal={c.causal}, heads={c.heads}, max_length={c.max_length}, "
                f"sparse_density={c.sparse_density}")
