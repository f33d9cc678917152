"""The lab's TNO and FD compute what the authors' operators compute (issue 36).

References, written here in numpy float64 from the authors' formulas (not by calling the
lab's operators), then compared with ``op.kernel(n)``:

* tnn-pytorch ``Tno`` (Doraemonzzz/tnn-pytorch, tnn_pytorch/tno.py, rpe.py): the RPE is
  Linear(1→e), ``layers`` × [SimpleRMSNorm, act, Linear(e→e)] (residual: x = layer(x) + x),
  SimpleRMSNorm, act, Linear(e→h·d), SimpleRMSNorm x / (‖x‖/√e + 1e-8). ``get_pos(n-1)``
  reads lags 1..n-1 as k (par_type 1), k/(n-1) (2) or exp(k/(n-1)) (3); lag 0 reads 0
  (exp(0) = 1 for 3); negative lags read -k, -k/(n-1). Decay γ^|k| per channel, γ [h, 1, d]
  fixed (use_decay) or λ + (1-λ)·sigmoid(g) (use_multi_decay); the zero lag is undecayed.
  a = act_type([t0, t1..t(n-1), t0, t(-(n-1))..t(-1)]) (causal: [t0, t1..t(n-1), t0] then
  zero-padded by the FFT of size 2n); their output is irfft(rfft(a, 2n)·rfft(x, 2n))[:n], so
  the coefficient of lag k is a[k mod 2n].
* ski-tnn ``TnoFD`` (jonathanmei/ski-tnn, laxtnn/modules/tno_fd.py): N the next power of two
  >= 2n, the RPE reads linspace(0, π, N/2+1); causal: irfft (N points), zero t >= N/2+1,
  halve t = 0, 2·rfft; bidirectional: per head [real d | imag d], imag zeroed at DC and
  Nyquist. The lag-k coefficient is irfft(spectrum, N)[k mod N].

Letters: h heads, d channels per head, D = h·d, e RPE width, P points, F = N/2+1 bins.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import pytest
import scipy.special
import torch

from tnn_core.core.rpe import ACTIVATIONS, Activation
from tnn_core.core.toeplitz import dense
from tnn_core.operators import OperatorConfig, build_operator

F64 = torch.float64
HEADS, PER_HEAD = 2, 3
D = HEADS * PER_HEAD
WIDTH, LAYERS = 8, 2
LENGTHS = (1, 2, 7, 13, 512)
LAMBDA = 0.9  # λ: the scalar decay, the learned decay's floor


def elu(x):
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


# get_activation_fn, by the lab's names (leak = leaky_relu, 1+elu = one_plus_elu, ...)
REFERENCE_ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "silu": lambda x: x / (1 + np.exp(-x)),
    "gelu": lambda x: 0.5 * x * (1 + scipy.special.erf(x / np.sqrt(2))),
    "elu": elu,
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "exp": np.exp,
    "leaky_relu": lambda x: np.where(x > 0, x, 0.01 * x),
    "one_plus_elu": lambda x: 1 + elu(x),
    "two_plus_elu": lambda x: 2 + elu(x),
    "identity": lambda x: x,
}
# (RPE activation, kernel activation): every name appears at least once
ACTIVATION_PAIRS = [("relu", "identity"), ("silu", "exp"), ("gelu", "one_plus_elu"),
                    ("leaky_relu", "sigmoid"), ("elu", "two_plus_elu"), ("sigmoid", "gelu"),
                    ("exp", "leaky_relu"), ("identity", "elu"), ("two_plus_elu", "relu"),
                    ("one_plus_elu", "silu")]
DECAYS = ("none", "scalar", "channel", "learned")  # "none": their Tno without decay (λ = 1)
POSITIONS = {"lag": 1, "fraction": 2, "exp_fraction": 3}  # the lab's name -> par_type


@dataclass
class AuthorsRpe:
    """Their ``Rpe``: weights as numpy float64, (weight [out, in], bias [out]) per Linear."""

    pos_proj: tuple
    layers: list
    out: tuple
    residual: bool
    act: str

    def __call__(self, positions: np.ndarray) -> np.ndarray:  # [P] -> [P, out]
        act = REFERENCE_ACTIVATIONS[self.act]

        def norm(x):  # SimpleRMSNorm
            return x / (np.linalg.norm(x, axis=-1, keepdims=True) / np.sqrt(x.shape[-1]) + 1e-8)

        x = positions[:, None] @ self.pos_proj[0].T + self.pos_proj[1]
        for weight, bias in self.layers:
            step = act(norm(x)) @ weight.T + bias
            x = step + x if self.residual else step
        return act(norm(x)) @ self.out[0].T + self.out[1]


def random_rpe(seed: int, out: int, residual: bool, act: str) -> AuthorsRpe:
    rng = np.random.default_rng(seed)

    def linear(fan_in, fan_out):
        return rng.normal(size=(fan_out, fan_in)) / np.sqrt(fan_in), rng.normal(size=fan_out)

    return AuthorsRpe(linear(1, WIDTH), [linear(WIDTH, WIDTH) for _ in range(LAYERS)],
                      linear(WIDTH, out), residual, act)


def load_rpe(lab_rpe, rpe: AuthorsRpe, out_rows: np.ndarray | None = None) -> None:
    """pos_proj -> inp, layers.{j}.2 -> hidden.{j}, out.2 -> out (rows permuted by out_rows)."""
    pairs = [(lab_rpe.inp, rpe.pos_proj), *zip(lab_rpe.hidden, rpe.layers, strict=True)]
    rows = np.arange(rpe.out[1].size) if out_rows is None else out_rows
    pairs.append((lab_rpe.out, (rpe.out[0][rows], rpe.out[1][rows])))
    with torch.no_grad():
        for linear, (weight, bias) in pairs:
            linear.weight.copy_(torch.from_numpy(weight))
            linear.bias.copy_(torch.from_numpy(bias))


def heads_to_channels(a: np.ndarray) -> np.ndarray:
    """[h, P, d] -> [D, P] with channel c = head·d + j ('n (h d) -> h n d', inverted)."""
    return a.transpose(0, 2, 1).reshape(-1, a.shape[1])


def authors_tno_kernel(rpe: AuthorsRpe, n: int, par_type: int, gamma: np.ndarray,
                       act_type: str, causal: bool) -> np.ndarray:
    """Their Tno's lag coefficients [D, 2n-1] (lags -(n-1)..n-1); gamma [h, 1, d]."""
    k = np.arange(1, n, dtype=np.float64)  # (n-1,) get_pos(n-1)
    scaled = {1: k, 2: k / max(n - 1, 1), 3: np.exp(k / max(n - 1, 1))}[par_type]
    zero_position = np.ones(1) if par_type == 3 else np.zeros(1)

    def rpe_transform(positions):  # [P] -> [h, P, d]
        return rpe(positions).reshape(len(positions), HEADS, PER_HEAD).transpose(1, 0, 2)

    zero = rpe_transform(zero_position)
    decay = gamma ** k[None, :, None]  # (h, n-1, d)
    pos = decay * rpe_transform(scaled)
    act = REFERENCE_ACTIVATIONS[act_type]
    if causal:
        a = act(np.concatenate([zero, pos, zero], axis=1))  # (h, n+1, d)
        a = np.concatenate([a, np.zeros((HEADS, n - 1, PER_HEAD))], axis=1)  # FFT padding
    else:
        neg = decay[:, ::-1] * rpe_transform(-scaled[::-1])  # lags -(n-1)..-1
        a = act(np.concatenate([zero, pos, zero, neg], axis=1))  # (h, 2n, d)
    lags = np.arange(-(n - 1), n)
    return heads_to_channels(a[:, lags % (2 * n)])  # (D, 2n-1)


