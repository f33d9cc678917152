"""tnn_core.training.budget: the memory and time model every path asks before it allocates.

The estimate must bound what a pass really takes (measured as the peak RSS of a process
forked after its imports, ``forked_cases``, or of a fresh one for a conversion; every
allocation of 64 KB or more a fresh mapping so nothing freed earlier hides part of the pass)
and not be far above it, or it would refuse models the lab can run."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig
from tnn_core.training.budget import (
    MEMORY_LIMIT,
    BudgetError,
    Cost,
    check_cost,
    check_sweep,
    parameter_count,
    pass_cost,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from forked_cases import CaseServer  # noqa: E402

OPERATORS = {
    "tno": {"kind": "tno"},
    "fd": {"kind": "fd"},
    "ski": {"kind": "ski", "rank": 16, "band": 9},
    "ski r=8192": {"kind": "ski", "rank": 8192, "band": 9},
    "knots": {"kind": "ski", "low_rank": "knots", "knot_length": 256, "rank": 32},
    "togeipi": {"kind": "togeipi", "heads": 4, "max_length": 2048},
}


def _config(name: str, task: str, causal: bool, layers: int = 2) -> ModelConfig:
    return ModelConfig(task=task, vocab_size=101, num_classes=10, dim=64, layers=layers,
                       operator=OperatorConfig(causal=causal, **OPERATORS[name]))


@pytest.mark.parametrize("name", list(OPERATORS))
@pytest.mark.parametrize("task", ["lm", "classify"])
@pytest.mark.parametrize("rpe_layers", [0, 3])
def test_parameter_count_is_the_built_models(name, task, rpe_layers):
    causal = task == "lm"
    base = _config(name, task, causal)
    config = ModelConfig(**{**base.__dict__, "operator": OperatorConfig(
        **{**base.operator.__dict__, "rpe_layers": rpe_layers})})
    built = sum(p.numel() for p in build_model(config).parameters())
    assert parameter_count(config) == built


@pytest.fixture(scope="module")
def cases():
    """The process the measured passes are forked from, every allocation of 64 KB or more a
    fresh mapping (``MALLOC_MMAP_THRESHOLD_``); nothing else of this environment inherited."""
    server = CaseServer({"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT),
                         "MALLOC_MMAP_THRESHOLD_": "65536"})
    yield server
    server.close()


PASS = """
import sys, json, torch
sys.path.insert(0, "tests")
from hostile import peak_rss_mb
torch.set_num_threads(1)
from tnn_core.models import ModelConfig
from tnn_core.operators import OperatorConfig
from tnn_core.models import build_model
config = ModelConfig.from_dict(json.loads(sys.argv[1]))
batch, n, grad = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
model = build_model(config)
tokens = torch.randint(0, config.vocab_size, (batch, n))
base = peak_rss_mb()
if grad:
    optimizer = torch.optim.AdamW(model.parameters())
    model(tokens).float().pow(2).mean().backward()
    optimizer.step()
else:
    with torch.no_grad():
        model.eval()(tokens)
print(int((peak_rss_mb() - base) * 2**20))
"""

CHECKED_ON_META = """
import sys
from tnn_core.models import ModelConfig
from tnn_core.operators import OperatorConfig
from tnn_core.training.budget import meta_layers
before = "torch._dynamo" in sys.modules
for operator in (OperatorConfig(kind="ski", rank=16, band=9),
                 OperatorConfig(kind="togeipi", heads=4, max_length=64)):
    meta_layers(ModelConfig(task="classify", vocab_size=17, num_classes=10, dim=64, layers=2,
                            operator=operator))
