"""tnn_core.training and the train / evaluate CLIs: tiny seeded runs on the CPU."""

from __future__ import annotations

import json
import math
import threading

import pytest
import torch

from tnn_core.lab.train import app_config, app_task
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig
from tnn_core.training.arguments import config_from_args, parser
from tnn_core.training.budget import MEMORY_LIMIT
from tnn_core.training.checkpoint import load
from tnn_core.training.cli import main as train_main
from tnn_core.training.config import TrainConfig, model_for_task
from tnn_core.training.evaluate import layer_kernels, length_sweep
from tnn_core.training.evaluate import main as evaluate_main
from tnn_core.training.loop import Callbacks, train
from tnn_core.training.objective import learning_rate, objective, task_loss
from tnn_core.training.tasks import get_task

TINY = {"eval_batches": 2, "eval_batch_size": 16, "warmup": 5, "device": "cpu"}
TASK_SETTINGS = {
    "charlm": {"seq_len": 32, "max_bytes": 100_000},
    "listops": {"seq_len": 24, "max_depth": 1, "max_args": 3, "val_size": 64},
    "digits": {"size": 8},
    "recall": {"seq_len": 16, "num_pairs": 2, "num_queries": 2, "num_keys": 4,
               "num_values": 4},
}
# (operator, steps, lr, required drop of the validation loss in nats)
RUNS = {"charlm": ("tno", 40, 1e-2, 1.0), "listops": ("ski", 100, 1e-2, 0.12),
        "digits": ("fd", 150, 1e-2, 0.4), "recall": ("tno", 60, 1e-2, 0.1)}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models run fastest on one thread, and far better on a busy shared machine."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tasks():
    return {name: get_task(name, settings) for name, settings in TASK_SETTINGS.items()}


def tiny_model(task, kind: str, **operator) -> ModelConfig:
    """d = 16, one layer, the operator causal for lm tasks."""
    op = OperatorConfig(kind=kind, causal=task.kind == "lm", rank=8, band=5, **operator)
    return model_for_task(ModelConfig(dim=16, layers=1, operator=op), task)


def tiny(task, **overrides) -> TrainConfig:
    operator, steps, lr, _ = RUNS[task.name]
    settings = {**TINY, "task": task.name, "model": tiny_model(task, operator), "steps": steps,
                "lr": lr, "eval_every": steps, "batch_size": 16, **overrides}
    return TrainConfig(**settings)


@pytest.mark.parametrize("name", list(RUNS))
def test_tiny_run_lowers_the_loss(tasks, name):
    result = train(tiny(tasks[name]), tasks[name])
    evals = result.history["evals"]
    assert result.status == "completed"
    assert [e["step"] for e in evals] == [0, RUNS[name][1]]
    drop = evals[0]["loss"] - evals[-1]["loss"]
    assert drop > RUNS[name][3], f"{name}: loss {evals[0]['loss']:.3f} -> {evals[-1]['loss']:.3f}"
    assert len(result.history["train_loss"]) == RUNS[name][1]
    assert result.history["tokens_per_s"] > 0 and result.history["device"] == "cpu"


def test_runs_are_seeded_and_leave_the_global_rng_alone(tasks):
    state = torch.random.get_rng_state()
    a = train(tiny(tasks["recall"], steps=5), tasks["recall"])
    assert torch.equal(torch.random.get_rng_state(), state)
    b = train(tiny(tasks["recall"], steps=5), tasks["recall"])
    c = train(tiny(tasks["recall"], steps=5, seed=1), tasks["recall"])
    for (name, p), q in zip(a.model.state_dict().items(), b.model.state_dict().values(),
                            strict=True):
        assert torch.equal(p, q), name
    assert not all(torch.equal(p, r) for p, r in zip(a.model.parameters(),
                                                     c.model.parameters(), strict=True))


def test_callbacks_and_history(tasks):
    steps, evals = [], []
    callbacks = Callbacks(on_step=lambda *args: steps.append(args),
                          on_eval=lambda step, m: evals.append((step, m)))
    result = train(tiny(tasks["recall"], steps=7, eval_every=3), tasks["recall"], callbacks,
                   command="python -m tnn_core.training --task recall")
    assert [s[0] for s in steps] == list(range(1, 8))
    step, loss, rate, lr = steps[-1]
    assert math.isfinite(loss) and rate > 0 and lr > 0
    assert [e[0] for e in evals] == [0, 3, 6, 7]
    assert {"loss", "accuracy", "metric", "wall_s", "tokens_per_s"} <= set(evals[-1][1])
    assert result.history["command"] == "python -m tnn_core.training --task recall"
    assert result.final_metrics["step"] == 7


