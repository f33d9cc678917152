"""Lesson 6's recurrent fits kept beside the shipped checkpoints (tnn_core.lab.common
.recurrent_fit through stored_measurements): keyed by the SHA-256 of the kernel's
coefficients and of the fitting code, equal to the fit computed afresh, computed again
when either differs or the file is not a fit, and read by the lesson's own calls, so that
a fresh server fits nothing while a class waits (issue 38)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from test_stored_measurements import Counted

from tnn_core.analysis.presets import synthetic_kernel
from tnn_core.lab.common import recurrent_fit as fitting
from tnn_core.lab.common import stored_measurements as store
from tnn_core.lab.common.measurement_build import digests, lesson_kernel
from tnn_core.lab.common.measurement_codecs import CODECS, StoredValueError
from tnn_core.lab.common.recurrent_fit import (
    DECAYS,
    RecurrentFit,
    computed_fit,
    fitted_kernel,
    modes_by_decay,
    recurrent_fit,
)
from tnn_core.lab.lesson import answers, load_lessons

FITS = [m for m in store.LESSON_MEASUREMENTS if m.kind == "recurrent_fit"]
STEP_3 = next(m for m in FITS if dict(m.kernel)["source"] == "checkpoint")  # charlm-tno's
STEP_4 = [m for m in FITS if dict(m.kernel)["source"] == "tno"]  # one channel at each λ
SLUG = "6-ssm-is-toeplitz"
ROOT = Path(__file__).resolve().parents[1]
# a stored fit is the computed one bit for bit on the machine that built it (both on one
# thread: recurrent_fit.computed_fit); another CPU may differ in the last bits, never in a
# digit the lesson prints (two to four significant digits)
ACROSS_MACHINES = 1e-6


def lesson_6():
    lessons, errors = load_lessons()
    assert not errors
    return next(lesson for lesson in lessons if lesson.slug == SLUG)


def forbidden(*args, **kwargs):
    raise AssertionError("a recurrent fit was computed, not read from the store")


def assert_same_fit(stored: RecurrentFit, computed: RecurrentFit) -> None:
    assert stored.n == computed.n and stored.direct == computed.direct
    np.testing.assert_array_equal(stored.column, computed.column)  # the same kernel
    np.testing.assert_array_equal(stored.modes, computed.modes)
    np.testing.assert_array_equal(stored.undamped, computed.undamped)
    np.testing.assert_allclose(stored.errors, computed.errors, rtol=ACROSS_MACHINES, atol=0)
    scale = np.abs(computed.column).max()
    for s in computed.modes:  # what the figure draws: the fitted kernel at every s
        np.testing.assert_allclose(fitted_kernel(stored, s), fitted_kernel(computed, s),
                                   rtol=0, atol=ACROSS_MACHINES * scale, err_msg=f"s = {s}")


# -- what is stored ------------------------------------------------------------------------
def test_the_lesson_6_fits_are_listed():
    """Step 2's exact kernel, step 3's learned channel, step 4's channel at every λ it asks
    about, each at the figure's whole ladder."""
    assert len(FITS) == 5 and len(STEP_4) == len(DECAYS)
    assert sorted(dict(m.kernel)["decay"] for m in STEP_4) == sorted(DECAYS)
    assert all(dict(m.params)["ladder"] == fitting.LADDER for m in FITS)


@pytest.mark.parametrize("measurement", [
    pytest.param(m, marks=() if m is STEP_3 else pytest.mark.slow) for m in FITS],
    ids=lambda m: m.file_name.removesuffix(".json"))
def test_a_stored_fit_is_the_computed_one(measurement):
    coeffs = lesson_kernel(dict(measurement.kernel))
    stored = store.stored_or_computed("recurrent_fit", digests(measurement),
                                      dict(measurement.params), forbidden)
    assert_same_fit(stored, computed_fit(coeffs))


def test_a_stored_file_stays_small():
    for measurement in FITS:
        assert (store.STORE_DIR / measurement.file_name).stat().st_size < 100_000


