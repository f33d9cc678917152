"""A link value a page cannot use is said, not silently replaced (issue 21).

Streamlit 1.67 drops a value it cannot take for a widget bound to the URL, and raises on an
infinite one for a whole-number input. ``controls.control`` says which value, and why, in one
notice at the top of the page. The first tests drive one control of each kind in a small
app through the hostile values; the others open every page from a link.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import test_browser
from streamlit.testing.v1 import AppTest

from tests.app_idle import wait_idle
from tnn_core.analysis.presets import MAX_TYPED_CHARS

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
LONG = "7" * 100_000  # a 100 KB value

# One control of each kind, bound to the URL through the page helper, on a test page that
# declares them as the app's pages do (lab.common.page_controls, from which url_controls
# takes the page's names).
CONTROLS = """
import streamlit as st
from pages._ui import controls
from tnn_core.lab.common import page_controls, url_controls
from tnn_core.lab.common.page_controls import Field

F = {f.name: f for f in (
    Field("n", "n", low=1, high=4096, default=512),
    Field("decay", "decay", low=0.5, high=1.0, default=0.99),
    Field("seed", "seed", low=0, high=2**31 - 1, default=0),
    Field("scale", "scale", low=0.0, high=10.0, default=1.0),
    Field("source", "source", options=("spike", "tno")),
    Field("method", "method", options=("sample", "fit")),
    Field("causal", "causal"),
    Field("smooth", "smooth", default=True),
    Field("text", "text", default="1 2 1"))}
page_controls.PAGE_FIELDS.setdefault("controls", tuple(F.values()))
url_controls.URL_CONTROLS.setdefault("controls", tuple(F))
controls.link_notice("controls")
controls.control(st.slider, F["n"])
controls.control(st.slider, F["decay"], step=0.005)
controls.control(st.number_input, F["seed"])
controls.control(st.number_input, F["scale"])
controls.control(st.selectbox, F["source"], format_func=str.upper)
controls.control(st.radio, F["method"])
controls.control(st.toggle, F["causal"])
controls.control(st.checkbox, F["smooth"])
controls.control(st.text_input, F["text"], max_chars=10)
"""
KINDS = {"n": "slider", "decay": "slider", "seed": "number_input", "scale": "number_input",
         "source": "selectbox", "method": "radio", "causal": "toggle", "smooth": "checkbox",
         "text": "text_input"}
DEFAULTS = {"n": 512, "decay": 0.99, "seed": 0, "scale": 1.0, "source": "spike",
            "method": "sample", "causal": False, "smooth": True, "text": "1 2 1"}

# (key, the link's value or values, the value the control shows, whether a line says so)
CASES = [
    *[("n", raw, 512, True) for raw in
      ["1e12", "999999", "nan", "inf", "-inf", "-0", "0", "1" * 400, "", "abc", LONG, "%",
       "%zz", "½", "١e99", ["1", "2"], ["", ""]]],
    ("n", "100", 100, False),
    ("n", "１２", 12, False),  # Python's float reads any Unicode digit
    ("n", ["", "7"], 7, False),  # an empty repeat is ignored
    ("n", "12.7", 12, True),  # taken, but cut to a whole number
    *[("decay", raw, 0.99, True) for raw in ["nan", "inf", "1.5", "0.49", "", "λ"]],
    ("decay", "0.75", 0.75, False),
    ("decay", "0.503", 0.503, False),  # off the step: Streamlit 1.67 takes it as it is
    *[("seed", raw, 0, True) for raw in
      ["inf", "-inf", "1e400", "1" * 400, "nan", "1e12", "-1", "", "abc", LONG, "%"]],
    ("seed", "-0", 0, False),
    ("seed", "42", 42, False),
    ("seed", ["1", "2"], 2, False),  # a repeated key: the last value counts
    ("seed", ["1", "inf"], 0, True),
    ("seed", "12.7", 12, True),
    *[("scale", raw, 1.0, True) for raw in ["inf", "nan", "11", "", "x"]],
    ("scale", "2.5", 2.5, False),
    *[("source", raw, "spike", True) for raw in ["tno", "cuda", "", "ＴＮＯ", LONG]],
    ("source", "TNO", "tno", False),  # the link holds the label shown
    *[("method", raw, "sample", True) for raw in ["svd", "", "FIT"]],
    ("method", "fit", "fit", False),
    *[("causal", raw, False, True) for raw in ["yes", "1", "", "nan"]],
    ("causal", "TRUE", True, False),
    ("smooth", "no", True, True),
    ("smooth", "false", False, False),
    ("text", LONG, LONG[:10], True),  # cut to max_chars
    ("text", "", "", False),
    ("text", "%", "%", False),
]


def notice(at: AppTest) -> list[str]:
    """The link notice's lines (there is at most one notice)."""
    found = [w.value for w in at.warning if "The link's `" in w.value]
    assert len(found) <= 1, found
    return found[0].split("  \n") if found else []


