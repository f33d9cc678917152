"""TNO: the Toeplitz neural operator of TNN (Qin et al., ICLR 2023, §3.2-3.3).

t_k = λ^|k| · RPE(k) per channel, with RPE an MLP on the integer lag k (as in
the official code) and λ fixed, not trained. λ^0 = 1 leaves the zero lag
undecayed. The product is the FFT circulant embedding of ``toeplitz``.

Letters: B batch, D channels, n length, L = 2n-1 lags.
"""

from __future__ import annotations

import torch

from ..rpe import RpeMLP
from ..toeplitz import check_length, fft_size, matvec_last
from .base import TokenMixer
from .config import OperatorConfig

__all__ = ["TNO"]


class TNO(TokenMixer):
    def __init__(self, config: OperatorConfig, dim: int):
        super().__init__(config, dim)
        self.rpe = RpeMLP(config.rpe_width(dim), dim, config.rpe_layers, config.activation)

    def kernel(self, n: int) -> torch.Tensor:
        check_length(n)
        p = self._param()
        start = 0 if self.config.causal else -(n - 1)
        k = torch.arange(start, n, device=p.device, dtype=p.dtype)  # (L,) or (n,) lags
        decay = self.config.decay ** k.abs()  # (L,)
        t = (self.rpe(k) * decay[:, None]).T  # (D, L)
        if self.config.causal:
            t = torch.cat([t.new_zeros(self.dim, n - 1), t], dim=-1)  # (D, 2n-1)
        return t

    def mix(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[-1]
        return matvec_last(self.kernel(n), x, fft_size(n))  # (B, D, n)