# -- never trusted -------------------------------------------------------------------------
@pytest.mark.parametrize("planted", [0, 1], ids=["kernel's digest", "code's digest"])
def test_a_stored_fit_whose_digest_does_not_match_is_computed(tmp_path, planted):
    """The shipped file, copied: used as it is; with one digest of its key changed (as a
    file built from another kernel or by other code), computed."""
    text = (store.STORE_DIR / STEP_3.file_name).read_text(encoding="utf-8")
    wanted, params = digests(STEP_3), dict(STEP_3.params)
    kept, planted_dir = tmp_path / "kept", tmp_path / "planted"
    kept.mkdir()
    kept.joinpath(STEP_3.file_name).write_text(text, encoding="utf-8")
    assert isinstance(store.stored_or_computed("recurrent_fit", wanted, params, forbidden,
                                               kept), RecurrentFit)
    data = json.loads(text)
    sha = data["checkpoints"][planted][1]
    data["checkpoints"][planted][1] = ("0" if sha[0] != "0" else "1") + sha[1:]
    planted_dir.mkdir()
    planted_dir.joinpath(STEP_3.file_name).write_text(json.dumps(data), encoding="utf-8")
    compute = Counted("computed")
    assert store.stored_or_computed("recurrent_fit", wanted, params, compute,
                                    planted_dir) == "computed"
    assert compute.calls == 1


def test_a_kernel_one_bit_away_or_other_fitting_code_is_fitted_again(monkeypatch):
    """The real chain, recurrent_fit: the shipped kernel is read from the store; the same
    kernel with its last lag one float64 step away, or the same kernel after the fitting
    code changed (FIT_CODE), is computed."""
    coeffs = lesson_kernel(dict(STEP_3.kernel))
    compute = Counted("computed")
    monkeypatch.setattr(fitting, "computed_fit", lambda *args: compute())
    assert isinstance(recurrent_fit(coeffs), RecurrentFit) and compute.calls == 0
    nudged = coeffs.copy()
    nudged[-1] = np.nextafter(nudged[-1], np.inf)
    assert recurrent_fit(nudged) == "computed" and compute.calls == 1
    monkeypatch.setattr(fitting, "FIT_CODE", "0" * 64)
    assert recurrent_fit(coeffs) == "computed" and compute.calls == 2


def test_the_fit_code_digest_is_of_the_fitting_source_and_versions():
    """FIT_CODE, rebuilt here: the numpy and torch versions and the source of the modules
    that compute a fit, so that an edit to any of them keys every stored fit anew."""
    digest = hashlib.sha256(f"numpy {np.__version__}, torch {torch.__version__}".encode())
    for path in ("tnn_core/lab/common/recurrent_fit.py", "tnn_core/analysis/exponential_fit.py",
                 "tnn_core/analysis/variable_projection.py"):
        digest.update((ROOT / path).read_bytes())
    assert fitting.FIT_CODE == digest.hexdigest()
    assert fitting.fit_key(np.zeros(3))[0] == (hashlib.sha256(bytes(24)).hexdigest(),
                                               fitting.FIT_CODE)


def hostile_fits() -> dict:
    fit = computed_fit(synthetic_kernel("spike_smooth", 20, 0.9, True).numpy(), (1, 2, 3))
    good = CODECS["recurrent_fit"][0](fit)

    def edited(change):
        copy = json.loads(json.dumps(good))
        change(copy)
        return copy

    return {
        "a pole too few": edited(lambda d: d["poles"][2]["real"]["values"].pop()),
        "no imaginary part": edited(lambda d: d["residues"][0].pop("imag")),
        "a fit too few": edited(lambda d: d["residues"].pop()),
        "falling modes": edited(lambda d: d["modes"].update(values=[3, 2, 1])),
        "float modes": edited(lambda d: d["modes"].update(dtype="float64")),
        "a NaN error": edited(lambda d: d["errors"]["values"].__setitem__(0, float("nan"))),
        "a negative error": edited(lambda d: d["errors"]["values"].__setitem__(0, -0.5)),
        "more undamped than modes": edited(lambda d: d["undamped"].update(values=[2, 0, 0])),
        "the column not n long": edited(lambda d: d.update(n=21)),
        "d not k_0": edited(lambda d: d.update(direct=d["direct"] + 1)),
        "a string for n": edited(lambda d: d.update(n="20")),
    }


