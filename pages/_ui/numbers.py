"""Numbers as the pages show them: a value not measured (NaN) as a dash. A task metric and
its interval are written by the lab's one formatter (``format_metric``, ``format_interval``),
so the pages, the CLI's reports and the lab's sentences agree digit for digit."""

from __future__ import annotations

import math

from tnn_core.lab.common.evaluation import format_interval, format_metric

__all__ = ["fmt", "format_interval", "format_metric"]


def fmt(value: float, spec: str) -> str:
    """``value`` formatted by ``spec`` for st.metric; NaN as a dash."""
    return format(value, spec) if math.isfinite(value) else "—"
