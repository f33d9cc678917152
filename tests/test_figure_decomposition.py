"""The band + W A Wᵀ and error-against-r figures (pages/figures/decomposition.js, its maths
in decomposition_maths.js, and error_curve.js) against tnn_core, in Chromium, and driven on
the running app.

1. The figure's maths, loaded as a plain script (``test_figure_fft.js_page``), against
   ``tnn_core.analysis.decompose`` for n = 2, 7, 100, 257, 1024 (the page has nothing to
   decompose at n = 1), several m, r, λ, both methods and causal: the kernel at λ, A's
   coefficients, W, the band taps, the drawn entries of the four pictures, max |residual|
   and the relative Frobenius error, to 1e-9 relative. Planted mistakes must fail it.
2. The figure mounted with a made-up component: data-drawn, the stale marks, the clamp note.
3. The app: a link opens the figure at its values, keyboard moves of r, m and λ redraw it
   in the browser (data-drawn) before the server's numbers, which turn current after.
"""

from __future__ import annotations

import base64
import re

import numpy as np
import pytest
from test_figure_fft import js_page, unpack_float64

from pages.figures import FOLDER, script
from tnn_core.analysis.decompose import decompose, decomposition_limits
from tnn_core.analysis.dense import dense_toeplitz
from tnn_core.analysis.errors import DENSE_FROBENIUS_MAX_N
from tnn_core.analysis.presets import SYNTHETIC, synthetic_kernel
from tnn_core.core.interpolation import interpolation
from tnn_core.lab.common.browser_data import js_number, packed
from tnn_core.lab.common.decomposition_figures import drawn, synthetic_parts
from tnn_core.lab.decomposition import CURVE_FLOOR

pytestmark = pytest.mark.browser
RTOL = 1e-9  # the issue's: the browser's float64 against the core's
PICTURE_CELLS = 256  # decomposition.js

SOURCE = script("decomposition")


@pytest.fixture(scope="module")
def figure_page(chromium):
    page = js_page(chromium, SOURCE)
    yield page
    page.close()


def random_kernel(n: int, causal: bool) -> np.ndarray:
    t = np.random.default_rng(n).standard_normal(2 * n - 1)
    if causal:
        t[: n - 1] = 0
    return t


# Everything the figure computes at one setting, as plain arrays (drawn rows: shownIndices);
# a picture's entries packed row after row (packFloat64: JSON lists of lists took about 1 s
# per setting at n = 1024, the maths 0.03 s).
COMPUTE = """([t, band, rank, causal, fitted, cells]) => {
  const d = decompose(Float64Array.from(t), band, rank, causal,
                      fitted ? Float64Array.from(fitted) : null);
  const idx = shownIndices(d.n, cells);
  const grid = (entry) => packFloat64(idx.flatMap((i) => idx.map((j) => entry(i, j))));
  return {band: d.band, rank: d.rank, a: Array.from(d.a), bandCoeffs: Array.from(d.bandCoeffs),
          index: Array.from(d.W.index), w0: Array.from(d.W.w0), w1: Array.from(d.W.w1),
          idx, T: grid(d.T), B: grid(d.B), L: grid(d.L), R: grid(d.R),
          largest: d.residualLimit, frobenius: d.relativeFrobenius};
}"""


def compute(page, t, band, rank, causal, fitted=None):
    got = page.evaluate(COMPUTE, [np.asarray(t).tolist(), band, rank, causal,
                                  None if fitted is None else np.asarray(fitted).tolist(),
                                  PICTURE_CELLS])
    side = len(got["idx"])
    for picture in ("T", "B", "L", "R"):
        got[picture] = unpack_float64(got[picture], (side, side))
    return got


