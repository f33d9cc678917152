"""Every page script (pages/*.py) keeps its work in functions, where the 60-line limit of
tests/test_layout.py reaches it.

The rule, checked on each script's top level (its module body, parsed with `ast`):

- allowed: the module docstring; `import` and `from … import`; function and class
  definitions (decorated or not); assignments of constants: every target a name in
  UPPER_CASE (a tuple of such names included), the value holding no call, no lambda, no
  comprehension and no `:=` (a literal, an f-string of other constants, a name or an
  attribute);
- and exactly one expression statement, the last statement, calling with no arguments a
  function the script itself defines at its top level (`main()`).

Anything else (a Streamlit call, a `with`, an `if`, a `for`, a `try`, an assignment of a
lower-case name or of a call's result) fails, named by file and line.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE_SCRIPTS = sorted((ROOT / "pages").glob("*.py"))
NOT_CONSTANT = (ast.Call, ast.Lambda, ast.NamedExpr, ast.ListComp, ast.SetComp, ast.DictComp,
                ast.GeneratorExp, ast.Await, ast.Yield, ast.YieldFrom)


def _constant_names(target: ast.expr) -> bool:
    """True when `target` is an UPPER_CASE name, or a tuple of them."""
    if isinstance(target, ast.Name):
        return target.id.isupper()
    if isinstance(target, ast.Tuple):
        return all(_constant_names(element) for element in target.elts)
    return False


def _is_constant_assignment(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets, value = [statement.target], statement.value
    else:
        return False
    return (all(_constant_names(target) for target in targets)
            and not any(isinstance(node, NOT_CONSTANT) for node in ast.walk(value)))


def _is_docstring(statement: ast.stmt, index: int) -> bool:
    return (index == 0 and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str))


def top_level_violations(source: str) -> list[str]:
    """The top-level statements of a page script that break the rule above, as
    "line N: statement" strings (empty when the script keeps it)."""
    body = ast.parse(source).body
    defined = {statement.name for statement in body
               if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))}
    problems = []
    calls = []
    for index, statement in enumerate(body):
        if (_is_docstring(statement, index)
                or isinstance(statement, (ast.Import, ast.ImportFrom, ast.FunctionDef,
                                          ast.AsyncFunctionDef, ast.ClassDef))
                or _is_constant_assignment(statement)):
            continue
        value = statement.value if isinstance(statement, ast.Expr) else None
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
                and value.func.id in defined and not value.args and not value.keywords):
            calls.append(index)
            continue
        problems.append(f"line {statement.lineno}: {ast.unparse(statement).splitlines()[0]}")
    if calls != [len(body) - 1]:
        problems.append(f"{len(calls)} calls of the script's own functions at the top level "
                        "(one, the last statement, is the rule)")
    return problems


@pytest.mark.parametrize("script", PAGE_SCRIPTS, ids=lambda path: path.name)
def test_page_script_top_level_is_definitions_and_one_call(script: Path) -> None:
    problems = top_level_violations(script.read_text())
    assert not problems, f"{script.relative_to(ROOT)}:\n" + "\n".join(problems)


def test_the_rule_catches_a_planted_statement() -> None:
    good = ('"""Doc."""\nimport streamlit as st\nFIGURE = "f"\nPAIR = (FIGURE, 2)\n\n\n'
            "def main() -> None:\n    st.title(FIGURE)\n\n\nmain()\n")
    assert top_level_violations(good) == []
    planted = good.replace('PAIR = (FIGURE, 2)\n', 'PAIR = (FIGURE, 2)\nst.title("x")\n')
    assert [problem.split(":")[0] for problem in top_level_violations(planted)] == ["line 5"]
    assert top_level_violations(good.replace('FIGURE = "f"', 'figure = "f"'))
    assert top_level_violations(good.replace('FIGURE = "f"', "FIGURE = st.container()"))
    assert top_level_violations(good + "main()\n")
    assert top_level_violations(good.replace("main()\n", "main(1)\n"))
    assert top_level_violations(good.replace("\nmain()\n", "\n"))
