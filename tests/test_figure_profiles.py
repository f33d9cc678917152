"""The decay and frequency response figure's arithmetic (pages/figures/profiles.js) against
tnn_core's, float64, in Chromium.

Kernels: the Frequency page's (one seeded FD operator per activation, ω or cos ω, causal or
not) at awkward n, the synthetic presets, a random one and the zero kernel. Checked: the
decay magnitude, where each curve stops (lab.frequency.decay_curve), both fits
(analysis.profiles.decay_fit, as the Frequency page and decay_profile call it), the receptive
field (decay_profile) and the frequency response (frequency_response), to 1e-9. Planted
mistakes must fail the same comparison.
"""

from __future__ import annotations

import base64
import math

import numpy as np
import pytest

from pages.figures import script
from tests.test_figure_fft import js_page, relative_error
from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.analysis.profiles import decay_fit, decay_profile, frequency_response
from tnn_core.core.toeplitz import fft_size
from tnn_core.lab.frequency import (
    FIT_FLOOR,
    FIT_START,
    decay_curve,
    decay_magnitude,
    fit_end,
    frequency_view,
)

RTOL = 1e-9
SIZES = [1, 2, 7, 100, 257, 1024]

# Everything the figure computes of one kernel, as plain values (NaN as null).
PROFILE = """([coeffs, causal, end, start, floor]) => {
  const plain = (v) => (Number.isFinite(v) ? v : null);
  const t = Float64Array.from(coeffs);
  const magnitude = decayMagnitude(t, causal);
  const fit = decayFit(magnitude.subarray(0, end + 1), start, floor);
  const curve = decayCurve(magnitude, floor);
  const response = frequencyResponse(t);
  return {magnitude: Array.from(magnitude), drawn: Array.from(curve.drawn, plain),
          roundoffFrom: curve.roundoffFrom,
          fit: Object.fromEntries(Object.entries(fit).map(([k, v]) => [k, plain(v)])),
          law: betterLaw(fit), receptiveField: receptiveField(t),
          omega: Array.from(response.omega), response: Array.from(response.magnitude),
          phase: Array.from(response.phase)};
}"""


@pytest.fixture(scope="module")
def profiles_page(chromium):
    page = js_page(chromium, script("profiles"))
    yield page
    page.close()


def close(got, want) -> bool:
    """Two fitted numbers agree to RTOL (both undefined counts as agreeing)."""
    if want is None or not math.isfinite(want):
        return got is None
    return got is not None and abs(got - want) <= RTOL * max(1.0, abs(want))


def profile_errors(page, coeffs: np.ndarray, causal: bool, end: int, start: int,
                   floor: float) -> list[str]:
    """What the figure computes of coeffs [2n-1] that tnn_core does not: a list of names."""
    n = (len(coeffs) + 1) // 2
    got = page.evaluate(PROFILE, [coeffs.tolist(), causal, end, start, floor])
    wrong = []
    profile = decay_profile(coeffs, causal=causal)
    if not np.array_equal(got["magnitude"], profile.magnitude):
        wrong.append("magnitude")
    if got["receptiveField"] != profile.receptive_field:
        wrong.append("receptive field")
    if floor > 0:  # where each curve stops, as the Frequency page draws it
        curve = decay_curve(profile.magnitude)
        drawn = np.array([np.nan if v is None else v for v in got["drawn"]])
        kept = np.flatnonzero(np.isfinite(drawn[1:])) + 1  # lags >= 1 drawn
        if not (np.array_equal(kept, curve.t) and np.array_equal(drawn[kept], curve.magnitude)
                and got["roundoffFrom"] == curve.roundoff_from):
            wrong.append("curve")
    fit = decay_fit(profile.magnitude[: end + 1], start=start, floor=floor)
    mine = got["fit"]
    for name, want in [("rate", fit.rate), ("intercept", fit.intercept),
                       ("exponent", fit.exponent), ("expResidual", fit.exp_residual),
                       ("powerResidual", fit.power_residual)]:
        if not close(mine[name], want):
            wrong.append(name)
    if mine["points"] != fit.points:
        wrong.append("points")
    nearly_tied = (fit.better_law is not None
                   and abs(fit.exp_residual - fit.power_residual) < RTOL)
    if got["law"] != fit.better_law and not nearly_tied:
        wrong.append("better law")
    response = frequency_response(coeffs, fft_size(n))
    if relative_error(got["omega"], response.omega) > RTOL:
        wrong.append("omega")
    if relative_error(got["response"], response.magnitude) > RTOL:
        wrong.append("response")
    clear = response.magnitude > 1e-6 * response.magnitude.max(initial=0.0)  # a phase to speak of
    turn = np.angle(np.exp(1j * (np.array(got["phase"]) - response.phase)))  # wrapped difference
    if np.abs(turn[clear]).max(initial=0.0) > RTOL:
        wrong.append("phase")
    return wrong