def control(at: AppTest, key: str):
    return getattr(at, KINDS[key])(key=key)


def open_controls(key: str, raw) -> AppTest:
    at = AppTest.from_string(CONTROLS, default_timeout=60)
    at.query_params[key] = raw
    return at.run()


@pytest.mark.parametrize(("key", "raw", "shown", "said"), CASES,
                         ids=[f"{c[0]}={str(c[1])[:12]!r}" for c in CASES])
def test_each_kind_of_control_says_what_it_could_not_use(key, raw, shown, said):
    at = open_controls(key, raw)
    assert not at.exception, at.exception[0].message
    value = control(at, key).value
    assert value == pytest.approx(shown) if isinstance(shown, float) else value == shown
    lines = notice(at)
    if not said:
        assert lines == []
        return
    (line,) = lines
    assert line.startswith(f"The link's `{key}` ")
    if raw and raw != ["", ""]:
        value_shown = (raw if isinstance(raw, str) else raw[-1])[:40]
        assert value_shown in line
    if len(str(raw)) > 100:
        assert f"({len(raw)} characters)" in line and len(line) < 200
    for other in DEFAULTS.keys() - {key}:  # the others are untouched
        assert control(at, other).value == DEFAULTS[other]


@pytest.mark.parametrize(("raw", "why"), [
    ("1e12", "is outside [1, 4096]; using ` 512 `."),
    ("nan", "is not a number"),
    (["1", "2"], "is given 2 times"),
    ("", "is empty"),
])
def test_the_line_says_why_and_what_is_used(raw, why):
    (line,) = notice(open_controls("n", raw))
    assert why in line


def test_values_that_would_crash_are_taken_out_of_the_link():
    """int(inf) raises inside Streamlit's number_input: the value leaves the link first."""
    at = AppTest.from_string(CONTROLS, default_timeout=60)
    at.query_params.update({"seed": "inf", "n": "1e12", "decay": "0.75"})
    at.run()
    assert not at.exception
    lines = notice(at)
    assert [line.split("`")[1] for line in lines] == ["n", "seed"]
    assert "using ` 0 `" in lines[1]
    assert control(at, "decay").value == 0.75
    assert dict(at.query_params) == {"decay": "0.75"}


def test_a_notice_stays_until_a_linked_control_moves():
    """Reruns that nobody asked for (a timing that arrives) keep the notice; the refused
    values have left the link, so they are not said again once the user moves on."""
    at = AppTest.from_string(CONTROLS, default_timeout=60)
    at.query_params.update({"n": "1e12", "causal": "yes"})
    at.run()
    assert "n" not in at.query_params and "causal" not in at.query_params
    said = notice(at)
    assert len(said) == 2
    assert notice(at.run()) == said
    at.slider(key="decay").set_value(0.8).run()
    assert notice(at) == []
    assert notice(at.run()) == []


def test_every_linked_control_goes_through_the_check():
    """A widget given bind="query-params" other than through from_link escapes the check
    (pages/_ui/controls.py, where from_link binds, aside)."""
    direct = []
    binder = ROOT / "pages" / "_ui" / "controls.py"
    for path in [ROOT / "app.py", *sorted(set((ROOT / "pages").rglob("*.py")) - {binder})]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and any(
                    word.arg == "bind" for word in node.keywords) and not ast.unparse(
                    node.func).endswith("from_link"):
                direct.append(f"{path.name}:{node.lineno}")
    assert direct == []


def test_a_control_the_page_has_not_declared_stops_the_page():
    """A page drawing a widget its declaration (lab.common.page_controls) lacks raises on
    its first run, so no page's link can drift from what lessons may set."""
    at = AppTest.from_string("""
import streamlit as st
from pages._ui import controls
from tnn_core.lab.common.page_controls import Field
controls.link_notice("basics")
controls.control(st.number_input, controls.fields.CELL_I, high=63)
controls.control(st.slider, Field("rank", "Rank r", low=2, high=64, default=8))
""", default_timeout=60).run()
    assert at.number_input(key="cell_i").value == 0  # declared for basics
    assert len(at.exception) == 1 and "the 'basics' page draws the control 'rank' ('Rank r'), " \
        "but tnn_core/lab/common/page_controls.py does not declare it" in at.exception[0].message