def mismatches(got: dict, t: np.ndarray, band: int, rank: int, causal: bool, method: str
               ) -> dict[str, float]:
    """The figure's numbers against tnn_core's: {what: relative error} of those above RTOL."""
    dec = decompose(t, band, rank, causal=causal, method=method)
    n = dec.n
    scale = max(np.abs(t).max(), 1e-300)
    idx = np.array(got["idx"])
    residual = dec.residual_matrix()  # (n, n) dense, tnn_core's
    norm = np.sqrt(np.sum((n - np.abs(np.arange(-(n - 1), n))) * t**2))
    # An exact fit's residual is round-off (about 1e-16 max|t|): its own scale is then noise,
    # so the residual is compared on at least 1e-6 max|t|, the Frobenius error (relative to
    # ||T||_F already) on at least 1e-7 (lab.decomposition.CURVE_FLOOR).
    residual_scale = max(np.abs(residual).max(), 1e-6 * scale)
    exact = np.linalg.norm(residual) / norm
    errors = {
        "A": np.abs(np.array(got["a"]) - dec.A_coeffs).max() / max(
            np.abs(dec.A_coeffs).max(), 1e-300),
        "band taps": np.abs(np.array(got["bandCoeffs"]) - dec.band_coeffs).max() / scale,
        "W index": float(np.any(np.array(got["index"]) != dec.interp.index.numpy())),
        "W weights": np.abs(np.stack([got["w0"], got["w1"]], 1)
                            - dec.interp.weight.numpy()).max(),
        "T": np.abs(got["T"] - dense_toeplitz(t, idx)).max() / scale,
        "band": np.abs(got["B"] - dec.band_matrix(idx)).max() / scale,
        "W A Wᵀ": np.abs(got["L"] - dec.low_rank_matrix(idx)).max() / scale,
        "residual": np.abs(got["R"] - residual[np.ix_(idx, idx)]).max()
        / residual_scale,
        "max |residual|": abs(got["largest"] - np.abs(residual).max()) / residual_scale,
        "Frobenius": abs(got["frobenius"] - exact) / max(exact, CURVE_FLOOR),
    }
    if n <= DENSE_FROBENIUS_MAX_N:  # the core's own number is dense there (Gram above it,
        # good to about 1e-8 ||T||_F: the dense residual above is the reference at every n)
        errors["Frobenius (errors)"] = abs(got["frobenius"] - dec.errors.relative_frobenius) \
            / max(exact, CURVE_FLOOR)
    if not got["frobenius"] >= dec.errors.relative_optimal_frobenius * (1 - 1e-2) - 1e-12:
        errors["below the Eckart–Young optimum"] = 1.0
    return {k: float(v) for k, v in errors.items() if not v <= RTOL}


# (n, band, rank): awkward n, bands from 1 to 2n - 2, r from 2 to n
SETTINGS = [(2, 1, 2), (2, 2, 2), (7, 1, 2), (7, 3, 3), (7, 12, 7), (100, 9, 8),
            (100, 4, 33), (257, 9, 32), (257, 64, 200), (1024, 9, 33), (1024, 17, 128)]


@pytest.mark.parametrize(("n", "band", "rank"), SETTINGS)
@pytest.mark.parametrize("causal", [False, True])
def test_sampled_decomposition_is_tnn_cores(figure_page, n, band, rank, causal):
    t = random_kernel(n, causal)
    got = compute(figure_page, t, band, rank, causal)
    assert (got["band"], got["rank"]) == (band, rank)
    assert mismatches(got, t, band, rank, causal, "sample") == {}


@pytest.mark.parametrize(("n", "band", "rank"), [(7, 3, 3), (100, 9, 8), (257, 9, 32),
                                                 (1024, 9, 33)])
@pytest.mark.parametrize("causal", [False, True])
def test_fitted_a_from_the_server_gives_tnn_cores_fit(figure_page, n, band, rank, causal):
    """For "fit" the server sends A; the browser's band taps, pictures and error are fit's."""
    t = random_kernel(n, causal)
    fitted = decompose(t, band, rank, causal=causal, method="fit").A_coeffs
    got = compute(figure_page, t, band, rank, causal, fitted)
    assert mismatches(got, t, band, rank, causal, "fit") == {}


@pytest.mark.parametrize("name", SYNTHETIC)
@pytest.mark.parametrize(("n", "decay"), [(2, 0.5), (7, 0.9), (100, 1.0), (257, 0.955),
                                          (1024, 0.99)])
@pytest.mark.parametrize("causal", [False, True])
def test_the_kernel_at_any_decay_is_the_presets(figure_page, name, n, decay, causal):
    """The server sends base and extra once; the browser's base λ^|k| + extra is the
    preset at λ, and the decomposition of it is tnn_core's."""
    base, extra = synthetic_parts(name, n, causal)
    want = synthetic_kernel(name, n, decay, causal).numpy()
    got = np.array(figure_page.evaluate(
        "([b, e, decay]) => Array.from(kernelAt(decodeArray(b, 'float64'), "
        "decodeArray(e, 'float64'), decay))", [packed(base), packed(extra), decay]))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15 * np.abs(want).max())
    band, rank = min(9, 2 * n - 2), min(32, n)
    assert mismatches(compute(figure_page, got, band, rank, causal), got, band, rank, causal,
                      "sample") == {}