def test_stop_event_ends_the_run(tasks):
    stop = threading.Event()

    def on_step(step, *_):
        if step == 4:
            stop.set()

    result = train(tiny(tasks["recall"], steps=50), tasks["recall"], Callbacks(on_step=on_step),
                   stop_event=stop)
    assert result.status == "stopped" and "after 4 steps" in result.message
    assert result.history["steps"] == 4 and result.final_metrics["step"] == 4


def test_a_run_in_a_thread(tasks):
    out = {}
    thread = threading.Thread(target=lambda: out.update(r=train(tiny(tasks["recall"], steps=3),
                                                                tasks["recall"])))
    thread.start()
    thread.join(60)
    assert out["r"].status == "completed"


def test_nan_loss_stops_and_keeps_the_last_finite_weights(tasks):
    result = train(tiny(tasks["recall"], lr=1e30, steps=20, warmup=0, clip=0.0), tasks["recall"])
    assert result.status == "diverged"
    assert "became" in result.message and "kept the weights after step" in result.message
    assert all(torch.isfinite(p).all() for p in result.model.parameters())
    assert result.history["steps"] < 20
    assert math.isfinite(result.final_metrics["loss"])


def test_nan_from_the_model_is_caught(tasks, monkeypatch):
    """A forward that turns NaN at the 4th call: the weights of step 2 are kept."""
    import tnn_core.training.update as update  # one optimizer update

    real_loss = update.task_loss
    calls = {"n": 0}

    def poisoned(logits, targets):
        calls["n"] += 1
        loss = real_loss(logits, targets)
        return loss * float("nan") if calls["n"] == 4 else loss

    monkeypatch.setattr(update, "task_loss", poisoned)
    result = train(tiny(tasks["recall"], steps=10, eval_every=100), tasks["recall"])
    assert result.status == "diverged"
    assert result.message.startswith("loss became nan at step 4")
    assert result.history["steps"] == 2 and result.final_metrics["step"] == 2
    assert len(result.history["train_loss"]) == 3


def test_learning_rate_schedules():
    cos = TrainConfig(steps=110, warmup=10, lr=1.0)
    assert learning_rate(0, cos) == pytest.approx(0.1)
    assert learning_rate(9, cos) == pytest.approx(1.0)
    assert learning_rate(10, cos) == pytest.approx(1.0)
    assert learning_rate(110, cos) == pytest.approx(0.1)
    inv = TrainConfig(steps=110, warmup=4, lr=1.0, schedule="inverse_sqrt")
    assert learning_rate(15, inv) == pytest.approx(0.5)


def test_train_config_validates(tasks):
    with pytest.raises(ValueError, match="schedule must be one of"):
        TrainConfig(schedule="linear")
    with pytest.raises(ValueError, match=r"lr must be a number in \[0, inf\); got -1.0"):
        TrainConfig(lr=-1.0)
    with pytest.raises(ValueError, match=r"steps must be an integer in \[0, inf\); got True"):
        TrainConfig(steps=True)
    with pytest.raises(ValueError, match="unknown TrainConfig fields"):
        TrainConfig.from_dict({"task": "recall", "momentum": 0.9})
    with pytest.raises(ValueError, match="unknown OperatorConfig fields"):
        TrainConfig.from_dict({"model": {"operator": {"kind": "ski", "rnak": 8}}})
    with pytest.raises(ValueError, match="model must be a ModelConfig"):
        TrainConfig(model={"dim": 8})
    with pytest.raises(ValueError, match="model.task must be 'lm' for task 'recall'"):
        TrainConfig(task="recall")  # the default model is a classifier
    recall = tasks["recall"]
    with pytest.raises(ValueError, match="operator.causal must be True"):
        model_for_task(ModelConfig(operator=OperatorConfig(causal=False)), recall)
    unfitted = TrainConfig(task="recall", model=ModelConfig(
        task="lm", operator=OperatorConfig(causal=True)))
    with pytest.raises(ValueError, match=f"model.vocab_size must be {recall.vocab_size}"):
        unfitted.model_config(recall)


