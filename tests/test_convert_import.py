"""tnn_core.convert: the authors' checkpoints as the lab's kernels, exactly (issue 36).

Each source is a state dict in the authors' key layout with random weights, saved with
``torch.save``; the lab's kernels are compared with ``authors_layout``'s independent
float64 evaluation of their formulas at n = 1, 2, 7 and 512 (float32 weights, so 1e-5
relative to the largest coefficient)."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
import torch

from tests.authors_layout import fd_kernel, rpe_state, tnn_stack_state, tno_kernel
from tnn_core.convert import cli
from tnn_core.convert.importer import import_foreign
from tnn_core.convert.reader import read_foreign
from tnn_core.training import checkpoint
from tnn_core.training.tasks import is_kernels_only

LENGTHS = (1, 2, 7, 512)


def _close(ours: torch.Tensor, theirs: np.ndarray, tol: float = 1e-5) -> None:
    ours = ours.double().numpy()
    scale = max(np.abs(theirs).max(), 1e-30)
    assert ours.shape == theirs.shape
    assert np.abs(ours - theirs).max() <= tol * scale, np.abs(ours - theirs).max() / scale


def _convert(tmp_path, state, *flags, name="src.pt", legacy=False) -> tuple:
    src, out = tmp_path / name, tmp_path / "out.safetensors"
    torch.save(state, src, _use_new_zipfile_serialization=not legacy)
    assert cli.main([str(src), "--out", str(out), *flags]) == 0
    model, info = checkpoint.load(out)
    return model, info


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("rpe_layers", [1, 3])
@pytest.mark.parametrize("gamma", [None, 0.9])
def test_a_tnn_pytorch_stack_opens_exactly(tmp_path, causal, rpe_layers, gamma):
    state = tnn_stack_state(seed=rpe_layers, layers=2, dim=4, rpe_layers=rpe_layers,
                            gamma=gamma)
    flags = ["--causal" if causal else "--no-causal"]
    model, info = _convert(tmp_path, state, *flags, legacy=rpe_layers == 3)
    assert is_kernels_only(info.task) and info.model_config.layers == 2
    assert info.task["source"]["name"] == "src.pt"
    assert info.history["lineage"]["source"]["name"] == "src.pt"
    for i, op in enumerate(model.operators()):
        for n in LENGTHS:
            theirs = tno_kernel(state, f"{i}.token_mixer.toep.", n, causal,
                                decay="fixed" if gamma else "none")
            _close(op.kernel(n).detach(), theirs)


@pytest.mark.parametrize("par_type,causal", [(1, False), (2, False), (2, True), (3, True)])
@pytest.mark.parametrize("act_type,residual,act", [("none", False, "relu"),
                                                   ("elu", True, "silu"),
                                                   ("1+elu", False, "gelu")])
def test_settings_a_state_dict_does_not_hold_come_from_flags(tmp_path, par_type, causal,
                                                              act_type, residual, act):
    state = tnn_stack_state(seed=7, layers=1, dim=2, heads=2, rpe_layers=2, multi=True)
    flags = ["--causal" if causal else "--no-causal", "--par-type", str(par_type),
             "--act-type", act_type, "--rpe-act", act, "--decay", "multi", "--gamma", "0.9",
             "--residual" if residual else "--no-residual"]
    model, info = _convert(tmp_path, state, *flags)
    record = info.history["lineage"]["imported"]["settings"]
    assert record["par_type"] == {"value": par_type, "from": "flag"}
    assert record["heads"]["from"] == "default"
    op = model.operators()[0]
    for n in LENGTHS:
        theirs = tno_kernel(state, "0.token_mixer.toep.", n, causal, par_type, "multi", 0.9,
                            act, act_type, residual)
        _close(op.kernel(n).detach(), theirs)


def _fairseq(tmp_path, args: argparse.Namespace, layers: dict) -> dict:
    model = {"decoder.embed_tokens.weight": torch.randn(50, 8)}
    for i, tensors in layers.items():
        model |= {f"decoder.layers.{i}.self_attn.gtu.toep.{k}": v for k, v in tensors.items()}
    return {"model": model, "args": args, "optimizer_history": [{"lr": 1e-3}],
            "last_optimizer_state": {"state": {0: {"exp_avg": torch.zeros(1000)}}}}


@pytest.mark.parametrize("causal", [True, False])
def test_a_fairseq_tno_fd_uses_its_saved_args_and_power_of_two_grid(tmp_path, causal):
    heads, d = 2, 3
    rng = np.random.default_rng(3)
    out_rows = heads * d * (1 if causal else 2)
    layers = {i: {k.removeprefix("x."): v for k, v in
                  rpe_state(rng, "x.", 8, 2, out_rows, bias=False).items()} for i in range(2)}
    args = argparse.Namespace(causal=causal, tno_type="tno_fd", rpe_act="silu",
                              residual=False, decoder_attention_heads=heads,
                              tokens_per_sample=100, norm_type="simplermsnorm")
    model, info = _convert(tmp_path, _fairseq(tmp_path, args, layers), name="checkpoint_best.pt")
    assert info.task["settings"] == {"seq_len": 100}
    record = info.history["lineage"]["imported"]
    assert record["module"] == "TnoFD" and record["settings"]["causal"]["from"] == "saved args"
    assert info.model_config.dim == heads * d and info.model_config.operator.kind == "fd"
    for i, op in enumerate(model.operators()):
        state = {f"p.{k}": v for k, v in layers[i].items()}
        for n in (1, 2, 7, 100, 512):
            _close(op.kernel(n).detach(), fd_kernel(state, "p.", n, causal, heads, "silu"))


def test_a_flag_that_contradicts_the_saved_args_is_refused(tmp_path, capsys):
    rng = np.random.default_rng(0)
    layer = {k.removeprefix("x."): v for k, v in rpe_state(rng, "x.", 8, 1, 4).items()}
    src, out = tmp_path / "c.pt", tmp_path / "out.safetensors"
    torch.save(_fairseq(tmp_path, argparse.Namespace(causal=True), {0: layer}), src)
    assert cli.main([str(src), "--out", str(out), "--no-causal"]) == 2
    assert "contradicts the checkpoint's saved training arguments" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("extra,module", [({"inducing": torch.zeros(8)}, "SKITno"),
                                          ({"alphas": torch.zeros(9)}, "SKITnoInvTime"),
                                          ({"coeffs": torch.zeros(4, 9)}, "TnoFDNoRPE")])
def test_a_mixer_the_lab_cannot_reproduce_is_refused_by_name(tmp_path, capsys, extra, module):
    rng = np.random.default_rng(0)
    layer = {k.removeprefix("x."): v for k, v in rpe_state(rng, "x.", 8, 1, 4).items()} | extra
    src, out = tmp_path / "s.pt", tmp_path / "out.safetensors"
    torch.save(_fairseq(tmp_path, argparse.Namespace(tno_type="skitno"), {0: layer}), src)
    assert cli.main([str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and module in err and err.count("\n") == 1
    assert not out.exists()


def test_gamma_outside_a_fixed_decay_asks_for_multi(tmp_path):
    state = tnn_stack_state(seed=1, layers=1, dim=2, multi=True)
    src = tmp_path / "m.pt"
    torch.save(state, src)
    foreign = read_foreign(src, str(src))
    with pytest.raises(ValueError, match="--decay multi"):
        import_foreign(foreign, {}, "m.pt")


def test_no_mixer_is_one_sentence(tmp_path, capsys):
    src, out = tmp_path / "x.pt", tmp_path / "o.safetensors"
    torch.save({"weight": torch.zeros(3)}, src)
    assert cli.main([str(src), "--out", str(out)]) == 2
    assert "no Toeplitz mixer found" in capsys.readouterr().err


def test_the_cli_prints_every_setting_with_its_origin(tmp_path, capsys):
    state = tnn_stack_state(seed=2, layers=3, dim=2)
    src, out = tmp_path / "t.pt", tmp_path / "o.safetensors"
    torch.save(state, src)
    assert cli.main([str(src), "--out", str(out), "--causal", "--length", "64"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["layers"] == 3 and line["channels"] == 6 and line["module"] == "Tno"
    assert line["settings"]["causal"] == {"value": True, "from": "flag"}
    assert line["settings"]["gamma"] == {"value": 0.9, "from": "default"}  # README below 100
    assert line["settings"]["decay"] == {"value": "fixed", "from": "default"}


def test_a_tensor_of_the_wrong_shape_is_one_sentence(tmp_path, capsys):
    state = tnn_stack_state(seed=4, layers=2, dim=2, rpe_layers=2)
    state["1.token_mixer.toep.rpe.layers.1.2.weight"] = torch.zeros(16, 17)
    src, out = tmp_path / "w.pt", tmp_path / "o.safetensors"
    torch.save(state, src)
    assert cli.main([str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "1.token_mixer.toep." in err and "(16, 17)" in err and "Traceback" not in err


def test_a_fairseq_cfg_encoder_with_multi_decay(tmp_path):
    """A bidirectional model's mixers under encoder.sentence_encoder.layers.{i}., its
    settings in cfg["model"] (use_multi_decay, par_type 2, 2 RPE layers)."""
    rng = np.random.default_rng(5)
    model = {}
    for i in range(2):
        p = f"encoder.sentence_encoder.layers.{i}.self_attn.gtu.toep."
        model |= rpe_state(rng, p, 8, 2, 6)
        model[f"{p}gamma"] = torch.tensor(rng.normal(0, 1, (2, 1, 3)), dtype=torch.float32)
    cfg = {"model": {"causal": False, "use_decay": False, "use_multi_decay": True,
                     "gamma": 0.95, "par_type": 2, "tno_type": "tno",
                     "encoder_attention_heads": 2, "tokens_per_sample": 64},
           "task": {"_name": "masked_lm"}}
    model_out, info = _convert(tmp_path, {"model": model, "cfg": cfg}, name="roberta.pt")
    record = info.history["lineage"]["imported"]["settings"]
    assert record["decay"] == {"value": "multi", "from": "saved args"}
    assert info.task["settings"] == {"seq_len": 64}
    for i, op in enumerate(model_out.operators()):
        for n in LENGTHS:
            theirs = tno_kernel(model, f"encoder.sentence_encoder.layers.{i}.self_attn.gtu."
                                       f"toep.", n, False, 2, "multi", 0.95)
            _close(op.kernel(n).detach(), theirs)


def test_a_safetensors_state_dict_converts(tmp_path):
    from safetensors.torch import save_file
    state = tnn_stack_state(seed=9, layers=1, dim=2, rpe_layers=1, gamma=0.99)
    src, out = tmp_path / "w.safetensors", tmp_path / "o.safetensors"
    save_file(state, str(src))
    assert cli.main([str(src), "--out", str(out), "--causal"]) == 0
    model, _ = checkpoint.load(out)
    _close(model.operators()[0].kernel(512).detach(),
           tno_kernel(state, "0.token_mixer.toep.", 512, True))


@pytest.mark.parametrize("causal", [True, False])
def test_report_kernels_gives_the_official_coefficients(tmp_path, causal):
    """Done-when of issue 36: a torch.save'd TnnLayer stack, converted, and
    ``report --kernels N`` returns their Tno's coefficients to 1e-5."""
    from tnn_core.report.cli import main as report_main
    state = tnn_stack_state(seed=11, layers=2, dim=4, rpe_layers=3, gamma=0.99)
    _, _ = _convert(tmp_path, state, "--causal" if causal else "--no-causal")
    npz = tmp_path / "kernels.npz"
    assert report_main([str(tmp_path / "out.safetensors"), "--kernels", "512",
                        "--out", str(npz)]) == 0
    arrays = np.load(npz)
    for i in range(2):
        _close(torch.from_numpy(arrays[f"layer{i}"]),
               tno_kernel(state, f"{i}.token_mixer.toep.", 512, causal))
