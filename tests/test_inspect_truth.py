"""Inspect shows what the model computes: the applied matrix, mass locality, the SKI error
relative to the off-band part, the band ablation, and the page's journeys and links."""

from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tnn_core.analysis.ablation import band_restricted
from tnn_core.analysis.applied import applied_matrix
from tnn_core.lab.inspect import (
    SHIPPED_ORDER,
    BandAblation,
    DecayPair,
    atlas_view,
    channel_matrix,
    decay_pair,
    saved_checkpoints,
    summary,
)
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig, build_operator
from tnn_core.training import checkpoint
from tnn_core.training.evaluate import score
from tnn_core.training.scores import Scores
from tnn_core.training.tasks import task_from_info

APP = str(Path(__file__).resolve().parents[1] / "app.py")
SIZES = [1, 2, 7, 13]  # one, two, odd, prime


def dense_by_loops(t: np.ndarray, n: int) -> np.ndarray:
    return np.array([[t[n - 1 + i - j] for j in range(n)] for i in range(n)])


def kept_by_loops(n: int, band: int, causal: bool) -> np.ndarray:
    return np.array([[(0 <= i - j < band) if causal else abs(i - j) <= band // 2
                      for j in range(n)] for i in range(n)])


# -- the applied matrix ----------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["tno", "ski", "fd"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n", SIZES)
def test_applied_matrix_reproduces_forward_on_random_inputs(kind, causal, n, one_thread):
    torch.manual_seed(n)
    op = build_operator(OperatorConfig(kind=kind, causal=causal, rank=4, band=3), 5).double()
    M = applied_matrix(op, n)  # (D, n, n)
    x = torch.randn(3, n, 5, dtype=torch.float64)
    by_loops = np.stack([[M[c].numpy() @ x[b, :, c].numpy() for c in range(5)]
                         for b in range(3)]).transpose(0, 2, 1)  # (B, n, D)
    np.testing.assert_allclose(op(x).detach().numpy(), by_loops, rtol=0, atol=1e-12)
    np.testing.assert_allclose(applied_matrix(op, n, [3, 1]).numpy(), M[[3, 1]].numpy(),
                               rtol=0, atol=0)


def test_bidirectional_ski_applies_a_matrix_that_is_not_its_toeplitz_target(one_thread):
    torch.manual_seed(0)
    op = build_operator(OperatorConfig(kind="ski", rank=4, band=3), 2).double()
    n = 37
    M = applied_matrix(op, n)[1].numpy()
    target = dense_by_loops(op.kernel(n)[1].detach().numpy(), n)
    assert np.linalg.norm(M - target) / np.linalg.norm(target) > 1e-3


# -- band ablation ---------------------------------------------------------------------------
def tiny_model(kind: str, causal: bool) -> torch.nn.Module:
    torch.manual_seed(1)
    config = ModelConfig(task="lm" if causal else "classify", vocab_size=11, dim=6, layers=2,
                         expand_ratio=1,
                         operator=OperatorConfig(kind=kind, causal=causal, rank=4, band=3))
    return build_model(config).double().eval()


class DenseReference(torch.nn.Module):
    """y[:, :, c] = M[c] x[:, :, c] with M given as numpy matrices, by numpy."""

    def __init__(self, matrices: np.ndarray):
        super().__init__()
        self.matrices = matrices

    def forward(self, x):
        out = np.einsum("cij,bjc->bic", self.matrices, x.detach().numpy())
        return torch.from_numpy(out)


def reference_restricted(model, n: int, band: int) -> torch.nn.Module:
    """Every layer's exact map (``op.matrix(n)``) times the band mask built by loops."""
    ref = copy.deepcopy(model)
    kept = kept_by_loops(n, band, model.config.operator.causal)
    for layer in ref.layers:
        layer.gtu.op = DenseReference(layer.gtu.op.matrix(n).detach().numpy() * kept)
    return ref


@pytest.mark.parametrize(("kind", "causal"), [("tno", False), ("ski", False), ("fd", False),
                                              ("tno", True), ("ski", True), ("fd", True)])
