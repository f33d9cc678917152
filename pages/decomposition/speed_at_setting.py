"""Decomposition's "Speed at this setting": band + W A Wᵀ timed against the FFT and dense
products at the page's n, r and m, once per setting in the background while the page is
idle (``timing``). Decomposition calls ``show(n, rank, band)`` inside its expander."""

from __future__ import annotations

import streamlit as st

from pages._ui import frame, timing
from tnn_core.lab import decomposition as lab

__all__ = ["show"]

SPEED_LABELS = ("SKI: band + W A Wᵀ", "FFT product (TNO)", "Dense product")
TRADE_OFF = ("The trade-off: more inducing points or a wider band lower the error above and "
             "cost time here. The band's cost grows with m, the low-rank part's with n, not "
             "with r; the FFT product grows as n log n (see the Speed page). Flop counts are "
             "deterministic; times vary with the machine's load.")


def show(n: int, rank: int, band: int) -> None:
    """The three times at this setting, or their places while the timing waits."""
    st.caption(f"Timed at n = {n}, r = {rank}, m = {band}.")
    device = frame.device()
    found = timing.measurement("live_speed", (n, rank, band, device),
                               lambda: lab.live_speed(n, rank, band, device=device))
    timing.when_measured(found, speed_readout, lambda: speed_waiting(n, rank, band))


def speed_waiting(n: int, rank: int, band: int) -> None:
    """The readout's place while its timing waits for a quiet server."""
    s = st.columns(4)
    for column, label in zip(s[:3], SPEED_LABELS, strict=True):
        column.metric(label, "…", help="Timed in the background once the page is idle.")
    s[3].caption(f"Timing n = {n}, r = {rank}, m = {band} once the page is idle, so the "
                 "measurement does not compete with drawing it. " + TRADE_OFF)


def speed_readout(found) -> None:
    """The timing ``found`` (a ``timing.measurement``): each product's median with its
    quartiles and flop count, SKI's ratio to the two others."""
    if found.error is not None:
        frame.show_error(found.error)
        return
    speed = found.result
    ski_span, fft_span, dense_span = (speed[f"{name}_quartiles_ms"]
                                      for name in ("ski", "fft", "dense"))
    s = st.columns(4)
    s[0].metric(SPEED_LABELS[0], f"{speed['ski_ms']:.3g} ms",
                help=f"Forward time at this n, r and m: {speed['batch']} sequences × "
                     f"{speed['dim']} channels, median and interquartile range of "
                     f"{speed['repeats']} interleaved runs on {speed['device']}, measured once "
                     f"per setting in this session, in the background while the page was "
                     f"idle.")
    s[1].metric(SPEED_LABELS[1], f"{speed['fft_ms']:.3g} ms",
                delta=f"SKI {lab.speed_text(ski_span, fft_span)}", delta_color="off",
                help="The exact Toeplitz product by FFT, O(n log n). The comparison says "
                     "'within noise' where the two times' quartile ranges overlap.")
    dense_note = ("not timed above n = 4096" if not speed["dense_channels"] else
                  "all channels timed" if speed["dense_channels"] == speed["dim"] else
                  f"timed on {speed['dense_channels']} of the {speed['dim']} channels (their "
                  f"n × n matrices fit 64 MB), scaled to {speed['dim']}: the channels are "
                  f"equal, independent products")
    s[2].metric(SPEED_LABELS[2], f"{speed['dense_ms']:.3g} ms" if speed["dense_ms"] else "—",
                delta=f"SKI {lab.speed_text(ski_span, dense_span)}"
                if speed["dense_ms"] else None, delta_color="off",
                help=f"The n × n matrix times the input, O(n²); {dense_note}.")
    for column, name in zip(s[:3], ("ski", "fft", "dense"), strict=True):
        quartiles = speed[name + "_quartiles_ms"]
        spread = (f"quartiles {quartiles[0]:.3g}–{quartiles[2]:.3g} ms · " if quartiles
                  else "")
        column.caption(f"{spread}{lab.format_flops(speed[name + '_flops'])} (from the formula)")
    busy = (" These times were taken while other work ran on the server (three attempts "
            "were disturbed): read them with care." if found.disturbed else "")
    s[3].caption(TRADE_OFF + busy)