def lab_tno(rpe: AuthorsRpe, positions: str, decay: str, gamma: np.ndarray, act_type: str,
            causal: bool):
    """The lab's TNO with their weights: gamma [h, 1, d] flattened to D channels."""
    mode = "scalar" if decay == "none" else decay
    config = OperatorConfig(kind="tno", causal=causal, positions=positions, decay_mode=mode,
                            decay=1.0 if decay == "none" else LAMBDA, rpe_dim=WIDTH,
                            rpe_layers=LAYERS, activation=rpe.act, rpe_residual=rpe.residual,
                            kernel_activation=act_type)
    op = build_operator(config, D).double()
    load_rpe(op.rpe, rpe)
    with torch.no_grad():
        if decay == "channel":
            op.decay_rates.copy_(torch.from_numpy(gamma.reshape(-1)))
        if decay == "learned":
            logits = scipy.special.logit((gamma - LAMBDA) / (1 - LAMBDA))
            op.decay_logits.copy_(torch.from_numpy(logits.reshape(-1)))
    return op


def random_gamma(decay: str, seed: int) -> np.ndarray:
    """γ [h, 1, d]: 1 (none), λ (scalar), fixed per channel, or λ + (1-λ)σ(g) (learned)."""
    rng = np.random.default_rng(seed)
    if decay == "none":
        return np.ones((HEADS, 1, PER_HEAD))
    if decay == "scalar":
        return np.full((HEADS, 1, PER_HEAD), LAMBDA)
    if decay == "channel":
        return rng.uniform(0.8, 1.0, size=(HEADS, 1, PER_HEAD))
    return LAMBDA + (1 - LAMBDA) * scipy.special.expit(rng.normal(size=(HEADS, 1, PER_HEAD)))


