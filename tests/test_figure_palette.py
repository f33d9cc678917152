"""The figures' palette (pages/figures/figure.css) is readable on both of Streamlit's themes.

Every text and line colour a figure draws with is a ``--figure-NAME`` custom property,
defined for the light theme on ``.figure`` and for the dark on ``.figure[data-theme="dark"]``
(common.js applyTheme picks one from the page's background). Each must have a WCAG 2.1
contrast ratio of at least 4.5:1 (level AA for text) against its theme's background,
Streamlit's #ffffff (light) and #0e1117 (dark). The ratio is computed here from the WCAG
definition: relative luminance L = 0.2126 R + 0.7152 G + 0.0722 B of the linearised sRGB
channels, ratio (L_light + 0.05) / (L_dark + 0.05).

The figures' scripts name colours only through the palette: no hex colour literal in a
figure's JavaScript (pages/figures/*.js; the heatmaps' RGB ends excepted; the sketch,
pages/lessons/sketch.js, keeps a palette of its own), and every palette name they use is
defined in both themes.
"""

from __future__ import annotations

import re

import pytest

from pages.figures import FOLDER

BACKGROUNDS = {"light": "#ffffff", "dark": "#0e1117"}  # Streamlit's two themes
AA_TEXT = 4.5
CSS = (FOLDER / "figure.css").read_text(encoding="utf-8")
SCRIPTS = {path.name: path.read_text(encoding="utf-8") for path in sorted(FOLDER.glob("*.js"))}


def relative_luminance(colour: str) -> float:
    """WCAG 2.1 relative luminance of a #rrggbb colour."""
    channels = [int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def palette(selector: str) -> dict[str, str]:
    """The --figure-* colours the CSS rule ``selector { ... }`` defines: {name: #rrggbb}."""
    body = re.search(re.escape(selector) + r"\s*\{([^}]*)\}", CSS)
    assert body is not None, selector
    return dict(re.findall(r"--figure-([a-z0-9-]+):\s*(#[0-9a-fA-F]{6})\b", body.group(1)))


THEMES = {"light": palette(".figure"), "dark": palette('.figure[data-theme="dark"]')}


def test_the_contrast_formula_matches_wcag_examples():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the usual 4.5 miss
    assert contrast("#ff7f0e", "#ffffff") == pytest.approx(2.53, abs=0.01)  # the orange


def test_both_themes_define_the_same_colours():
    assert THEMES["light"].keys() == THEMES["dark"].keys()
    assert {"ink", "muted", "axis", "accent", "note", "series-1", "series-5"} <= THEMES[
        "light"].keys()


@pytest.mark.parametrize("theme", sorted(BACKGROUNDS))
def test_every_text_and_line_colour_reaches_aa_on_its_theme(theme):
    ratios = {name: contrast(colour, BACKGROUNDS[theme])
              for name, colour in THEMES[theme].items()}
    assert min(ratios.values()) >= AA_TEXT, {k: round(v, 2) for k, v in ratios.items()}


def test_figure_scripts_take_colours_from_the_palette():
    for name, source in SCRIPTS.items():
        code = re.sub(r"//[^\n]*", "", source)  # comments may name colours
        assert not re.findall(r"#[0-9a-fA-F]{3,6}\b", code), name
        used = set(re.findall(r"--figure-([a-z0-9-]+)", code))
        used |= set(re.findall(r"'((?:series-\d)|ink|muted|axis|accent|note)'", code))
        assert used <= THEMES["light"].keys(), (name, used - THEMES["light"].keys())


def test_the_stylesheet_uses_only_defined_colours_and_one_text_size():
    used = set(re.findall(r"var\(--figure-([a-z0-9-]+)", CSS)) - {"font"}
    assert used <= THEMES["light"].keys()
    # every size in the stylesheet is relative to the figure's one size (em), none smaller
    sizes = re.findall(r"font-size:\s*([^;]+);", CSS)
    assert sizes[0].strip() == "var(--figure-font, 0.9rem)"
    for size in sizes[1:]:
        assert re.fullmatch(r"1(\.\d+)?em", size.strip()), size
    for name, source in SCRIPTS.items():
        for size in re.findall(r"font-size:\s*([^;\"'`]+)", source):
            assert re.fullmatch(r"1(\.\d+)?em", size.strip()), (name, size)
        assert "px sans-serif" not in source, name  # canvas text follows canvasStyle
