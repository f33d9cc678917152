"""A kernels-only checkpoint (``models.MixerStack``: the token mixers of a model the lab did
not train, issue 36) on the Decomposition and Compress pages and ``python -m
tnn_core.compress``: its learned kernels decompose like a trained model's; Compress shows
each layer's error of band + low rank (and, causal, of the recurrent fit) at its recorded
length and says in one line why nothing is scored; the command prints those errors.

The references are our own float64 evaluations over dense n x n matrices: the bidirectional
split from ``analysis.decompose``'s pieces, the causal band + tail as a least-squares fit
over T's lower-triangle entries, the recurrence from ``analysis.exponential_fit``'s modes."""

from __future__ import annotations

import base64
import json
import math

import numpy as np
import pytest
import torch
from scipy.linalg import toeplitz
from streamlit.testing.v1 import AppTest

from pages._ui import checkpoint_views
from pages._ui import checkpoints as ui_checkpoints
from tests.compress_fixtures import APP
from tests.kernels_only import kernels_only_bytes
from tnn_core.analysis.decompose import decompose
from tnn_core.analysis.exponential_fit import fit_exponentials
from tnn_core.compress import kernel_errors
from tnn_core.compress.cli import main
from tnn_core.lab.common.uploads import SessionUploads, upload_key
from tnn_core.training import checkpoint
from tnn_core.training.budget import Cost
from tnn_core.training.tasks import is_kernels_only, kernels_only_reason

N0 = 64  # the length tests/kernels_only.py records: the kernels are fitted there
REASON_START = "This checkpoint holds token mixers only"


# -- float64 references --------------------------------------------------------------------
def dense(coeffs: np.ndarray) -> np.ndarray:
    """T [n, n] with T[i, j] = t_{i-j} from coeffs [2n-1] (lags -(n-1)..n-1)."""
    n = (len(coeffs) + 1) // 2
    return toeplitz(coeffs[n - 1:], coeffs[n - 1::-1])


def lag_matrix(n: int) -> np.ndarray:
    return np.subtract.outer(np.arange(n), np.arange(n))  # (n, n) i - j


def bidirectional_error(kernels: np.ndarray, band: int, rank: int, method: str) -> float:
    """||T - band - W A Wᵀ||_F / ||T||_F over a layer's channels (the lab's one relative
    error), from ``analysis.decompose``'s dense pieces."""
    error_sq = norm_sq = 0.0
    for t in kernels:  # (2n-1,)
        d = decompose(t, band, rank, causal=False, method=method)
        T = dense(t)
        error_sq += np.sum((T - d.band_matrix() - d.low_rank_matrix()) ** 2)
        norm_sq += np.sum(T**2)
    return math.sqrt(error_sq / norm_sq)


def causal_tail_error(kernels: np.ndarray, band: int, rank: int) -> float:
    """The causal conversion: the band (lags 0..m-1) exact, the lags >= m one function f,
    piecewise linear through r knots at the lags l (n-1)/(r-1), its knots chosen to
    minimise the squared error over the entries of T below the band; over ||T||_F."""
    n = (kernels.shape[1] + 1) // 2
    lags = lag_matrix(n)
    below = lags >= band  # (n, n) the entries the tail must match
    knots = np.linspace(0, n - 1, rank)
    hats = np.stack([np.interp(lags[below], knots, np.eye(rank)[j])
                     for j in range(rank)], axis=1)  # (entries, r) f's basis at each entry
    error_sq = norm_sq = 0.0
    for t in kernels:
        target = dense(t)[below]
        c, *_ = np.linalg.lstsq(hats, target, rcond=None)
        error_sq += np.sum((target - hats @ c) ** 2)
        norm_sq += np.sum(dense(t) ** 2)
    return math.sqrt(error_sq / norm_sq)


def recurrent_error(kernels: np.ndarray, state: int) -> float:
    """||T - T̂||_F / ||T||_F over the channels, T̂ the causal Toeplitz matrix of the s
    modes ``analysis.exponential_fit`` finds for each channel (the diagonal counted)."""
    n = (kernels.shape[1] + 1) // 2
    fitted = fit_exponentials(kernels[:, n - 1:], state).kernel(n)  # (D, n) lags 0..n-1
    error_sq = norm_sq = 0.0
    for t, f in zip(kernels, fitted, strict=True):
        T = dense(t)
        T_hat = toeplitz(f, np.zeros(n))
        error_sq += np.sum((T - T_hat) ** 2)
        norm_sq += np.sum(T**2)
    return math.sqrt(error_sq / norm_sq)


def layer_kernels(data: bytes, layer: int) -> np.ndarray:
    """Layer ``layer``'s kernels [D, 2 N0 - 1] as the model computes them, in float64."""
    model, _ = checkpoint.load_bytes(data, "ko")
    with torch.no_grad():
        return model.operators()[layer].kernel(N0).double().numpy()


