"""The sidebar's seed and device are part of every page's address."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[1] / "app.py")


def test_a_link_with_seed_and_device_sets_the_sidebar():
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["seed"] = "11"
    at.query_params["device"] = "cpu"
    at.run()
    assert not at.exception
    assert at.number_input(key="seed").value == 11
    assert at.selectbox(key="device").value == "cpu"
