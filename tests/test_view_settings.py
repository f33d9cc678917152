"""A lesson step's view settings read against the pages' declared controls
(pages/lessons/view_settings.py): what a view leaves out is what the page opens with."""

from __future__ import annotations

import pytest

from pages._ui.controls import fields
from pages.lessons import view_settings
from tnn_core.lab.common import figure_controls as sliders
from tnn_core.lab.common.page_controls import Field


@pytest.mark.parametrize("declared", [
    fields.LENGTH, fields.FREQUENCY_LENGTH, fields.SHARED_LENGTH, fields.DEPTH, fields.CAUSAL,
    fields.SHARED_CAUSAL, fields.METHOD, fields.COMPRESS_BAND, fields.COMPRESS_RANK,
    fields.COMPRESS_METHOD, fields.OPERATOR_CHANNEL, fields.side_method("a"),
    fields.side_method("b"), sliders.BAND, sliders.RANK, sliders.DECAY, sliders.WIDTH,
    *sliders.TOEPLITZ], ids=lambda declared: f"{type(declared).__name__}-{declared.name}")
def test_a_setting_left_out_is_the_declared_default(declared):
    got = view_settings.read({}, declared)
    assert got == declared.default and type(got) is type(declared.default)


def test_a_widget_declared_without_a_default_opens_at_its_low_end():
    for declared in (fields.LAYER, fields.CHANNEL, fields.DRILL_LAYER, fields.DRILL_CHANNEL):
        assert view_settings.read({}, declared) == declared.low == 0


def test_a_link_is_read_as_the_page_spells_it():
    """Numbers as text (a whole number even when written 300.0), switches as true/false,
    options as they are."""
    link = {"n": "300.0", "causal": "True", "method": "fit", "decay": "0.95", "depth": "2"}
    assert view_settings.read(link, fields.LENGTH) == 300
    assert view_settings.read(link, fields.CAUSAL) is True
    assert view_settings.read({"causal": "false"}, fields.CAUSAL) is False
    assert view_settings.read(link, fields.METHOD) == "fit"
    assert view_settings.read(link, sliders.DECAY) == 0.95
    assert view_settings.read(link, fields.DEPTH) == 2


def test_a_control_with_neither_default_nor_range_is_refused():
    with pytest.raises(ValueError, match="'source' declares neither a default nor a low end"):
        view_settings.read({}, Field("source", "Source"))


def test_a_step_without_compress_settings_converts_as_the_compress_page_opens():
    """The step once typed r = 16 where the page opens at 32."""
    assert view_settings.conversion_setting({}) == (
        fields.COMPRESS_BAND.default, fields.COMPRESS_RANK.default,
        fields.COMPRESS_METHOD.default)
    assert view_settings.conversion_setting({"band": "3", "rank": "8", "method": "sample"}) == (
        3, 8, "sample")


def test_a_frequency_step_without_settings_is_the_frequency_page_as_it_opens():
    width, depth, n, seed, fd_input, causal = view_settings.fd_kernel_args({}, seed=7)
    assert (width, depth, n, seed) == (sliders.WIDTH.default, fields.DEPTH.default,
                                       fields.FREQUENCY_LENGTH.default, 7)
    assert (fd_input, causal) == ("omega", True)
    assert view_settings.fd_kernel_args({"smooth": "true", "causal": "false"}, 0)[4:] == (
        "cosine", False)


def test_a_value_a_figure_keeps_in_the_link_is_read_against_the_figure_s_default():
    from pages.figures import fd_kernel, toeplitz

    assert view_settings.kept({}, "causal", fd_kernel.KEPT) is fd_kernel.KEPT["causal"] is True
    assert view_settings.kept({}, "causal", toeplitz.KEPT) is toeplitz.KEPT["causal"] is False
    assert view_settings.kept({"causal": "false"}, "causal", fd_kernel.KEPT) is False
    assert view_settings.kept({}, "activation", fd_kernel.KEPT) == fd_kernel.ACTIVATIONS[0]
    assert view_settings.kept({"activation": "relu"}, "activation", fd_kernel.KEPT) == "relu"
    *_, fd_input, causal = view_settings.fd_kernel_args({}, seed=0)
    assert (fd_input == "cosine") is fd_kernel.KEPT["smooth"] and causal is fd_kernel.KEPT[
        "causal"]


def test_sources_are_read_by_their_labels():
    from pages._ui import kernels

    assert view_settings.compare_source({}) == fields.SHARED_SOURCE.default
    label = kernels.SOURCE_LABELS["exponential"]
    assert view_settings.compare_source({"source": label}) == "exponential"
    source = view_settings.decomposition_source({"source": label, "channel": "3"})
    assert (source.name, source.channel) == ("exponential", 3)
    with pytest.raises(ValueError, match="the step's source 'no such' is none of"):
        view_settings.compare_source({"source": "no such"})
