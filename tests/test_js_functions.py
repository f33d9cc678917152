"""The JavaScript function counter behind the house rules on the figures' JavaScript
(tests/js_functions.py, used by tests/test_layout.py): on small snippets, every kind of
function header, braces inside literals and comments, and the ``// long:`` exception."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.js_functions import Function, functions, long_functions

ROOT = Path(__file__).resolve().parents[1]


def _body(lines: int) -> str:
    """A statement per line: a body that makes its function ``lines`` lines long."""
    return "".join(f"  x += {i};\n" for i in range(lines - 2))


@pytest.mark.parametrize("source, name", [
    ("function draw(root, state) {\n  a();\n}\n", "draw"),
    ("export default function (component) {\n  a();\n}\n", "<anonymous>"),
    ("const draw = (root, state) => {\n  a();\n};\n", "draw"),
    ("const draw = async state => {\n  a();\n};\n", "draw"),
    ("class Plot {\n  draw(root) {\n    a();\n  }\n}\n", "draw"),
    ("const plot = {\n  draw: (root) => {\n    a();\n  },\n};\n", "draw"),
    ("function* steps(n) {\n  yield n;\n}\n", "steps"),
])
def test_each_kind_of_header_is_a_function(source, name):
    found = functions(source)
    assert [f.name for f in found] == [name]
    assert found[0].last - found[0].first == 2


def test_lines_run_from_the_header_to_the_closing_brace_nested_ones_counted_in_both():
    source = ("// what it does\n"
              "function outer(\n"
              "    a, b) {\n"
              "  input.addEventListener('input', (event) => {\n"
              "    a(event);\n"
              "  });\n"
              "  if (a) { b(); } else { c(); }\n"
              "  for (const x of b) { d(x); }\n"
              "}\n")
    assert functions(source) == [Function("outer", 2, 9), Function("<arrow>", 4, 6)]
    assert functions(source)[0].lines == 8


def test_braces_in_strings_templates_comments_and_regex_literals_are_not_code():
    source = ("function tricky(a) {\n"
              "  const s = '}' + \"}}\" + '\\'}';  // } in a comment\n"
              "  /* } { */\n"
              "  const t = `}${a.map((v) => { return `${v}}`; }).join('{')}{`;\n"
              "  const rgb = a.match(/^#([0-9a-f]{2})([0-9a-f]{2})$/i);\n"
              "  const half = a / 2 / (a) / 3;\n"
              "  return /[}/]{1,2}/.test(s + t + rgb + half);\n"
              "}\n"
              "function after() {\n"
              "}\n")
    assert functions(source) == [Function("tricky", 1, 8), Function("<arrow>", 4, 4),
                                 Function("after", 9, 10)]


@pytest.mark.parametrize("lines, flagged", [(60, False), (61, True)])
def test_a_function_past_the_limit_is_flagged(lines, flagged):
    source = "// what it draws\nfunction draw(a) {\n" + _body(lines) + "}\n"
    assert functions(source)[0].lines == lines
    assert bool(long_functions(source, 60)) == flagged


def test_only_a_long_comment_right_above_the_header_lets_it_pass():
    body = "function draw(a) {\n" + _body(61) + "}\n"
    assert long_functions("// long: one table, row by row\n" + body, 60) == []
    assert long_functions("// long: one table\n\n" + body, 60)  # not right above
    assert long_functions("// draws a table\n" + body, 60)  # says nothing about its length


def test_a_long_function_planted_in_a_figure_is_found():
    text = (ROOT / "pages" / "figures" / "common.js").read_text(encoding="utf-8")
    assert long_functions(text, 60) == []
    planted = text + "\nconst planted = (a) => {\n" + _body(70) + "};\n"
    assert [f.name for f in long_functions(planted, 60)] == ["planted"]