@pytest.mark.parametrize("n", [1, 2, 7, 13])
def test_band_restricted_model_matches_a_dense_reference(kind, causal, n, one_thread):
    model = tiny_model(kind, causal)
    tokens = torch.randint(0, 11, (3, n), generator=torch.Generator().manual_seed(n))
    with torch.no_grad():
        full = model(tokens)
        every = 2 * n - 1 if not causal else n  # every lag is in the band
        np.testing.assert_allclose(band_restricted(model, n, every, [0, 1])(tokens).numpy(),
                                   full.numpy(), rtol=0, atol=1e-12)
        for band in (1, 3):
            restricted = band_restricted(model, n, band, [0, 1])(tokens)
            reference = reference_restricted(model, n, band)(tokens)
            np.testing.assert_allclose(restricted.numpy(), reference.numpy(), rtol=0,
                                       atol=1e-12)
        one_layer = band_restricted(model, n, 1, [1])(tokens)
        assert torch.equal(model(tokens), full)  # the shared model itself is untouched
    if n > 1:
        assert not torch.allclose(one_layer, full)


def _scores(name: str, per_sequence: np.ndarray) -> Scores:
    """Scores with this metric on each sequence (bpc, or 0/1 accuracy), 100 targets each."""
    targets = np.full(len(per_sequence), 100.0)
    if name == "bpc":
        return Scores("bpc", False, per_sequence * math.log(2) * targets,
                      np.zeros_like(targets), targets)
    return Scores("accuracy", True, np.zeros_like(targets), per_sequence * targets, targets)


def test_margin_lost_counts_from_chance_in_the_metric_direction():
    def ablation(name: str, chance: float, full: float, restricted: float) -> BandAblation:
        def flat(value: float) -> Scores:
            return _scores(name, np.full(8, value))

        return BandAblation(band="|k| ≤ 4", length=64, chance=chance, full=flat(full),
                            restricted=flat(restricted), per_layer=(flat(full),))

    assert ablation("accuracy", 0.1, 0.8, 0.17).margin_lost == pytest.approx(0.63 / 0.7)
    assert ablation("bpc", 6.658, 2.11, 2.25).margin_lost == pytest.approx(0.14 / 4.548)


def test_the_ablation_sentence_says_loses_only_beyond_the_tolerance():
    """+0.122 bpc on every sequence: loses (not "the band carries almost everything");
    +0.01: keeps; a change that straddles the tolerance: cannot tell."""
    rng = np.random.default_rng(0)
    base = rng.normal(2.0, 0.5, 400)

    def sentence(worse: np.ndarray) -> str:
        full = _scores("bpc", base)
        return BandAblation(band="lags 0..8", length=256, chance=6.658, full=full,
                            restricted=_scores("bpc", base + worse), per_layer=()).sentence()

    assert "the model loses quality: " in sentence(np.full(400, 0.122))
    assert "0.122 bpc worse" in sentence(np.full(400, 0.122))
    assert "the model keeps its quality" in sentence(np.full(400, 0.01))
    assert "we cannot tell whether the model keeps its quality with 400 sequences" in \
        sentence(rng.normal(0.05, 0.5, 400))


# -- one channel, summary, the list ----------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 13, 300])
def test_channel_matrix_shows_the_applied_matrix_and_its_gap_to_the_target(n, one_thread):
    model = tiny_model("ski", causal=False)
    drill = channel_matrix(model, n, layer=1, channel=4)
    op = model.operators()[1]
    M = op.matrix(n)[4].detach().numpy()
    idx = drill.view.indices
    np.testing.assert_allclose(drill.view.matrix, M[np.ix_(idx, idx)], rtol=0, atol=1e-12)
    target = dense_by_loops(op.kernel(n)[4].detach().numpy(), n)
    assert drill.target_gap == pytest.approx(
        np.linalg.norm(M - target) / np.linalg.norm(target), rel=1e-9)
    tno = channel_matrix(tiny_model("tno", causal=False), n, 0, 1)
    assert tno.target is None and math.isnan(tno.target_gap)


def test_history_axis_keeps_chance_and_the_final_value_readable():
    _, info = checkpoint.load(checkpoint.SHIPPED_DIR / "digits-tno.safetensors")
    task = SimpleNamespace(chance=0.1, higher_is_better=True)
    assert summary(info, task).metric_axis() == (0.0, 1.0)
    info.history["evals"] = [{"step": 0, "metric": 50.0}, {"step": 100, "metric": 3.0},
                             {"step": 200, "metric": 2.1}]
    bpc = summary(info, SimpleNamespace(chance=6.658, higher_is_better=False))
    assert bpc.metric_axis() == (0.0, pytest.approx(1.1 * 6.658))
    assert bpc.off_axis() == [(0, 50.0)]
    assert math.isnan(summary(info).chance)


