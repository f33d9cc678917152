"""A ``Report`` as a file: ``to_markdown`` (the card, then per layer the median and
quartiles over channels), ``to_csv`` (a row per layer and channel) and ``to_json``
(everything). ``lineage_markdown`` is the card's lineage paragraph, which Inspect shows on
its own."""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import asdict

from tnn_core.analysis.atlas import BAND_SHARE, BAND_SHARE_NAME, SKI_ERROR_NAME
from tnn_core.analysis.errors import RELATIVE_ERROR
from tnn_core.analysis.spectral_summary import STATISTICS
from tnn_core.report.build import BATCHED, ModelCard, Report
from tnn_core.training.scores import format_metric

__all__ = ["FORMATS", "COLUMNS", "RENDERERS", "lineage_markdown", "to_markdown", "to_csv",
           "to_json"]

FORMATS = ("markdown", "csv", "json")
# every channel's columns first (BATCHED), then the spectra's
# the band share and SKI's error under the atlas's names (``analysis.atlas``)
SKI_ERRORS = ("sample_error", "fit_error")
COLUMNS = (("band_mass", BAND_SHARE_NAME), ("sample_error", SKI_ERROR_NAME),
           ("fit_error", "SKI error (fit)"), ("stable_rank", "stable rank"),
           ("energy_rank", "energy rank (99 %)"),
           ("roy_vetterli_rank", "effective rank (Roy–Vetterli)"), ("csn_alpha", "CSN α"),
           ("csn_tail", "CSN tail"), ("csn_ks", "CSN KS"), ("csn_p", "CSN p"),
           ("optimal_error", "optimal error"))


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


def _metric_lines(card: ModelCard) -> list[str]:
    if card.metric is None:
        return [f"**Metric.** {card.no_metric}"]
    better = "higher" if card.higher_is_better else "lower"
    low, high = card.ci95
    lines = ["| | value | 95 % interval | sequences |", "|---|---:|---|---:|",
             f"| **{card.metric_name}** ({better} is better) | **{card.metric:.4g}** | "
             f"[{low:.4g}, {high:.4g}] | {card.sequences:,} |"]
    return lines + [f"| {name} baseline | {value:.4g} | | |"
                    for name, value in card.baselines.items()]


def _card_markdown(card: ModelCard) -> list[str]:
    model = card.model
    lines = [f"# Model card: {card.checkpoint}", "",
             f"**Task.** {card.task}: {card.data}; training length n = {card.train_length}.", "",
             *_metric_lines(card)]
    layers = f"{model['layers']} layer" + ("s" if model["layers"] != 1 else "")
    expand = f"expand ratio {model['expand_ratio']}, " if model["task"] != "kernels" else ""
    lines += ["", f"**Model.** d = {model['dim']}, {layers}, {expand}{card.parameters:,} "
                  f"parameters; {_operator_line(model)}.", ""]
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
    imported = lineage.get("imported") or {}
    if source:
        how = (f"imported from the authors' {imported.get('module', 'mixer')}s in "
               if imported else "converted from ")
        parts.append(f"{how}{source.get('name', '?')} (SHA-256 "
                     f"{str(source.get('sha256', '?'))[:16]}…"
                     f"{', ' + str(imported['format']) if imported.get('format') else ''})")
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


def _over(report: Report) -> str:
    """Which channels the medians are over, in a sentence."""
    D, K = report.layers[0].width, len(report.layers[0].channels)
    every = f"all {D:,} channels of a layer"
    if report.no_spectra:
        return f"Median over {every} [25th–75th percentile]. {report.no_spectra}"
    spectra = every if K == D else (f"{K} of a layer's {D:,} channels, evenly spaced (all "
                                    f"{D:,} pass the work bound)")
    return (f"Median [25th–75th percentile]: {BAND_SHARE_NAME} and SKI's errors over {every}; the "
            f"spectra (ranks, CSN fit, optimal error) over {spectra}.")