def relative_error(actual: torch.Tensor, expected: np.ndarray) -> float:
    expected = np.asarray(expected, dtype=np.float64)
    scale = max(np.abs(expected).max(), 1e-300)
    return float(np.abs(actual.detach().double().numpy() - expected).max() / scale)


def check_forward(op, n: int) -> None:
    """op(x) == dense(kernel) x in float64 (1e-12) and float32 (1e-5), with and without grad."""
    x = torch.randn(2, n, D, generator=torch.Generator().manual_seed(n), dtype=F64)
    with torch.no_grad():
        expected = torch.einsum("cij,bjc->bic", dense(op.kernel(n)), x).numpy()  # (B, n, D)
    for dtype, tolerance in ((F64, 1e-12), (torch.float32, 1e-5)):
        op_in = copy.deepcopy(op).to(dtype)  # op keeps its float64 weights
        for grad in (False, True):
            with torch.set_grad_enabled(grad):
                y = op_in(x.to(dtype))
            assert relative_error(y, expected) <= tolerance, (dtype, grad)


# (causal, positions): exp_fraction bidirectional is refused (test_exp_fraction_is_causal_only)
LAYOUTS = [(causal, positions) for causal in (False, True) for positions in POSITIONS
           if causal or positions != "exp_fraction"]


@pytest.mark.parametrize("acts", ACTIVATION_PAIRS[:4], ids="-".join)
@pytest.mark.parametrize("residual", [False, True], ids=["plain", "residual"])
@pytest.mark.parametrize("decay", DECAYS)
@pytest.mark.parametrize("causal, positions", LAYOUTS,
                         ids=[f"{'causal' if c else 'bidir'}-{p}" for c, p in LAYOUTS])
