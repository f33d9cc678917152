"""A figure's module (pages/figures/__init__.py ``script``): the shared files, the figure's
declared PARTS, then its own NAME.js; no part left out, none defined twice."""

from __future__ import annotations

import re

import pytest

from pages.figures import FOLDER, PARTS, SHARED, script

FILES = sorted(path.name for path in FOLDER.glob("*.js"))
PART_FILES = {part for parts in PARTS.values() for part in parts}
FIGURES = sorted(name[:-3] for name in FILES if name not in SHARED and name not in PART_FILES)
EXPORT = re.compile(r"(?m)^export default ")
TOP_LEVEL = re.compile(r"(?m)^(?:export\s+)?(?:function\*?\s+|const\s+|let\s+|class\s+)(\w+)")


def _text(name: str) -> str:
    return (FOLDER / name).read_text(encoding="utf-8")


def test_the_figures_are_found():
    assert {"decomposition", "profiles", "toeplitz"} <= set(FIGURES)
    assert "decomposition_maths.js" in PART_FILES


@pytest.mark.parametrize("name", sorted(PARTS))
def test_a_part_is_named_after_its_figure_and_exists(name):
    assert f"{name}.js" in FILES
    for part in PARTS[name]:
        assert part.startswith(f"{name}_") and part.endswith(".js"), part
        assert part in FILES, part


def test_no_part_file_is_left_undeclared():
    """NAME_<x>.js beside a figure NAME.js that PARTS does not name would be left out of
    the figure's module."""
    stray = [name for name in FILES for figure in FIGURES
             if name.startswith(f"{figure}_") and name not in PARTS.get(figure, ())]
    assert not stray, stray


@pytest.mark.parametrize("name", FIGURES)
def test_the_module_is_the_shared_files_the_parts_then_the_figure(name):
    files = (*SHARED, *PARTS.get(name, ()), f"{name}.js")
    assert script(name) == "\n".join(_text(file) for file in files)
    assert len(EXPORT.findall(script(name))) == 1
    assert EXPORT.search(_text(f"{name}.js"))


@pytest.mark.parametrize("name", FIGURES)
def test_no_top_level_name_is_defined_twice_in_a_module(name):
    """A function declared again in a later file would silently replace the earlier one."""
    names = TOP_LEVEL.findall(script(name))
    assert len(names) > 3
    assert sorted({n for n in names if names.count(n) > 1}) == []
