"""A checkpoint's model card and the statistics of its Toeplitz matrices, layer by layer.

    python -m tnn_core.report checkpoints/charlm-tno.safetensors
    python -m tnn_core.report checkpoints/listops-ski.safetensors --format csv
    python -m tnn_core.report checkpoints/digits-fd.safetensors --format json --band 5 --rank 16
    python -m tnn_core.report checkpoints/charlm-tno.safetensors --kernels 256 --out k.npz

The card: the task and its data, the metric with its 95 % interval over the evaluation
set's sequences (``training.evaluate.evaluate_model``) when the budget estimates it within
--time-limit seconds on this machine (default 60; else, and for token mixers alone, one
sentence says why there is none), the baselines, the model and training config, and the
lineage a converted checkpoint records. Then, per layer, statistics of each channel's n × n
Toeplitz matrix at the training length n (``analysis.spectral_summary``): for every
channel, the band energy share ||band(T)||_F² / ||T||_F² and SKI's band + rank-r relative
error ||T - T̂||_F / ||T||_F (sampled and fitted; the atlas's numbers under its names);
for the channels that fit a work bound (all of the shipped models'), stable rank, energy
rank, Roy–Vetterli's effective rank, the Clauset–Shalizi–Newman power-law fit of the
eigenvalues and the Eckart–Young optimum. The band m and rank r are a SKI layer's own,
else DEFAULT_BAND and ``default_rank(n)`` = min(DEFAULT_RANK, n // 4), at least 2 (r = n
would make SKI exact by construction: the report says so in words where it is);
``band``/``rank`` (--band/--rank) set them for every layer. Progress goes to stderr.

``--kernels N --out FILE.npz`` writes instead every layer's kernels at length N: arrays
``layer0``, ``layer1``, … of shape [channels, 2N − 1], t_k for k = −(N − 1) … N − 1 (a
causal model's negative lags are zeros; ``analysis.kernel_arrays``).

Library use (the Inspect page's download): ``report_for(model, info, task)`` gives a
``Report``; ``to_markdown``, ``to_csv`` and ``to_json`` render it (``render``).
"""

from tnn_core.report.build import (
    BATCHED,
    DEFAULT_BAND,
    DEFAULT_RANK,
    SPECTRA_WORK,
    LayerReport,
    ModelCard,
    Report,
    Spread,
    channels_reported,
    check_reportable,
    default_rank,
    report_for,
)
from tnn_core.report.cli import main
from tnn_core.report.render import (
    FORMATS,
    RENDERERS,
    lineage_markdown,
    to_csv,
    to_json,
    to_markdown,
)

__all__ = ["DEFAULT_BAND", "DEFAULT_RANK", "default_rank", "FORMATS", "SPECTRA_WORK", "BATCHED",
           "ModelCard", "Spread", "LayerReport", "Report", "channels_reported", "check_reportable",
           "report_for", "lineage_markdown", "to_markdown", "to_csv", "to_json", "RENDERERS",
           "main"]
