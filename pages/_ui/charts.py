"""Charts drawn on two or more pages: T as a heatmap, a kernel against its lag, lines with
labels that stay right on log axes, and TNN's Table 10 pair."""

from __future__ import annotations

import math

import numpy as np
import plotly.colors
import plotly.graph_objects as go

from pages._ui.memo import memo
from tnn_core.lab.common.decay_pair import DecayPair
from tnn_core.lab.common.kernel_view import KernelView, display_line


def heatmap(view: KernelView, title: str, zrange: tuple[float, float] | None = None
            ) -> go.Figure:
    """T at the rows/columns ``view`` samples, row 0 on top; the title says when 1 in k shows."""
    fits_float32 = np.abs(view.matrix).max(initial=0.0) < np.finfo(np.float32).max
    z = view.matrix.astype(np.float32) if fits_float32 else view.matrix  # half the bytes
    fig = go.Figure(go.Heatmap(z=z, x=view.indices,
                               y=view.indices, colorscale="RdBu",
                               zmid=0.0, zmin=None if zrange is None else zrange[0],
                               zmax=None if zrange is None else zrange[1],
                               hovertemplate="row %{y}, col %{x}: %{z:.4g}<extra></extra>"))
    note = f" (1 row/column in {view.step} shown)" if view.step > 1 else ""
    fig.update_layout(title=title + note, height=420, margin=dict(l=10, r=10, t=40, b=10))
    fig.update_yaxes(autorange="reversed", title="row i", scaleanchor="x", constrain="domain")
    fig.update_xaxes(constrain="domain", title="column j")
    return fig


@memo(max_entries=8)
def colour_table(colorscale: str) -> np.ndarray:
    """[256, 3] uint8: Plotly's ``colorscale`` sampled evenly from its low end to its high
    (for ``lab.heatmap_image``, so images match the Plotly charts)."""
    rgb = plotly.colors.sample_colorscale(colorscale, list(np.linspace(0.0, 1.0, 256)))
    table = np.round([plotly.colors.unlabel_rgb(c) for c in rgb]).astype(np.uint8)
    return table


def vline(fig: go.Figure, x: float, text: str, log_x: bool = False, **line) -> None:
    """A vertical line at x (a data value) with ``text`` at its top.

    On a log axis Plotly 7.1 draws a shape at the data value but places an annotation at
    log10 of its x, so add_vline(annotation_text=...) would put the label at 10^x and
    stretch the axis; the label is therefore added on its own, at log10(x)."""
    fig.add_vline(x=x, **line)
    fig.add_annotation(x=math.log10(x) if log_x else x, y=1, yref="paper", text=text,
                       showarrow=False, xanchor="left", yanchor="top")


def hline(fig: go.Figure, y: float, text: str, log_y: bool = False, **line) -> None:
    """A horizontal line at y (a data value) with ``text`` above its right end (see vline)."""
    fig.add_hline(y=y, **line)
    fig.add_annotation(y=math.log10(y) if log_y else y, x=1, xref="paper", text=text,
                       showarrow=False, xanchor="right", yanchor="bottom")


def kernel_plot(view: KernelView, title: str = "Kernel t_k against lag k") -> go.Figure:
    lags, coeffs = display_line(view.lags, view.coeffs)
    fig = go.Figure(go.Scatter(x=lags, y=coeffs, name="t_k",
                               mode="lines+markers" if view.n <= 64 else "lines"))
    fig.update_layout(title=title, height=320, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis_title="lag k = i - j", yaxis_title="t_k")
    return fig


MODEL_SYMBOLS = ("circle", "square")  # the pair's two models, told apart without colour


def decay_pair_chart(pair: DecayPair, height: int = 360, text_size: int | None = None
                     ) -> go.Figure:
    """The Table 10 pair's metric against × training length (Inspect and a lesson step):
    the last n positions of each window solid, all positions dotted, each model with its
    own marker (MODEL_SYMBOLS), so no trace is known by its colour alone; each point with its
    95 % interval as an error bar, chance dashed. ``text_size`` (px): every text of the
    chart at that size (a lesson in presenter mode); None keeps Plotly's default."""
    fig = go.Figure()
    for i, (name, lam) in enumerate(zip(pair.names, pair.decays, strict=True)):
        for part, scores, style in (("last", pair.last[i], dict()),
                                    ("all", pair.every[i], dict(dash="dot"))):
            values = np.array([s.metric for s in scores])  # (F,)
            low, high = np.array([s.ci95 for s in scores]).T  # (F,) each
            fig.add_scatter(x=pair.factor, y=values, mode="lines+markers", line=style,
                            marker=dict(symbol=MODEL_SYMBOLS[i], size=9),
                            error_y=dict(type="data", array=high - values,
                                         arrayminus=values - low),
                            name=f"{name} (λ = {lam:g}), "
                                 + (f"last {pair.train_n} positions" if part == "last"
                                    else "all positions"))
    fig.add_hline(y=pair.chance, line_dash="dash", line_color="grey",
                  annotation_text=f"chance {pair.chance:.3g} {pair.metric_name}",
                  annotation_font_size=text_size)
    fig.update_xaxes(type="log", tickvals=pair.factor.tolist(),
                     title=f"× training length n = {pair.train_n}")
    windows = pair.last[0][0].sequences
    fig.update_layout(height=height, yaxis_title=pair.metric_name,
                      title=f"{pair.metric_name} on the same {windows} windows (95 % intervals)",
                      margin=dict(l=10, r=10, t=40, b=10))
    if text_size is not None:
        sized = dict(size=text_size)
        fig.update_layout(font=sized, legend_font=sized, title_font=sized)
        fig.update_xaxes(tickfont=sized, title_font=sized)
        fig.update_yaxes(tickfont=sized, title_font=sized)
    return fig
