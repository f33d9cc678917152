"""Import a model trained with the authors' code as a Toeplitz Lab checkpoint of its kernels.

    python -m tnn_core.convert tnn_stack.pt --out tnn-import.safetensors --causal
    python -m tnn_core.convert checkpoint_best.pt --out lm.safetensors    # fairseq: args kept
    python -m tnn_core.convert weights.safetensors --out m.safetensors --decay multi --gamma 0.99

SRC is a ``torch.save`` file (zip or legacy) or a safetensors file holding a state dict, or
a training checkpoint dict (fairseq: ``model`` plus ``args`` or ``cfg``). It is read by
``reader.read_foreign``, which never runs code from the file. Recognised: tnn-pytorch's
``Tno`` (in a ``Gtu`` or ``TnnLayer``) and ski-tnn's ``Tno`` and ``TnoFD``; anything the
lab cannot compute exactly is refused with a sentence naming the module and why
(``mixers``).

The settings a state dict does not hold come from the checkpoint's saved arguments, else
from these flags, else from the official README's recommendations (``settings``). The
output holds the token mixers alone (``models.MixerStack``) and records the source's name
and SHA-256 and every setting used, with where it came from. It prints one JSON line: the
layers, channels, module and each setting with its origin. Exit status 0, or 2 with one
"error:" line on stderr (nothing is written).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from tnn_core.convert.importer import import_foreign, save_imported
from tnn_core.convert.reader import read_foreign
from tnn_core.convert.settings import AUTHOR_ACTIVATIONS, DECAYS, MIXERS
from tnn_core.files import exclusive_output
from tnn_core.training.answer import answer_text

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tnn_core.convert", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", help="the authors' checkpoint (.pt, .bin or .safetensors)")
    p.add_argument("--out", required=True, help="the Toeplitz Lab checkpoint to write")
    p.add_argument("--causal", action=argparse.BooleanOptionalAction, default=None,
                   help="a causal (language) model; README default: not causal")
    p.add_argument("--mixer", choices=MIXERS, help="ski-tnn's tno_type (default tno)")
    p.add_argument("--rpe-act", choices=sorted(AUTHOR_ACTIVATIONS),
                   help="the RPE's activation (default relu)")
    p.add_argument("--act-type", choices=sorted(AUTHOR_ACTIVATIONS),
                   help="applied to every kernel value after the decay (default none)")
    p.add_argument("--residual", action=argparse.BooleanOptionalAction, default=None,
                   help="the RPE's hidden layers add their input (default no)")
    p.add_argument("--par-type", type=int, choices=(1, 2, 3),
                   help="what the RPE reads: 1 the lag, 2 lag/(n-1), 3 exp(lag/(n-1))")
    p.add_argument("--decay", choices=DECAYS,
                   help="γ: none, fixed (use_decay, the default when γ is saved) or multi "
                        "(use_multi_decay, learned above the floor --gamma)")
    p.add_argument("--gamma", type=float, help="the floor λ of a multi-decay (default 0.99; "
                                               "0.9 below length 100)")
    p.add_argument("--heads", type=int, help="num_heads (TnoFD's channel layout; default 1)")
    p.add_argument("--normalize", action=argparse.BooleanOptionalAction, default=None,
                   help="Gtu's normalize (refused: not a Toeplitz map)")
    p.add_argument("--length", type=int, help="the training length its kernels open at "
                                              "(default 512)")
    return p


def _flags(args: argparse.Namespace) -> dict:
    return {name: getattr(args, name) for name in
            ("causal", "mixer", "rpe_act", "act_type", "residual", "par_type", "decay",
             "gamma", "heads", "normalize", "length") if getattr(args, name) is not None}


def _run(args: argparse.Namespace, command: str) -> dict:
    with exclusive_output(args.out, (args.source,)):
        foreign = read_foreign(Path(args.source), str(args.source))
        imported = import_foreign(foreign, _flags(args), Path(args.source).name, command)
        save_imported(imported, args.out)
    config = imported.model.config
    return {"out": str(args.out), "layers": config.layers, "channels": config.dim,
            "module": imported.modules[0], "container": foreign.container,
            "sha256": foreign.sha256, "settings": {
                name: {"value": getattr(imported.settings, name), "from": origin}
                for name, origin in imported.origin.items()}}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    command = shlex.join(["python", "-m", "tnn_core.convert", *argv])
    return answer_text(lambda: json.dumps(_run(args, command)) + "\n", "the import")
