"""Each page widget bound to the URL is declared once (``tnn_core.lab.common.page_controls``):
the widget drawn from it has its label, range, default and help; the URL table takes every
page's names from it; a page cannot draw a widget its own list does not declare."""

from __future__ import annotations

import string

import pytest
from streamlit.testing.v1 import AppTest

from tnn_core.lab.common import page_controls as fields
from tnn_core.lab.common import url_controls
from tnn_core.operators.config import MAX_SIZE


def _frequency_page():
    """A script that draws Frequency's n and MLP depth as the page does."""
    import streamlit as st

    from pages._ui import controls

    controls.link_notice("frequency")
    controls.control(st.slider, controls.fields.FREQUENCY_LENGTH)
    controls.control(st.slider, controls.fields.DEPTH)


def _frequency_draws_decompositions_n():
    import streamlit as st

    from pages._ui import controls

    controls.link_notice("frequency")
    controls.control(st.slider, controls.fields.LENGTH)  # Decomposition's n, not Frequency's


def _compress_band_at_n0_16():
    import streamlit as st

    from pages._ui import controls

    controls.link_notice("compress")
    controls.control(st.number_input, controls.fields.COMPRESS_BAND, high=30, says={"most": 30})


def test_a_widget_is_drawn_from_its_declaration():
    at = AppTest.from_function(_frequency_page).run()
    assert not at.exception, at.exception
    n, depth = at.slider(key="n"), at.slider(key="depth")
    declared = fields.FREQUENCY_LENGTH
    assert (n.label, n.min, n.max, n.value, n.help) == (
        declared.label, declared.low, declared.high, declared.default, declared.help)
    assert (depth.label, depth.min, depth.max, depth.value) == ("MLP depth", 0, 4, 1)


def test_a_range_end_and_a_help_number_given_at_the_call():
    at = AppTest.from_function(_compress_band_at_n0_16).run()
    assert not at.exception, at.exception
    band = at.number_input(key="band")
    assert (band.min, band.max, band.value) == (1, 30, 9)
    assert band.help.endswith("At most 2 n0 − 2 = 30.")
    assert fields.COMPRESS_BAND.high == MAX_SIZE  # the declared end: OperatorConfig's


def test_a_widget_another_page_declares_is_refused_before_it_is_drawn():
    at = AppTest.from_function(_frequency_draws_decompositions_n).run()
    assert at.exception and "does not declare it for that page" in at.exception[0].message
    assert not at.slider


def test_the_url_table_takes_every_pages_widget_names_from_the_declarations():
    for page, declared in fields.PAGE_FIELDS.items():
        assert set(fields.names(declared)) <= set(url_controls.URL_CONTROLS[page]), page
    assert url_controls.SIDEBAR == ("device", "seed")


def test_compare_s_sides_are_named_for_their_side():
    a, b = fields.side_method("a"), fields.side_method("b")
    assert (a.name, a.label, a.default) == ("a_method", "A: low-rank A", "sample")
    assert (b.name, b.default) == ("b_method", "fit")
    with pytest.raises(ValueError, match="side must be one of"):
        fields.side_method("c")


def test_every_help_names_only_the_values_its_call_fills_in():
    """A help is formatted with the call's ``says``: a stray brace would raise on the page,
    and a placeholder must be a name (Compress's m: ``{most}``)."""
    declared = {f for page in fields.PAGE_FIELDS.values() for f in page} | set(fields.SIDEBAR)
    for field in declared:
        names = [name for _, name, _, _ in string.Formatter().parse(field.help) if name is not None]
        assert all(name.isidentifier() for name in names), (field.name, names)
        assert field.help.format(**dict.fromkeys(names, 7)).count("7") >= len(names)
    assert [name for _, name, _, _ in string.Formatter().parse(fields.STEP.help) if name] == [
        "count"]