@pytest.mark.parametrize("kind", ["tno", "ski", "fd", "togeipi"])
def test_train_config_holds_the_whole_model(tasks, kind):
    """Every operator kind, togeipi included, round-trips through the nested dict."""
    config = tiny(tasks["listops"], model=tiny_model(tasks["listops"], kind, heads=4,
                                                      sparse_l1=1e-3))
    data = config.to_dict()
    assert data["model"]["operator"]["kind"] == kind and "operator" not in data
    assert TrainConfig.from_dict(data) == config
    assert config.model_config(tasks["listops"]) == config.model


def test_cli_builds_the_nested_config(tasks):
    args = parser().parse_args(["--task", "recall", "--operator", "togeipi", "--dim", "16",
                                "--heads", "4", "--sparse-l1", "0.01", "--max-length", "64"])
    config = config_from_args(args, tasks["recall"])
    op = config.model.operator
    assert (op.kind, op.causal, op.heads, op.sparse_l1, op.max_length) == \
        ("togeipi", True, 4, 0.01, 64)
    assert config.model.vocab_size == tasks["recall"].vocab_size and config.model.dim == 16
    args = parser().parse_args(["--task", "listops", "--causal", "--operator", "ski"])
    assert config_from_args(args, tasks["listops"]).model.operator.causal is True


@pytest.mark.parametrize(("name", "causal"), [("recall", True), ("listops", False)])
def test_the_app_config(name, causal):
    task = app_task(name)
    config = app_config(task, "ski", "tiny", 300, 1e-3, 0.9, 16, 7, "cpu", 3)
    model = config.model_config(task)  # fitted to the task
    assert (model.dim, model.layers, model.operator.causal) == (32, 1, causal)
    assert (model.operator.kind, model.operator.rank, model.operator.band) == ("ski", 16, 7)
    assert (config.warmup, config.eval_every, config.seed) == (30, 30, 3)


def test_togeipi_trains(tasks):
    config = tiny(tasks["recall"], steps=3,
                  model=tiny_model(tasks["recall"], "togeipi", heads=4, max_length=16))
    result = train(config, tasks["recall"])
    assert result.status == "completed" and math.isfinite(result.final_metrics["loss"])


def togeipi_model(sparse_l1: float):
    torch.manual_seed(0)
    config = ModelConfig(task="lm", vocab_size=10, dim=8, layers=2, operator=OperatorConfig(
        kind="togeipi", causal=True, heads=4, max_length=8, sparse_l1=sparse_l1))
    return build_model(config).double()


@pytest.mark.parametrize("sparse_l1", [0.0, 0.5])
def test_the_l1_penalty_is_in_the_gradient(sparse_l1):
    """objective = task loss + sparse_l1 · Σ|S| of each layer: its gradient on S differs from
    the task loss's by exactly sparse_l1 · sign(S) (lower triangle, causal)."""
    model = togeipi_model(sparse_l1)
    tokens = torch.randint(0, 10, (3, 8), generator=torch.Generator().manual_seed(1))
    loss = task_loss(model(tokens)[:, :-1], tokens[:, 1:])
    sparse = [op.sparse for op in model.operators()]
    task_grads = torch.autograd.grad(loss, sparse, retain_graph=True)
    grads = torch.autograd.grad(objective(model, loss), sparse)
    for S, g, g_task in zip(sparse, grads, task_grads, strict=True):
        torch.testing.assert_close(g - g_task, sparse_l1 * S.detach().sign().tril())
    assert (sparse_l1 == 0) == all(torch.equal(g, t) for g, t in zip(grads, task_grads,
                                                                       strict=True))


def test_training_applies_the_l1_penalty(tasks):
    """The loop minimises the objective: a large sparse_l1 shrinks S faster than none."""
    recall = tasks["recall"]

    def sparse_mass(sparse_l1: float) -> float:
        model = tiny_model(recall, "togeipi", heads=4, max_length=16, sparse_l1=sparse_l1)
        result = train(tiny(recall, steps=3, model=model), recall)
        return sum(float(op.sparse.detach().tril().abs().sum()) for op in result.model.operators())

    assert sparse_mass(1.0) < sparse_mass(0.0) - 1.0


