"""A checkpoint's model card and the spectra of its Toeplitz matrices, layer by layer.

    python -m tnn_core.report checkpoints/charlm-tno.safetensors
    python -m tnn_core.report checkpoints/listops-ski.safetensors --format csv
    python -m tnn_core.report checkpoints/digits-fd.safetensors --format json --band 5 --rank 16

The card: the task and its data, the metric with its 95 % interval over the evaluation
set's sequences (``training.evaluate.evaluate_model``), the baselines, the model and
training config, and the lineage a converted checkpoint records. Then, per layer and
channel, the statistics of ``analysis.spectral_summary`` for the n × n Toeplitz matrix at
the training length n: stable and effective rank, the power-law tail of the spectrum,
the band's share of ||T||_F², and SKI's band + rank-r error. The band m and rank r are a
SKI layer's own, else DEFAULT_BAND and DEFAULT_RANK; ``band``/``rank`` (--band/--rank)
set them for every layer.

A channel's statistics take all n singular values of its n × n matrix (60 ms at n = 512
here: 12 layers of 192 channels took 102 s), so the spectra keep within SPECTRA_WORK
(layers × channels × n³): every channel, else as many evenly spaced channels in each
layer as fit, and the report says how many (``channels_reported``).

Library use (the Inspect page's download): ``report_for(model, info, task)`` gives a
``Report``; ``to_markdown`` (per layer the median and quartiles over channels), ``to_csv``
(a row per layer and channel) and ``to_json`` (everything) render it.

Letters: L layers, D channels, n length.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
from torch import nn

from tnn_core.analysis.spectral_summary import MAX_N, STATISTICS, ChannelSpectrum, layer_spectra
from tnn_core.checks import check_choice, check_int
from tnn_core.files import read_bounded
from tnn_core.operators.config import CHANNEL_KINDS
from tnn_core.training.answer import answer_text
from tnn_core.training.checkpoint import CheckpointInfo, load
from tnn_core.training.evaluate import evaluate_model, layer_kernels
from tnn_core.training.progress import progress_bar, say
from tnn_core.training.scores import format_metric
from tnn_core.training.tasks import Task, task_from_info
from tnn_core.training.tasks.charlm import MAX_TEXT_BYTES

__all__ = ["DEFAULT_BAND", "DEFAULT_RANK", "FORMATS", "SPECTRA_WORK", "ModelCard", "Spread",
           "LayerReport", "Report", "channels_reported", "check_reportable", "report_for",
           "lineage_markdown", "to_markdown", "to_csv", "to_json", "RENDERERS", "main"]

DEFAULT_BAND = 9  # m for a layer that is not SKI: a compression plan's default, and the atlas's
DEFAULT_RANK = 32  # r likewise
FORMATS = ("markdown", "csv", "json")
SPECTRA_WORK = 1e10  # layers x channels x n^3: ~5 s here; the shipped models need <= 6.4e9
RUN_FIELDS = ("command", "status", "device", "dtype", "world_size", "wall_s", "started",
              "torch", "version")  # what the history says about the training run


@dataclass(frozen=True)
class ModelCard:
    checkpoint: str  # the path it was loaded from
    task: str
    data: str  # task.describe(): what the sequences are
    train_length: int  # n
    metric_name: str
    metric: float
    higher_is_better: bool
    ci95: tuple[float, float]  # the metric's 95 % interval over the evaluation sequences
    sequences: int  # sequences in the evaluation set
    baselines: dict[str, float]  # "uniform" (chance), and "unigram" or "majority"
    model: dict  # ModelConfig.to_dict()
    parameters: int
    training: dict  # the history's train config, its model config left out
    run: dict  # RUN_FIELDS from the history: command, device, wall time, versions
    lineage: dict  # the history's lineage (``training.history``): source, plan, commands


@dataclass(frozen=True)
class Spread:
    """A statistic over a layer's channels: median and 25th/75th percentiles where defined."""

    median: float
    low: float
    high: float
    defined: int  # channels where the statistic is not nan


@dataclass(frozen=True)
class LayerReport:
    layer: int
    operator: str  # tno, ski or fd
    band: int  # m: lags |k| <= m//2, causal 0 <= k < m
    rank: int  # r inducing points
    channels: tuple[ChannelSpectrum, ...]  # [K]: the channels reported
    channel_ids: tuple[int, ...]  # [K] their indices among the layer's D
    width: int  # D, the layer's channels

    def spread(self, statistic: str) -> Spread:
        values = np.array([getattr(c, statistic) for c in self.channels], dtype=np.float64)
        values = values[~np.isnan(values)]
        if len(values) == 0:
            return Spread(math.nan, math.nan, math.nan, 0)
        low, median, high = np.percentile(values, [25, 50, 75])
        return Spread(float(median), float(low), float(high), len(values))