# Mistakes the comparison must catch: (the line as written, the mistake)
PLANTED = [
    ("const left = Math.min((num - num % den) / den, r - 2);",
     "const left = Math.min((num - num % den) / den, r - 1);"),  # runs past the last point
    ("index[i] = left; w0[i] = 1 - frac; w1[i] = frac;",
     "index[i] = left; w0[i] = frac; w1[i] = 1 - frac;"),  # the published SKI's swap
    ("const half = Math.min(Math.floor(band / 2), n - 1);",
     "const half = Math.min(Math.floor((band + 1) / 2), n - 1);"),  # one lag too many
    ("const x = Math.min(Math.max(l * h, -(n - 1)), n - 1);",
     "const x = Math.min(Math.max(l * h + 1, -(n - 1)), n - 1);"),  # A read a lag off
    ("sum += 2 * twice + e * e;", "sum += twice + e * e;"),  # persymmetry forgotten
]


@pytest.mark.parametrize(("line", "mistake"), PLANTED)
def test_a_planted_mistake_fails_the_comparison(chromium, line, mistake):
    assert SOURCE.count(line) == 1, line
    page = js_page(chromium, SOURCE.replace(line, mistake))
    try:
        t = random_kernel(257, False)
        assert mismatches(compute(page, t, 9, 32, False), t, 9, 32, False, "sample") != {}
    finally:
        page.close()


# -- the figure mounted, with a made-up component (no server) ---------------------------
MOUNT = """(data) => {
  const host = document.createElement('div');
  document.body.replaceChildren(host);
  const sent = [];
  const mount = (d) => mountFigure({data: d, parentElement: host,
                                    setStateValue: (name, value) => sent.push([name, value])});
  mount(data);
  const root = host.querySelector('[data-testid="figure"]');
  window.__figure = {host, root, mount, sent};
  return root.getAttribute('data-drawn');
}"""
STATE = """() => { const r = window.__figure.root; return {
  drawn: r.getAttribute('data-drawn'), figure: r.getAttribute('data-figure'),
  live: r.querySelector('.live').getAttribute('data-stale'),
  server: r.querySelector('.server').getAttribute('data-stale'),
  note: r.querySelector('.note').textContent, sent: window.__figure.sent}; }"""
MOVE = """([name, value, settle]) => {
  const input = window.__figure.root.querySelector(`input[name="${name}"]`);
  input.value = String(value);
  input.dispatchEvent(new Event('input'));
  if (settle) input.dispatchEvent(new Event('change'));
}"""


def control(name: str, value, low, high, step) -> dict:
    return {"name": name, "label": name, "min": low, "max": high, "step": step, "value": value,
            "help": ""}


def limits(n: int) -> dict:
    """The kernel's limits as the server sends them (lab figure_data)."""
    band, rank = decomposition_limits(n)
    return {"band": band, "rank": rank}


def figure_data(n: int, rank: int, band: int, decay: float, method: str = "sample",
                numbers_for: str | None = None) -> dict:
    base, extra = synthetic_parts("spike_smooth", n, False)
    return {"kernel": {"id": f"spike-{n}", "n": n, "causal": False, "label": "T",
                       "limits": limits(n), "base": packed(base), "extra": packed(extra)},
            "decay": None, "method": method, "fitted": None,
            "numbers": None if numbers_for is None else {
                "drawn": numbers_for, "spectral": 0.1, "optimalSpectral": 0.05,
                "optimalFrobenius": 0.04, "gap": 2.0},
            "controls": [control("rank", rank, 2, 512, 1), control("band", band, 1, 512, 1),
                         control("decay", decay, 0.5, 1.0, 0.005)]}


@pytest.fixture
def mounted(chromium):
    page = js_page(chromium, SOURCE)
    yield page
    page.close()