# -- the pages -------------------------------------------------------------------------------
@pytest.fixture
def kernels_only_folder(monkeypatch, tmp_path):
    """A user folder holding ko-causal (tno) and ko-bidirectional (fd), kernels-only."""
    for name, causal, kind in (("ko-causal", True, "tno"), ("ko-bidirectional", False, "fd")):
        (tmp_path / f"{name}.safetensors").write_bytes(
            kernels_only_bytes(causal=causal, n=N0, kind=kind))
    monkeypatch.setattr(ui_checkpoints, "USER_CHECKPOINTS", tmp_path)

    evaluation = checkpoint_views.evaluation

    def never_kernels_only(key: str, *args, **kwargs):
        if is_kernels_only(ui_checkpoints.load_checkpoint(key)[1].task):
            raise AssertionError(f"the kernels-only {key} was sent to be evaluated")
        return evaluation(key, *args, **kwargs)
    monkeypatch.setattr(checkpoint_views, "evaluation", never_kernels_only)
    return tmp_path


def opened(page: str, checkpoint: str | None = None) -> AppTest:
    """``page`` in a new session, opening ``checkpoint`` first (None: the page's default)."""
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    if checkpoint is not None:
        at.session_state["checkpoint"] = checkpoint
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def figure_data(at: AppTest, name: str) -> dict:
    return next(json.loads(e.proto.json) for e in at.get("bidi_component")
                if e.proto.component_name == f"toeplitz_lab_{name}")


@pytest.mark.parametrize("name", ["ko-causal", "ko-bidirectional"])
def test_decomposition_decomposes_a_kernels_only_channel_with_every_section(
        kernels_only_folder, name):
    at = opened("pages/decomposition.py")
    at.selectbox(key="source").set_value("checkpoint").run()
    at.selectbox(key="checkpoint").set_value(f"user/{name}").run()
    at.slider(key="n").set_value(N0)
    at.number_input(key="layer").set_value(1)
    at.number_input(key="channel").set_value(5)
    at.toggle(key="causal").set_value(name == "ko-causal")
    at.session_state["decomposition_figure"] = {"band": 5, "rank": 24}  # the figure's r, m
    at.radio(key="method").set_value("fit" if name == "ko-causal" else "sample")
    for section in ("cell_open", "theorem1_open", "speed_open", "profiles_open"):
        at.session_state[section] = True
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any(c.value.startswith(f"Source: checkpoint user/{name}, layer 1, channel 5 ")
               for c in at.caption)
    sent = figure_data(at, "decomposition")["kernel"]["coeffs"]
    np.testing.assert_allclose(np.frombuffer(base64.b64decode(sent), "<f8"),
                               layer_kernels((kernels_only_folder / f"{name}.safetensors")
                                             .read_bytes(), 1)[5], rtol=0, atol=1e-12)
    assert any(m.label == "Theorem 1 right-hand side" for m in at.metric)
    (button,) = [b for b in at.button if b.key == "open_compress"]
    assert button.label == "Each layer's error with m = 5, r = 24"
    button.click().run()  # m, r and the method carried to Compress: the errors, no score
    assert not at.exception, at.exception
    assert at.title[0].value == "Compress"
    data = (kernels_only_folder / f"{name}.safetensors").read_bytes()
    reason = kernels_only_reason(checkpoint.load_bytes(data, "ko")[1].task)
    assert any(i.value.startswith(reason) for i in at.info)
    kernels = layer_kernels(data, 1)
    assert error_table(at)["band + low rank error"][1] == pytest.approx(
        causal_tail_error(kernels, 5, 24) if name == "ko-causal"
        else bidirectional_error(kernels, 5, 24, "sample"), rel=1e-7)


def error_table(at: AppTest):
    (table,) = [d.value for d in at.dataframe]
    return table


def test_compress_shows_a_causal_kernels_only_models_errors_and_scores_nothing(
        kernels_only_folder):
    at = opened("pages/compress.py", "user/ko-causal")
    at.number_input(key="band").set_value(5)
    at.number_input(key="rank").set_value(12)
    at.number_input(key="compress_state").set_value(4).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    (reason,) = [i.value for i in at.info if i.value.startswith(REASON_START)]
    assert "no task to score" in reason and "no task score, converted score or speed-up" in reason
    assert not at.metric and not [b for b in at.button if b.key in ("convert", "search")]
    assert "compress_job" not in at.session_state and "compress_search" not in at.session_state
    data = (kernels_only_folder / "ko-causal.safetensors").read_bytes()
    table = error_table(at)
    assert list(table["layer"]) == [0, 1]
    for layer in (0, 1):
        kernels = layer_kernels(data, layer)
        assert table["band + low rank error"][layer] == pytest.approx(
            causal_tail_error(kernels, 5, 12), rel=1e-7)
        assert table["recurrent error"][layer] == pytest.approx(
            recurrent_error(kernels, 4), rel=1e-7)
    assert any("m = 5, r = 12, fit" in c.value and "s = 4" in c.value for c in at.caption)


