"""Finding the authors' token mixers in a state dict, and their tensors in the lab's names.

Recognised by parameter names and shapes (``../shared/RECIPES.md``, "The authors'
checkpoints"). A mixer is a group of tensors under one prefix that holds
``rpe.pos_proj.weight``: tnn-pytorch's ``Tno`` (``{i}.token_mixer.toep.`` in a stack of
``TnnLayer``, ``toep.`` in a ``Gtu``), ski-tnn's ``Tno`` and ``TnoFD``
(``decoder.layers.{i}.self_attn.gtu.toep.`` in a language model,
``encoder.sentence_encoder.layers.{i}.…toep.`` in a bidirectional one). The layer order
is the order of the integers in the prefixes.

Their tensors, and the lab's (``operators.tno.TNO``, ``operators.fd.FD``, ``core.rpe.RpeMLP``):

    rpe.pos_proj.{weight,bias}       [e, 1], [e]      rpe.inp
    rpe.layers.{j}.2.{weight,bias}   [e, e], [e]      rpe.hidden.{j} (the .0 and .1 are the
                                                      parameter-free norm and activation)
    rpe.out.2.{weight,bias}          [D, e], [D]      rpe.out (TnoFD bidirectional: [2D, e],
                                                      per head h its real d rows, then its
                                                      imaginary d: the lab's real D, then
                                                      imaginary D, reordered)
    gamma                            [h, 1, d]        decay_rates [D] (use_decay) or
                                                      decay_logits [D] (use_multi_decay)

with D = h·d channels, channel c = head·d + j in both layouts. A bias-free RPE (``bias=False``)
gets zero biases: the same function.

Mixers the lab does not compute exactly are refused by name, with the reason: ski-tnn's
``SKITno`` and ``SKITnoInvTime`` (their released low-rank path differs from the paper in
three ways, RECIPES), ``TnoFDNoRPE`` (a free frequency response the lab has no operator
for), an RPE whose norm holds weights, and ``normalize`` (each row divided by its sum: no
longer a Toeplitz matrix).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from tnn_core.convert.settings import ImportSettings
from tnn_core.operators import OperatorConfig

__all__ = ["ForeignMixer", "NotImportable", "find_mixers", "lab_mixer"]

_RPE_MARK = "rpe.pos_proj.weight"
_HIDDEN = re.compile(r"rpe\.layers\.(\d+)\.(\d+)\.(weight|bias|scale|offset)$")
_REFUSED = {  # a tensor name under a mixer's prefix -> (their module, why the lab refuses it)
    "inducing": ("SKITno", "its released low-rank path differs from the paper in three ways "
                 "(interpolation weights on the wrong neighbour, positions past the last "
                 "inducing point, a row decay that leaves W A Wᵀ a 4×4 corner), so the lab "
                 "cannot show its matrix as theirs"),
    "alphas": ("SKITnoInvTime", "its released low-rank path differs from the paper (see "
               "SKITno) and keeps knots apart from its inducing points"),
    "conv_kernel": ("SKITno", "its released low-rank path differs from the paper in three ways"),
    "coeffs": ("TnoFDNoRPE", "it holds a free frequency response, which no lab operator holds"),
    "coeffs_re": ("TnoFDNoRPE", "it holds a free frequency response, which no lab operator "
                  "holds"),
    "dc": ("TnoFDNoRPE", "it holds a free frequency response, which no lab operator holds"),
}


class NotImportable(ValueError):
    """A state dict the lab cannot import exactly; the message names the module and why."""


@dataclass(frozen=True)
class ForeignMixer:
    """One of the authors' mixers: its prefix in the state dict and its tensors under it."""

    prefix: str  # e.g. "decoder.layers.3.self_attn.gtu.toep."
    tensors: dict  # name under the prefix -> tensor


def _order(prefix: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"(?:^|\.)(\d+)(?=\.)", prefix))


def find_mixers(tensors: dict[str, torch.Tensor]) -> list[ForeignMixer]:
    """The mixers of a state dict in layer order; NotImportable when there is none, or when
    a mixer the lab refuses is found (naming it)."""
    for name in tensors:
        last = name.rsplit(".", 1)[-1]
        if last in _REFUSED and (name.endswith("toep." + last) or name == last):
            module, why = _REFUSED[last]
            raise NotImportable(f"{name}: this is ski-tnn's {module}; the lab does not import "
                               f"it: {why}")
    prefixes = sorted({name[: -len(_RPE_MARK)] for name in tensors if name.endswith(_RPE_MARK)},
                      key=lambda p: (_order(p), p))
    if not prefixes:
        raise NotImportable("no Toeplitz mixer found: no tensor ends in 'rpe.pos_proj.weight' "
                           "(tnn-pytorch's and ski-tnn's Tno and TnoFD hold one)")
    return [ForeignMixer(p, {name[len(p):]: t for name, t in tensors.items()
                             if name.startswith(p) and _mixer_name(name[len(p):])})
            for p in prefixes]


def _mixer_name(rest: str) -> bool:
    return rest.startswith("rpe.") or rest == "gamma"


