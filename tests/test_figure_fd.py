"""The FD kernel figure's arithmetic (pages/figures/fd_kernel.js) against tnn_core, float64.

The figure evaluates the seeded FD operator's RPE MLP in the browser from the weights
``tnn_core.lab.frequency.rpe_weights`` sends, and builds the response and the kernel as
``analysis.fd_response`` reads them from ``operators.FD``. Checked here: the weights' layout
(in numpy, no browser), erf and GeLU, and the response, the kernel and the kernel through the
spectrum over awkward n, every activation, ω or cos ω, causal or not, to 1e-9 of their
largest magnitude; planted mistakes (the authors' doubled Nyquist weight, a wrong erf
coefficient, a missing RMS norm) must fail the same comparison.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.special import erf as scipy_erf

from pages.figures import script
from tests.test_browser import server  # noqa: F401 - fixture
from tests.test_figure_fft import js_page, relative_error
from tnn_core.analysis.fd_response import THEOREMS, fd_response
from tnn_core.lab.frequency import WIDTHS, rpe_weights

RTOL = 1e-9
SIZES = [1, 2, 7, 100, 257, 1024]
SEED = 11


def mlp_numpy(parameters: np.ndarray, width: int, depth: int, x: np.ndarray, causal: bool,
              activation: str) -> np.ndarray:
    """RpeMLP.forward from the flat parameters in RpeWeights' order: [P, 1 or 2]."""
    e, at = width, 0

    def take(count):
        nonlocal at
        at += count
        return parameters[at - count : at]

    w_in, b_in = take(e), take(e)
    hidden = [(take(e * e).reshape(e, e), take(e)) for _ in range(depth)]
    causal_out = (take(e).reshape(1, e), take(1))
    bidirectional_out = (take(2 * e).reshape(2, e), take(2))
    assert at == len(parameters)
    act = {"relu": lambda v: np.maximum(v, 0), "silu": lambda v: v / (1 + np.exp(-v)),
           "gelu": lambda v: v * 0.5 * (1 + scipy_erf(v * math.sqrt(0.5)))}[activation]

    def norm(h):
        return h / (np.linalg.norm(h, axis=-1, keepdims=True) * e**-0.5 + 1e-8)

    h = x[:, None] * w_in + b_in  # (P, e)
    for weight, bias in hidden:
        h = act(norm(h)) @ weight.T + bias  # (P, e)
    weight, bias = causal_out if causal else bidirectional_out
    return act(norm(h)) @ weight.T + bias  # (P, 1 or 2)


@pytest.mark.parametrize(("width", "depth"), [(1, 0), (8, 1), (32, 2)])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidir"])
def test_the_weights_are_the_operators_mlp(width, depth, causal):
    """The layout the figure reads, evaluated in numpy, is the operator's response."""
    weights = rpe_weights(width, depth, SEED)
    assert weights.parameters.dtype == np.float64
    assert np.array_equal(weights.parameters.astype(np.float32), weights.parameters)
    for activation, fd_input in [("gelu", "omega"), ("silu", "cosine"), ("relu", "omega")]:
        response = fd_response(activation, width, depth, 30, SEED, fd_input, causal)
        x = np.cos(response.omega) if fd_input == "cosine" else response.omega
        out = mlp_numpy(weights.parameters, width, depth, x, causal, activation)  # (F, 1|2)
        assert relative_error(out[:, 0], response.real) <= 1e-12
        if not causal:
            scale = np.sin(response.omega) if fd_input == "cosine" else np.ones_like(x)
            assert relative_error((out[:, 1] * scale)[1:-1], response.imag[1:-1]) <= 1e-12


def test_rpe_weights_refuses_a_bad_width():
    with pytest.raises(ValueError, match="width must be"):
        rpe_weights(0, 1, 0)


# -- in Chromium ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fd_page(chromium):
    page = js_page(chromium, script("fd_kernel"))
    yield page
    page.close()