# -- every page, opened from a link -----------------------------------------------------------
def open_link(page: str | None, params: dict) -> AppTest:
    """A fresh session opened on ``page`` (None: Welcome) from a link with ``params``."""
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update(params)
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, at.exception[0].message
    return at


# page, a link with a value no control of the page can use, for each kind of control the page
# has, and the values the page opens with (its defaults)
HOSTILE = [
    (None, {"seed": "inf", "device": "cuda"}, {"seed": 0, "device": "auto"}),
    ("pages/lessons.py", {"lesson": "No such lesson", "step": "inf", "present": "maybe"},
     {"step": 1, "present": False}),
    ("pages/basics.py",
     {"preset": "tno", "n": "1e12", "decay": "nan", "causal": "yes", "channel": "1e400"},
     {"preset": "exponential", "n": 64, "decay": 0.9, "causal": False, "channel": 0}),
    ("pages/decomposition.py",
     {"source": "Spike", "n": "1e12", "decay": "nan", "causal": "", "band": "999999",
      "rank": "abc", "method": "svd", "cell_i": "inf"},
     {"source": "spike_smooth", "n": 512, "decay": 0.99, "causal": False, "band": 9,
      "rank": 32, "method": "sample", "cell_i": 48}),
    ("pages/compare.py",
     {"source": "x", "n": "-0", "causal": "%", "a_band": "999999", "b_rank": "abc",
      "a_method": "svd", "b_decay": "inf"},
     {"source": "spike_smooth", "n": 256, "causal": False, "a_band": 9, "b_rank": 32,
      "a_method": "sample", "b_decay": 0.99}),
    ("pages/frequency.py",
     {"activation": "nope", "width": "1e12", "depth": "-1", "n": "nan", "causal": "maybe",
      "smooth": "1"},
     {"activation": "gelu", "width": 32, "depth": 1, "n": 512, "causal": True,
      "smooth": False}),
    ("pages/compress.py", {"checkpoint": "nope", "band": "inf", "rank": "1e12", "method": "x"},
     {"checkpoint": "digits-tno", "band": 9, "rank": 32, "method": "fit"}),
    ("pages/inspect.py", {"checkpoint": "nope", "layer": "inf", "channel": "99999"},
     {"checkpoint": "digits-tno", "layer": 0, "channel": 0}),
]
# page, a link every control of it takes, and the values it then shows
VALID = [
    (None, {"seed": "11", "device": "cpu"}, {"seed": 11, "device": "cpu"}),
    ("pages/lessons.py", {"step": "2", "present": "true"}, {"step": 2, "present": True}),
    ("pages/basics.py",
     {"preset": "Fresh TNN operator (tno)", "n": "100", "decay": "0.8", "causal": "true",
      "channel": "3"},
     {"preset": "tno", "n": 100, "decay": 0.8, "causal": True, "channel": 3}),
    ("pages/decomposition.py",
     {"source": "Oscillating", "n": "256", "decay": "0.95", "causal": "true", "band": "17",
      "rank": "16", "method": "fit", "cell_i": "40"},
     {"source": "oscillating", "n": 256, "decay": 0.95, "causal": True, "band": 17,
      "rank": 16, "method": "fit", "cell_i": 40}),
    ("pages/compare.py",
     {"source": "Oscillating", "n": "128", "causal": "true", "a_band": "5", "b_rank": "8",
      "a_method": "fit", "b_decay": "0.9"},
     {"source": "oscillating", "n": 128, "causal": True, "a_band": 5, "b_rank": 8,
      "a_method": "fit", "b_decay": 0.9}),
    ("pages/frequency.py",
     {"activation": "silu", "width": "16", "depth": "2", "n": "256", "causal": "false",
      "smooth": "true"},
     {"activation": "silu", "width": 16, "depth": 2, "n": 256, "causal": False,
      "smooth": True}),
    ("pages/compress.py", {"band": "5", "rank": "8", "method": "sample"},
     {"band": 5, "rank": 8, "method": "sample"}),
    ("pages/inspect.py", {"layer": "1", "channel": "3"}, {"layer": 1, "channel": 3}),
    ("pages/speed.py", {"seed": "7"}, {"seed": 7}),
]


