"""Inspect's import box: a model trained with the authors' code (tnn-pytorch, ski-tnn), its
file uploaded with the settings a state dict does not hold, imported as the lab's
kernels-only checkpoint (``inspect_lab.import_upload``: read without running anything in
it, each mixer exactly as their code computes it). The result joins this session's uploads
like an uploaded .safetensors (``checkpoints.remember_upload``) and opens; a refusal is the
library's one sentence. Inspect calls ``show()``."""

from __future__ import annotations

import streamlit as st

from pages._ui import checkpoints, session_keys
from tnn_core.lab import inspect as inspect_lab

__all__ = ["show"]

AUTO = "auto"  # an input left to the file's saved arguments, else the README
LABELS = {  # setting -> (its label, what it is)
    "causal": ("Causal", "A causal (language) model: its kernels are zero at negative lags."),
    "mixer": ("Mixer", "ski-tnn's tno_type: tno (both codes' Tno) or tno_fd (TnoFD)."),
    "par_type": ("par_type", "What the RPE reads: 1 the lag k, 2 k/(n − 1), 3 exp(k/(n − 1))."),
    "decay": ("Decay", "none; fixed (use_decay, γ saved); multi (use_multi_decay, γ learned "
                       "above the floor λ)."),
    "gamma": ("λ of a multi-decay", "The floor λ of γ_eff = λ + (1 − λ)·sigmoid(γ)."),
    "rpe_act": ("RPE activation", "rpe_act: the activation inside the RPE network."),
    "act_type": ("Kernel activation", "act_type: applied to every kernel value after the "
                                      "decay."),
    "residual": ("Residual RPE", "Whether the RPE's hidden layers add their input."),
    "heads": ("Heads", "num_heads: the channel layout of TnoFD's two halves."),
    "length": ("Training length", "The length n its kernels open at."),
}


def show() -> None:
    """The expander: the file, its settings and Import."""
    with st.expander("Import a model from the authors' code (tnn-pytorch, ski-tnn)",
                     icon=":material/input:"):
        st.caption("A state dict saved with torch.save or safetensors, or a fairseq training "
                   "checkpoint (model plus args or cfg). It is read as data: nothing in it is "
                   "imported or run. Its token mixers (Tno, TnoFD) become the lab's, each "
                   "computing exactly what the authors' module computes; the rest of the "
                   "network is left out. Anything else (SKITno, normalize) is refused with "
                   "the reason.")
        upload = st.file_uploader("The authors' checkpoint", key="foreign_upload",
                                  type=list(inspect_lab.FOREIGN_SUFFIXES),
                                  max_upload_size=checkpoints.UPLOAD_LIMIT_MB)
        flags = _settings()
        if st.button("Import", key="foreign_import", type="primary", icon=":material/input:",
                     disabled=upload is None,
                     help="Reads the file, maps its mixers and opens the result below."):
            _import(upload, flags)
        failed = st.session_state.get(session_keys.IMPORT_ERROR)
        if upload is not None and failed is not None and failed[0] == upload.file_id:
            st.error(f"Not imported: {failed[1]}", icon=":material/error:")


def _settings() -> dict:
    """The settings the page gives the import, None where the file (else the README)
    decides; each input says the README's value."""
    st.markdown(f"**Settings a state dict does not hold**: each one left at {AUTO} is read "
                "from the file's saved training arguments, else it is the authors' README value "
                "(shown in brackets).")
    chosen = {}
    columns = st.columns(5)
    for i, field in enumerate(LABELS):
        label, meaning = LABELS[field]
        default = getattr(inspect_lab.README_SETTINGS, field)
        where = columns[i % 5]
        if field in inspect_lab.IMPORT_NUMBERS:
            low, high = inspect_lab.IMPORT_NUMBERS[field]
            chosen[field] = where.number_input(
                label, low, high, value=None, key=f"import_{field}",
                placeholder=f"{AUTO} ({default})", help=f"{meaning} Empty: {AUTO}, from the "
                f"file, else the README's {default}"
                + (" (0.9 below length 100)." if field == "gamma" else "."))
        else:
            chosen[field] = where.selectbox(
                label, (None, *inspect_lab.IMPORT_CHOICES[field]), key=f"import_{field}",
                format_func=lambda v, d=default: f"{AUTO} ({d})" if v is None else str(v),
                help=f"{meaning} {AUTO}: from the file, else the README's {default}.")
    return chosen


def _import(upload, flags: dict) -> None:
    """Import ``upload`` with ``flags``: it joins this session's uploads and opens, or its
    sentence is kept for this file."""
    try:
        with st.spinner("Reading the file and mapping its mixers…"):
            imported = inspect_lab.import_upload(upload.name, upload.getvalue(), flags)
            key, dropped = checkpoints.remember_upload(imported.name, imported.data)
    except ValueError as err:
        st.session_state[session_keys.IMPORT_ERROR] = (upload.file_id, str(err))
        return
    st.session_state.pop(session_keys.IMPORT_ERROR, None)
    st.session_state[session_keys.CHECKPOINT] = key  # the import opens
    st.toast(imported.sentence(), icon=":material/check:")
    if dropped:
        st.toast(f"Dropped {', '.join(dropped)} from this session's uploads: a session keeps "
                 f"{inspect_lab.SESSION_BUDGET // 2**20} MB of them.", icon=":material/info:")
