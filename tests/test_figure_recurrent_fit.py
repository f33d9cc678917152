"""The recurrent fit figure (pages/figures/recurrent_fit.js) against tnn_core, in Chromium.

1. Its maths, loaded as a plain script (``test_figure_fft.js_page``): the fitted kernel
   k̂_l = Re Σ c z^(l−1) against ``exponential_kernel`` and its error against the lab's, in
   float64, for the fits the server sends at n = 1, 2, 3, 7 (odd), 97 (prime), 128, 1000.
   Planted mistakes must fail it.
2. The figure mounted with a made-up component: data-drawn, a drag with nothing sent, the
   settled value sent, a rerun for an earlier value not pulling the slider back.

The figure on the running app: test_figure_decomposition_app.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_figure_fft import js_page

from pages.figures import script
from tnn_core.analysis.exponential_fit import exponential_kernel
from tnn_core.analysis.presets import operator_kernel, synthetic_kernel
from tnn_core.lab.common.browser_data import packed
from tnn_core.lab.common.rank_curve import rank_curve
from tnn_core.lab.common.recurrent_fit import recurrent_fit

pytestmark = pytest.mark.browser
RTOL = 1e-12  # of Σ|c_j|, the largest any fitted lag can be (|z| <= 1)
SOURCE = script("recurrent_fit")


@pytest.fixture(scope="module")
def figure_page(chromium):
    page = js_page(chromium, SOURCE)
    yield page
    page.close()


def pairs(values: np.ndarray) -> str:
    return packed(np.stack([values.real, values.imag], axis=1).ravel())


EVALUATE = """([poles, residues, direct, n, column]) => {
  const k = exponentialKernel(decodeArray(poles, 'float64'), decodeArray(residues, 'float64'),
                              direct, n);
  return {kernel: Array.from(k), error: relativeError(decodeArray(column, 'float64'), k)};
}"""


def kernel_of(name: str, n: int) -> np.ndarray:
    if name == "tno":
        return operator_kernel("tno", n, 0.99, True, seed=0, channel=2).numpy()
    return synthetic_kernel(name, n, 0.9, True).numpy()


def mismatches(page, fit, s: int) -> dict[str, float]:
    """The browser's fitted kernel and error at s against tnn_core's: those above RTOL."""
    i = s - 1
    got = page.evaluate(EVALUATE, [pairs(fit.poles[i]), pairs(fit.residues[i]), fit.direct,
                                   fit.n, packed(fit.column)])
    want = exponential_kernel(fit.poles[i][None], fit.residues[i][None],
                              np.array([fit.direct]), fit.n)[0]
    scale = max(np.abs(fit.residues[i]).sum(), abs(fit.direct), 1e-300)
    errors = {"kernel": np.abs(np.array(got["kernel"]) - want).max() / scale,
              # a dimensionless ratio: to 1e-9 of itself, or 1e-12 where it is round-off
              "error": abs(got["error"] - fit.errors[i]) / (1e-9 * fit.errors[i] + 1e-12) * RTOL}
    return {k: float(v) for k, v in errors.items() if not v <= RTOL}


@pytest.mark.parametrize(("name", "n"), [("tno", 1), ("tno", 2), ("tno", 3), ("tno", 7),
                                         ("tno", 97), ("spike_smooth", 128),
                                         ("oscillating", 31), ("tno", 500)])
def test_the_browsers_fit_is_exponential_kernels(figure_page, name, n):
    fit = recurrent_fit(kernel_of(name, n))
    for s in (1, 2, 5, 13, 32):
        assert mismatches(figure_page, fit, s) == {}, (name, n, s)


PLANTED = [  # (the line as written, the mistake)
    ("pi = pr * zi + pi * zr;", "pi = pr * zi - pi * zr;"),  # a sign in the complex product
    ("for (let l = 1; l < n; l++) {", "for (let l = 2; l < n; l++) {"),  # lag 1 left out
    ("top += (n - l) * e * e;", "top += e * e;"),  # the lags unweighted
]


@pytest.mark.parametrize(("line", "mistake"), PLANTED)
def test_a_planted_mistake_fails_the_comparison(chromium, line, mistake):
    assert SOURCE.count(line) == 1, line
    page = js_page(chromium, SOURCE.replace(line, mistake))
    try:
        fit = recurrent_fit(kernel_of("tno", 97))
        assert any(mismatches(page, fit, s) for s in (2, 5, 13))
    finally:
        page.close()


# -- the figure mounted, with a made-up component (no server) ---------------------------
def figure_data(n: int, modes: int) -> dict:
    coeffs = kernel_of("tno", n)
    fit, curve = recurrent_fit(coeffs), rank_curve(coeffs, 9, True)
    return {"id": f"tno-{n}", "n": n, "column": packed(fit.column), "direct": fit.direct,
            "modes": fit.modes.tolist(), "poles": [pairs(z) for z in fit.poles],
            "residues": [pairs(c) for c in fit.residues], "errors": fit.errors.tolist(),
            "undamped": fit.undamped.tolist(),
            "floor": 1e-7, "exact": [], "band": 9, "ranks": curve.ranks.tolist(),
            "ski": [None if v != v else v for v in curve.fit.tolist()],
            "optimal": [None if v != v else v for v in curve.optimal.tolist()],
            "controls": [{"name": "modes", "label": "Modes s", "min": 1, "max": 32, "step": 1,
                          "value": modes, "help": ""}]}


MOUNT = """(data) => {
  const host = document.createElement('div');
  document.body.replaceChildren(host);
  const sent = [];
  const mount = (d) => mountFigure({data: d, parentElement: host,
                                    setStateValue: (name, value) => sent.push([name, value])});
  mount(data);
  window.__figure = {host, mount, sent, root: host.querySelector('[data-testid="figure"]')};
}"""
STATE = """() => { const r = window.__figure.root; return {figure: r.dataset.figure,
  drawn: r.getAttribute('data-drawn'), sent: window.__figure.sent,
  value: r.querySelector('input[name="modes"]').value,
  readout: r.querySelector('.readout').textContent}; }"""
MOVE = """([value, settle]) => {
  const input = window.__figure.root.querySelector('input[name="modes"]');
  input.value = String(value);
  input.dispatchEvent(new Event('input'));
  if (settle) input.dispatchEvent(new Event('change'));
}"""


def test_the_figure_redraws_as_s_moves_and_sends_the_settled_s(figure_page):
    page = figure_page
    data = figure_data(128, 2)
    page.evaluate(MOUNT, data)
    state = page.evaluate(STATE)
    assert state["figure"] == "recurrent_fit" and state["drawn"] == "n=128&modes=2"
    error = recurrent_fit(kernel_of("tno", 128)).errors[1]
    written = f"{error:.2e}".replace("e-0", "e-")  # as JavaScript's toExponential(2)
    assert f"= {written}, the lags" in state["readout"], state["readout"]
    page.evaluate(MOVE, [9, False])  # dragging: drawn at once, nothing sent
    assert page.evaluate(STATE)["drawn"] == "n=128&modes=9"
    assert page.evaluate(STATE)["sent"] == []
    page.evaluate(MOVE, [12, True])
    state = page.evaluate(STATE)
    assert state["drawn"] == "n=128&modes=12" and state["sent"] == [["modes", 12]]
    page.evaluate("(d) => window.__figure.mount(d)", data)  # a rerun for the old value
    assert page.evaluate(STATE)["drawn"] == "n=128&modes=12"
    data["controls"][0]["value"] = 12  # the server's answer for the settled value
    page.evaluate("(d) => window.__figure.mount(d)", data)
    data["controls"][0]["value"] = 3  # then a link's value moves it
    page.evaluate("(d) => window.__figure.mount(d)", data)
    assert page.evaluate(STATE)["drawn"] == "n=128&modes=3"
