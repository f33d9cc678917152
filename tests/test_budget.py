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
from tnn_core.training import budget
from tnn_core.training.budget import (
    MEMORY_LIMIT,
    BudgetError,
    Cost,
    check_cost,
    check_sweep,
    fitting_batch,
    parameter_count,
    pass_cost,
    view_notes,
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


PAPER_LM = ModelConfig(task="lm", vocab_size=101, dim=512, layers=6, expand_ratio=3,
                      operator=OperatorConfig(causal=True, decay=0.99, rpe_dim=64,
                                              rpe_layers=6))  # TNN's LM, Appendix D


@pytest.fixture
def development_rate(monkeypatch):
    """The 2-core development CPU's rate, idle: estimates that do not depend on this machine."""
    monkeypatch.setattr(budget, "calibrated_rate", lambda: 2e10)
    monkeypatch.setattr(budget, "load_slowdown", lambda: 1.0)


def test_ski_rank_counts_in_the_estimate():
    """A checkpoint of r = 65536 with matching tensors is small on disk, large to run: its
    sweep goes one sequence at a time, and at twice the width not even one fits."""
    small = _config("ski", "classify", False)
    large = ModelConfig(task="classify", vocab_size=101, num_classes=10, dim=64, layers=2,
                        operator=OperatorConfig(kind="ski", rank=65536, band=9))
    assert pass_cost(large, 16, 256).bytes > 30 * pass_cost(small, 16, 256).bytes
    assert check_sweep(large, 256, extrapolates=True).batches == (1, 1, 1)
    wider = ModelConfig(**{**large.__dict__, "dim": 128})
    with pytest.raises(BudgetError, match=r"^evaluating it at n = 256 \(one sequence at a "
                                          r"time\) needs about [\d,]+ MiB; the limit is 1,024 "
                                          r"MiB \(\d+\.\dx over\)$"):
        check_sweep(wider, 256, extrapolates=True)


@pytest.mark.parametrize("n", [1, 7, 512, 2048, 32768])
@pytest.mark.parametrize("name", ["tno", "ski r=8192", "togeipi"])
def test_the_sweeps_batch_is_the_largest_halving_that_fits(name, n):
    config = _config(name, "lm" if name != "ski r=8192" else "classify", name != "ski r=8192")
    try:
        batch = fitting_batch(config, n, 16)
    except BudgetError:
        assert pass_cost(config, 1, n).bytes > MEMORY_LIMIT
        return
    assert batch in (1, 2, 4, 8, 16)
    assert pass_cost(config, batch, n).bytes <= MEMORY_LIMIT
    assert batch == 16 or pass_cost(config, 2 * batch, n).bytes > MEMORY_LIMIT


def test_the_papers_language_model_loads_and_its_sweep_is_chunked(development_rate):
    """Refused before ("at n = 2,048 (16 sequences) needs about 2,508 MiB"): now 4 sequences
    a pass at 4n, and its time is said, not refused."""
    plan = check_sweep(PAPER_LM, 512, extrapolates=True)
    assert plan.lengths == (512, 1024, 2048) and plan.batches == (16, 8, 4)
    for n, batch in zip(plan.lengths, plan.batches, strict=True):
        assert pass_cost(PAPER_LM, batch, n).bytes <= MEMORY_LIMIT
    assert plan.operations == sum(8 * pass_cost(PAPER_LM, 16, n).operations
                                  for n in plan.lengths)
    assert plan.seconds == pytest.approx(plan.operations / 2e10)
    (note,) = view_notes(PAPER_LM, 512, extrapolates=True)
    assert note.startswith("Inspect's length sweep (n = 512, n = 1,024, n = 2,048 (8 batches "
                           f"of 16 each)) would take about {plan.seconds:,.0f} s")
    assert "the 60 s a page waits (SECONDS_LIMIT" in note and note.endswith("background")


def test_a_model_too_large_to_open_is_named_at_the_start(development_rate, monkeypatch):
    monkeypatch.setattr(budget, "SECONDS_LIMIT", 1e30)
    assert view_notes(PAPER_LM, 512, True) == []  # 79 MB
    wide = ModelConfig(**{**PAPER_LM.__dict__, "dim": 1024, "layers": 8})
    (note,) = view_notes(wide, 64, True)
    size = parameter_count(wide) * 4 / 1e6
    assert note == (f"its checkpoint of about {size:,.0f} MB will not open in the lab: the "
                    "loader and the upload read at most 200 MB (MAX_BYTES in "
                    "tnn_core/training/checkpoint_header.py)")


def test_a_refusal_says_which_limit_and_by_how_much(development_rate):
    with pytest.raises(BudgetError, match=r"^a pass needs about 2,048 MiB; the limit is 1,024 "
                                          r"MiB \(2\.0x over\)$"):
        check_cost("a pass", Cost(2 * MEMORY_LIMIT, 0))
    with pytest.raises(BudgetError, match=r"^a pass would take about 120 s; the limit is 60 s "
                                          r"\(2\.0x over\)$"):
        check_cost("a pass", Cost(0, 120 * 2e10))
    assert check_cost("a pass", Cost(MEMORY_LIMIT, 60 * 2e10)).bytes == MEMORY_LIMIT


def test_a_deep_long_model_loads_and_its_sweep_runs_in_the_background(development_rate):
    """The corpus's charlm model at seq_len 1700 with 48 layers (5.7 MB), refused at load
    before for its time: now it loads, and its sweep is work for the background."""
    config = ModelConfig(task="lm", vocab_size=101, dim=44, layers=48,
                         operator=OperatorConfig(causal=True))
    assert 5e6 < 4 * parameter_count(config) < 6e6  # bytes of its float32 weights
    plan = check_sweep(config, 1700, extrapolates=True)
    assert budget.runs_in_background(Cost(0, plan.operations))
    assert not budget.runs_in_background(Cost(0, 59 * 2e10))


def test_time_scales_with_the_measured_rate_and_the_load(monkeypatch):
    monkeypatch.setattr(budget, "calibrated_rate", lambda: 4e10)
    monkeypatch.setattr(budget, "_cores", lambda: 2)
    for load, slowdown in ((0.0, 1.0), (1.0, 1.0), (2.0, 1.5), (7.0, 4.0)):
        monkeypatch.setattr(budget.os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert budget.load_slowdown() == slowdown
        assert Cost(0, 8e10).seconds == pytest.approx(2 * slowdown)


CALIBRATE = """
import torch
from tnn_core.training import budget
torch.manual_seed(5)
torch.set_num_threads(2)
state = torch.random.get_rng_state()
rate = budget.calibrated_rate()
print(rate > 0, budget.calibrated_rate() == rate, torch.equal(torch.random.get_rng_state(), state),
      torch.get_num_threads())
"""


def test_the_rate_is_measured_once_per_process_leaving_the_generator_and_threads(cases,
                                                                                 tmp_path):
    report, stdout, _ = cases.run(tmp_path, [], 120, code=CALIBRATE)
    assert report["code"] == 0
    assert stdout.split() == ["True", "True", "True", "2"]  # and the threads as they were


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
