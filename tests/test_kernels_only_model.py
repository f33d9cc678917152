"""A checkpoint of token mixers alone (``models.MixerStack``, task "kernels"): what
``tnn_core.convert`` writes for a model whose other parts are not the lab's (issue 36)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch

from tests.kernels_only import kernels_only_bytes, kernels_only_model
from tnn_core.analysis.kernel_arrays import kernel_arrays, npz_bytes
from tnn_core.core.toeplitz import dense
from tnn_core.models import ModelConfig, build_model
from tnn_core.operators import OperatorConfig
from tnn_core.training import checkpoint
from tnn_core.training.checkpoint_header import CheckpointError
from tnn_core.training.tasks import is_kernels_only, kernels_only_info, task_from_info


@pytest.mark.parametrize("causal,kind", [(True, "tno"), (False, "tno"), (False, "fd")])
def test_it_round_trips_and_keeps_every_kernel(causal, kind):
    model = kernels_only_model(layers=3, dim=5, causal=causal, kind=kind)
    data = kernels_only_bytes(layers=3, dim=5, causal=causal, kind=kind, n=33)
    loaded, info = checkpoint.load_bytes(data)
    assert is_kernels_only(info.task) and info.task["settings"] == {"seq_len": 33}
    assert info.history["lineage"]["source"]["name"] == "tnn_stack.pt"
    for ours, theirs in zip(loaded.operators(), model.operators(), strict=True):
        assert torch.equal(ours.kernel(9), theirs.kernel(9))


def test_it_maps_no_tokens_and_has_no_task():
    model = kernels_only_model()
    with pytest.raises(ValueError, match="token mixers only"):
        model(torch.zeros(1, 4, dtype=torch.long))
    info = kernels_only_info(64, {"format": "tnn-pytorch"})
    with pytest.raises(ValueError, match="imported from tnn-pytorch"):
        task_from_info(info)


def test_its_config_needs_expand_ratio_one():
    with pytest.raises(ValueError, match="expand_ratio must be 1"):
        ModelConfig(task="kernels", dim=4, expand_ratio=3)
    config = ModelConfig(task="kernels", dim=4, expand_ratio=1, layers=2,
                         operator=OperatorConfig(causal=False))
    assert ModelConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    assert "vocab_size" not in config.to_dict()


def _with_task(task: dict) -> bytes:
    model = build_model(ModelConfig(task="kernels", dim=3, expand_ratio=1, layers=1))
    return checkpoint.to_bytes(model, task)


@pytest.mark.parametrize("task,says", [
    ({"name": "kernels", "settings": {"seq_len": 0}}, "seq_len must be an integer in"),
    ({"name": "kernels", "settings": {"seq_len": 10**9}}, "seq_len must be an integer in"),
    ({"name": "kernels", "settings": {"seq_len": 8, "x": 1}}, "settings must be"),
    ({"name": "kernels", "settings": {"seq_len": 8}, "source": {"name": 3}}, "source must be"),
    ({"name": "kernels", "settings": {"seq_len": 8}, "source": {"name": "x" * 400}},
     "source must be"),
])
def test_a_bad_kernels_record_is_one_sentence(task, says):
    with pytest.raises(CheckpointError, match=says):
        checkpoint.load_bytes(_with_task(task))


def test_a_kernels_record_on_a_full_model_is_refused():
    full = build_model(ModelConfig(task="lm", vocab_size=5, dim=4, layers=1,
                                   operator=OperatorConfig(causal=True)))
    data = checkpoint.to_bytes(full, kernels_only_info(8, {}))
    with pytest.raises(CheckpointError, match="task is 'lm'"):
        checkpoint.load_bytes(data)


@pytest.mark.parametrize("n", [1, 2, 7, 13])
def test_kernel_arrays_are_each_layers_kernel(n):
    model = kernels_only_model(layers=2, dim=3, causal=True).double()
    arrays = np.load(io.BytesIO(npz_bytes(kernel_arrays(model.operators(), n))))
    assert sorted(arrays.files) == ["layer0", "layer1"]
    for i, op in enumerate(model.operators()):
        t = arrays[f"layer{i}"]
        assert t.shape == (3, 2 * n - 1) and t.dtype == np.float64
        assert np.array_equal(t, op.kernel(n).detach().numpy())
        assert not t[:, : n - 1].any()  # causal: exact zeros at negative lags
        x = torch.randn(n, dtype=torch.float64)
        y = op(x[None, :, None].expand(1, n, 3).contiguous())[0, :, 0]
        assert torch.allclose(dense(torch.from_numpy(t))[0] @ x, y.detach(), atol=1e-12)


def test_kernel_arrays_refuse_before_computing():
    model = kernels_only_model(layers=1, dim=4)
    with pytest.raises(ValueError, match="n must be an integer"):
        kernel_arrays(model.operators(), 0)
    with pytest.raises(ValueError, match="choose a smaller n"):
        kernel_arrays(model.operators() * 100, 2**19)
