"""The Compress page's table of a recurrent form's errors for every s it tries: each layer's
relative error ||T - T̂||_F / ||T||_F with s damped exponentials per channel
(``compress.recurrent_study.error_sweep``, fitted and not scored), the modes whose pole sits
on |z| = 1 (they never decay), and the s to start from.

The page tries ``PAGE_STATES``, the s of ``STATE_SWEEP`` up to 8: on charlm-tno (2 layers ×
192 channels, n0 = 256, one thread, the refined fit) s = 1..8 fit in about a minute
together (66 s, the machine's other core busy), s = 16 alone in 39 s and s = 32 alone in
132 s, too long for a page; ``python -m tnn_core.compress CKPT --recurrent`` fits all of
``STATE_SWEEP``.
"""

from __future__ import annotations

from tnn_core.compress.recurrent_study import ERROR_HINT, STATE_SWEEP, suggested_state
from tnn_core.models import ModelConfig

__all__ = ["PAGE_STATES", "NEVER_DECAYING", "SWEEP_WAITING", "sweep_table", "sweep_caption"]

PAGE_STATES = tuple(s for s in STATE_SWEEP if s <= 8)
SWEEP_WAITING = (f"Fitting s = {PAGE_STATES[0]} to {PAGE_STATES[-1]} modes to every layer's "
                 "kernels for the table of errors against s (about a minute for charlm-tno)…")
NEVER_DECAYING = "modes on |z| = 1"  # the table's column of undamped modes


def sweep_table(config: ModelConfig, rows: list[dict]) -> list[dict]:
    """One row per s: s, each layer's error ("layer i", nan-free: a kept layer's column is
    left out) and the modes of any layer whose pole sits on |z| = 1 ("layer i: k", or "—";
    left out where no layer has a count: kept layers' are None)."""
    layers = [i for i in range(config.layers) if rows and rows[0]["errors"][i] is not None]
    table = []
    for row in rows:
        entry = {"s": row["state"], **{f"layer {i}": row["errors"][i] for i in layers}}
        if any(u is not None for u in row["undamped"]):
            entry[NEVER_DECAYING] = "; ".join(
                f"layer {i}: {row['undamped'][i]}" for i in layers if row["undamped"][i]) or "—"
        table.append(entry)
    return table


def sweep_caption(rows: list[dict]) -> str:
    """What the table shows, which s to start from, and what never decays."""
    states = [row["state"] for row in rows]
    state = suggested_state(rows)
    start = (f"s = {state} is the first whose every layer's error is at most {ERROR_HINT}: "
             "a place to start; only its score, paired with the source's, says whether it "
             "keeps the quality." if state is not None else
             f"No s up to {states[-1]} brings every layer's error to {ERROR_HINT}: try a larger "
             "s and read its score.")
    undamped = [f"s = {row['state']}" for row in rows if any(row["undamped"])]
    decay = (f" At {', '.join(undamped)} a fitted pole sits on |z| = 1: that mode never decays, "
             "so the converted layer remembers its input forever." if undamped else "")
    return (f"Each layer's relative error with s = {states[0]} to {states[-1]} modes per "
            "channel, fitted at the training length and not scored (s = 16 and 32 take "
            "minutes more: `python -m tnn_core.compress CKPT --recurrent` fits them). "
            + start + decay)
