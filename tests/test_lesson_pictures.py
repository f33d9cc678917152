"""The lessons' pictures: the circulant embedding step by step (tnn_core.lab.basics),
against numpy written here, SKI's factors W, A, W A Wᵀ as the Decomposition page
sends them to its figure, and what steps 3.4 and 3.5 draw and name, and where the
notices point (issue 38)."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg
from streamlit.testing.v1 import AppTest

from pages._ui import kernels
from tnn_core.analysis.decompose import decompose
from tnn_core.lab.basics import circulant_embedding
from tnn_core.lab.common.cells_image import cells_image
from tnn_core.lab.lesson import load_lessons

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def interpolation_by_hand(n: int, r: int) -> np.ndarray:
    """W [n, r]: position i between inducing points p_l <= i <= p_{l+1}, weights 1 - f, f."""
    p = np.linspace(0.0, n - 1, r)
    W = np.zeros((n, r))
    for i in range(n):
        left = min(int(np.searchsorted(p, i, side="right")) - 1, r - 2)
        f = (i - p[left]) / (p[left + 1] - p[left])
        W[i, left] += 1 - f
        W[i, left + 1] += f
    return W


def toeplitz_by_loops(t: np.ndarray, rows: np.ndarray) -> np.ndarray:
    n = (len(t) + 1) // 2
    return np.array([[t[n - 1 + i - j] for j in rows] for i in rows]).reshape(len(rows),
                                                                            len(rows))


def random_kernel(n: int) -> np.ndarray:
    return np.random.default_rng(n).standard_normal(2 * n - 1)


# -- the circulant embedding -----------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 7, 13, 64, 97, 1021, 1024])
@pytest.mark.parametrize("causal", [False, True])
def test_circulant_embeds_t_with_zero_padding(n, causal):
    t = random_kernel(n)
    if causal:
        t[: n - 1] = 0
    e = circulant_embedding(t)
    assert e.N >= 2 * n and e.N % 2 == 0 and e.padding == e.N - 2 * n + 1
    c = np.concatenate([t[n - 1:], np.zeros(e.N - 2 * n + 1), t[: n - 1]])  # by the formula
    pad = (e.slots >= n) & (e.slots <= e.N - n)
    np.testing.assert_array_equal(e.column, c[e.slots])
    np.testing.assert_array_equal(e.column_padding, pad)
    assert np.all(e.column[pad] == 0)
    assert set(range(n, e.N - n + 1)) <= set(e.slots.tolist())  # every padding slot drawn
    C = np.array([[c[(i - j) % e.N] for j in e.slots] for i in e.slots])
    np.testing.assert_array_equal(e.circulant, C)
    assert np.all(e.circulant[e.circulant_padding] == 0)
    np.testing.assert_array_equal(e.block_slots, e.slots[e.slots < n])
    np.testing.assert_array_equal(e.block, toeplitz_by_loops(t, e.block_slots))
    np.testing.assert_array_equal(e.coeffs, t[e.lag_slots])


def test_small_kernels_are_drawn_whole():
    e = circulant_embedding(random_kernel(7))
    assert e.step == 1 and e.N == 16 and len(e.slots) == 16 and len(e.block_slots) == 7


def test_cells_image_keeps_each_cell_a_block():
    colours = np.array([[255, 0, 0], [255, 255, 255], [0, 0, 255]], np.uint8)
    image = cells_image(np.array([[-1.0], [0.0], [1.0]]), 1.0, colours, 30, 8)  # (3, 1)
    assert image.shape == (30, 8, 3)
    assert (image[:10] == colours[0]).all() and (image[20:] == colours[2]).all()
    with pytest.raises(ValueError, match="height and width"):
        cells_image(np.zeros((2, 2)), 1.0, colours, 0, 4)


# -- the pages --------------------------------------------------------------------------------
def open_page(page: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page(page).run()
    assert not at.exception
    return at


def captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption) + " ".join(m.value for m in at.markdown)


@pytest.mark.parametrize("n", [1, 2, 7, 1024])
def test_basics_draws_the_embedding_steps(n):
    at = open_page("pages/basics.py")
    at.session_state["basics-figure"] = {"n": n}  # the figure's n, released
    at.run()
    assert not at.exception
    text = captions(at)
    N = {1: 2, 2: 4, 7: 16, 1024: 2048}[n]
    assert f"C's first column, N = {N} slots" in text
    assert ("1 slot in" in text) == (n == 1024)


@pytest.mark.parametrize("n, rank", [(2, 2), (3, 2), (512, 32), (600, 200)])
def test_decomposition_draws_w_and_a(n, rank):
    """The band + W A Wᵀ figure draws W, A and Wᵀ in the browser from the kernel the page
    sends it (tests/test_figure_decomposition.py holds them to tnn_core's)."""
    at = open_page("pages/decomposition.py")
    at.slider(key="n").set_value(n).run()
    at.session_state["decomposition_figure"] = {"rank": rank}  # the figure's r, released
    at.run()
    assert not at.exception and not at.error
    data = json.loads(at.get("bidi_component")[0].proto.json)
    assert data["kernel"]["n"] == n
    assert f"&rank={rank}&" in data["numbers"]["drawn"]


# -- what the lessons' steps draw and name -------------------------------------------------
LESSONS = {lesson.slug: lesson for lesson in load_lessons()[0]}


def test_step_3_4_names_each_sides_error_and_its_own_svd_optimum():
    """The two "Frobenius optimum" values of step 3.4 differ, and the notice says why: each
    is the SVD optimum of its side's own T − B (the band taps are the best given that
    side's W A Wᵀ), here recomputed by a dense float64 SVD; neither side's A beats it."""
    step = LESSONS["3-ski-sparse-plus-low-rank"].steps[3]
    view = dict(step.view.params)
    n = int(view["n"])
    t = kernels.preset_kernel("spike_smooth", n, 0.99, False, 0, 0)
    dense = scipy.linalg.toeplitz(t[n - 1:], t[n - 1::-1])  # T[i, j] = t_{i-j}
    optima = {}
    for side in ("a", "b"):
        dec = decompose(t, 9, int(view[f"{side}_rank"]), method=view[f"{side}_method"])
        band = dec.band_coeffs
        sigma = np.linalg.svd(dense - scipy.linalg.toeplitz(band[n - 1:], band[n - 1::-1]),
                              compute_uv=False)
        optimum = np.sqrt(np.sum(sigma[dec.rank:] ** 2)) / np.linalg.norm(dense)
        assert dec.errors.relative_optimal_frobenius == pytest.approx(optimum, rel=1e-9)
        assert dec.errors.relative_frobenius >= optimum
        optima[view[f"{side}_method"]] = optimum
    assert abs(optima["sample"] - optima["fit"]) > 0.1 * optima["fit"]  # two values shown
    for words in ("'Frobenius optimum'", "SVD optimum of its own T − B",
                  "no rank-r part can beat", "sides subtract different bands"):
        assert words in step.notice


def test_step_3_5_draws_the_error_curve_beside_the_svd_optimum_at_reveal():
    """Its title promises the error against r next to the SVD optimum: under the figure at
    Reveal (the sketch's answer), with the sampled, fitted and optimal errors and r marked."""
    lesson = LESSONS["3-ski-sparse-plus-low-rank"]
    step = lesson.steps[4]
    assert "SVD optimum" in step.title and step.drawn == ("decomposition", "error_curve")
    at = open_page("pages/lessons.py")
    at.selectbox(key="lesson").set_value(lesson.title).run()
    at.number_input(key="step").set_value(5).run()
    names = [figure.proto.component_name for figure in at.get("bidi_component")]
    assert not any(name.endswith("error_curve") for name in names)  # the sketch's answer
    at.session_state[f"sketch:{lesson.slug}:5"] = {"guess": [[2.0, 0.5], [64.0, 0.01]]}
    at.run()
    at.button(key=f"reveal:{lesson.slug}:5").click().run()
    assert not at.exception
    curve = next(json.loads(figure.proto.json) for figure in at.get("bidi_component")
                 if figure.proto.component_name.endswith("error_curve"))
    assert curve["rank"] == 16 and len(curve["ranks"]) == len(curve["optimal"])
    assert all(o <= f + 1e-12 for o, f in zip(curve["optimal"], curve["fit"], strict=True)
               if o is not None and f is not None)


def test_every_notice_points_at_what_is_on_screen():
    """A notice names another page only with the link under the figure that opens it, and
    no document: what it points at is on the student's screen."""
    for lesson in LESSONS.values():
        for number, step in enumerate(lesson.steps, start=1):
            where = f"{lesson.slug} step {number}"
            assert "docs/" not in step.notice + step.text, where
            for named in re.findall(r"the \w+ page[^.;]*", step.notice, flags=re.I):
                assert "the link under the figure" in named, (where, named)