def to_markdown(report: Report) -> str:
    """The card, then one row per layer: median [25th-75th percentile] over its channels."""
    lines = _card_markdown(report.card)
    lines += ["", f"## The Toeplitz matrices at n = {report.length}", "", _over(report), "",
              "| layer | operator | m | r | " + " | ".join(t for _, t in COLUMNS) + " |",
              "|---|---|---:|---:|" + "---|" * len(COLUMNS)]
    for layer in report.layers:
        cells = []
        for name, _ in COLUMNS:
            s, of = layer.spread(name), len(layer.values(name))
            cell = f"{_number(s.median, 3)} [{_number(s.low, 3)}–{_number(s.high, 3)}]"
            cell = cell if s.defined == of else f"{cell} ({s.defined} of {of})"
            cells.append(f"{cell} (exact by construction)" if layer.exact and name in
                         SKI_ERRORS else cell)
        lines.append(f"| {layer.layer} | {layer.operator} | {layer.band} | {layer.rank} | "
                     + " | ".join(cells) + " |")
    lines += [f"\nLayer {layer.layer}: SKI's errors are 0 whatever the kernel, "
              f"{layer.exact}." for layer in report.layers if layer.exact]
    band = "0 ≤ k < m" if report.causal else "|k| ≤ m//2"
    lines += ["", "σ_i: singular values of T, T[i, j] = t_(i-j). "
              f"{BAND_SHARE_NAME.capitalize()}: {BAND_SHARE}, the band's lags {band}. SKI "
              f"error: the relative error {RELATIVE_ERROR}, T̂ = band + W A Wᵀ at (m, r), A "
              "sampled (as SKI-TNN) or fitted; optimal: the Eckart–Young error of the best "
              "rank-r part, over ‖T‖_F too. The atlas on Inspect shows the same numbers "
              "under the same names. Stable rank: ‖T‖_F² / ‖T‖_2². Energy rank: the fewest "
              "σ_i holding 99 % of Σ σ_i². Effective rank (Roy–Vetterli): exp(H(p)), "
              "p_i = σ_i / Σ σ_j. CSN α: the Clauset–Shalizi–Newman fit of ρ(λ) ∝ λ^-α to the "
              "eigenvalues λ = σ² above a threshold xmin: the Hill estimate on the tail's "
              "eigenvalues strictly above xmin, xmin chosen by the smallest KS distance "
              "(CSN KS; near 0 is a close fit). CSN p: the fit's goodness-of-fit p-value by "
              "their semi-parametric bootstrap (100 synthetic sets), for a few evenly spaced "
              "channels of each layer (the cell says of how many); p ≤ 0.1 rules the power "
              "law out. T's σ_i follow "
              "its frequency response (Szegő), so α describes the kernel's smoothness, not "
              "how well a layer trained (docs/metrics.md)."]
    if not report.causal and any(layer.operator == "ski" for layer in report.layers):
        lines += ["", "A SKI layer applies band + W A Wᵀ, which is not Toeplitz: its T is the "
                  "Toeplitz kernel that band + W A Wᵀ approximates."]
    return "\n".join(lines) + "\n"


# -- CSV and JSON -------------------------------------------------------------------------
SPECTRAL = tuple(s for s in STATISTICS if s not in BATCHED)  # the columns a spectrum adds


def to_csv(report: Report) -> str:
    """One row per (layer, channel), every channel: where it is, its BATCHED columns, then
    its spectrum's (empty for a channel without one)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["layer", "channel", "operator", "n", "band", "rank", *BATCHED, *SPECTRAL])
    for layer in report.layers:
        spectra = dict(zip(layer.channel_ids, layer.channels, strict=True))
        for channel in range(layer.width):
            spectrum = spectra.get(channel)
            writer.writerow([layer.layer, channel, layer.operator, report.length, layer.band,
                             layer.rank, *(repr(float(layer.batched[s][channel]))
                                           for s in BATCHED),
                             *(repr(getattr(spectrum, s)) if spectrum else ""
                               for s in SPECTRAL)])
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
    """Everything: the card, and per layer its spreads, why SKI is exact by construction
    there ("ski_exact", "" if it is not), every channel's BATCHED columns and the spectra
    of the channels that have one."""
    layers = [{"layer": layer.layer, "operator": layer.operator, "band": layer.band,
               "rank": layer.rank, "ski_exact": layer.exact, "width": layer.width,
               "channel_ids": list(layer.channel_ids),
               "summary": {s: asdict(layer.spread(s)) for s in STATISTICS},
               "every_channel": {s: layer.batched[s].tolist() for s in BATCHED},
               "channels": [asdict(c) for c in layer.channels]} for layer in report.layers]
    data = {"card": asdict(report.card), "length": report.length, "causal": report.causal,
            "statistics": list(STATISTICS), "no_spectra": report.no_spectra, "layers": layers}
    return json.dumps(_plain(data), indent=1, allow_nan=False) + "\n"


RENDERERS = {"markdown": to_markdown, "csv": to_csv, "json": to_json}
