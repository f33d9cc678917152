"""Every session-state key the screen code names is declared once, in
pages/_ui/session_keys.py (its type, its owner, what it carries), and named through it.

The scan (``ast``, every pages/**/*.py but session_keys.py itself) finds each key expression
given to ``st.session_state[...]`` (read, write, ``del``), ``.get``, ``.setdefault``,
``.pop``, ``.__setitem__`` (also as an ``on_click`` with ``args``), ``.update`` (keywords
and dict literals) and ``KEY in st.session_state``, through a local alias of
``st.session_state`` too. A key expression fails when it is
- a string literal or an f-string: the key must be a declared constant
  (``session_keys.NAME``) or a declared family's function (``session_keys.name(...)``);
- a module-level string constant of the file itself: declare it in session_keys instead;
- ``session_keys.NAME`` that session_keys does not declare.
A name that is a parameter or a local is the caller's key, and not checked there.
A widget's ``key="..."`` stays a literal (it is also the control's name in the URL and its
``st-key-…`` class, which links, lessons and tests read from the source), but when that
string is also named through ``st.session_state`` anywhere under pages/ (through a declared
constant, a literal, or a local name bound to a literal) it must be declared.
"""

import ast
from pathlib import Path

from pages._ui import session_keys

ROOT = Path(__file__).resolve().parent.parent
SCANNED = sorted(path for path in (ROOT / "pages").rglob("*.py")
                 if path.name != "session_keys.py")
KEY_METHODS = {"get", "setdefault", "pop", "__setitem__"}


def _is_state(node: ast.AST, aliases: set[str]) -> bool:
    """``st.session_state``, or a name bound to it."""
    if isinstance(node, ast.Attribute) and node.attr == "session_state":
        return isinstance(node.value, ast.Name) and node.value.id == "st"
    return isinstance(node, ast.Name) and node.id in aliases


def _key_expressions(tree: ast.AST) -> list[ast.expr]:
    """Every expression used as a session-state key in ``tree``."""
    aliases = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and _is_state(node.value, set()) for target in node.targets
               if isinstance(target, ast.Name)}
    keys: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_state(node.value, aliases):
            keys.append(node.slice)
        elif isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and any(
                _is_state(right, aliases) for right in node.comparators):
            keys.append(node.left)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and _is_state(node.func.value, aliases):
            if node.func.attr in KEY_METHODS and node.args:
                keys.append(node.args[0])
            elif node.func.attr == "update":
                keys.extend(ast.Constant(keyword.arg, lineno=node.lineno)
                             for keyword in node.keywords if keyword.arg)
                keys.extend(key for arg in node.args if isinstance(arg, ast.Dict)
                            for key in arg.keys if key is not None)
        if isinstance(node, ast.Call):
            keyword = {k.arg: k.value for k in node.keywords}
            setter = keyword.get("on_click")
            if (isinstance(setter, ast.Attribute) and setter.attr == "__setitem__"
                    and _is_state(setter.value, aliases)
                    and isinstance(keyword.get("args"), ast.Tuple)):
                keys.append(keyword["args"].elts[0])
    return keys


def _module_strings(tree: ast.Module) -> dict[str, str]:
    """The file's module-level string constants, by name."""
    return {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for target in node.targets if isinstance(target, ast.Name)}


def _local_strings(tree: ast.AST) -> dict[str, str]:
    """Names bound to a string literal anywhere in the file (a function's local key)."""
    return {target.id: node.value.value for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in node.targets if isinstance(target, ast.Name)}


def named_keys(source: str) -> set[str]:
    """The strings ``source`` names as session-state keys, where they can be read off it."""
    tree = ast.parse(source)
    strings = _local_strings(tree)
    named = set()
    for key in _key_expressions(tree):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            named.add(key.value)
        elif isinstance(key, ast.Name) and key.id in strings:
            named.add(strings[key.id])
        elif (isinstance(key, ast.Attribute) and isinstance(key.value, ast.Name)
              and key.value.id == "session_keys"
              and isinstance(getattr(session_keys, key.attr, None), str)):
            named.add(getattr(session_keys, key.attr))
    return named