ERF = "(xs) => xs.map(erf)"
GELU = "(xs) => xs.map(ACTIVATIONS.gelu)"
# The figure's maths for one setting: plain arrays of what fd_response returns.
RESPONSE = """([parameters, width, depth, activation, smooth, causal, n, N]) => {
  const layers = rpeLayers(Float64Array.from(parameters), width, depth);
  const r = fdResponse(layers, activation, smooth, causal, n, N);
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Array.from(v)]));
}"""


def test_erf_is_double_precision(fd_page):
    xs = np.concatenate([[0.0, -0.0, 1e-300, 1e-17, 0.46875, -0.46875, 0.46876, 4.0, -4.0, 4.0001,
                          26.5, 26.6, -30.0, 1e3],
                         np.linspace(-7, 7, 2801), np.geomspace(1e-12, 30, 400)])
    got = np.array(fd_page.evaluate(ERF, xs.tolist()))
    want = np.array([math.erf(x) for x in xs])
    assert np.all(np.abs(got - want) <= 1e-15 * np.abs(want))  # a few units in the last place
    assert fd_page.evaluate("() => Number.isNaN(erf(NaN))")


def test_gelu_is_torchs(fd_page):
    xs = np.concatenate([np.linspace(-12, 12, 4801), np.geomspace(1e-10, 1e3, 300)])
    got = np.array(fd_page.evaluate(GELU, xs.tolist()))
    want = torch.nn.functional.gelu(torch.from_numpy(xs)).numpy()
    # 1 + erf(x/√2) cancels below x ≈ -5, in torch as here: there the error is absolute
    assert np.all(np.abs(got - want) <= RTOL * np.abs(want) + 1e-15)


def fd_errors(page, activation: str, width: int, depth: int, n: int, smooth: bool,
              causal: bool) -> dict[str, float]:
    """Relative errors of the figure's response and kernels against fd_response."""
    response = fd_response(activation, width, depth, n, SEED, "cosine" if smooth else "omega",
                           causal)
    got = page.evaluate(RESPONSE, [rpe_weights(width, depth, SEED).parameters.tolist(), width,
                                   depth, activation, smooth, causal, n, response.N])
    spectrum = np.array(got["real"]) + 1j * np.array(got["imag"])  # (F,) both parts, on
    # the scale of the response: a width-1 MLP's causal imaginary part is all round-off
    return {"omega": relative_error(got["omega"], response.omega),
            "response": relative_error(spectrum, response.real + 1j * response.imag),
            "kernel": relative_error(got["kernel"], response.kernel),
            "spectral kernel": relative_error(got["spectralKernel"], response.spectral_kernel)}


@pytest.mark.parametrize("activation", list(THEOREMS))
@pytest.mark.parametrize("n", SIZES)
def test_the_figure_is_fd_response(fd_page, activation, n):
    shape = n + 3 * list(THEOREMS).index(activation)  # a spread of widths and depths
    width, depth = WIDTHS[shape % len(WIDTHS)], shape % 3
    for smooth in (False, True):
        for causal in (True, False):
            errors = fd_errors(fd_page, activation, width, depth, n, smooth, causal)
            assert max(errors.values()) <= RTOL, (smooth, causal, width, depth, errors)


def test_the_causal_kernel_is_exactly_zero_at_negative_lags(fd_page):
    got = fd_page.evaluate(RESPONSE, [rpe_weights(8, 1, SEED).parameters.tolist(), 8, 1, "gelu",
                                      False, True, 100, 200])
    assert all(v == 0 for v in got["kernel"][:99]) and got["kernel"][99] != 0