def test_tno_kernel_is_the_authors_tno(causal, positions, decay, residual, acts):
    rpe_act, kernel_act = acts
    rpe = random_rpe(7, D, residual, rpe_act)
    gamma = random_gamma(decay, 8)
    op = lab_tno(rpe, positions, decay, gamma, kernel_act, causal)
    for n in LENGTHS:
        expected = authors_tno_kernel(rpe, n, POSITIONS[positions], gamma, kernel_act, causal)
        with torch.no_grad():
            kernel = op.kernel(n)
        assert kernel.shape == (D, 2 * n - 1)
        assert relative_error(kernel, expected) <= 1e-12, n
        if causal:  # exactly zero, whatever act_type gives at 0
            assert torch.equal(kernel[:, : n - 1], torch.zeros(D, n - 1, dtype=F64))
        if n in (7, 13):
            check_forward(op, n)


@pytest.mark.parametrize("acts", ACTIVATION_PAIRS[4:], ids="-".join)
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_every_activation_name_is_the_authors(causal, acts):
    rpe = random_rpe(11, D, True, acts[0])
    gamma = random_gamma("learned", 12)
    op = lab_tno(rpe, "fraction", "learned", gamma, acts[1], causal)
    for n in LENGTHS:
        expected = authors_tno_kernel(rpe, n, 2, gamma, acts[1], causal)
        with torch.no_grad():
            assert relative_error(op.kernel(n), expected) <= 1e-12, n


def test_activation_names_match_the_literal():
    assert tuple(ACTIVATIONS) == Activation.__args__
    assert set(ACTIVATIONS) == set(REFERENCE_ACTIVATIONS)


def test_decay_parameters():
    config = OperatorConfig(kind="tno", decay_mode="channel", decay=0.7)
    assert "decay" not in config.to_dict()  # each channel holds its own γ_c: λ is unused
    channel = build_operator(config, D)
    assert not channel.decay_rates.requires_grad
    assert torch.equal(channel.decay_rates, torch.full((D,), OperatorConfig.decay))
    learned = build_operator(OperatorConfig(kind="tno", decay_mode="learned"), D).double()
    assert learned.decay_logits.requires_grad
    assert torch.equal(learned.decay_logits, torch.zeros(D, dtype=F64))
    learned(torch.ones(1, 5, D, dtype=F64)).sum().backward()
    assert learned.decay_logits.grad.abs().min() > 0  # γ is trained
    scalar = build_operator(OperatorConfig(kind="tno"), D)
    assert not hasattr(scalar, "decay_rates") and not hasattr(scalar, "decay_logits")


# -- FD --------------------------------------------------------------------------------


def authors_fd_kernel(rpe: AuthorsRpe, n: int, causal: bool) -> np.ndarray:
    """Their TnoFD's lag coefficients [D, 2n-1] (lags -(n-1)..n-1)."""
    N = 2
    while N < 2 * n:
        N *= 2
    F = N // 2 + 1
    out = rpe(np.linspace(0.0, np.pi, F))  # (F, h·d) or (F, h·2d)
    res = out.reshape(F, HEADS, -1).transpose(1, 0, 2)  # (h, F, d) or (h, F, 2d)
    if causal:
        even = np.fft.irfft(res, axis=1)  # (h, N, d)
        even[:, F:] = 0
        even[:, 0] *= 0.5
        spectrum = 2.0 * np.fft.rfft(even, axis=1)  # (h, F, d)
    else:
        real, imag = res[:, :, :PER_HEAD], res[:, :, PER_HEAD:].copy()
        imag[:, (0, -1)] = 0
        spectrum = real + 1j * imag
    kernel = np.fft.irfft(spectrum, N, axis=1)  # (h, N, d)
    return heads_to_channels(kernel[:, np.arange(-(n - 1), n) % N])  # (D, 2n-1)


def fd_rows_onto_the_lab() -> np.ndarray:
    """Their bidirectional out rows per head [real d | imag d] -> the lab's [real D | imag D]:
    lab row c = head·d + j <- their head·2d + j, lab row D + c <- their head·2d + d + j."""
    head, j = np.divmod(np.arange(D), PER_HEAD)
    return np.concatenate([head * 2 * PER_HEAD + j, head * 2 * PER_HEAD + PER_HEAD + j])


