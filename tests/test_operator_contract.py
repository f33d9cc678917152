"""The input contract every operator shares (``TokenMixer.check_input``), for each kind and
direction: B = 0, dtypes, shapes and size bounds checked before anything is allocated.

Letters: B batch, n length, D channels.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

from tnn_core.core.toeplitz import MAX_LENGTH
from tnn_core.operators import ALL_KINDS, OperatorConfig, build_operator

ROOT = Path(__file__).resolve().parents[1]
D = 4  # divisible by the two togeipi heads
N = 7
CASES = [(kind, causal) for kind in ALL_KINDS for causal in (False, True)
         if causal or kind != "ssm"]  # an SSM runs forward in time only
IDS = [f"{kind}-{'causal' if causal else 'bidir'}" for kind, causal in CASES]


def make_op(kind: str, causal: bool, dtype=torch.float64):
    torch.manual_seed(0)
    config = OperatorConfig(kind=kind, causal=causal, rank=4, band=3, rpe_dim=8, heads=2,
                            max_length=16)
    return build_operator(config, D).to(dtype)


def random_x(B: int, n: int = N, dtype=torch.float64) -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    return torch.randn(B, n, D, generator=g, dtype=torch.float64).to(dtype)


def reference(op, x: torch.Tensor) -> np.ndarray:
    """The operator's dense map applied in numpy: [B, n, D]."""
    with torch.no_grad():
        if op.config.kind == "togeipi":
            return op.dense_forward(x).numpy()
        M = op.matrix(x.shape[1]).numpy()  # (D, n, n)
    return np.einsum("cij,bjc->bic", M, x.numpy())


# -- B = 0 ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("kind", "causal"), CASES, ids=IDS)
def test_empty_batch_forward_and_backward(one_thread, kind, causal, dtype):
    op = make_op(kind, causal, dtype)
    for n in (1, N):
        with torch.no_grad():
            y = op(random_x(0, n, dtype))
        assert y.shape == (0, n, D) and y.dtype == dtype
        x = random_x(0, n, dtype).requires_grad_()
        y = op(x)
        assert y.shape == (0, n, D) and y.dtype == dtype
        y.sum().backward()
        assert x.grad.shape == (0, n, D)
        for name, p in op.named_parameters():  # zero, as a product over no rows gives
            assert p.grad is not None and p.grad.shape == p.shape, name
            assert torch.count_nonzero(p.grad) == 0, name
        op.zero_grad(set_to_none=True)


# -- dtypes -----------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "causal"), CASES, ids=IDS)
def test_float64_operator_takes_float64(one_thread, kind, causal):
    op = make_op(kind, causal)
    for n in (1, 2, N):
        x = random_x(3, n)
        with torch.no_grad():
            y = op(x)
        assert y.dtype == torch.float64
        np.testing.assert_allclose(y.numpy(), reference(op, x), rtol=0, atol=1e-12)


@pytest.mark.parametrize(("kind", "causal"), CASES, ids=IDS)
def test_float_dtype_must_match_the_parameters(kind, causal):
    op32 = make_op(kind, causal, torch.float32)
    with pytest.raises(ValueError, match=r"x dtype must be float32, the dtype of the "
                       r"operator's parameters .*; got float64: convert with "
                       r"x\.to\(torch\.float32\) or the operator with op\.to\(torch\.float64\)"):
        op32(random_x(2))
    op64 = make_op(kind, causal)
    with pytest.raises(ValueError, match=r"must be float64.*; got float32: convert with "
                       r"x\.to\(torch\.float64\)"):
        op64(random_x(2, dtype=torch.float32))


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(("kind", "causal"), CASES, ids=IDS)
def test_half_precision_is_refused_on_the_cpu(kind, causal, half):
    op = make_op(kind, causal, torch.float32)
    name = str(half).removeprefix("torch.")
    with pytest.raises(ValueError, match=rf"must be float32.*; got {name}: half precision is "
                       r"not supported on the CPU \(torch's CPU FFT has no half kernels\); "
                       r"convert with x\.to\(torch\.float32\) or run under torch\.autocast"):
        op(random_x(2, dtype=half))


@pytest.mark.parametrize(("kind", "causal"), CASES, ids=IDS)
def test_integer_bool_and_complex_inputs_are_refused(kind, causal):
    op = make_op(kind, causal, torch.float32)
    for dtype in (torch.int64, torch.int32, torch.bool, torch.complex64):
        name = str(dtype).removeprefix("torch.")
        with pytest.raises(ValueError, match=rf"must be float32.*; got {name}: integer, bool "
                           r"and complex inputs are not converted silently; convert with "
                           r"x\.to\(torch\.float32\)"):
            op(torch.ones(2, N, D, dtype=dtype))


@pytest.mark.parametrize(("kind", "causal"), CASES, ids=IDS)
def test_half_parameters_are_refused(kind, causal):
    op = make_op(kind, causal, torch.float16)
    with pytest.raises(ValueError, match=r"parameters must be float32 or float64; got float16"):
        op(random_x(2, dtype=torch.float16))