def test_cli_trains_saves_and_evaluates(tmp_path, capsys):
    out = tmp_path / "recall.safetensors"
    code = train_main(["--task", "recall", "--seq-len", "16", "--num-pairs", "2",
                       "--num-queries", "2", "--dim", "8", "--layers", "1", "--steps", "3",
                       "--eval-every", "2", "--eval-batches", "1", "--no-progress",
                       "--device", "cpu", "--out", str(out)])
    assert code == 0 and out.exists()
    model, info = load(out)
    assert info.history["command"].startswith("python -m tnn_core.training --task recall")
    assert [e["step"] for e in info.history["evals"]] == [0, 2, 3]
    capsys.readouterr()
    assert evaluate_main([str(out), "--length", "32"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert result["task"] == "recall" and result["length"] == 32 and result["train_length"] == 16
    assert result["metric_name"] == "accuracy" and result["chance"] == 1 / 32
    assert 0 <= result["metric"] <= 1 and math.isfinite(result["loss"])
    low, high = result["ci95"]  # the evaluation set's interval and size
    assert low <= result["metric"] <= high and result["sequences"] == 2048


def test_cli_help_documents_every_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        train_main(["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    for action in parser()._actions:
        assert action.help, f"{action.option_strings} has no help"
    assert "--text" in text and "--weights-digest" in text
    assert "Exit status" in text  # the command's docstring heads the options


def test_length_sweep_and_kernels(tasks):
    result = train(tiny(tasks["recall"], steps=2), tasks["recall"])
    rows = length_sweep(result.model, tasks["recall"])
    assert [r["length"] for r in rows] == [16, 32, 64]
    assert all(math.isfinite(r["scores"].loss_mean) for r in rows)
    digits = train(tiny(tasks["digits"], steps=1), tasks["digits"])
    rows = length_sweep(digits.model, tasks["digits"])
    assert rows[0]["scores"] is not None and rows[1]["scores"] is None
    kernels = layer_kernels(result.model, 10)
    assert kernels.shape == (1, 48, 19)
    assert torch.all(kernels[:, :, :9] == 0)  # causal: nothing at negative lags


@pytest.mark.parametrize("dtype", ["float64", "bfloat16"])
def test_other_dtypes(tasks, dtype):
    result = train(tiny(tasks["recall"], steps=3, dtype=dtype), tasks["recall"])
    assert result.status == "completed" and math.isfinite(result.final_metrics["loss"])
    expected = torch.float64 if dtype == "float64" else torch.float32  # bf16 is autocast
    assert next(result.model.parameters()).dtype == expected


def test_cli_charlm_on_a_text_file(tmp_path, capsys):
    text = tmp_path / "poem.txt"
    text.write_text("Beautiful is better than ugly. Explicit is better than implicit.\n" * 60)
    out = tmp_path / "poem.safetensors"
    assert train_main(["--task", "charlm", "--text", str(text), "--seq-len", "32", "--dim", "8",
                       "--layers", "1", "--steps", "2", "--eval-batches", "1", "--no-progress",
                       "--device", "cpu", "--out", str(out)]) == 0
    _, info = load(out)
    assert info.task["source"]["kind"] == "bytes" and info.task["source"]["name"] == "poem.txt"
    assert "text" not in info.task["settings"]  # the checkpoint names no file
    assert "B" in info.task["vocab"]
    capsys.readouterr()
    assert evaluate_main([str(out), "--length", "64"]) == 2
    assert "give that text again" in capsys.readouterr().err
    assert evaluate_main([str(out), "--text", str(text), "--length", "64"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["metric_name"] == "bpc" and result["length"] == 64
    assert result["sequences"] == (len("Beautiful is better than ugly. Explicit is better than "
                                       "implicit.\n") * 60 // 10 - 1) // 64  # the tiles


def test_a_run_its_checkpoint_could_not_reopen_is_refused_before_training():
    """The loader refuses checkpoints whose one sequence at 4x their length does not fit
    the memory limit (2,117 MiB here), so train refuses such a run at once instead of after
    its last step."""
    task = get_task("charlm", {"seq_len": 32768})
    model = model_for_task(ModelConfig(dim=64, layers=1, operator=OperatorConfig(causal=True)),
                           task)
    config = TrainConfig(task="charlm", steps=1, model=model)
    with pytest.raises(ValueError, match=f"the limit is {MEMORY_LIMIT / 2**20:,.0f} MiB"):
        train(config, task)
