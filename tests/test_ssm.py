"""The SSM operator (``operators.ssm``) and its recurrent form (``generate.incremental``):
the FFT form, the dense matrix and the recurrence are one map, in float64 at awkward n.

Letters: B batch, n length, D channels, s modes.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tnn_core.analysis.exponential_fit import exponential_kernel
from tnn_core.generate.incremental import ModalState
from tnn_core.operators import SSM, OperatorConfig, build_operator

D, S = 3, 4
LENGTHS = [1, 2, 5, 13, 31]


def make_ssm(seed: int = 0) -> SSM:
    torch.manual_seed(seed)
    op = build_operator(OperatorConfig(kind="ssm", causal=True, state=S), D).double()
    with torch.no_grad():  # a pole at 0 (a pure delay) and one on the unit circle
        op.poles[0, 0] = torch.tensor([0.0, 0.0])
        op.poles[1, 1] = torch.tensor([np.cos(0.4), np.sin(0.4)])
    return op


def random_x(B: int, n: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(B, n, D, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


@pytest.mark.parametrize("n", LENGTHS)
def test_the_kernel_is_the_sum_of_exponentials(n):
    op = make_ssm()
    with torch.no_grad():
        column = op.kernel(n)[:, n - 1:].numpy()  # (D, n)
        negative = op.kernel(n)[:, : n - 1]
        expected = exponential_kernel(op.complex_poles().numpy(),
                                      op.complex_residues().numpy(), op.direct.numpy(), n)
    np.testing.assert_allclose(column, expected, rtol=0, atol=1e-13)
    assert not negative.any()  # causal: exact zeros


@pytest.mark.parametrize("n", LENGTHS)
def test_forward_is_the_dense_matrix(n):
    op = make_ssm()
    x = random_x(2, n)
    with torch.no_grad():
        expected = torch.einsum("dij,bjd->bid", op.matrix(n), x)
        assert torch.allclose(op(x), expected, rtol=0, atol=1e-12)
    assert torch.allclose(op(x), expected, rtol=0, atol=1e-12)  # with autograd


@pytest.mark.parametrize("n", LENGTHS)
def test_the_recurrence_is_the_same_map(n):
    """h_{t+1} = z h_t + x_t, y_t = d x_t + Re(c · h_t) one token at a time, and a prompt
    folded into h at once then stepped, both equal the FFT form at every position."""
    op = make_ssm()
    x = random_x(2, n)
    with torch.no_grad():
        expected = op(x)
        stepped = ModalState(op, n, batch=2)
        got = torch.stack([stepped.step(x[:, t]) for t in range(n)], dim=1)
        assert torch.allclose(got, expected, rtol=0, atol=1e-12)
        for prompt in {1, n // 2 or 1, n}:
            state = ModalState(op, n, batch=2)
            head = state.prefill(x[:, :prompt])
            tail = [state.step(x[:, t]) for t in range(prompt, n)]
            got = torch.cat([head, *(y[:, None] for y in tail)], dim=1)
            assert torch.allclose(got, expected, rtol=0, atol=1e-12), prompt


def test_the_state_is_the_same_size_at_every_context():
    op = make_ssm()
    state = ModalState(op, 40, batch=1)
    sizes = []
    with torch.no_grad():
        for t in range(40):
            state.step(random_x(1, 1, seed=t)[:, 0])
            sizes.append(state.state_bytes())
    assert set(sizes) == {D * S * 16}  # complex128 modes


def test_gradients_match_finite_differences():
    op = make_ssm()
    x = random_x(1, 6).requires_grad_()
    params = (x, op.poles, op.residues, op.direct)
    with torch.no_grad():  # away from the pole at 0, where |z| has no derivative
        op.poles[0, 0] = torch.tensor([0.3, 0.1])

    def run(x, poles, residues, direct):
        with torch.nn.utils.stateless._reparametrize_module(
                op, {"poles": poles, "residues": residues, "direct": direct}):
            return op(x)

    assert torch.autograd.gradcheck(run, params)


def test_it_runs_forward_in_time_only():
    with pytest.raises(ValueError, match="causal must be True for kind='ssm'"):
        OperatorConfig(kind="ssm", causal=False)
    with pytest.raises(ValueError, match="state must be an integer in"):
        OperatorConfig(kind="ssm", causal=True, state=0)


def test_the_context_is_bounded():
    state = ModalState(make_ssm(), 2, batch=1)
    with torch.no_grad():
        state.prefill(random_x(1, 2))
        with pytest.raises(ValueError, match="tokens must fit the decoder's length 2"):
            state.step(random_x(1, 1)[:, 0])
