"""tests/slow_cases.txt names tests that exist: a renamed or deleted test left in it would
move nothing to the slow tier, and its new name would run in make quick unseen."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import SLOW_CASES

ROOT = Path(__file__).resolve().parents[1]


def _test_functions(path: Path) -> set[str]:
    return {node.name for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_slow_case_names_a_test_function_of_its_file():
    missing = []
    for node in sorted(SLOW_CASES):
        path, _, name = node.partition("::")
        function = name.split("[", 1)[0]
        if not (ROOT / path).is_file() or function not in _test_functions(ROOT / path):
            missing.append(node)
    assert not missing, f"tests/slow_cases.txt names tests that do not exist: {missing}"


def test_the_list_is_read_without_its_comments():
    assert SLOW_CASES and all(node.startswith("tests/test_") and "#" not in node
                              and node == node.strip() for node in SLOW_CASES)