# Each mistake, planted in the figure's file, must fail the comparison somewhere.
PLANTED = {
    # the authors' code doubles t = N/2 as well (RECIPES): the real part is then not R
    "doubled Nyquist weight": ("column[N / 2] = even[N / 2];", "column[N / 2] = 2 * even[N / 2];"),
    # Abramowitz and Stegun 7.1.26, good to 1.5e-7, in place of Cody's erf
    "a 1.5e-7 erf": ("function erf(x) {", """function erf(x) {
  const t = 1 / (1 + 0.3275911 * Math.abs(x));
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
                 + 0.254829592) * t * Math.exp(-x * x);
  return x < 0 ? -y : y;
}
function codyErf(x) {"""),
    "no RMS norm": ("const divisor = Math.sqrt(squares) * scale + RMS_EPS;",
                    "const divisor = 1;"),
    "imaginary part at Nyquist": ("for (let j = 1; j < F - 1; j++) imag[j]",
                                  "for (let j = 1; j < F; j++) imag[j]"),
}


@pytest.mark.parametrize("mistake", list(PLANTED))
def test_a_planted_mistake_fails(chromium, mistake):
    right, wrong = PLANTED[mistake]
    source = script("fd_kernel")
    assert source.count(right) == 1, right
    page = js_page(chromium, source.replace(right, wrong))
    try:
        worst = max(max(fd_errors(page, activation, 8, 1, n, smooth, causal).values())
                    for activation in ("gelu", "relu") for n in (7, 100)
                    for smooth in (False, True) for causal in (True, False))
        print(f"{mistake}: worst relative error {worst:.1e}")
        assert worst > RTOL, mistake
    finally:
        page.close()


# -- the Frequency page in the browser -------------------------------------------------------
# Both figures' roots sit in shadow roots (components v2): this finds them, records every
# change of their data-drawn and data-stale with the page's clock, and the last key press.
WATCH = """() => {
  const roots = [];
  const walk = (node) => {
    for (const el of node.querySelectorAll('*')) {
      if (!el.shadowRoot) continue;
      roots.push(...el.shadowRoot.querySelectorAll('[data-testid="figure"]'));
      walk(el.shadowRoot);
    }
  };
  walk(document);
  window.__events = [];
  if (!window.__keys) {
    window.__keys = true;
    window.addEventListener('keydown', () => { window.__keydown = performance.now(); }, true);
  }
  for (const root of roots) {
    const name = root.getAttribute('data-figure');
    new MutationObserver((records) => {
      for (const r of records) {
        window.__events.push([performance.now(), name, r.attributeName,
                              r.target.getAttribute(r.attributeName)]);
      }
    }).observe(root, {attributes: true, subtree: true,
                      attributeFilter: ['data-drawn', 'data-stale']});
  }
  return roots.map((root) => root.getAttribute('data-figure')).sort();
}"""
# ms from the last key press to the first event of `figure` setting `attribute` to a value
# containing `text` (null until there is one)
SINCE_KEY = """([figure, attribute, text]) => {
  const hit = window.__events.find(([t, f, a, v]) => t >= window.__keydown && f === figure
                                   && a === attribute && v !== null && v.includes(text));
  return hit ? hit[0] - window.__keydown : null;
}"""
FIGURE = "[data-testid='figure'][data-figure='{}']"


def drawn(page, figure: str) -> str:
    return page.locator(FIGURE.format(figure)).get_attribute("data-drawn")


def press(page, control: str, key: str, expect: str) -> tuple[float, float, bool]:
    """Focus a control inside the kernel figure and press key: ms until the figure drew
    ``expect`` (in the browser), ms until the decay figure drew the server's kernels for it,
    and whether the decay figure was marked stale in between."""
    from tests.app_idle import wait_idle

    page.evaluate("() => { window.__events = []; }")
    page.locator(f"{FIGURE.format('fd_kernel')} [name='{control}']").focus()
    page.keyboard.press(key)
    page.wait_for_function(SINCE_KEY, arg=["fd_kernel", "data-drawn", expect], timeout=10_000)
    draw = page.evaluate(SINCE_KEY, ["fd_kernel", "data-drawn", expect])
    now = drawn(page, "fd_kernel")
    page.wait_for_function(SINCE_KEY, arg=["profiles", "data-drawn", now], timeout=60_000)
    settled = page.evaluate(SINCE_KEY, ["profiles", "data-drawn", now])
    stale = page.evaluate(SINCE_KEY, ["profiles", "data-stale", "true"]) is not None
    wait_idle(page)
    assert drawn(page, "profiles") == now
    assert page.locator(f"{FIGURE.format('profiles')} [data-stale]").get_attribute(
        "data-stale") == "false"
    return draw, settled, stale