def test_the_figure_says_what_it_drew_and_which_numbers_are_stale(mounted):
    page = mounted
    settled = drawn(100, 9, 32, 0.9, "sample")
    assert settled == "n=100&band=9&rank=32&decay=0.9&method=sample"
    assert page.evaluate(MOUNT, figure_data(100, 32, 9, 0.9, numbers_for=settled)) == settled
    state = page.evaluate(STATE)
    assert state["figure"] == "decomposition" and state["server"] == "false"
    assert state["live"] == "false"  # the Frobenius error is the browser's: always current
    page.evaluate(MOVE, ["rank", 33, False])  # dragging: drawn at once, nothing sent
    state = page.evaluate(STATE)
    assert state["drawn"] == "n=100&band=9&rank=33&decay=0.9&method=sample"
    assert state["server"] == "true" and state["sent"] == []
    page.evaluate(MOVE, ["decay", 0.85, True])  # released: the value goes to the server
    state = page.evaluate(STATE)
    assert state["drawn"] == "n=100&band=9&rank=33&decay=0.85&method=sample"
    assert state["sent"] == [["decay", 0.85]]
    # the server's rerun for a value sent earlier does not pull the slider back
    page.evaluate("(d) => window.__figure.mount(d)",
                  figure_data(100, 32, 9, 0.85, numbers_for=drawn(100, 9, 32, 0.85, "sample")))
    assert page.evaluate(STATE)["drawn"] == "n=100&band=9&rank=33&decay=0.85&method=sample"
    # its numbers for the values drawn: current
    page.evaluate("(d) => window.__figure.mount(d)", figure_data(
        100, 33, 9, 0.85, numbers_for="n=100&band=9&rank=33&decay=0.85&method=sample"))
    assert page.evaluate(STATE)["server"] == "false"


def test_fit_draws_sampled_a_until_the_servers_a_comes(mounted):
    page = mounted
    data = figure_data(64, 8, 5, 0.9, method="fit")
    page.evaluate(MOUNT, data)
    state = page.evaluate(STATE)
    assert state["drawn"].endswith("method=sample")  # what it drew, not what it waits for
    assert state["live"] == "true" and "least-squares A follows" in state["note"]
    t = synthetic_kernel("spike_smooth", 64, 0.9).numpy()
    want = drawn(64, 5, 8, 0.9, "fit")
    data["fitted"] = {"drawn": want, "coeffs": packed(
        decompose(t, 5, 8, method="fit").A_coeffs)}
    page.evaluate("(d) => window.__figure.mount(d)", data)
    state = page.evaluate(STATE)
    assert state["drawn"] == want and state["live"] == "false" and state["note"] == ""


def test_an_operators_decay_waits_for_the_server(mounted):
    """An operator's kernel is not base λ^|k| + extra: a move of λ keeps the kernel drawn at
    the server's λ, says so, and marks every number stale until the new kernel comes."""
    page = mounted
    t = np.random.default_rng(5).standard_normal(2 * 64 - 1)
    settled = drawn(64, 9, 8, 0.9, "sample")
    data = figure_data(64, 8, 9, 0.9, numbers_for=settled)
    data["kernel"] = {"id": "tno-0.9", "n": 64, "causal": False, "label": "T",
                      "limits": limits(64), "coeffs": packed(t)}
    data["decay"] = 0.9
    page.evaluate(MOUNT, data)
    assert page.evaluate(STATE)["server"] == "false"
    page.evaluate(MOVE, ["decay", 0.85, True])
    state = page.evaluate(STATE)
    assert state["drawn"] == settled and state["sent"] == [["decay", 0.85]]
    assert state["server"] == state["live"] == "true"
    assert "comes from the server once λ settles" in state["note"]
    data = {**data, "decay": 0.85, "numbers": {**data["numbers"],
                                                "drawn": drawn(64, 9, 8, 0.85, "sample")}}
    data["controls"][2]["value"] = 0.85
    data["kernel"] = {**data["kernel"], "id": "tno-0.85", "coeffs": packed(0.5 * t)}
    page.evaluate("(d) => window.__figure.mount(d)", data)
    state = page.evaluate(STATE)
    assert state["drawn"] == drawn(64, 9, 8, 0.85, "sample")
    assert state["server"] == state["live"] == "false" and state["note"] == ""


def test_settings_beyond_n_are_drawn_clamped_and_said(mounted):
    page = mounted
    page.evaluate(MOUNT, figure_data(16, 17, 31, 0.9))
    state = page.evaluate(STATE)
    assert state["drawn"] == "n=16&band=30&rank=16&decay=0.9&method=sample"
    assert "n = 16 allows at most r = 16" in state["note"] and "r = 16, m = 30" in state["note"]