def test_the_list_opens_on_spike_plus_smooth_and_follows_the_teaching_order(tmp_path):
    choices = saved_checkpoints(tmp_path)
    names = [name for name, _ in SHIPPED_ORDER if name in choices]
    assert list(choices)[0] == "digits-tno"
    assert list(choices)[: len(names)] == names
    assert all("·" in label for label in choices.values())  # each says what it shows


# -- the page --------------------------------------------------------------------------------
def open_inspect(params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(params or {})
    at.run()
    at.switch_page("pages/inspect.py").run()
    assert not at.exception, at.exception
    return at


def test_the_training_curve_keeps_its_axis_to_chance_and_the_final_value():
    at = open_inspect()  # digits-tno: an accuracy, drawn in %
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    curve = next(s for s in specs if s["layout"]["title"]["text"].startswith("Validation"))
    assert curve["layout"]["yaxis"]["range"] == [0.0, 100.0]


def shown(at: AppTest) -> dict:
    charts = {json.loads(c.proto.spec)["layout"]["title"]["text"]: json.loads(c.proto.spec)
              for c in at.get("plotly_chart")}
    matrix = next(spec for title, spec in charts.items() if "row 0 on top" in title)
    return {"metrics": [(m.label, m.value) for m in at.metric],
            "subheaders": [s.value for s in at.subheader],
            "matrix": matrix["data"][0]["z"]}


def test_inspect_opens_on_digits_tno_at_its_length():
    at = open_inspect()
    assert at.selectbox(key="checkpoint").value == "digits-tno"
    assert at.slider(key="atlas_n").value == 64


def test_each_checkpoint_opens_at_its_own_training_length():
    at = open_inspect()
    at.selectbox(key="checkpoint").set_value("listops-ski").run()
    assert at.slider(key="atlas_n").value == 128 and at.slider(key="atlas_band").value == 9
    at.slider(key="atlas_n").set_value(200).run()
    assert at.slider(key="atlas_n").value == 200  # the person's choice holds on this one
    at.selectbox(key="checkpoint").set_value("digits-fd").run()
    assert not at.exception
    assert at.slider(key="atlas_n").value == 64


def test_open_in_decomposition_switches_pages_with_this_kernel():
    at = open_inspect()
    at.number_input(key="layer").set_value(1)
    at.number_input(key="channel").set_value(5).run()
    at.button(key="open_decomposition").click().run()
    assert not at.exception, at.exception
    assert "_handoff" not in at.session_state  # the Decomposition page took the values
    assert at.selectbox(key="source").value == "checkpoint"
    assert at.selectbox(key="checkpoint").value == "digits-tno"
    assert (at.number_input(key="layer").value, at.number_input(key="channel").value) == (1, 5)
    assert at.slider(key="n").value == 64


def test_save_and_inspect_opens_the_saved_model(tmp_path, monkeypatch):
    model, info = checkpoint.load(checkpoint.SHIPPED_DIR / "digits-tno.safetensors")
    checkpoint.save(tmp_path / "mine.safetensors", model, info.task, info.history,
                    info.model_config)
    # the app imports these once per process: point them at tmp_path
    from pages._ui import checkpoint_views, checkpoints

    monkeypatch.setattr(checkpoints, "USER_CHECKPOINTS", tmp_path)
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.session_state["_handoff"] = ("pages/inspect.py", {"checkpoint": "user/mine"})
    at.switch_page("pages/inspect.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="checkpoint").value == "user/mine"
    # the header's evaluation, done
    assert checkpoint_views.length_sweep("user/mine", 120) is not None
    at.run()
    metrics = dict((m.label, m.value) for m in at.metric)
    assert metrics["Task"] == "digits"
    scored = score(model, task_from_info(info.task))  # the evaluation set, not the history
    assert metrics["Evaluation accuracy"] == f"{100 * scored.metric:.1f} %"


def test_a_link_opens_the_same_checkpoint_layer_and_channel():
    at = open_inspect()
    at.selectbox(key="checkpoint").set_value("digits-ski")  # not the first
    at.number_input(key="layer").set_value(1)
    at.number_input(key="channel").set_value(7)
    at.run()
    assert not at.exception
    # the header's evaluation comes from a background sweep, "…" until it is done: wait for
    # it so that both pages show its number
    from pages._ui import checkpoint_views
    assert checkpoint_views.length_sweep("digits-ski", 120) is not None
    at.run()
    box = at.selectbox(key="checkpoint")
    url = {"checkpoint": box.options[box.index], "layer": "1", "channel": "7"}
    fresh = open_inspect(url)
    assert fresh.selectbox(key="checkpoint").value == "digits-ski"
    assert (fresh.number_input(key="layer").value, fresh.number_input(key="channel").value) \
        == (1, 7)
    assert shown(fresh) == shown(at)
    assert "Layer 1, channel 7" in shown(fresh)["subheaders"]


# -- Table 10 pair ---------------------------------------------------------------------------
def pair_of(last_with: list[float], last_without: list[float]) -> DecayPair:
    """A pair on 50 windows whose per-window bpc differ from the factor's mean by the same
    amount at every factor: each change across factors is exact."""
    windows = np.random.default_rng(1).normal(0, 0.3, 50)
    windows -= windows.mean()  # each factor's mean is exactly the one given

    def row(means: list[float]) -> tuple[Scores, ...]:
        return tuple(_scores("bpc", mean + windows) for mean in means)

    rows = (row(last_with), row(last_without))
    return DecayPair(names=("with", "without"), decays=(0.99, 1.0), train_n=128,
                     metric_name="bpc", chance=6.658, factor=np.array([1, 2, 16]),
                     length=np.array([128, 256, 2048]), last=rows, every=rows)


def test_the_table_10_sentence_follows_the_measurement():
    table_10 = pair_of([2.6, 2.6, 2.63], [2.6, 3.5, 7.2])
    said = table_10.sentence()
    assert "with (λ = 0.99) keeps its quality: 2.630 bpc against 2.600 bpc" in said
    assert said.startswith("At 16× the training length (n = 2,048), on the last 128 positions "
                           "of the same 50 windows, with (λ = 0.99) keeps its quality")
    assert "There, without (λ = 1) loses quality: 7.200 bpc against 2.600 bpc" in said
    assert said.endswith("As in TNN's Table 10, the decay is what lets with extrapolate.")
    assert "both extrapolate" in pair_of([2.6, 2.6, 2.6], [2.6, 2.6, 2.62]).sentence()
    assert "does not reproduce" in pair_of([2.6, 4.0, 6.0], [2.6, 5.0, 7.0]).sentence()


def test_decay_pair_scores_both_models_on_the_same_windows(one_thread):
    from tnn_core.training.tasks import get_task

    task = get_task("charlm", {"seq_len": 16})
    models = []
    for decay in (0.9, 1.0):
        torch.manual_seed(0)
        models.append(build_model(ModelConfig(
            task="lm", vocab_size=task.vocab_size, dim=8, layers=1, expand_ratio=1,
            operator=OperatorConfig(kind="tno", causal=True, decay=decay))).eval())
    pair = decay_pair(tuple(models), ("a", "b"), task, factors=(1, 2))
    assert pair.decays == (0.9, 1.0) and pair.factor.tolist() == [1, 2]
    assert pair.length.tolist() == [16, 32]
    np.testing.assert_allclose(pair.metric_last[:, 0], pair.metric_all[:, 0], rtol=1e-12)
    assert pair.metric_last[0, 0] != pair.metric_last[1, 0]  # λ changes the model
    assert pair.chance == pytest.approx(math.log2(task.vocab_size))


@pytest.mark.parametrize("name", ["digits-tno", "listops-tno"])
def test_the_checkpoint_list_hints_say_what_the_atlas_measures(name):
    """A hint's "~P % of the energy beyond the band" is the atlas median at the training
    length (band m = 9), to 5 points."""
    hint = dict(SHIPPED_ORDER)[name]
    stated = float(re.search(r"~(\d+) % of the energy", hint).group(1)) / 100
    model, info = checkpoint.load(checkpoint.SHIPPED_DIR / f"{name}.safetensors")
    n = info.task["settings"].get("seq_len") or 64
    beyond = 1 - np.nanmedian(atlas_view(model, n, 9, 32).channels.locality)
    assert beyond == pytest.approx(stated, abs=0.05)