def test_a_stored_fit_reads_back_exactly_and_read_only():
    fit = computed_fit(synthetic_kernel("spike_smooth", 20, 0.9, True).numpy(), (1, 2, 3))
    encode, decode = CODECS["recurrent_fit"]
    back = decode(json.loads(json.dumps(encode(fit), allow_nan=False)))
    assert back.n == fit.n and back.direct == fit.direct
    for name in ("column", "modes", "errors", "undamped"):
        assert np.array_equal(getattr(back, name), getattr(fit, name))
        assert getattr(back, name).dtype == getattr(fit, name).dtype
    for got, want in zip(back.poles + back.residues, fit.poles + fit.residues, strict=True):
        assert got.dtype == np.complex128 and np.array_equal(got, want)
    with pytest.raises(ValueError):
        back.poles[0][0] = 0  # shared between sessions: nobody may change it


@pytest.mark.parametrize("name", list(hostile_fits()))
def test_a_malformed_stored_fit_is_refused(name):
    with pytest.raises(StoredValueError):
        CODECS["recurrent_fit"][1](hostile_fits()[name])


# -- the lesson reads the store ------------------------------------------------------------
def test_lesson_6s_fits_and_its_answer_read_the_store(monkeypatch):
    """Step 3's fit, step 4's table and its computed answer, as tnn_core computes them for
    the page, with computing a fit forbidden."""
    monkeypatch.setattr(fitting, "computed_fit", forbidden)
    step_3 = recurrent_fit(lesson_kernel(dict(STEP_3.kernel)))
    assert step_3.errors[3] < 0.01 < step_3.errors[0]  # the notice's s = 1 and s = 4
    kernels = {dict(m.kernel)["decay"]: lesson_kernel(dict(m.kernel)) for m in STEP_4}
    table = modes_by_decay(kernels)
    assert [found[0] for found in table.values()] == [2, 2, 2]  # the explanation's s
    question = lesson_6().steps[3].question
    assert question.computed == "modes_against_decay"
    assert answers.modes_against_decay(question.choices, kernels) == "about the same"


def test_a_walk_through_lesson_6_computes_no_fit(monkeypatch):
    """Every step of lesson 6 drawn and revealed in the app (AppTest), the page's memos
    emptied, with computing a fit forbidden: a fit the lesson draws that is not stored
    fails here."""
    from streamlit.testing.v1 import AppTest

    from pages._ui.memo import Memo
    from pages.figures import recurrent_fit as page_fit
    from pages.lessons import steps

    for module, name in ((page_fit, "cached_recurrent_fit"), (page_fit, "_modes_by_decay"),
                         (steps, "computed_answer")):
        cached = getattr(module, name)
        monkeypatch.setattr(module, name, Memo(cached.function, cached.max_entries,
                                               cached.spinner, cached.threads))
    calls = Counted(None)
    monkeypatch.setattr(fitting, "computed_fit", lambda *args: forbidden(calls()))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("pages/lessons.py").run()
    lesson = lesson_6()
    at.selectbox(key="lesson").set_value(lesson.title).run()
    for number, step in enumerate(lesson.steps, start=1):
        at.number_input(key="step").set_value(number).run()
        if step.question is not None:
            at.radio(key=f"predict:{SLUG}:{number}").set_value(step.question.choices[0]).run()
            at.button(key=f"reveal:{SLUG}:{number}").click().run()
        assert not at.exception, (number, at.exception)
        assert not at.error, (number, [e.value for e in at.error])
    assert calls.calls == 0
