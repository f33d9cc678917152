"""Page "Inspect checkpoint": what a trained model learned, layer by layer, channel by channel.

Checkpoint keys, shared with the Decomposition, Compress and Train pages, are
``common.checkpoints``'s: "NAME" (shipped), "user/NAME" (saved from the Train or Compress
page), "upload:SHA" (uploaded in one browser session: ``common.uploads``).

What a channel "is": the matrix its operator applies (``analysis.applied``). For tno, fd
and causal SKI that is the Toeplitz matrix of ``kernel(n)``; bidirectional SKI applies
band + W A Wᵀ, which is not Toeplitz, so the atlas measures its nearest Toeplitz kernel
(the diagonal means, ``analysis.channel_kernel``) and ``kernel(n)`` is only its target.

This unit's own views: one channel's applied matrix (``channel``), the model's report and
lineage (``report``), the model beyond its training length (``lengths``), two runs side
by side (``run_comparison``), a language model writing text (``writing``), and a model
from the authors' code imported from an upload, with every layer's kernels as a download
(``importing``). What it
shares with other pages (the header's summary, the atlas, the band ablation, TNN's Table
10 pair, the score on the evaluation set) lives in ``common``; this interface exposes all
of it to the page.
"""

from tnn_core.analysis.dense import display_line
from tnn_core.lab.common.atlas import (
    ATLAS_BAND,
    ATLAS_MAX_BAND,
    ATLAS_MAX_N,
    ATLAS_TILES,
    BAND_ONLY_MASS,
    BAND_SHARE,
    BAND_SHARE_NAME,
    OPTIMAL_ELSEWHERE,
    RELATIVE_ERROR,
    SKI_ERROR_NAME,
    STATISTICS,
    AtlasView,
    Channels,
    LayerMedians,
    atlas_view,
    band_description,
    exact_by_construction,
    opening_atlas,
)
from tnn_core.lab.common.background import JOB_THREADS, BackgroundJob, start_in_place
from tnn_core.lab.common.band_ablation import (
    AblationStopped,
    BandAblation,
    band_ablation,
    cannot_ablate,
)
from tnn_core.lab.common.checkpoint_summary import COMMAND_SHOWN, Summary, summary
from tnn_core.lab.common.checkpoints import (
    NAME_PATTERN,
    SHIPPED_ORDER,
    CheckpointError,
    CheckpointInfo,
    Opened,
    checkpoint_path,
    open_bytes,
    open_file,
    saved_checkpoints,
)
from tnn_core.lab.common.conversion import convertible
from tnn_core.lab.common.decay_pair import (
    DECAY_PAIR,
    PAIR_FACTORS,
    DecayPair,
    decay_pair,
    extrapolation_sentence,
)
from tnn_core.lab.common.evaluation import TimeLimitError, evaluation
from tnn_core.lab.common.kernel_sources import TOGEIPI_PART
from tnn_core.lab.common.saving import save_as
from tnn_core.lab.common.snapshot_view import SnapshotView
from tnn_core.lab.common.uploads import SESSION_BUDGET, SessionUploads, UploadStore, upload_key
from tnn_core.lab.common.work_slots import NoPlace
from tnn_core.lab.inspect.channel import (
    NO_CHANNEL_MATRIX,
    ChannelMatrix,
    applied_chunk,
    channel_matrix,
)
from tnn_core.lab.inspect.importing import (
    FOREIGN_SUFFIXES,
    IMPORT_CHOICES,
    IMPORT_NUMBERS,
    MAX_DOWNLOAD_N,
    MAX_DOWNLOAD_NUMBERS,
    README_SETTINGS,
    ImportedAbout,
    ImportedUpload,
    ImportSetting,
    import_upload,
    imported_about,
    is_kernels_only,
    kernels_layout,
    kernels_npz,
    kernels_only_reason,
    kernels_refusal,
)
from tnn_core.lab.inspect.lengths import (
    FACTORS,
    Extrapolation,
    LengthSweep,
    extrapolation,
    length_sweep,
)
from tnn_core.lab.inspect.report import (
    lineage_text,
    model_report,
    report_refusal,
    report_text,
    training_kernels,
)
from tnn_core.lab.inspect.run_comparison import (
    ConfigRow,
    FinalMetric,
    RunCurves,
    config_diff,
    curves,
    evaluation_change,
    final_metric,
)
from tnn_core.lab.inspect.writing import (
    MAX_CHARACTERS,
    MAX_PROMPT,
    TextWriting,
    WriterAbout,
    WritingSettings,
    WritingView,
    is_language_model,
    state_text,
    vocab_of,
    writer_about,
    writing_refusal,
)

__all__ = [
    # checkpoints: listing, opening, uploading, saving
    "NAME_PATTERN", "SHIPPED_ORDER", "saved_checkpoints", "checkpoint_path", "Opened",
    "open_file", "open_bytes", "save_as", "CheckpointError", "CheckpointInfo",
    "SESSION_BUDGET", "upload_key", "UploadStore", "SessionUploads",
    # the header, and the score every page reports
    "COMMAND_SHOWN", "Summary", "summary", "evaluation", "TimeLimitError", "convertible",
    "display_line",
    # the kernel atlas
    "STATISTICS", "BAND_ONLY_MASS", "ATLAS_BAND", "ATLAS_TILES",
    "OPTIMAL_ELSEWHERE", "BAND_SHARE", "BAND_SHARE_NAME", "SKI_ERROR_NAME",
    "RELATIVE_ERROR", "exact_by_construction", "ATLAS_MAX_N", "ATLAS_MAX_BAND", "TOGEIPI_PART",
    "opening_atlas", "Channels",
    "LayerMedians", "AtlasView", "atlas_view", "band_description",
    # one channel, the report, the kernels training kept
    "NO_CHANNEL_MATRIX", "ChannelMatrix", "channel_matrix", "applied_chunk", "lineage_text",
    "model_report", "report_refusal", "report_text", "training_kernels", "SnapshotView",
    # the band alone, beyond the training length, TNN's Table 10
    "BandAblation", "AblationStopped", "cannot_ablate", "band_ablation", "start_in_place",
    "BackgroundJob", "JOB_THREADS", "NoPlace", "FACTORS", "LengthSweep", "length_sweep",
    "extrapolation_sentence", "Extrapolation", "extrapolation", "DECAY_PAIR", "PAIR_FACTORS",
    "DecayPair", "decay_pair",
    # another run beside this one
    "ConfigRow", "config_diff", "RunCurves", "curves", "FinalMetric", "final_metric",
    "evaluation_change",
    # a language model writing text
    "MAX_CHARACTERS", "MAX_PROMPT", "WritingSettings", "WriterAbout", "WritingView", "TextWriting",
    "is_language_model", "writing_refusal", "writer_about", "state_text", "vocab_of",
    # a model from the authors' code (kernels only), every layer's kernels as a download
    "FOREIGN_SUFFIXES", "IMPORT_CHOICES", "IMPORT_NUMBERS", "README_SETTINGS", "ImportedUpload",
    "import_upload", "ImportSetting", "ImportedAbout", "imported_about", "is_kernels_only",
    "kernels_only_reason", "MAX_DOWNLOAD_NUMBERS", "MAX_DOWNLOAD_N", "kernels_refusal",
    "kernels_npz", "kernels_layout",
]