@pytest.mark.parametrize(("n", "rank"), [(2, 2), (3, 2), (512, 32), (600, 200)])
def test_w_and_a_are_drawn_with_tnn_cores_interpolation(mounted, n, rank):
    """W (every k-th row, all r columns), A and Wᵀ, and the row of W the caption reads out,
    as core.interpolation has them."""
    page = mounted
    page.evaluate(MOUNT, figure_data(n, rank, 1, 0.9))
    sizes, text = page.evaluate("""() => { const r = window.__figure.root;
      const size = (name) => { const c = r.querySelector(`[data-picture="${name}"]`);
                               return [c.height, c.width]; };
      return [[size('W'), size('A'), size('Wt')], r.querySelector('.factors-text').textContent];
    }""")
    rows, points = -(-n // -(-n // PICTURE_CELLS)), -(-rank // -(-rank // PICTURE_CELLS))
    assert sizes == [[rows, points], [points, points], [points, rows]]
    interp = interpolation(n, rank)
    i = min(n - 1, round(n / 3))
    left, (w0, w1) = int(interp.index[i]), interp.weight[i].tolist()
    said = re.search(r"row (\d+) holds ([\d.e-]+) at column (\d+) and ([\d.e-]+) at column (\d+)",
                     text)
    assert said and (int(said[1]), int(said[3]), int(said[5])) == (i, left, left + 1), text
    assert (float(said[2]), float(said[4])) == pytest.approx((w0, w1), abs=5e-3)
    assert "two nonzeros" in text or "two neighbouring inducing points" in text


def test_js_numbers_are_written_as_javascript_writes_them(mounted):
    values = [0.5, 0.505, 0.955, 0.99, 0.995, 1.0, 2, 512]
    assert mounted.evaluate("(vs) => vs.map(String)", values) == [js_number(v) for v in values]


def test_the_error_curve_follows_the_decomposition_figures_r(chromium):
    page = js_page(chromium, script("error_curve"))
    try:
        curve = {"id": "c", "n": 100, "band": 9, "rank": 32, "ranks": [2, 4, 8, 16, 32, 64],
                 "sample": [0.5, 0.3, 0.1, 0.05, 0.02, None], "fit": [0.4, 0.2, 0.08, 0.04,
                                                                     0.01, 0.005],
                 "optimal": [0.3, 0.1, 0.05, 0.02, 0.005, 0.001], "floor": 1e-7, "exact": [],
                 "controls": []}
        page.evaluate("""(data) => { const host = document.createElement('div');
          document.body.replaceChildren(host);
          mountFigure({data, parentElement: host, setStateValue: () => {}}); }""", curve)
        read = """() => { const r = document.querySelector('[data-figure="error_curve"]');
          return [r.getAttribute('data-drawn'), r.querySelector('.readout').dataset.stale,
                  r.querySelector('.readout').textContent]; }"""
        assert page.evaluate(read)[:2] == ["n=100&band=9&rank=32", "false"]
        page.evaluate("() => announce('decomposition', {n: 100, band: 9, rank: 40, "
                      "frobenius: 0.0123})")
        drawn_, stale, text = page.evaluate(read)
        assert drawn_ == "n=100&band=9&rank=40" and stale == "false" and "1.230e-2" in text
        page.evaluate("() => announce('decomposition', {n: 100, band: 11, rank: 40, "
                      "frobenius: 0.01})")
        drawn_, stale, text = page.evaluate(read)  # another m: the curve is the old m's
        assert drawn_ == "n=100&band=9&rank=40" and stale == "true" and "m = 11" in text
    finally:
        page.close()


def test_the_packed_kernel_is_exact(mounted):
    t = np.random.default_rng(3).standard_normal(101) * 10.0 ** np.arange(-50, 51)
    got = mounted.evaluate("(text) => Array.from(decodeArray(text, 'float64'))", packed(t))
    assert np.array_equal(np.array(got, dtype=np.float64), t)
    assert base64.b64decode(packed(t)) == t.astype("<f8").tobytes()


def test_the_figures_are_the_shared_files_then_their_own():
    for name in ("decomposition", "error_curve"):
        assert script(name).endswith((FOLDER / f"{name}.js").read_text(encoding="utf-8"))