print(before, "torch._dynamo" in sys.modules)
"""


def test_checking_a_ski_or_togeipi_model_on_meta_imports_no_dynamo(cases, tmp_path):
    """Their initialisers scale in place: on the meta device an operation that makes a new
    tensor from a number imports torch._dynamo, about a second of every process that checks
    such a checkpoint."""
    report, stdout, _ = cases.run(tmp_path, [], 60, code=CHECKED_ON_META)
    assert report["code"] == 0
    assert stdout.split() == ["False", "False"]

CASES = [  # (operator, task, causal, batch, n, grad)
    ("tno", "lm", True, 16, 4096, False),
    ("fd", "lm", True, 16, 4096, False),
    ("tno", "classify", False, 16, 2048, False),
    ("fd", "classify", False, 16, 2048, False),
    ("ski", "classify", False, 16, 4096, False),
    ("ski r=8192", "classify", False, 16, 256, False),
    ("ski", "lm", True, 16, 4096, False),
    ("knots", "classify", False, 16, 4096, False),
    ("togeipi", "classify", False, 16, 2048, False),
    ("tno", "lm", True, 8, 2048, True),
    ("ski r=8192", "classify", False, 8, 256, True),
    ("togeipi", "lm", True, 8, 1024, True),
]


@pytest.mark.parametrize(("name", "task", "causal", "batch", "n", "grad"), CASES)
@pytest.mark.slow  # a process per case, to measure its peak memory
def test_the_estimate_bounds_the_measured_peak_of_a_pass(cases, tmp_path, name, task, causal,
                                                         batch, n, grad):
    config = _config(name, task, causal)
    report, stdout, _ = cases.run(tmp_path, [json.dumps(config.to_dict()), str(batch), str(n),
                                             "1" if grad else "0"], 300, code=PASS)
    assert report["code"] == 0
    measured = int(stdout.strip().splitlines()[-1])
    estimate = pass_cost(config, batch, n, grad=grad).bytes
    assert measured <= estimate <= 6 * measured + 64 * 2**20, (measured, estimate)


def test_ski_rank_counts_in_the_estimate():
    """A checkpoint of r = 65536 with matching tensors is small on disk, large to run."""
    small, large = (_config("ski", "classify", False), ModelConfig(
        task="classify", vocab_size=101, num_classes=10, dim=64, layers=2,
        operator=OperatorConfig(kind="ski", rank=65536, band=9)))
    assert pass_cost(large, 16, 256).bytes > 30 * pass_cost(small, 16, 256).bytes
    with pytest.raises(BudgetError, match=r"the limit is 1,024 MiB \(\d+\.\dx over\)"):
        check_sweep(large, 256, extrapolates=True)


def test_a_refusal_says_which_limit_and_by_how_much():
    with pytest.raises(BudgetError, match=r"^a pass needs about 2,048 MiB; the limit is 1,024 "
                                          r"MiB \(2\.0x over\)$"):
        check_cost("a pass", Cost(2 * MEMORY_LIMIT, 0))
    with pytest.raises(BudgetError, match=r"^a pass would take about 120 s; the limit is 60 s "
                                          r"\(2\.0x over\)$"):
        check_cost("a pass", Cost(0, 120 * 2e10))
    assert check_cost("a pass", Cost(MEMORY_LIMIT, 60 * 2e10)).bytes == MEMORY_LIMIT


def test_the_time_estimate_refuses_a_deep_long_model_whose_evaluation_never_ended():
    """The corpus's charlm model at seq_len 1700 with 48 layers: 5.7 MB, within every
    other limit, its evaluation never finished."""
    config = ModelConfig(task="lm", vocab_size=101, dim=44, layers=48,
                         operator=OperatorConfig(causal=True))
    assert 5e6 < 4 * parameter_count(config) < 6e6  # bytes of its float32 weights
    with pytest.raises(BudgetError, match="would take about"):
        check_sweep(config, 1700, extrapolates=True)


def test_inspect_draws_a_large_rank_channel_in_smaller_chunks_with_the_same_matrix():
    """applied_matrix's 64 basis vectors per pass cost 4 x 64 x W x fft_size(r) numbers in
    SKI's product; Inspect halves the chunk until a pass fits, and the matrix is the same."""
    import torch

    from tnn_core.analysis.applied import BASIS_CHUNK, applied_matrix
    from tnn_core.lab.inspect import applied_chunk

    large = ModelConfig(task="classify", vocab_size=17, num_classes=10, dim=64, layers=1,
                        operator=OperatorConfig(kind="ski", rank=32768, band=9))
    assert applied_chunk(large, 64) < BASIS_CHUNK
    assert pass_cost(large, applied_chunk(large, 64), 64).bytes <= MEMORY_LIMIT
    assert applied_chunk(_config("tno", "classify", False), 1024) == BASIS_CHUNK
    torch.manual_seed(0)
    small = build_model(ModelConfig(task="classify", vocab_size=17, num_classes=10, dim=8,
                                    layers=1, operator=OperatorConfig(kind="ski", rank=40,
                                                                      band=5))).double()
    operator = small.operators()[0]
    torch.testing.assert_close(applied_matrix(operator, 23, [3], chunk=5),
                               applied_matrix(operator, 23, [3]), rtol=0, atol=1e-12)


