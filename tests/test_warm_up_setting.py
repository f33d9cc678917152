"""TOEPLITZ_LAB_WARM_UP: which shipped checkpoints the server prepares at start."""

import logging

import pytest

from pages._ui import checkpoint_views
from tnn_core.lab.common.checkpoints import SHIPPED_ORDER

SHIPPED = tuple(name for name, _ in SHIPPED_ORDER)


@pytest.mark.parametrize(("setting", "names"), [
    (None, SHIPPED),
    ("all", SHIPPED),
    ("none", ()),
    ("", ()),
    ("charlm-fd, digits-tno", ("digits-tno", "charlm-fd")),  # in SHIPPED_ORDER
    ("digits-tno,digits-tno,", ("digits-tno",)),
])
def test_the_setting_names_the_checkpoints_in_shipped_order(setting, names):
    assert checkpoint_views.warm_up_names(setting) == names


def test_an_unknown_name_is_refused_with_the_allowed_ones():
    with pytest.raises(ValueError, match=r"TOEPLITZ_LAB_WARM_UP='digits-tno,\.\./x' names "
                                         r"\.\./x, which is not a shipped checkpoint; use "
                                         r"all, none or names among digits-tno, listops-tno"):
        checkpoint_views.warm_up_names("digits-tno,../x")


def test_the_warm_up_prepares_what_the_setting_names(monkeypatch, caplog):
    monkeypatch.setattr(checkpoint_views, "_opening_view", lambda name: f"job for {name}")
    monkeypatch.setenv(checkpoint_views.WARM_UP_VARIABLE, "listops-fd")
    assert checkpoint_views.warm_up() == ["job for listops-fd"]
    monkeypatch.delenv(checkpoint_views.WARM_UP_VARIABLE)
    assert checkpoint_views.warm_up() == [f"job for {name}" for name in SHIPPED]
    monkeypatch.setenv(checkpoint_views.WARM_UP_VARIABLE, "nope")
    with caplog.at_level(logging.ERROR):
        assert checkpoint_views.warm_up() == []
    assert "names nope, which is not a shipped checkpoint" in caplog.text