@pytest.mark.parametrize(("kind", "causal"), CASES, ids=IDS)
def test_autocast_bfloat16_input_is_computed_in_float32(one_thread, kind, causal):
    """The training loop's bfloat16 autocast: the mixer gets bfloat16 from the projections
    before it while its parameters stay float32; it computes in float32, with autocast off,
    and returns float32 (as autocast's FFTs do)."""
    op = make_op(kind, causal, torch.float32)
    x = random_x(2, dtype=torch.bfloat16).requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = op(x)
    assert y.dtype == torch.float32
    expected = op(x.detach().float())  # no autocast, grad enabled: the same computation
    torch.testing.assert_close(y.detach(), expected.detach(), rtol=0, atol=0)
    y.sum().backward()
    assert x.grad.dtype == torch.bfloat16 and x.grad.shape == x.shape


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize(("kind", "causal"), CASES, ids=IDS)
def test_half_precision_on_cuda_is_computed_in_float32(kind, causal, half):
    op = make_op(kind, causal, torch.float32).cuda()
    x = random_x(2, 9, half).cuda()  # n = 9: FFT size 18, not a power of two
    with torch.no_grad():
        y = op(x)
        expected = op(x.float())
    assert y.dtype == half and y.shape == x.shape
    torch.testing.assert_close(y.float(), expected, rtol=0, atol=1e-2 * expected.abs().max())


# -- shapes -----------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "causal"), CASES, ids=IDS)
def test_shape_errors_name_the_contract(kind, causal):
    op = make_op(kind, causal)
    with pytest.raises(ValueError, match=r"x last dimension must be D=4; got 3"):
        op(torch.zeros(2, N, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"x must have shape \[B, n, D=4\]; got \(7, 4\)"):
        op(torch.zeros(N, D, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"x must be a torch.Tensor .*; got ndarray"):
        op(np.zeros((2, N, D)))
    with pytest.raises(ValueError, match=r"n must be an integer in \[1, .*\]; got 0"):
        op(torch.zeros(2, 0, D, dtype=torch.float64))


# -- sizes bounded before allocation ----------------------------------------------------

_HUGE_SCRIPT = textwrap.dedent("""
    import resource, time
    import torch
    from tnn_core.operators import ALL_KINDS, OperatorConfig, build_operator
    torch.set_num_threads(1)
    ops = {(k, c): build_operator(OperatorConfig(kind=k, causal=c, rank=4, heads=2,
                                                 max_length=16), 4)
           for k in ALL_KINDS for c in (False, True) if c or k != "ssm"}
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[0])
    limit = pages * resource.getpagesize() + (512 << 20)  # 512 MiB above what is mapped
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def refused(call, field):
        start = time.perf_counter()
        try:
            call()
        except ValueError as err:
            assert field in str(err) and time.perf_counter() - start < 1.0, (field, err)
            return
        raise AssertionError(f"{field}: no ValueError")

    for (kind, causal), op in ops.items():
        size = op.mixing_matrix if kind == "togeipi" else op.kernel
        refused(lambda: size(10**9), "n must be")
        refused(lambda: op.check_length(10**9), "n must be")
        if kind != "togeipi":
            refused(lambda: op.matrix(10**9), "n must be")
            refused(lambda: op.matrix(20_000), "n must be")  # [4, n, n] float32: 6.4 GB
    refused(lambda: build_operator(OperatorConfig(kind="ski", rank=10**9), 4), "rank")
    refused(lambda: build_operator(OperatorConfig(kind="ski", band=10**9), 4), "band")
    refused(lambda: build_operator(OperatorConfig(kind="ssm", causal=True, state=10**9), 4),
            "state")
    print("ok")
""")


def test_huge_sizes_are_refused_before_allocating():
    """kernel(10**9), matrix(10**9), a matrix beyond 4 GiB, a length beyond the operator's
    bound and SKI rank or band 10**9 each raise a ValueError within a second, in a process
    that may map only 512 MiB more than it holds (the old kernel(10**9) tried 256 GB)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", _HUGE_SCRIPT], capture_output=True,
                          text=True, timeout=120, env=env, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_length_bounds_name_their_range():
    op = make_op("tno", False)
    with pytest.raises(ValueError, match=rf"n must be an integer in \[1, {MAX_LENGTH}\]; "
                       r"got 1000000000"):
        op.kernel(10**9)
    togeipi = make_op("togeipi", True)
    with pytest.raises(ValueError, match=r"n must be an integer in \[1, max_length\] = "
                       r"\[1, 16\]; got 17"):
        togeipi(random_x(1, 17))
    with pytest.raises(ValueError, match=r"n must be an integer in \[1, 11585\] for a dense "
                       r"\[4, n, n\] matrix \(at most 4 GiB\); got 11586"):
        op.matrix(11586)  # float64: 4 n² 8 bytes <= 4 GiB up to n = isqrt(2**27) = 11585
    with pytest.raises(ValueError, match=r"rank must be an integer in \[2, "):
        build_operator(OperatorConfig(kind="ski", rank=MAX_LENGTH + 1), 1)
