"""Words that name code are true: every ``tnn_core.…`` module (and the name after it) and
every ``tnn_core/…`` or ``pages/…`` file named in the source, its docstrings, comments and
the figures' JavaScript headers exists. An upper-case segment (``lessons/NAME.toml``) is a
placeholder and matches any file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*ROOT.glob("tnn_core/**/*.py"), *ROOT.glob("pages/**/*.py"),
                  *ROOT.glob("pages/**/*.js"), ROOT / "app.py"])
DOTTED = re.compile(r"\btnn_core(?:\.[A-Za-z_]\w*)+")
FILE = re.compile(r"\b(?:tnn_core|pages)/[\w/.]+\.(?:py|js|toml|css|json)\b")


def _module_file(parts: list[str]) -> Path | None:
    """The file of module tnn_core.<parts> (a .py or a package's __init__.py), if any."""
    base = ROOT.joinpath("tnn_core", *parts)
    for found in (base.with_suffix(".py"), base / "__init__.py"):
        if found.is_file():
            return found
    return None


def _defines(source: str, name: str) -> bool:
    """Whether a module's source defines or imports ``name`` at any depth."""
    return re.search(rf"(?m)^\s*(?:def|class)\s+{name}\b|^\s*{name}\s*[:=]|"
                     rf"\bimport\b[^\n]*\b{name}\b|^\s+{name},?$|\b{name}\s*=", source) is not None


def _dotted_problem(name: str) -> str | None:
    parts = name.split(".")[1:]
    for cut in range(len(parts), -1, -1):
        module = _module_file(parts[:cut])
        if module is None:
            continue
        rest = parts[cut:]
        if rest and not _defines(module.read_text(), rest[0]):
            return f"{name}: {module.relative_to(ROOT)} has no {rest[0]}"
        return None
    return f"{name}: no such module"


def _file_problem(path: str) -> str | None:
    pattern = "/".join("*" if part.split(".")[0].isupper() else part for part in path.split("/"))
    return None if any(ROOT.glob(pattern)) else f"{path}: no such file"


def _problems(text: str) -> list[str]:
    found = [_dotted_problem(name) for name in sorted(set(DOTTED.findall(text)))]
    found += [_file_problem(path) for path in sorted(set(FILE.findall(text)))]
    return [problem for problem in found if problem]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_named_module_and_file_exists(source):
    assert _problems(source.read_text()) == []


def test_a_wrong_name_is_caught():
    planted = ('"""See tnn_core.generation.incremental (it is generate) and '
               'pages/figures/none.js; tnn_core.analysis.curves.no_such_function."""')
    assert len(_problems(planted)) == 3
    assert _problems("tnn_core.generate.incremental, tnn_core.analysis.curves.error_curve, "
                     "pages/figures/common.js, tnn_core/lab/lessons/NAME.toml") == []
