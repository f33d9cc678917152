"""Every operator kind the lab trains opens in every checkpoint view (Inspect, Decomposition's
learned-kernel source, Compress), or the view says in one sentence why it cannot: never an
exception, never a traceback.

Each checkpoint is made here, small: a run of one step on digits (as the README's command,
``python -m tnn_core.training --task digits --operator ...``, at a tiny size), for each kind,
causal and not, and for the ends of every range ``OperatorConfig`` allows that the Train
page or the CLI can reach; and an SSM, a causal TNO converted by ``compress.convert`` as
``--recurrent`` does. It is uploaded, as a person would, and opened on each page.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tnn_core.compress import CompressionPlan, convert
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig
from tnn_core.operators.config import MAX_SIZE
from tnn_core.training.checkpoint import save
from tnn_core.training.config import TrainConfig, model_for_task
from tnn_core.training.loop import train
from tnn_core.training.tasks import get_task

APP = str(Path(__file__).resolve().parents[1] / "app.py")
DIM = 8  # channels: heads up to 8 divide it
SEQ_LEN = 64  # digits' length: togeipi's max_length cannot be less

# name -> the operator's settings; every kind causal and not, then the ends of the ranges
CASES = {f"{kind}{'-causal' if causal else ''}": dict(kind=kind, causal=causal)
         for kind in ("tno", "ski", "fd", "togeipi") for causal in (False, True)} | {
    "ski-band-1": dict(kind="ski", band=1),
    "ski-band-64": dict(kind="ski", band=64),  # the Train page's widest
    "ski-band-max": dict(kind="ski", band=MAX_SIZE),
    "ski-causal-band-max": dict(kind="ski", causal=True, band=MAX_SIZE),
    "ski-rank-2": dict(kind="ski", rank=2),
    "ski-rank-max": dict(kind="ski", rank=MAX_SIZE),
    "ski-decay-1": dict(kind="ski", decay=1.0),
    "tno-decay-1": dict(kind="tno", decay=1.0),
    "tno-decay-tiny": dict(kind="tno", decay=1e-6),
    "tno-rpe-layers-0": dict(kind="tno", rpe_layers=0, rpe_dim=1),
    "fd-cosine-causal": dict(kind="fd", causal=True, fd_input="cosine"),
    "togeipi-one-head": dict(kind="togeipi", heads=1),
    "togeipi-head-per-channel": dict(kind="togeipi", heads=DIM, causal=True),
    "togeipi-dense-gelu": dict(kind="togeipi", sparse_density=1.0, psf_activation="gelu"),
    "togeipi-sparsest": dict(kind="togeipi", sparse_density=1e-6, sparse_l1=1.0),
}
# settings a training step cannot reach on this machine (SKI's band backward at m = MAX_SIZE
# asks for terabytes); an upload can still hold them: made by build_model, untrained
UNTRAINED = ("ski-band-max", "ski-causal-band-max")
TRACEBACK_WORDS = ("Traceback", "Error:", 'File "')


def tiny_model(operator: dict) -> ModelConfig:
    """One layer of DIM channels with these operator settings (togeipi: 2 heads, n <= 64)."""
    if operator["kind"] == "togeipi":
        operator = {"heads": 2, "max_length": SEQ_LEN} | operator
    return ModelConfig(dim=DIM, layers=1, expand_ratio=1, operator=OperatorConfig(**operator))


def one_step(operator: dict):
    """One step of training on digits at a tiny size: the run's result (model, history)."""
    task = get_task("digits")
    model = tiny_model(operator)
    config = TrainConfig(task="digits", steps=1, batch_size=4, warmup=0, eval_every=1,
                         eval_batches=1, eval_batch_size=4, checkpoint_every=0, device="cpu",
                         model=model_for_task(model, task))
    return train(config, task, command="python -m tnn_core.training --task digits --steps 1")


def checkpoint_bytes(model, history) -> bytes:
    """``model`` saved as the CLI saves a digits run."""
    with tempfile.TemporaryDirectory() as folder:
        return save(Path(folder) / "made.safetensors", model, get_task("digits").info(),
                    history).read_bytes()


def assert_no_failure(at: AppTest, page: str) -> None:
    """No exception; every error is a sentence, never a traceback."""
    assert not at.exception, f"{page}: {[e.message for e in at.exception]}"
    for error in at.error:
        assert not any(word in error.value for word in TRACEBACK_WORDS), (page, error.value)


def ablate(at: AppTest) -> None:
    """Inspect's band ablation, where it is offered, run to its end (a background job)."""
    if not [t for t in at.toggle if t.key == "atlas_ablation"]:
        assert any("no per-channel band" in c.value for c in at.caption), "no ablation, no why"
        return
    at.toggle(key="atlas_ablation").set_value(True).run()
    end = time.monotonic() + 120
    while [b for b in at.button if b.key == "ablation_stop"] and time.monotonic() < end:
        time.sleep(0.5)
        at.run()
    assert_no_failure(at, "Inspect's band ablation")
    assert [m for m in at.metric if m.label == "Every layer, band only"]


def open_everywhere(data: bytes, name: str) -> AppTest:
    """Upload ``data`` on Inspect, open it there, then in Decomposition and Compress."""
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.switch_page("pages/inspect.py").run()
    at.file_uploader(key="upload").upload(f"{name}.safetensors", data,
                                          "application/octet-stream")
    at.run()
    assert_no_failure(at, "Inspect")
    assert at.selectbox(key="checkpoint").value.startswith("upload:")
    assert [h for h in at.subheader if h.value == "Kernel atlas"], "Inspect: no atlas"
    ablate(at)
    at.switch_page("pages/decomposition.py").run()
    at.selectbox(key="source").set_value("checkpoint").run()
    assert_no_failure(at, "Decomposition")
    at.switch_page("pages/compress.py").run()
    assert_no_failure(at, "Compress")
    return at


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_a_trained_checkpoint_opens_in_every_view(name):
    if name in UNTRAINED:
        model = build_model(model_for_task(tiny_model(CASES[name]), get_task("digits")))
        open_everywhere(checkpoint_bytes(model, None), name)
    else:
        run = one_step(CASES[name])
        open_everywhere(checkpoint_bytes(run.model, run.history), name)


@pytest.mark.slow
def test_a_recurrent_conversion_opens_in_every_view():
    source = one_step(dict(kind="tno", causal=True)).model
    converted, _ = convert(source, CompressionPlan.recurrent(1, state=4), SEQ_LEN)
    open_everywhere(checkpoint_bytes(converted, None), "ssm")
