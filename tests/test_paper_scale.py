"""The paper's scale (issue 36): TNN's LM (6 layers, width 512, expand 3, RPE 6 × 64, n = 512)
passes every limit of the lab, its checkpoint opens from the upload box and the server's
folder, the atlas measures all 9,216 of its channels, and the trainer says at its start what
a view will do with a model. Correctness only: the times are measured by
``python -m tnn_core.bench.paper_scale`` (docs/benchmarks.md)."""

import logging
import tomllib
from pathlib import Path

import numpy as np
import pytest

from tnn_core.bench import paper_scale
from tnn_core.lab.common import checkpoints as lab_checkpoints
from tnn_core.lab.common.atlas import atlas_view
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig, seeded_weights
from tnn_core.training import budget
from tnn_core.training.budget import parameter_count
from tnn_core.training.checkpoint import load, read_info, save
from tnn_core.training.checkpoint_header import MAX_BYTES
from tnn_core.training.config import TrainConfig
from tnn_core.training.loop import train
from tnn_core.training.tasks import get_task

ROOT = Path(__file__).resolve().parents[1]
PAPER_LM = ModelConfig(task="lm", vocab_size=101, dim=512, layers=6, expand_ratio=3,
                       operator=OperatorConfig(kind="tno", causal=True, decay=0.99, rpe_dim=64,
                                               rpe_layers=6))


def test_the_benchmark_measures_the_papers_sizes():
    layers, width, expand, rpe_dim, rpe_layers = paper_scale.SCALES["paper"]["lm"]
    assert (layers, width, expand, rpe_dim, rpe_layers) == (6, 512, 3, 64, 6)
    assert layers * width * expand == 9_216 and paper_scale.SCALES["paper"]["n"] == 512
    assert paper_scale.SCALES["paper"]["roberta"][:3] == (12, 2_304, 1)


def test_a_paper_size_checkpoint_fits_the_loader_and_the_upload_box():
    size = 4 * parameter_count(PAPER_LM)  # float32 weights, 79 MB
    assert 78e6 < size < 80e6 < MAX_BYTES
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 2**20 >= MAX_BYTES  # Streamlit's MB are MiB
    plan = budget.check_sweep(PAPER_LM, 512, extrapolates=True)  # refused before: 2,508 MiB
    assert plan.batches == (16, 8, 4)


def test_a_checkpoint_put_in_the_servers_folder_is_listed_and_opens(tmp_path, monkeypatch):
    """A local server lists every .safetensors in its checkpoint folder (``SHIPPED_DIR``)."""
    config = ModelConfig(task="lm", vocab_size=101, dim=16, layers=1,
                         operator=OperatorConfig(causal=True))
    task = read_info(ROOT / "checkpoints" / "charlm-tno.safetensors").task
    save(tmp_path / "my-paper-model.safetensors", build_model(config), task)
    monkeypatch.setattr(lab_checkpoints, "SHIPPED_DIR", tmp_path)
    assert lab_checkpoints.saved_checkpoints(tmp_path / "user") == {
        "my-paper-model": "my-paper-model (shipped)"}
    model, _ = load(lab_checkpoints.checkpoint_path("my-paper-model", tmp_path / "user"))
    assert model.config == config


def test_the_atlas_measures_every_channel_of_a_paper_size_model():
    with seeded_weights(0):
        model = build_model(PAPER_LM).eval()
    atlas = atlas_view(model, 64, 9, 32)
    assert len(atlas.channels.layer) == 9_216
    assert np.bincount(atlas.channels.layer).tolist() == [1_536] * 6
    assert np.isfinite(atlas.channels.locality).all()
    assert len(atlas.kept) <= 4 * 12 and atlas.kernels.shape[1] == 127


def test_the_trainer_says_at_its_start_which_view_backgrounds_its_model(monkeypatch, caplog):
    monkeypatch.setattr(budget, "SECONDS_LIMIT", 0.0)
    task = get_task("recall", {"seq_len": 16, "num_pairs": 2, "num_queries": 2, "num_keys": 4,
                               "num_values": 4})
    model = ModelConfig(task="lm", vocab_size=task.vocab_size, dim=8, layers=1,
                        operator=OperatorConfig(causal=True))
    config = TrainConfig(task="recall", steps=1, batch_size=4, eval_batches=1,
                         eval_batch_size=4, device="cpu", model=model)
    with caplog.at_level(logging.WARNING, logger="tnn_core.training.loop"):
        train(config, task)
    notes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Note: ")]
    assert len(notes) == 1
    assert notes[0].startswith("Note: Inspect's length sweep (n = 16, n = 32, n = 64 (8 batches")
    assert notes[0].endswith("above the 0 s a page waits (SECONDS_LIMIT in "
                             "tnn_core/training/budget.py): it runs in the background.")


@pytest.mark.slow  # writes and measures two tiny models in fresh processes
def test_the_benchmark_runs_end_to_end_on_tiny_models(tmp_path):
    results = paper_scale.run("tiny", 1, tmp_path)
    for kind, channels in (("lm", 96), ("roberta", 48)):
        model = results["models"][kind]
        assert model["channels"] == channels and model["bytes"] > 0
        assert set(model["steps"]) == {"open", "atlas", "report"}
        for measured in model["steps"].values():
            assert measured["seconds"]["median"] > 0 and measured["peak_mb"]["median"] > 50
    assert "| roberta | 48 |" in paper_scale.markdown(results)