def width_latency(page, url: str, n: int, sequence: list[str]) -> tuple[list[float], list[float]]:
    """Width moves at n by ``sequence``'s keys from 32, each a new value: ms from each key
    press to the kernel figure's drawing and to the decay figure's (the server's kernels)."""
    from tests.app_idle import wait_idle

    page.goto(f"{url}/frequency?n={n}&smooth=true&causal=false&activation=silu")
    wait_idle(page)
    page.wait_for_selector(f"{FIGURE.format('profiles')}[data-drawn*='n={n}&']", timeout=60_000)
    page.evaluate(WATCH)
    width, draws, settles = 32, [], []
    for key in sequence:
        width = WIDTHS[WIDTHS.index(width) + (1 if key == "ArrowRight" else -1)]
        draw, settled, _ = press(page, "width", key, f"width={width}&")
        draws.append(draw)
        settles.append(settled)
    return draws, settles


@pytest.mark.browser
def test_the_frequency_page_redraws_in_the_browser(chromium, server):  # noqa: F811
    """Each control of the kernel figure, moved with the keyboard, redraws it at once; the
    decay figure is stale until the server's kernels for the settled value arrive; the URL
    then holds the value. Prints the key-press-to-drawn latencies (medians, page clock)."""
    import statistics

    from tests.app_idle import follow_socket, wait_idle
    from tests.test_browser import SHOTS, assert_clean

    page = follow_socket(chromium.new_page(viewport={"width": 1400, "height": 900}))  # 1st screen
    try:
        page.goto(f"{server}/frequency?n=1024")
        wait_idle(page)
        page.wait_for_selector(f"{FIGURE.format('profiles')}[data-drawn]", timeout=60_000)
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "frequency-first-screen.png"))
        box = page.locator(FIGURE.format("fd_kernel")).bounding_box()
        assert box["y"] + box["height"] <= 900  # the whole kernel figure on the first screen
        page.set_viewport_size({"width": 1400, "height": 2600})
        assert page.evaluate(WATCH) == ["fd_kernel", "profiles"]
        assert drawn(page, "fd_kernel") == ("activation=gelu&width=32&smooth=false&causal=true"
                                            "&n=1024&depth=1&seed=0")
        assert drawn(page, "profiles") == drawn(page, "fd_kernel")
        for control, key, expect in [("activation", "ArrowDown", "activation=silu&"),
                                     ("width", "ArrowRight", "width=64&"),
                                     ("smooth", "Space", "smooth=true&"),
                                     ("causal", "Space", "causal=false&")]:
            _, _, stale = press(page, control, key, expect)
            assert stale, control  # the decay figure said it was waiting for the server
            assert expect.rstrip("&") in page.url, (control, page.url)
        assert_clean(page, "frequency-after-moves")
        # n = 1024: every width, both ways (32 -> 1 -> 128); n = 4096: the widest three.
        # The many-move timings are tests/ui_figures.py's (docs/benchmarks.md).
        for n, sequence in ((1024, ["ArrowLeft"] * 5 + ["ArrowRight"] * 7),
                            (4096, ["ArrowRight"] * 2 + ["ArrowLeft"])):
            draws, settles = width_latency(page, server, n, sequence)
            print(f"\nn = {n}, {len(draws)} width moves: key press -> kernel figure drawn "
                  f"median {statistics.median(draws):.1f} ms (max {max(draws):.1f}); -> decay "
                  f"figure drawn from the server's kernels median "
                  f"{statistics.median(settles):.0f} ms (max {max(settles):.0f})")
    finally:
        page.close()