def widget(at: AppTest, key: str):
    """The widget in the URL under ``key`` (Compare keeps its shared ones under compare_KEY)."""
    for kind in ("slider", "number_input", "selectbox", "radio", "toggle", "text_input"):
        found = [w for w in getattr(at, kind) if w.key in (key, f"compare_{key}")]
        if found:
            return found[0]
    raise AssertionError(f"no control {key!r}")


def shown(at: AppTest, key: str):
    """A control's value: a Streamlit widget's, or else the value a page sends the figure
    that draws the control (pages/figures: its slider's spec, or a value in its data)."""
    try:
        return widget(at, key).value
    except AssertionError:
        for element in at.get("bidi_component"):
            data = json.loads(element.proto.json)
            for spec in data.get("controls", []):
                if spec["name"] == key:
                    return spec["value"]
            if key in data:
                return data[key]
        raise


def assert_shows(at: AppTest, values: dict) -> None:
    for key, value in values.items():
        shown_value = shown(at, key)
        assert (shown_value == pytest.approx(value) if isinstance(value, float)
                else shown_value == value), (key, shown_value, value)


@pytest.mark.parametrize(("page", "params", "opens_with"), HOSTILE,
                         ids=[h[0] or "home" for h in HOSTILE])
def test_every_page_says_which_link_values_it_could_not_use(page, params, opens_with):
    at = open_link(page, params)
    assert sorted(line.split("`")[1] for line in notice(at)) == sorted(params)
    assert_shows(at, opens_with)


def test_the_sidebar_says_it_once_and_other_pages_open_clean():
    """The sidebar's controls belong to every page; its notice goes with the page it was
    said on (a deep link to Speed or Train shows it there: the browser test)."""
    at = open_link(None, {"seed": LONG, "device": "%"})
    assert sorted(line.split("`")[1] for line in notice(at)) == ["device", "seed"]
    assert "(100000 characters)" in notice(at)[1] and len(notice(at)[1]) < 200
    for page in ("pages/speed.py", "pages/train.py"):
        at.switch_page(page).run()
        assert not at.exception and notice(at) == []
        assert_shows(at, {"seed": 0, "device": "auto"})


def test_a_typed_kernel_too_long_for_its_box_is_said_to_be_cut():
    typed = "0 " * 200_000  # longer than the box takes, within Streamlit's 512 KiB link
    at = open_link("pages/basics.py", {"preset": "Type your own coefficients",
                                        "coefficients": typed})
    (line,) = notice(at)
    assert line.startswith("The link's `coefficients` ") and "(400000 characters)" in line
    assert line.endswith(f"… ({MAX_TYPED_CHARS} characters).")  # using the text cut to it
    assert shown(at, "coefficients") == typed[:MAX_TYPED_CHARS]  # in Basics' figure


@pytest.mark.parametrize(("page", "params", "shows"), VALID,
                         ids=[v[0] or "home" for v in VALID])
def test_a_link_every_control_can_use_opens_silently(page, params, shows):
    at = open_link(page, params)
    assert notice(at) == []
    assert_shows(at, shows)


# -- the real browser (AppTest reruns a fragment as a full run, so it cannot see this) ------
server, browser_page = test_browser.server, test_browser.browser_page  # its fixtures


@pytest.mark.browser
def test_a_deep_link_in_the_browser_says_it_and_a_fragment_move_clears_it(browser_page, server):
    """Decomposition's m slider lives in a fragment: moving it reruns only the fragment,
    which must clear the notice drawn outside it without an exception."""
    page = browser_page
    page.goto(f"{server}/decomposition?n=1e12&band=999999&decay=nan")
    wait_idle(page)
    alert = page.locator("[data-testid='stAlert']").filter(has_text="The link's")
    assert alert.count() == 1
    text = alert.inner_text()
    assert all(f"The link's {key} = " in text for key in ("n", "decay", "band"))
    # Streamlit took the bound widgets' values out of the link; the figure writes its
    # controls back at the values it uses (m and λ: their defaults)
    assert "?n=" not in page.url and "&n=" not in page.url, page.url
    assert re.search(r"[?&]band=9(&|$)", page.url) and re.search(r"[?&]decay=0.99(&|$)",
                                                                  page.url), page.url
    assert page.locator("[data-testid='stException']").count() == 0
    page.locator("h1").first.click()
    page.keyboard.press("r")  # a full rerun, as when the speed readout arrives: it stays
    wait_idle(page)
    assert alert.count() == 1
    for _ in range(2):
        page.get_by_role("slider", name="Band m").focus()
        page.keyboard.press("ArrowRight")
        wait_idle(page)
        assert page.locator("[data-testid='stException']").count() == 0
        assert alert.count() == 0
