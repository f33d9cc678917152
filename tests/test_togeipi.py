"""tnn_core.operators.togeipi: the Togeipi mixer (Toeplitz PSF per head + top-30 % sparse
matrix between two projections) against its dense reference, in float64."""

from __future__ import annotations

import pytest
import torch

from tnn_core.core.toeplitz import dense
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import ALL_KINDS, KINDS, OperatorConfig, Togeipi, build_operator
from tnn_core.operators.togeipi import top_magnitude_mask

F64 = torch.float64
D, H, L = 6, 2, 40


pytestmark = pytest.mark.usefixtures("one_thread")


def make_op(causal: bool, seed: int = 0, **overrides) -> Togeipi:
    torch.manual_seed(seed)
    config = OperatorConfig(kind="togeipi", causal=causal, heads=H, max_length=L, **overrides)
    return build_operator(config, D).double()


def random_x(B: int, n: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, n, D, generator=g, dtype=F64)


def test_kinds():
    assert KINDS == ("tno", "ski", "fd")
    assert ALL_KINDS == ("tno", "ski", "fd", "togeipi", "ssm")
    assert isinstance(build_operator(OperatorConfig(kind="togeipi", heads=2), 4), Togeipi)


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_gradients_equal_dense_reference(causal):
    """Every gradient of the fast path (input and parameters) equals the dense one's."""
    op = make_op(causal)
    x = random_x(3, 17).requires_grad_(True)
    gy = random_x(3, 17, seed=5)
    inputs = (x, *op.parameters())
    got = torch.autograd.grad(op(x), inputs, gy)
    want = torch.autograd.grad(op.dense_forward(x), inputs, gy)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-11)
    assert got[0].abs().sum() > 0 and all(g.abs().sum() > 0 for g in got[1:])


@pytest.mark.parametrize("n", [1, 2, 7, 31])
@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
def test_fast_path_equals_dense_reference(causal, n):
    op = make_op(causal)
    x = random_x(2, n)
    y = op(x)  # autograd path
    torch.testing.assert_close(y, op.dense_forward(x), rtol=0, atol=1e-12)
    with torch.no_grad():  # cached-spectrum path
        torch.testing.assert_close(op(x), op.dense_forward(x), rtol=0, atol=1e-12)
    M = op.mixing_matrix(n)
    assert M.shape == (H, n, n)
    # the core is T_h + S_kept: T_h Toeplitz from the PSF, S shared by the heads
    S = op.sparse_matrix(n)
    torch.testing.assert_close(M - S, dense(op.psf_kernel(n)), rtol=0, atol=0)


@pytest.mark.parametrize("n", [2, 7, 31])
def test_causal_is_causal(n):
    op = make_op(True)
    M = op.mixing_matrix(n)
    assert torch.triu(M, diagonal=1).abs().max() == 0
    x = random_x(2, n).requires_grad_(True)
    y = op(x)
    for t in sorted({0, (n - 1) // 2, n - 2}):
        (grad,) = torch.autograd.grad(y[:, t].sum(), x, retain_graph=True)
        assert grad[:, t + 1 :].abs().max() <= 1e-12, f"output {t} sees the future"
        assert grad[:, : t + 1].abs().max() > 0
    bidir = make_op(False).mixing_matrix(n)
    assert torch.triu(bidir, diagonal=1).abs().max() > 0


@pytest.mark.parametrize("causal", [False, True], ids=["bidir", "causal"])
@pytest.mark.parametrize("n", [10, 31, 40])
def test_sparse_keeps_top_30_percent(causal, n):
    op = make_op(causal)
    S = op.sparse_matrix(n)
    allowed = n * (n + 1) // 2 if causal else n * n
    kept = S != 0
    assert int(kept.sum()) == round(0.3 * allowed)
    if causal:
        assert not torch.triu(kept, diagonal=1).any()
    block = op.sparse[:n, :n].detach().abs()
    if causal:
        block = block.tril()
    # every kept entry is at least as large as every dropped allowed entry
    dropped = block[~kept & (block > 0)] if causal else block[~kept]
    assert block[kept].min() >= dropped.max()


def test_top_magnitude_mask_counts():
    values = torch.arange(16, dtype=F64).view(4, 4) - 7.25  # distinct magnitudes
    mask = top_magnitude_mask(values, 0.25, causal=False)
    assert int(mask.sum()) == 4
    assert sorted(values[mask].abs().tolist()) == [6.25, 6.75, 7.25, 7.75]
    assert int(top_magnitude_mask(values, 0.3, causal=True).sum()) == 3  # round(0.3 * 10)


def test_l1_penalty():
    op = make_op(False, sparse_l1=0.01)
    torch.testing.assert_close(op.l1_penalty(), 0.01 * op.sparse.abs().sum())
    op.l1_penalty().backward()
    torch.testing.assert_close(op.sparse.grad, 0.01 * torch.sign(op.sparse.detach()))
    causal = make_op(True, sparse_l1=0.01)
    torch.testing.assert_close(causal.l1_penalty(), 0.01 * causal.sparse.tril().abs().sum())


def test_too_long_input_raises():
    op = make_op(False)
    with pytest.raises(ValueError, match=r"n must be .* \[1, max_length\] = \[1, 40\]; got 41"):
        op(random_x(1, L + 1))
    with pytest.raises(ValueError, match="max_length"):
        op.mixing_matrix(L + 1)
    op(random_x(1, L))  # exactly max_length is fine


def test_config_validation_and_heads():
    with pytest.raises(ValueError, match="heads"):
        build_operator(OperatorConfig(kind="togeipi", heads=4), 6)
    for field, value in [("heads", 0), ("sparse_density", 0), ("sparse_density", 1.5),
                         ("max_length", 0), ("sparse_l1", -1), ("psf_activation", "relu")]:
        with pytest.raises(ValueError, match=field):
            OperatorConfig(kind="togeipi", **{field: value})
    config = OperatorConfig(kind="togeipi", heads=4, max_length=64, psf_activation="gelu")
    assert OperatorConfig.from_dict(config.to_dict()) == config


def test_gelu_option_is_not_linear():
    op = make_op(False, psf_activation="gelu")
    x = random_x(1, 9)
    assert not torch.allclose(op(2 * x), 2 * op(x))
    with pytest.raises(ValueError, match="psf_activation"):
        op.mixing_matrix(9)
    with pytest.raises(NotImplementedError, match="mixing_matrix"):
        op.matrix(9)


def test_no_grad_cache_follows_parameter_changes():
    op = make_op(False)
    x = random_x(1, 12)
    with torch.no_grad():
        before = op(x)
        op.sparse.mul_(2.0)
        after = op(x)
    torch.testing.assert_close(after, op.dense_forward(x), rtol=0, atol=1e-12)
    assert not torch.allclose(before, after)


def test_usable_in_models():
    operator = OperatorConfig(kind="togeipi", causal=True, heads=4, max_length=32)
    model = build_model(ModelConfig(task="lm", vocab_size=11, dim=8, layers=1, operator=operator))
    tokens = torch.randint(0, 11, (2, 20), generator=torch.Generator().manual_seed(0))
    logits = model(tokens)
    later = tokens.clone()
    later[:, 12:] = (later[:, 12:] + 1) % 11  # change every token from position 12 on
    changed = model(later)
    torch.testing.assert_close(changed[:, :12], logits[:, :12], rtol=0, atol=1e-6)  # causal
    assert not torch.allclose(changed[:, 12:], logits[:, 12:])
    logits.sum().backward()
    togeipi = next(m for m in model.modules() if isinstance(m, Togeipi))
    assert togeipi.sparse.grad.abs().sum() > 0