def test_a_fit_beyond_the_budget_is_refused_in_a_sentence_and_the_rest_shown(
        kernels_only_folder, monkeypatch):
    """The recurrent fit's cost past the time limit (``guard.conversion_cost``): its column
    gives way to the budget's sentence; the band + low rank column stays."""
    cost = kernel_errors.conversion_cost
    monkeypatch.setattr(kernel_errors, "conversion_cost", lambda config, plan, n0: Cost(
        0, 1e15) if plan.layers[0].recurrent else cost(config, plan, n0))
    at = opened("pages/compress.py", "user/ko-causal")
    at.number_input(key="compress_state").set_value(7).run()  # a value no other test keeps
    assert not at.exception, at.exception
    (refusal,) = [e.value for e in at.error]
    assert "fitting this plan to every layer's kernels at n = 64 would take about" in refusal
    table = error_table(at)
    assert "recurrent error" not in table.columns
    assert table["band + low rank error"].notna().all()


def test_compress_shows_an_uploaded_bidirectional_kernels_only_models_errors(
        kernels_only_folder):
    """An upload of this session (``checkpoints.remember_upload`` keeps its bytes): the same
    view; a bidirectional model has no recurrent column."""
    data = kernels_only_bytes(causal=False, n=N0, kind="fd")
    key = upload_key(data)
    at = AppTest.from_file(APP, default_timeout=300)
    uploads = SessionUploads()
    uploads.add(key, "imported.safetensors", len(data))
    at.session_state["uploads"] = uploads
    at.session_state["checkpoint"] = key
    ui_checkpoints.SERVER_UPLOADS.put(key, data)
    at.run()
    at.switch_page("pages/compress.py").run()
    assert at.selectbox(key="checkpoint").value == key
    at.number_input(key="band").set_value(9)
    at.number_input(key="rank").set_value(16)
    at.radio(key="method").set_value("sample").run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any(i.value.startswith(REASON_START) for i in at.info)
    table = error_table(at)
    assert "recurrent error" not in table.columns
    for layer in (0, 1):
        assert table["band + low rank error"][layer] == pytest.approx(
            bidirectional_error(layer_kernels(data, layer), 9, 16, "sample"), rel=1e-7)


# -- the command line ------------------------------------------------------------------------
@pytest.fixture
def kernels_only_file(tmp_path):
    path = tmp_path / "ko.safetensors"
    path.write_bytes(kernels_only_bytes(causal=False, n=N0, kind="tno"))
    return path


def test_the_command_prints_each_layers_error_and_a_note(kernels_only_file, capsys):
    assert main([str(kernels_only_file), "--band", "9", "--rank", "32"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert not {"source", "converted", "finetuned", "speedup", "metric_name",
                "chance"} & set(output)
    assert output["task"] == "kernels" and output["training_length"] == N0
    assert output["note"].startswith(REASON_START) and "no task to score" in output["note"]
    data = kernels_only_file.read_bytes()
    for layer, row in enumerate(output["layers"]):
        assert {k: row[k] for k in ("band", "rank", "method")} == \
            {"band": 9, "rank": 32, "method": "fit"}
        assert row["error"] == pytest.approx(
            bidirectional_error(layer_kernels(data, layer), 9, 32, "fit"), rel=1e-7)


def test_the_command_fits_a_causal_kernels_only_model_as_a_recurrence(tmp_path, capsys):
    path = tmp_path / "ko.safetensors"
    path.write_bytes(kernels_only_bytes(causal=True, n=N0))
    assert main([str(path), "--recurrent", "--state", "3"]) == 0
    output = json.loads(capsys.readouterr().out)
    for layer, row in enumerate(output["layers"]):
        assert row["error"] == pytest.approx(
            recurrent_error(layer_kernels(path.read_bytes(), layer), 3), rel=1e-7)


@pytest.mark.parametrize("options", [["--search"], ["--band", "9", "--rank", "32",
                                                    "--finetune", "5"]])
def test_the_command_refuses_what_needs_a_task_with_the_reason(kernels_only_file, capsys,
                                                                 options):
    assert main([str(kernels_only_file), *options]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("error: ") and REASON_START in line


def test_the_command_writes_nothing_for_a_kernels_only_model(kernels_only_file, tmp_path,
                                                             capsys):
    out = tmp_path / "converted.safetensors"
    assert main([str(kernels_only_file), "--band", "9", "--rank", "32", "--out",
                 str(out)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "--out" in line and REASON_START in line
    assert not out.exists()