def widget_keys(source: str) -> list[tuple[int, str]]:
    """(line, string) of every ``key="..."`` literal in ``source``."""
    return [(node.value.lineno, node.value.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.keyword) and node.arg == "key"
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)]


def undeclared_widget_keys(sources: list[str]) -> list[str]:
    """Widget keys named through the session state somewhere in ``sources`` but not
    declared, as "file index, line N: why"."""
    named = set().union(*map(named_keys, sources))
    return [f"file {index}, line {line}: widget key {key!r} passes through the session "
            "state but is not declared" for index, source in enumerate(sources)
            for line, key in widget_keys(source)
            if key in named and key not in session_keys.DECLARED]


def undeclared_keys(source: str) -> list[str]:
    """The key expressions of ``source`` that break the rule above, as "line N: why"."""
    tree = ast.parse(source)
    constants = _module_strings(tree)
    problems = []
    for key in _key_expressions(tree):
        line = getattr(key, "lineno", 0)
        if isinstance(key, ast.Constant):
            problems.append(f"line {line}: literal key {key.value!r}")
        elif isinstance(key, ast.JoinedStr):
            problems.append(f"line {line}: f-string key {ast.unparse(key)}")
        elif isinstance(key, ast.Name) and key.id in constants:
            problems.append(f"line {line}: module constant {key.id} = {constants[key.id]!r}")
        elif (isinstance(key, ast.Attribute) and isinstance(key.value, ast.Name)
              and key.value.id == "session_keys"
              and getattr(session_keys, key.attr, None) not in session_keys.DECLARED):
            problems.append(f"line {line}: session_keys.{key.attr} is not declared")
    return problems


def test_every_session_key_in_pages_is_declared_and_named_through_session_keys() -> None:
    problems = [f"{path.relative_to(ROOT)} {problem}" for path in SCANNED
                for problem in undeclared_keys(path.read_text())]
    assert not problems, "\n".join(problems)
    sources = [path.read_text() for path in SCANNED]
    widgets = undeclared_widget_keys(sources)
    assert not widgets, "\n".join(
        f"{SCANNED[int(w.split(',')[0].split()[1])].relative_to(ROOT)}: {w}" for w in widgets)


def test_declarations_say_type_owner_and_what_they_carry() -> None:
    for key, declared in session_keys.DECLARED.items():
        assert declared.key == key and declared.type and declared.carries, key
        assert (ROOT / declared.owner).is_file(), (key, declared.owner)


def test_the_scan_catches_planted_keys() -> None:
    declared = next(iter(session_keys.DECLARED))
    clean = ("import streamlit as st\nfrom pages._ui import session_keys\n\n\n"
             "def f(key):\n    st.session_state[key] = 1\n"
             f"    return st.session_state.get(session_keys.{_name_of(declared)})\n")
    assert undeclared_keys(clean) == []
    planted = [
        'st.session_state["planted"] = 1',
        'x = st.session_state.get("planted")',
        'st.session_state.setdefault(f"planted_{1}", 0)',
        'st.session_state.pop("planted", None)',
        'y = "planted" in st.session_state',
        'del st.session_state["planted"]',
        'st.session_state.update(planted=1)',
        'state = st.session_state\nstate["planted"] = 1',
        'st.button("b", on_click=st.session_state.__setitem__, args=("planted", True))',
        'PLANTED = "planted"\nst.session_state[PLANTED] = 1',
        'st.session_state[session_keys.NOT_DECLARED] = 1',
    ]
    for statement in planted:
        assert len(undeclared_keys(clean + statement + "\n")) == 1, statement
    widget = 'st.slider("s", key="planted")\n'
    assert undeclared_widget_keys([clean + widget]) == []  # a widget's own key
    read_through_a_local = 'def g():\n    k = "planted"\n    return st.session_state[k]\n'
    assert undeclared_keys(clean + read_through_a_local) == []  # a local: not checked there
    assert len(undeclared_widget_keys([clean + widget, clean + read_through_a_local])) == 1
    assert undeclared_widget_keys([f'st.slider("s", key={declared!r})\n',
                                   clean + read_through_a_local]) == []


def _name_of(key: str) -> str:
    return next(name for name in dir(session_keys) if getattr(session_keys, name) == key)
