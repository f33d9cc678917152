"""The figures' FFT (pages/figures/fft.js) against numpy, in Chromium, float64.

fft.js runs in a plain page (no server): its functions are globals of a classic script.
Sizes: trivial (1, 2), small primes (3, 5, 7: Bluestein), powers of two, 5-smooth sizes
of every radix (30, 100, 2250) and a prime the figures meet at no fft_size (97). A
planted twiddle-sign mistake must fail the same comparison.

Also ``js_page``, the harness the other figure tests import: Chromium with one module of
``pages.figures.script(NAME)`` loaded, its ``export default`` made a plain function, and
``packFloat64`` / ``unpack_float64`` to bring a large array back.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest

from pages.figures import FOLDER

SIZES = [1, 2, 3, 5, 7, 8, 30, 97, 100, 1024, 2250, 8192]
RTOL = 1e-9  # of the largest magnitude of numpy's result

pytestmark = pytest.mark.browser


def harmless(source: str) -> str:
    """A figure's module as a classic script: its functions become globals, and its
    ``export default`` (the mount, which needs Streamlit) a function nobody calls."""
    return source.replace("export default function", "function mountFigure")


# Beside the figure's script in every js_page: a Float64Array (or any array of numbers) as
# base64 of its float64 bytes, for a large array on its way back to the test. The same
# numbers as a JSON list, which Playwright and Python take about 30 times longer over.
PACK_FLOAT64 = """function packFloat64(values) {
  const bytes = new Uint8Array(Float64Array.from(values).buffer);
  let text = '';
  for (let at = 0; at < bytes.length; at += 0x8000)
    text += String.fromCharCode.apply(null, bytes.subarray(at, at + 0x8000));
  return btoa(text);
}"""


def unpack_float64(text: str, shape: tuple[int, ...]) -> np.ndarray:
    """What ``packFloat64`` sent, as a float64 array of ``shape``."""
    return np.frombuffer(base64.b64decode(text), "<f8").reshape(shape)


def js_page(browser, source: str):
    """A fresh page with ``source`` loaded as a classic script (and ``packFloat64``)."""
    page = browser.new_page()
    page.set_content("<!doctype html><html><body></body></html>")
    page.add_script_tag(content=harmless(source) + "\n" + PACK_FLOAT64)
    return page


def attribute_becomes(page, selector: str, name: str, value: str, timeout: int = 60_000):
    """``selector`` (first match, also inside shadow roots) has ``name`` = ``value``."""
    page.wait_for_function(
        """([selector, name, value]) => {
             const find = (root) => root.querySelector(selector) || [...root.querySelectorAll(
               '*')].filter((e) => e.shadowRoot).map((e) => find(e.shadowRoot)).find(Boolean);
             const found = find(document);
             return found && found.getAttribute(name) === value; }""",
        arg=[selector, name, value], timeout=timeout)


@pytest.fixture(scope="module")
def fft_page(chromium):
    page = js_page(chromium, (FOLDER / "fft.js").read_text(encoding="utf-8"))
    yield page
    page.close()


# Each returns plain arrays: [re, im] of the transform.
RFFT = "([x, N]) => rfft(Float64Array.from(x), N).map(a => Array.from(a))"
IRFFT = "([re, im, N]) => Array.from(irfft(Float64Array.from(re), Float64Array.from(im), N))"
DFT = """([re, im, sign]) => dft(Float64Array.from(re), Float64Array.from(im), sign)
                            .map(a => Array.from(a))"""


def relative_error(got, want) -> float:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    scale = np.abs(want).max(initial=0.0)
    error = np.abs(got - want).max(initial=0.0)
    return error / scale if scale > 0 else error


def worst_errors(page, N: int, rng: np.random.Generator) -> dict[str, float]:
    """Relative errors of rfft, irfft and both complex directions at size N."""
    x = rng.standard_normal(N)
    z = rng.standard_normal(N) + 1j * rng.standard_normal(N)
    X = np.fft.rfft(x)
    re, im = page.evaluate(RFFT, [x.tolist(), N])
    forward = page.evaluate(DFT, [z.real.tolist(), z.imag.tolist(), -1])
    inverse = page.evaluate(DFT, [z.real.tolist(), z.imag.tolist(), 1])
    return {
        "rfft": relative_error(np.array(re) + 1j * np.array(im), X),
        "irfft": relative_error(page.evaluate(IRFFT, [X.real.tolist(), X.imag.tolist(), N]),
                                np.fft.irfft(X, n=N)),
        "dft": relative_error(forward[0] + 1j * np.array(forward[1]), np.fft.fft(z)),
        "inverse dft": relative_error(inverse[0] + 1j * np.array(inverse[1]),
                                      np.fft.ifft(z) * N),
    }


@pytest.mark.parametrize("N", SIZES)
def test_fft_js_is_numpy(fft_page, N):
    errors = worst_errors(fft_page, N, np.random.default_rng(N))
    assert max(errors.values()) <= RTOL, errors


def test_rfft_pads_and_cuts_and_irfft_reads_the_first_bins_as_numpy_does(fft_page):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(13)
    for N in (8, 13, 30):  # cut to 8, as is, zero-padded to 30
        re, im = fft_page.evaluate(RFFT, [x.tolist(), N])
        assert relative_error(np.array(re) + 1j * np.array(im), np.fft.rfft(x, n=N)) <= RTOL
    X = np.fft.rfft(rng.standard_normal(40))  # 21 bins
    for N in (10, 11, 40, 64):  # fewer bins than given, as many, more (zero-padded)
        got = fft_page.evaluate(IRFFT, [X.real.tolist(), X.imag.tolist(), N])
        assert relative_error(got, np.fft.irfft(X, n=N)) <= RTOL, N
    Y = X.copy()  # imaginary parts at DC and Nyquist are ignored, as numpy does
    Y[0] += 5j
    Y[20] += 3j
    got = fft_page.evaluate(IRFFT, [Y.real.tolist(), Y.imag.tolist(), 40])
    assert relative_error(got, np.fft.irfft(Y, n=40)) <= RTOL


def test_fft_size_is_the_cores(fft_page):
    from tnn_core.core.toeplitz import fft_size

    lengths = [1, 2, 3, 7, 100, 257, 301, 1024, 4096]
    assert fft_page.evaluate("(ns) => ns.map(fftSize)", lengths) == [fft_size(n) for n in lengths]


TWIDDLE = "const angle = sign * 2 * Math.PI * q * k / N;"  # mixed radix
CHIRP = "const angle = -sign * Math.PI * ((j * j) % (2 * N)) / N;"  # Bluestein


@pytest.mark.parametrize(("line", "sizes"), [(TWIDDLE, (8, 30, 2250)), (CHIRP, (7, 97))],
                         ids=["twiddle", "chirp"])
def test_a_planted_sign_mistake_fails(chromium, line, sizes):
    """The comparison above catches a wrong sign of the mixed-radix twiddle (radix 2, radices
    2·3·5, 2·3²·5³) and of Bluestein's chirp (the mistake fft.js first shipped with: every
    prime size came out conjugated). Bluestein's convolution survives a twiddle sign flipped
    in both of its transforms, so each mistake is planted where it shows."""
    source = (FOLDER / "fft.js").read_text(encoding="utf-8")
    assert source.count(line) == 1
    flipped = line.replace("= sign", "= -sign") if "= sign" in line else line.replace(
        "= -sign", "= sign")
    page = js_page(chromium, source.replace(line, flipped))
    try:
        rng = np.random.default_rng(1)
        for N in sizes:
            assert worst_errors(page, N, rng)["rfft"] > 1e-3, N
    finally:
        page.close()
