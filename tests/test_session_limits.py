"""Bounded inputs on the pages: typed coefficients have a length cap checked before any
number is parsed, and an overflowing product says so in a sentence."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tnn_core.analysis.presets import MAX_TYPED_CHARS, MAX_TYPED_LENGTH, parse_coefficients

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def test_typed_coefficients_are_capped_before_they_are_parsed():
    longest = " ".join(["1"] * (2 * MAX_TYPED_LENGTH - 1))
    assert parse_coefficients(longest).shape == (2 * MAX_TYPED_LENGTH - 1,)
    with pytest.raises(ValueError, match=f"at most {2 * MAX_TYPED_LENGTH - 1} numbers"):
        parse_coefficients(longest + " 1 1")
    with pytest.raises(ValueError, match=f"at most {MAX_TYPED_CHARS:,} characters"):
        parse_coefficients("1 " * (MAX_TYPED_CHARS // 2 + 1))  # refused by length, unparsed


def test_basics_says_when_the_product_overflows():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.switch_page("pages/basics.py").run()
    at.selectbox(key="preset").set_value("custom").run()
    at.session_state["basics-figure"] = {"coefficients": "1e308 1e308 1e308"}  # typed there
    at.run()
    assert not at.exception
    assert len(at.error) == 1 and "overflows float64" in at.error[0].value
    assert next(m.value for m in at.metric if m.label == "max |FFT − dense|") == "—"