def fd_kernels(n: int, smooth: bool, causal: bool):
    view = frequency_view("gelu", 32, 1, n, 2, "cosine" if smooth else "omega", causal)
    return view.kernels, view.fit_end


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize(("smooth", "causal"), [(False, True), (True, True), (False, False),
                                                (True, False)])
def test_the_figure_is_tnn_core_on_the_frequency_pages_kernels(profiles_page, n, smooth, causal):
    kernels, end = fd_kernels(n, smooth, causal)
    assert end == fit_end(n, fft_size(n))
    for activation, kernel in kernels:
        assert np.array_equal(decay_magnitude(kernel), decay_profile(kernel, causal).magnitude)
        wrong = profile_errors(profiles_page, kernel, causal, end, FIT_START, FIT_FLOOR)
        assert not wrong, (activation, wrong)


def other_kernels(n: int) -> list[tuple[str, np.ndarray, bool]]:
    rng = np.random.default_rng(n)
    out = [(f"{name}, λ = {decay}", synthetic_kernel(name, n, decay, causal).double().numpy(),
            causal)
           for name in ("exponential", "oscillating", "spike_smooth")
           for decay, causal in ((0.9, False), (0.99, True))]
    out.append(("random", rng.standard_normal(2 * n - 1), False))
    out.append(("zero", np.zeros(2 * n - 1), False))
    return out


@pytest.mark.parametrize("n", SIZES)
def test_the_figure_is_decay_profile_on_other_kernels(profiles_page, n):
    """Decomposition's settings: every lag fitted from 0, no floor (decay_profile)."""
    for name, kernel, causal in other_kernels(n):
        wrong = profile_errors(profiles_page, kernel, causal, n - 1, 0, 0.0)
        assert not wrong, (name, wrong)
        wrong = profile_errors(profiles_page, kernel, causal, max(n // 3, 0), 2, 1e-13)
        assert not wrong, (name, "window", wrong)


def test_numbers_arrive_as_base64(profiles_page):
    values = np.random.default_rng(0).standard_normal(33)
    for kind, dtype in (("float64", "<f8"), ("float32", "<f4")):
        text = base64.b64encode(values.astype(dtype).tobytes()).decode("ascii")
        got = profiles_page.evaluate("([text, kind]) => Array.from(decodeArray(text, kind))",
                                     [text, kind])
        assert np.array_equal(got, values.astype(dtype).astype(np.float64)), kind


PLANTED = {
    "lag 0 counted twice": ("sum += k === 0 ? Math.abs(coeffs[n - 1])",
                            "sum += k === 0 ? 2 * Math.abs(coeffs[n - 1])"),
    "fit skips its first lag": ("if (k < start || ", "if (k <= start || "),
    "negative lags mirrored": ("column[size - k] = coeffs[n - 1 - k];",
                               "column[size - k] = coeffs[n - 1 + k];"),
    "curve kept at the floor": ("const above = magnitude[k] > floor * top;",
                                "const above = magnitude[k] > floor * top * 1e-3;"),
}


@pytest.mark.parametrize("mistake", list(PLANTED))
def test_a_planted_mistake_fails(chromium, mistake):
    right, wrong_line = PLANTED[mistake]
    source = script("profiles")
    assert source.count(right) == 1, right
    page = js_page(chromium, source.replace(right, wrong_line))
    try:
        found = set()
        for n in (7, 257):
            kernels, end = fd_kernels(n, True, False)
            for _, kernel in kernels:
                found.update(profile_errors(page, kernel, False, end, FIT_START, FIT_FLOOR))
            for _, kernel, causal in other_kernels(n):
                found.update(profile_errors(page, kernel, causal, n - 1, 0, 0.0))
        print(f"{mistake}: {sorted(found)}")
        assert found, mistake
    finally:
        page.close()