@dataclass(frozen=True)
class Report:
    card: ModelCard
    length: int  # n of the Toeplitz matrices: the training length
    causal: bool
    layers: tuple[LayerReport, ...]  # [L]


def _band_and_rank(model: nn.Module, n: int, band: int | None, rank: int | None
                   ) -> list[tuple[str, int, int]]:
    """(kind, m, r) per layer: the given m and r, else a SKI layer's own, else the defaults
    (at most 2n-2 and n); ValueError for an operator without Toeplitz kernels or an m or r
    that does not fit n."""
    if band is not None:
        check_int("band", band, 1, 2 * n - 2, "[1, 2n-2]")
    if rank is not None:
        check_int("rank", rank, 2, n, "[2, n]")
    chosen = []
    for layer in range(model.config.layers):
        operator = model.config.layer_operator(layer)
        if operator.kind not in CHANNEL_KINDS:
            raise ValueError(f"layer {layer}'s operator is {operator.kind}; a spectral report "
                             f"needs channel-wise Toeplitz layers ({', '.join(CHANNEL_KINDS)})")
        ski = operator.kind == "ski"
        m = band if band is not None else operator.band if ski else min(DEFAULT_BAND, 2 * n - 2)
        r = rank if rank is not None else operator.rank if ski else min(DEFAULT_RANK, n)
        where = f"layer {layer}'s own"
        check_int(f"{where} band", m, 1, 2 * n - 2, f"[1, 2n-2] at n = {n}")
        check_int(f"{where} rank", r, 2, n, f"[2, n] at n = {n}")
        chosen.append((operator.kind, m, r))
    return chosen


def check_reportable(model: nn.Module, n: int, band: int | None = None,
                     rank: int | None = None) -> list[tuple[str, int, int]]:
    """(kind, m, r) per layer at training length ``n``; ValueError naming what cannot be
    reported (a length above MAX_N, an operator without Toeplitz kernels, an m or r)."""
    check_int("the training length n", n, 2, MAX_N, "[2, MAX_N]")
    return _band_and_rank(model, n, band, rank)