def lab_fd(rpe: AuthorsRpe, causal: bool, fft_grid: str):
    config = OperatorConfig(kind="fd", causal=causal, rpe_dim=WIDTH, rpe_layers=LAYERS,
                            activation=rpe.act, rpe_residual=rpe.residual, fft_grid=fft_grid)
    op = build_operator(config, D).double()
    load_rpe(op.rpe, rpe, None if causal else fd_rows_onto_the_lab())
    return op


@pytest.mark.parametrize("residual", [False, True], ids=["plain", "residual"])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_fd_kernel_is_the_authors_tno_fd(causal, residual):
    rpe = random_rpe(3, D if causal else 2 * D, residual, "gelu")
    op = lab_fd(rpe, causal, "power_of_two")
    for n in (1, 2, 7, 13, 100, 512):
        with torch.no_grad():
            kernel = op.kernel(n)
        assert relative_error(kernel, authors_fd_kernel(rpe, n, causal)) <= 1e-12, n
        if n in (7, 100):
            check_forward(op, n)
    smooth = lab_fd(rpe, causal, "smooth")  # N = 200 at n = 100, not 256: far outside 1e-12
    with torch.no_grad():
        assert relative_error(smooth.kernel(100), authors_fd_kernel(rpe, 100, causal)) > 1e-8


@pytest.mark.parametrize("n, N", [(1, 2), (2, 4), (7, 16), (8, 16), (100, 256), (512, 1024)])
def test_fd_grid_size(n, N):
    op = build_operator(OperatorConfig(kind="fd", fft_grid="power_of_two"), D)
    assert op.grid_size(n) == N
    smooth = build_operator(OperatorConfig(kind="fd"), D)
    assert smooth.grid_size(100) == 200


# -- the config -------------------------------------------------------------------------


@pytest.mark.parametrize("field, value", [
    ("positions", "relative"), ("decay_mode", "heads"), ("rpe_residual", 1),
    ("kernel_activation", "leak"), ("activation", "1+elu"), ("fft_grid", "pow2")])
def test_bad_values_are_refused_naming_the_field(field, value):
    kind = "fd" if field == "fft_grid" else "tno"
    with pytest.raises(ValueError, match=f"^{field} must be"):
        OperatorConfig(kind=kind, **{field: value})


def test_exp_fraction_is_causal_only():
    with pytest.raises(ValueError, match="^positions must be"):
        OperatorConfig(kind="tno", positions="exp_fraction")
    assert OperatorConfig(kind="tno", causal=True, positions="exp_fraction")
    # a kind that never reads positions keeps its default
    assert OperatorConfig(kind="fd", positions="exp_fraction").positions == "lag"


NEW_TNO = {"positions": "lag", "decay_mode": "scalar", "rpe_residual": False,
           "kernel_activation": "identity"}
NEW_FD = {"rpe_residual": False, "fft_grid": "smooth"}


@pytest.mark.parametrize("kind, new", [("tno", NEW_TNO), ("fd", NEW_FD), ("ski", {})])
def test_old_headers_read_as_the_defaults(kind, new):
    config = OperatorConfig(kind=kind, causal=True)
    data = config.to_dict()
    assert {name: data[name] for name in new} == new
    old = {name: value for name, value in data.items() if name not in new}
    assert OperatorConfig.from_dict(old) == config
    assert set(data) - set(new) == set(old)


def test_new_fields_round_trip():
    config = OperatorConfig(kind="tno", causal=True, positions="exp_fraction",
                            decay_mode="learned", rpe_residual=True,
                            kernel_activation="two_plus_elu", activation="leaky_relu")
    assert OperatorConfig.from_dict(config.to_dict()) == config
    fd = OperatorConfig(kind="fd", fft_grid="power_of_two", rpe_residual=True)
    assert OperatorConfig.from_dict(fd.to_dict()) == fd
    assert "positions" not in fd.to_dict() and "fft_grid" not in config.to_dict()
