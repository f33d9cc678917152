"""The settings of an authors' mixer that its tensors do not hold, and where each came from.

A tnn-pytorch or ski-tnn state dict holds the RPE's weights and γ, but not whether the
model was causal, the RPE's and the kernel's activations, the RPE's residual links, what
the RPE reads (``par_type``), which decay γ is (fixed under ``use_decay``, learned under
``use_multi_decay`` with a floor λ), the heads, nor the length it was trained at. Each
comes, in order, from the checkpoint's saved training arguments (fairseq's ``args`` or
``cfg.model``), else from a flag of ``tnn_core.convert``, else from the defaults the
official README recommends (causal False, RPE ReLU, 1 head, ``use_decay`` with γ = 0.99,
or 0.9 below length 100). A flag that contradicts the saved arguments is refused: the
file's own record wins, and the user is told.

``resolve`` returns the settings and, per field, "saved args", "flag" or "default", which
the converted checkpoint records in its lineage.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from tnn_core.checks import check_choice, check_int, check_number, short_repr

__all__ = ["ImportSettings", "MIXERS", "DECAYS", "AUTHOR_ACTIVATIONS", "resolve", "settings_record"]

MIXERS = ("tno", "tno_fd")  # ski-tnn's args.tno_type for the mixers the lab computes exactly
DECAYS = ("none", "fixed", "multi")  # no γ; use_decay (γ fixed); use_multi_decay (γ learned)
# their get_activation_fn's names -> the lab's (tnn_core.core.rpe.ACTIVATIONS); any other
# name is the identity in their code ("none" is their default act_type)
AUTHOR_ACTIVATIONS = {"relu": "relu", "silu": "silu", "gelu": "gelu", "elu": "elu",
                      "sigmoid": "sigmoid", "exp": "exp", "leak": "leaky_relu",
                      "1+elu": "one_plus_elu", "2+elu": "two_plus_elu", "none": "identity"}
MAX_LENGTH = 65_536
# the saved argument names that set each field (fairseq's Namespace / cfg.model)
_SAVED_NAMES = {
    "causal": ("causal",), "mixer": ("tno_type",), "rpe_act": ("rpe_act",),
    "act_type": ("act_type",), "residual": ("residual",), "par_type": ("par_type",),
    "gamma": ("gamma",), "heads": ("decoder_attention_heads", "encoder_attention_heads"),
    "normalize": ("normalize",), "norm_type": ("norm_type",),
    "length": ("tokens_per_sample", "max_target_positions", "max_positions"),
}


@dataclass(frozen=True)
class ImportSettings:
    """What the authors' constructor was given, as far as the lab needs it."""

    causal: bool = False  # README: False (True for a language model)
    mixer: str = "tno"  # ski-tnn tno_type: "tno" (both codes' Tno) or "tno_fd" (TnoFD)
    rpe_act: str = "relu"  # the RPE MLP's activation (rpe_act)
    act_type: str = "none"  # applied to every kernel value after the decay (act_type)
    residual: bool = False  # the RPE's hidden layers add their input (residual)
    par_type: int = 1  # what the RPE reads: 1 the lag k, 2 k/(n-1), 3 exp(k/(n-1))
    decay: str = "fixed"  # none, fixed (use_decay) or multi (use_multi_decay)
    gamma: float = 0.99  # the floor λ of a multi-decay, λ + (1 - λ) sigmoid(γ)
    heads: int = 1  # num_heads: the channel layout of TnoFD's two halves
    normalize: bool = False  # Gtu's normalize: each row divided by its sum (refused)
    norm_type: str = "simplermsnorm"  # the RPE's norm (others hold weights: refused)
    length: int = 512  # the length its kernels open at (the training length)

    def __post_init__(self):
        for name in ("causal", "residual", "normalize"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False; got "
                                 f"{short_repr(getattr(self, name))}")
        check_choice("mixer", self.mixer, MIXERS)
        check_choice("decay", self.decay, DECAYS)
        check_int("par_type", self.par_type, 1, 3)
        check_number("gamma", self.gamma, 0, 1)
        check_int("heads", self.heads, 1, 4096)
        check_int("length", self.length, 1, MAX_LENGTH)
        for name in ("rpe_act", "act_type", "norm_type"):
            if not isinstance(getattr(self, name), str) or len(getattr(self, name)) > 40:
                raise ValueError(f"{name} must be a short string; got "
                                 f"{short_repr(getattr(self, name))}")

    def lab_activation(self, name: str) -> str:
        """The lab's name of their activation ``rpe_act`` or ``act_type``."""
        return AUTHOR_ACTIVATIONS.get(getattr(self, name), "identity")


def _saved_value(saved: dict, field: str):
    """The saved argument for ``field``, or None. ``use_decay``/``use_multi_decay`` make
    ``decay``; a saved ``par_type`` may be a string ("1")."""
    if field == "decay":
        if saved.get("use_multi_decay") is True:
            return "multi"
        if "use_decay" in saved or "use_multi_decay" in saved:
            return "fixed" if saved.get("use_decay") is True else "none"
        return None
    for name in _SAVED_NAMES.get(field, ()):
        value = saved.get(name)
        if value is not None:
            if field in ("par_type", "heads", "length") and isinstance(value, str) \
                    and value.isdigit():
                return int(value)
            return value
    return None


def resolve(saved: dict, flags: dict) -> tuple[ImportSettings, dict[str, str]]:
    """The settings from the saved arguments, then the flags (a dict of field -> value,
    None for unset), then the README's defaults; and where each came from.

    ValueError when a flag contradicts the saved arguments, or a value is out of range."""
    unknown = sorted(set(flags) - {f.name for f in fields(ImportSettings)})
    if unknown:
        raise ValueError(f"unknown import settings {unknown}; allowed: "
                         f"{[f.name for f in fields(ImportSettings)]}")
    values, origin = {}, {}
    for f in fields(ImportSettings):
        stored, given = _saved_value(saved, f.name), flags.get(f.name)
        if stored is not None:
            if given is not None and given != stored:
                raise ValueError(f"--{f.name.replace('_', '-')} {short_repr(given)} contradicts "
                                 f"the checkpoint's saved training arguments, which say "
                                 f"{f.name} = {short_repr(stored)}; leave the flag out")
            values[f.name], origin[f.name] = stored, "saved args"
        elif given is not None:
            values[f.name], origin[f.name] = given, "flag"
        else:
            origin[f.name] = "default"
    if "gamma" not in values and values.get("length", 512) < 100:
        values["gamma"] = 0.9  # the README's λ below length 100
    return ImportSettings(**values), origin


def settings_record(settings: ImportSettings, origin: dict[str, str]) -> dict:
    """Every setting with its value and origin, for the converted checkpoint's lineage."""
    return {name: {"value": value, "from": origin[name]}
            for name, value in asdict(settings).items()}