def _rpe_tensors(mixer: ForeignMixer) -> tuple[dict, int, int]:
    """The RPE in the lab's names (``rpe.inp``, ``rpe.hidden.{j}``, ``rpe.out``), its hidden
    layer count, and its output rows."""
    t, where = mixer.tensors, mixer.prefix
    out: dict = {}
    layers = set()
    for name in t:
        if name in ("gamma",) or name.startswith(("rpe.pos_proj.", "rpe.out.2.")):
            continue
        match = _HIDDEN.fullmatch(name)
        if not match or match.group(2) != "2" or match.group(3) not in ("weight", "bias"):
            raise NotImportable(f"{where}{name}: an RPE tensor the lab does not have (an RPE "
                               f"norm with weights, or an unknown layer); the lab's RPE norm "
                               f"is simplermsnorm, which holds none")
        layers.add(int(match.group(1)))
    if layers != set(range(len(layers))):
        raise NotImportable(f"{where}rpe.layers: hidden layers {sorted(layers)} are not "
                           f"0..{len(layers) - 1}")
    pairs = [("rpe.pos_proj", "rpe.inp")] + [(f"rpe.layers.{j}.2", f"rpe.hidden.{j}")
                                              for j in range(len(layers))]
    pairs.append(("rpe.out.2", "rpe.out"))
    for theirs, ours in pairs:
        weight = t.get(f"{theirs}.weight")
        if weight is None or weight.dim() != 2:
            raise NotImportable(f"{where}{theirs}.weight is missing or not a matrix")
        out[f"{ours}.weight"] = weight
        out[f"{ours}.bias"] = t.get(f"{theirs}.bias", weight.new_zeros(weight.shape[0]))
    return out, len(layers), out["rpe.out.weight"].shape[0]


def _decay(mixer: ForeignMixer, settings: ImportSettings, origin: dict, channels: int):
    """(decay_mode, λ, {lab name: tensor}) for the mixer's γ."""
    gamma = mixer.tensors.get("gamma")
    mode = settings.decay
    if gamma is None:
        if mode != "none" and origin.get("decay") != "default":
            raise NotImportable(f"{mixer.prefix}gamma is missing, but the settings say decay "
                               f"{mode!r} ({origin['decay']})")
        return "scalar", 1.0, {}
    if mode == "none":
        raise NotImportable(f"{mixer.prefix}gamma is present, but the settings say no decay "
                           f"({origin.get('decay')}); give --decay fixed or multi")
    if gamma.numel() != channels or gamma.dim() != 3 or gamma.shape[1] != 1:
        raise NotImportable(f"{mixer.prefix}gamma has shape {tuple(gamma.shape)}; a Tno of "
                           f"{channels} channels holds [h, 1, d] with h·d = {channels}")
    flat = gamma.reshape(channels)  # (D,) channel head·d + j
    if mode == "multi":
        return "learned", settings.gamma, {"decay_logits": flat}
    if not bool(((flat > 0) & (flat <= 1)).all()):
        raise NotImportable(f"{mixer.prefix}gamma holds values outside (0, 1] "
                           f"({float(flat.min()):.4g} to {float(flat.max()):.4g}): not a fixed "
                           f"decay (use_decay); if it was learned (use_multi_decay) give "
                           f"--decay multi and its --gamma")
    return "channel", 1.0, {"decay_rates": flat}


def lab_mixer(mixer: ForeignMixer, settings: ImportSettings,
              origin: dict) -> tuple[OperatorConfig, int, dict]:
    """(the lab's operator config, its channels D, its state dict) computing exactly what
    the authors' mixer computes; NotImportable naming what cannot be imported."""
    if settings.normalize:
        raise NotImportable("normalize = True divides each output by its row's sum: the map "
                           "is no longer a Toeplitz matrix, which is all the lab shows")
    if settings.norm_type != "simplermsnorm":
        raise NotImportable(f"norm_type {settings.norm_type!r}: the lab's RPE norm is "
                           f"simplermsnorm (no weights)")
    state, hidden, rows = _rpe_tensors(mixer)
    common = dict(causal=settings.causal, rpe_dim=state["rpe.inp.weight"].shape[0],
                  rpe_layers=hidden, activation=settings.lab_activation("rpe_act"),
                  rpe_residual=settings.residual)
    if settings.mixer == "tno_fd":
        if "gamma" in mixer.tensors:
            raise NotImportable(f"{mixer.prefix}gamma: a TnoFD holds no decay")
        channels = rows if settings.causal else _fd_halves(mixer, state, rows, settings.heads)
        config = OperatorConfig(kind="fd", fft_grid="power_of_two", **common)
        return config, channels, state
    if settings.par_type == 3 and not settings.causal:
        raise NotImportable("par_type 3 (exp(k/(n-1))) is causal only: the authors' Tno has "
                           "no negative lags for it")
    mode, floor, decay = _decay(mixer, settings, origin, rows)
    config = OperatorConfig(kind="tno", decay=floor, decay_mode=mode,
                            positions=("lag", "fraction", "exp_fraction")[settings.par_type - 1],
                            kernel_activation=settings.lab_activation("act_type"), **common)
    return config, rows, state | decay


def _fd_halves(mixer: ForeignMixer, state: dict, rows: int, heads: int) -> int:
    """Reorder a bidirectional TnoFD's output rows from per head [real d, imaginary d] to the
    lab's [real D, imaginary D]; return D."""
    if rows % (2 * heads):
        raise NotImportable(f"{mixer.prefix}rpe.out.2.weight has {rows} rows; a bidirectional "
                           f"TnoFD of {heads} heads holds 2·h·d")
    d = rows // (2 * heads)
    order = torch.arange(rows).reshape(heads, 2, d).transpose(0, 1).reshape(rows)  # (2D,)
    state["rpe.out.weight"] = state["rpe.out.weight"][order]
    state["rpe.out.bias"] = state["rpe.out.bias"][order]
    return rows // 2