CONVERT = """
import sys, json, torch
sys.path.insert(0, "tests")
from hostile import peak_rss_mb
torch.set_num_threads(1)
from tnn_core.compress import CompressionPlan, convert
from tnn_core.models import ModelConfig, build_model
config = ModelConfig.from_dict(json.loads(sys.argv[1]))
n0, band, rank, method = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
model = build_model(config).double().eval()
base = peak_rss_mb()
convert(model, CompressionPlan.uniform(config.layers, band, rank, method), n0)
print(int((peak_rss_mb() - base) * 2**20))
"""


@pytest.mark.parametrize(("causal", "method"), [(False, "fit"), (True, "fit"),
                                                (False, "sample")])
@pytest.mark.slow  # a process per case, to measure its peak memory
def test_the_conversion_estimate_bounds_its_measured_peak(causal, method):
    from tnn_core.compress import CompressionPlan
    from tnn_core.compress.guard import conversion_cost

    config = ModelConfig(task="lm" if causal else "classify", vocab_size=17, num_classes=10,
                         dim=16, layers=1, operator=OperatorConfig(causal=causal))
    n0, band, rank = 1024, 9, 512
    # A fresh process, not a fork (forked_cases): a forked child re-faults the pages of
    # scipy's and torch's libraries, and read 106 MiB here against a fresh 76 MiB and an
    # estimate of 98 MiB (causal=False, fit; 2026-11-25).
    result = subprocess.run(
        [sys.executable, "-c", CONVERT, json.dumps(config.to_dict()), str(n0), str(band),
         str(rank), method], cwd=ROOT, capture_output=True, text=True, timeout=600, check=True,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT),
             "MALLOC_MMAP_THRESHOLD_": "65536"})
    measured = int(result.stdout.strip().splitlines()[-1])
    estimate = conversion_cost(config, CompressionPlan.uniform(1, band, rank, method), n0).bytes
    assert measured <= estimate <= 6 * measured + 64 * 2**20, (measured, estimate)


def test_a_conversion_at_a_rank_near_the_length_is_refused_before_it_runs():
    """r = n0 = 4096 would solve 192 systems of 8191 unknowns: hours, gigabytes."""
    from tnn_core.compress import CompressionPlan
    from tnn_core.compress.guard import check_compression

    config = ModelConfig(task="classify", vocab_size=17, num_classes=10, dim=64, layers=2,
                         operator=OperatorConfig())
    with pytest.raises(BudgetError, match="converting with this plan at the training length"):
        check_compression(config, CompressionPlan.uniform(2, 9, 4096, "fit"), 4096, (1,), 0, 256)
    check_compression(config, CompressionPlan.uniform(2, 9, 64, "fit"), 1024, (1, 4), 200, 256)