def channels_reported(layers: int, channels: int, n: int) -> list[int]:
    """The channels of each layer whose spectra fit SPECTRA_WORK: all D when
    layers · D · n³ fits, else K = SPECTRA_WORK // (layers · n³) (at least 1) spaced
    evenly from the first to the last."""
    fits = int(SPECTRA_WORK // (layers * float(n) ** 3))
    if fits >= channels:
        return list(range(channels))
    return sorted({int(c) for c in np.linspace(0, channels - 1, max(1, fits)).round()})


def report_for(model: nn.Module, info: CheckpointInfo, task: Task, band: int | None = None,
               rank: int | None = None,
               on_channels: Callable[[int, int], None] | None = None) -> Report:
    """The ``Report`` of a loaded checkpoint (``checkpoint.load``) on its task
    (``tasks.task_from_info(info.task)``). band, rank: m and r for every layer (None: a
    SKI layer's own, else DEFAULT_BAND, DEFAULT_RANK). Refuses a training length above
    MAX_N before forming any n × n matrix. ``on_channels(done, total)``: called before the
    spectra and after each layer's, with the channels done so far."""
    n = task.seq_len
    plan = check_reportable(model, n, band, rank)
    causal = model.config.operator.causal
    evaluation = evaluate_model(model, task)
    kernels = layer_kernels(model, n)  # (L, D, 2n-1)
    L, D = kernels.shape[:2]
    chosen = channels_reported(L, D, n)
    layers = []
    for layer, (kind, m, r) in enumerate(plan):
        if on_channels is not None:
            on_channels(layer * len(chosen), L * len(chosen))
        spectra = layer_spectra(kernels[layer, chosen], m, r, causal)
        layers.append(LayerReport(layer, kind, m, r, tuple(spectra), tuple(chosen), D))
    if on_channels is not None:
        on_channels(L * len(chosen), L * len(chosen))
    history = info.history or {}
    card = ModelCard(
        checkpoint=info.source, task=task.name, data=task.describe(), train_length=n,
        metric_name=task.metric_name, metric=evaluation["metric"],
        higher_is_better=task.higher_is_better,
        ci95=(float(evaluation["ci95"][0]), float(evaluation["ci95"][1])),
        sequences=int(evaluation["sequences"]), baselines=dict(task.baselines()),
        model=model.config.to_dict(), parameters=sum(p.numel() for p in model.parameters()),
        training={k: v for k, v in (history.get("train_config") or {}).items() if k != "model"},
        run={k: history[k] for k in RUN_FIELDS if k in history},
        lineage=dict(info.history.get("lineage") or {}))
    return Report(card, n, causal, tuple(layers))


# -- markdown -----------------------------------------------------------------------------
def _number(value, digits: int = 4) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _settings(settings: dict) -> str:
    return ", ".join(f"{key} = {_number(value)}" for key, value in settings.items())


def _operator_line(config: dict) -> str:
    operators = config["layer_operators"] or [config["operator"]]
    kinds = []
    for operator in operators:
        named = {key: value for key, value in operator.items()  # the fields it reads
                 if key != "kind" and value is not None}
        text = f"{operator['kind']} ({_settings(named)})"
        if text not in kinds:
            kinds.append(text)
    return "; ".join(kinds)


def _card_markdown(card: ModelCard) -> list[str]:
    better = "higher" if card.higher_is_better else "lower"
    low, high = card.ci95
    model = card.model
    lines = [f"# Model card: {card.checkpoint}", "",
             f"**Task.** {card.task}: {card.data}; training length n = {card.train_length}.", "",
             "| | value | 95 % interval | sequences |", "|---|---:|---|---:|",
             f"| **{card.metric_name}** ({better} is better) | **{card.metric:.4g}** | "
             f"[{low:.4g}, {high:.4g}] | {card.sequences:,} |"]
    lines += [f"| {name} baseline | {value:.4g} | | |" for name, value in card.baselines.items()]
    layers = f"{model['layers']} layer" + ("s" if model["layers"] != 1 else "")
    lines += ["", f"**Model.** d = {model['dim']}, {layers}, expand ratio "
                  f"{model['expand_ratio']}, {card.parameters:,} parameters; "
                  f"{_operator_line(model)}.", ""]
    if card.training:
        lines.append(f"**Training.** {_settings(card.training)}.")
    else:
        lines.append("**Training.** The checkpoint records no train config.")
    if "command" in card.run:
        lines += ["", f"    {card.run['command']}"]
    rest = {k: v for k, v in card.run.items() if k != "command" and k not in card.training}
    if rest:
        lines += ["", f"Run: {_settings(rest)}."]
    lines += ["", lineage_markdown(card.lineage, card.metric_name)]
    return lines


def lineage_markdown(lineage: dict, metric_name: str | None = None) -> str:
    """A checkpoint's lineage (``training.history``) in a paragraph and its commands; its
    metrics in their unit when ``metric_name`` ("bpc" or "accuracy") is given."""
    if not lineage:
        return "**Lineage.** None recorded: trained from scratch, or converted before " \
               "checkpoints recorded their source."
    parts = []
    source = lineage.get("source") or {}
    if source:
        parts.append(f"converted from {source.get('name', '?')} (SHA-256 "
                     f"{str(source.get('sha256', '?'))[:16]}…)")
    if "plan" in lineage:
        parts.append(f"plan {json.dumps(lineage['plan'], separators=(',', ':'))}")
    if "finetune" in lineage:
        tune = lineage["finetune"]
        parts.append(f"fine-tuned {tune['steps']} steps ({tune['parameters']} parameters, "
                     f"lr {tune['lr']:g})")
    for stage, scored in lineage.get("metrics", {}).items():
        low, high = scored["ci95"] or (math.nan, math.nan)
        shown = (lambda value: format_metric(value, metric_name)) if metric_name in (
            "bpc", "accuracy") else (lambda value: f"{value:.4g}")
        parts.append(f"{stage} {shown(scored['metric'])} (95 % interval {shown(low)} to "
                     f"{shown(high)}, {scored['sequences']:,} sequences)")
    text = f"**Lineage.** {'; '.join(parts) or 'recorded'}."
    commands = [f"    {command}" for command in lineage.get("commands", [])]
    return "\n\n".join([text, "\n".join(commands)]) if commands else text


COLUMNS = (("stable_rank", "stable rank"), ("effective_rank", "effective rank (99 %)"),
           ("alpha", "α"), ("alpha_ks", "KS"), ("band_mass", "band mass"),
           ("sample_error", "SKI error (sample)"), ("fit_error", "SKI error (fit)"),
           ("optimal_error", "optimal error"))


def to_markdown(report: Report) -> str:
    """The card, then one row per layer: median [25th-75th percentile] over its channels."""
    lines = _card_markdown(report.card)
    D, K = report.layers[0].width, len(report.layers[0].channels)
    over = f"a layer's {D} channels" if K == D else (
        f"{K} of a layer's {D} channels, evenly spaced (all {D} pass the work bound)")
    lines += ["", f"## Spectra of the Toeplitz matrices at n = {report.length}", "",
              f"Median over {over} [25th–75th percentile].", "",
              "| layer | operator | m | r | " + " | ".join(t for _, t in COLUMNS) + " |",
              "|---|---|---:|---:|" + "---|" * len(COLUMNS)]
    for layer in report.layers:
        cells = []
        for name, _ in COLUMNS:
            s = layer.spread(name)
            cell = f"{_number(s.median, 3)} [{_number(s.low, 3)}–{_number(s.high, 3)}]"
            cells.append(cell if s.defined == K else f"{cell} ({s.defined} of {K})")
        lines.append(f"| {layer.layer} | {layer.operator} | {layer.band} | {layer.rank} | "
                     + " | ".join(cells) + " |")
    band = "0 ≤ k < m" if report.causal else "|k| ≤ m//2"
    lines += ["", "σ_i: singular values of T, T[i, j] = t_(i-j). Stable rank: ‖T‖_F² / ‖T‖_2². "
              "Effective rank: the fewest σ_i holding 99 % of Σ σ_i². α: the exponent of the "
              "power law ρ(λ) ∝ λ^-α fitted to the largest eigenvalues λ = σ² by maximum "
              "likelihood, the tail chosen by the smallest KS distance (WeightWatcher's fit; "
              "KS near 0 is a good fit). Band mass: the share of ‖T‖_F² on the band lags "
              f"{band}. SKI error: ‖T − band − W A Wᵀ‖_F / ‖T‖_F at (m, r), A sampled (as "
              "SKI-TNN) or fitted; optimal: the Eckart–Young error of the best rank-r part."]
    if not report.causal and any(layer.operator == "ski" for layer in report.layers):
        lines += ["", "A SKI layer applies band + W A Wᵀ, which is not Toeplitz: its T is the "
                  "Toeplitz kernel that band + W A Wᵀ approximates."]
    return "\n".join(lines) + "\n"


# -- CSV and JSON -------------------------------------------------------------------------
def to_csv(report: Report) -> str:
    """One row per (layer, channel): where it is, then every ``ChannelSpectrum`` field."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["layer", "channel", "operator", "n", "band", "rank", *STATISTICS])
    for layer in report.layers:
        for channel, spectrum in zip(layer.channel_ids, layer.channels, strict=True):
            writer.writerow([layer.layer, channel, layer.operator, report.length, layer.band,
                             layer.rank, *(repr(getattr(spectrum, s)) for s in STATISTICS)])
    return out.getvalue()


def _plain(value):
    """JSON has no NaN: None in its place, recursively."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def to_json(report: Report) -> str:
    """Everything: the card, and per layer its spreads and every channel's statistics."""
    layers = [{"layer": layer.layer, "operator": layer.operator, "band": layer.band,
               "rank": layer.rank, "width": layer.width, "channel_ids": list(layer.channel_ids),
               "summary": {s: asdict(layer.spread(s)) for s in STATISTICS},
               "channels": [asdict(c) for c in layer.channels]} for layer in report.layers]
    data = {"card": asdict(report.card), "length": report.length, "causal": report.causal,
            "statistics": list(STATISTICS), "layers": layers}
    return json.dumps(_plain(data), indent=1, allow_nan=False) + "\n"


RENDERERS = {"markdown": to_markdown, "csv": to_csv, "json": to_json}


# -- the command line ---------------------------------------------------------------------
def _report_command(args: argparse.Namespace) -> str:
    check_choice("--format", args.format, FORMATS)
    model, info = load(args.checkpoint)
    text = None if args.text is None else read_bounded(args.text, MAX_TEXT_BYTES, "--text")
    task = task_from_info(info.task, data=text)
    check_reportable(model, task.seq_len, args.band, args.rank)  # a bad option before work
    say(f"report: evaluating {info.source}, then each layer's spectra")
    bars = []  # the spectra's bar, from their first call on

    def on_channels(done: int, total: int) -> None:
        if not bars:
            bars.append(progress_bar(total, "spectra", "channel"))
        bars[0].update(done - bars[0].n)
        if done == total:
            bars[0].close()

    return RENDERERS[args.format](report_for(model, info, task, args.band, args.rank,
                                             on_channels))


def main(argv: list[str] | None = None) -> int:
    """Print the report and return 0, or one ``error:`` line on stderr and return 2
    (``training.answer``)."""
    p = argparse.ArgumentParser(prog="python -m tnn_core.report", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", help="a .safetensors checkpoint written by tnn_core.training")
    p.add_argument("--format", default="markdown", help=f"one of {FORMATS} (default markdown)")
    p.add_argument("--band", type=int, default=None, metavar="M",
                   help=f"band m for every layer, in [1, 2n-2] (default: a SKI layer's own, "
                        f"else {DEFAULT_BAND})")
    p.add_argument("--rank", type=int, default=None, metavar="R",
                   help=f"rank r for every layer, in [2, n] (default: a SKI layer's own, "
                        f"else {DEFAULT_RANK})")
    p.add_argument("--text", default=None,
                   help="charlm trained on a user's text: that text file (its SHA-256 must "
                        "match the one the checkpoint records)")
    args = p.parse_args(argv)
    return answer_text(lambda: _report_command(args), "the report")


if __name__ == "__main__":
    sys.exit(main())
