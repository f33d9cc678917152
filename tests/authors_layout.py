"""State dicts in the authors' key layouts, and an independent float64 evaluation of what
their mixers compute (written from their formulas, RECIPES "The authors' checkpoints";
no lab code).

    tnn_stack_state(...)       a stack of tnn-pytorch ``TnnLayer``s: "{i}.token_mixer.toep.…"
    fairseq_state(...)         ski-tnn's language model: "decoder.layers.{i}.self_attn.gtu.toep.…"
    tno_kernel(state, …)       their Tno's lag coefficients t_k, k = -(n-1)..n-1, [D, 2n-1]
    fd_kernel(state, …)        their TnoFD's, on their power-of-two FFT grid
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.special import erf

ACT = {
    "relu": lambda x: np.maximum(x, 0.0),
    "silu": lambda x: x / (1.0 + np.exp(-x)),
    "gelu": lambda x: 0.5 * x * (1.0 + erf(x / math.sqrt(2.0))),
    "elu": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0))),
    "sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "leak": lambda x: np.where(x > 0, x, 0.01 * x),
    "1+elu": lambda x: 1.0 + np.where(x > 0, x, np.expm1(np.minimum(x, 0.0))),
    "none": lambda x: x,
}


def rpe_state(rng: np.random.Generator, prefix: str, rpe_dim: int, layers: int, out: int,
              bias: bool = True) -> dict[str, torch.Tensor]:
    """An RPE's tensors in the authors' names: pos_proj, layers.{j}.2, out.2 (float32)."""
    def linear(name, fan_in, fan_out):
        got = {f"{prefix}rpe.{name}.weight": rng.normal(0, 1 / math.sqrt(fan_in),
                                                        (fan_out, fan_in))}
        if bias:
            got[f"{prefix}rpe.{name}.bias"] = rng.normal(0, 0.3, fan_out)
        return got
    state = linear("pos_proj", 1, rpe_dim)
    for j in range(layers):
        state |= linear(f"layers.{j}.2", rpe_dim, rpe_dim)
    state |= linear("out.2", rpe_dim, out)
    return {k: torch.tensor(v, dtype=torch.float32) for k, v in state.items()}


def tnn_stack_state(seed: int, layers: int, dim: int, heads: int = 1, rpe_dim: int = 16,
                    rpe_layers: int = 1, gamma: float | None = 0.99, multi: bool = False,
                    expand: int = 3, prefix: str = "{i}.token_mixer.") -> dict:
    """A stack of TnnLayer(dim, heads, rpe_dim, glu_dim=dim): every tensor its state dict
    holds, with random values (γ fixed at ``gamma`` [h, 1, d], random under ``multi``)."""
    rng = np.random.default_rng(seed)
    inner = expand * dim
    state = {}
    for i in range(layers):
        p = prefix.format(i=i)
        for name, shape in ((f"{p}u_proj", (inner, dim)), (f"{p}v_proj", (inner, dim)),
                            (f"{p}o", (dim, inner)), (f"{i}.feature_mixer.l1", (dim, dim)),
                            (f"{i}.feature_mixer.l2", (dim, dim)),
                            (f"{i}.feature_mixer.l3", (dim, dim))):
            state[f"{name}.weight"] = torch.tensor(rng.normal(0, 0.1, shape), dtype=torch.float32)
            state[f"{name}.bias"] = torch.zeros(shape[0])
        state |= rpe_state(rng, f"{p}toep.", rpe_dim, rpe_layers, inner)
        if gamma is not None or multi:
            value = rng.normal(0, 1, (heads, 1, inner // heads)) if multi else \
                np.full((heads, 1, inner // heads), gamma)
            state[f"{p}toep.gamma"] = torch.tensor(value, dtype=torch.float32)
    return state


def _rpe(state: dict, prefix: str, x: np.ndarray, act: str, residual: bool) -> np.ndarray:
    """Their RPE on inputs x [P] -> [P, out], float64."""
    def lin(name, h):
        w = state[f"{prefix}rpe.{name}.weight"].double().numpy()
        b = state.get(f"{prefix}rpe.{name}.bias")
        return h @ w.T + (0.0 if b is None else b.double().numpy())

    def norm(h):
        return h / (np.linalg.norm(h, axis=-1, keepdims=True) / math.sqrt(h.shape[-1]) + 1e-8)
    f = ACT[act]
    h = lin("pos_proj", x[:, None])
    j = 0
    while f"{prefix}rpe.layers.{j}.2.weight" in state:
        m = lin(f"layers.{j}.2", f(norm(h)))
        h = m + h if residual else m
        j += 1
    return lin("out.2", f(norm(h)))


def tno_kernel(state: dict, prefix: str, n: int, causal: bool, par_type: int = 1,
               decay: str = "fixed", floor: float = 0.99, act: str = "relu",
               act_type: str = "none", residual: bool = False) -> np.ndarray:
    """Their Tno's t_k for k = -(n-1)..n-1, [D, 2n-1] float64 (causal: 0 at k < 0)."""
    k = np.arange(-(n - 1), n, dtype=np.float64)
    scale = max(n - 1, 1)
    pos = {1: k, 2: k / scale, 3: np.exp(k / scale)}[par_type].copy()
    pos[n - 1] = 1.0 if par_type == 3 else 0.0  # lag 0
    values = _rpe(state, prefix, pos, act, residual)  # (2n-1, D)
    gamma = state.get(f"{prefix}gamma")
    if decay != "none" and gamma is not None:
        g = gamma.double().numpy().reshape(-1)
        if decay == "multi":
            g = floor + (1 - floor) / (1 + np.exp(-g))
        values = values * g[None, :] ** np.abs(k)[:, None]
    t = ACT[act_type](values).T  # (D, 2n-1)
    if causal:
        t[:, : n - 1] = 0.0
    return t


def fd_kernel(state: dict, prefix: str, n: int, causal: bool, heads: int = 1,
              act: str = "relu", residual: bool = False) -> np.ndarray:
    """Their TnoFD's lags -(n-1)..n-1 on the next power of two >= 2n, [D, 2n-1]."""
    N = 2 ** math.ceil(math.log2(2 * n))
    w = np.linspace(0.0, np.pi, N // 2 + 1)
    res = _rpe(state, prefix, w, act, residual)  # (F, out)
    if causal:
        h_even = np.fft.irfft(res.T, n=N)  # (D, N)
        h_even[:, N // 2 + 1:] = 0.0
        h_even[:, 0] *= 0.5
        spectrum = 2.0 * np.fft.rfft(h_even, n=N)
    else:
        F, rows = res.shape
        d = rows // (2 * heads)
        per_head = res.reshape(F, heads, 2, d)
        real = per_head[:, :, 0, :].reshape(F, heads * d).T
        imag = per_head[:, :, 1, :].reshape(F, heads * d).T.copy()
        imag[:, 0] = imag[:, -1] = 0.0
        spectrum = real + 1j * imag
    h = np.fft.irfft(spectrum, n=N)  # (D, N): lag t at t mod N
    lags = np.arange(-(n - 1), n) % N
    return h[:, lags]
