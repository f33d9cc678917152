"""The house: imports follow the architecture one way, with no cycles (README, Layout).

    core <- operators <- models <- analysis, training, bench <- generate, report, convert
         <- compress <- lab <- pages

Read from the source with ``ast`` (imports inside functions count too), so a lazy import
cannot hide a cycle or a layer skipped backwards.
"""

import ast
import sys
from pathlib import Path

import pytest

from tests import js_functions

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "tnn_core"

# What each part of tnn_core may import from tnn_core (besides itself).
ALLOWED = {
    "checks": set(),
    "files": set(),
    "allocator": set(),
    "core": {"checks"},
    "operators": {"checks", "core"},
    "models": {"checks", "core", "operators"},
    "analysis": {"checks", "core", "operators", "models"},
    "training": {"checks", "files", "core", "operators", "models", "allocator"},
    "bench": {"checks", "core", "operators", "models", "analysis", "allocator"},
    "compress": {"checks", "files", "core", "operators", "models", "analysis", "training",
                 "bench", "generate", "allocator"},
    "convert": {"checks", "files", "core", "operators", "models", "training"},
    "report": {"checks", "files", "core", "operators", "models", "analysis", "training"},
    "generate": {"checks", "core", "operators", "models", "training"},
    "lab": {"checks", "files", "core", "operators", "models", "analysis", "training", "bench",
            "compress", "convert", "report", "generate", "allocator"},
}
SCREEN = {"streamlit", "plotly", "altair", "pandas"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (relative imports resolved)."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: {m for m in _imports(path) if m in modules and m != name}
            for name, path in modules.items()}


def _part(module: str) -> str:
    return module.split(".")[1] if module.count(".") else "__init__"


def test_at_most_six_modules_beside_the_subpackages():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 6, top


def test_each_part_imports_only_the_layers_below_it():
    wrong = []
    for module, deps in _graph().items():
        part = _part(module)
        if part in ("__init__", "__main__"):
            continue
        for dep in deps:
            target = _part(dep)
            if target not in (part, "__init__") and target not in ALLOWED[part]:
                wrong.append(f"{module} imports {dep}")
    assert not wrong, "\n".join(sorted(wrong))


LAB_UNITS = {"basics", "compare", "compress", "decomposition", "frequency", "inspect", "lesson",
             "speed", "train"}  # one per page; lesson serves the Lessons and Welcome pages


def test_a_lab_unit_imports_the_core_and_common_never_another_unit():
    """tnn_core/lab holds one unit per page (a module, or a package whose __init__ is its
    interface) and common, what two or more units share. A unit imports the core, common
    and itself; common imports the core and itself: what two pages share lives one layer
    down, never behind a side door from one page's unit into another's."""
    lab = PACKAGE / "lab"
    entries = {p.stem for p in lab.iterdir()
               if p.suffix == ".py" or (p / "__init__.py").is_file()}
    assert entries == LAB_UNITS | {"__init__", "common"}, sorted(entries)
    wrong = []
    for path in sorted(lab.rglob("*.py")):
        module = _module_name(path)
        own = ".".join(module.split(".")[:3])  # tnn_core.lab.<unit> or tnn_core.lab.common
        allowed = {"tnn_core.lab.common", own}
        wrong += [f"{module} imports {dep}" for dep in sorted(_imports(path))
                  if dep.startswith("tnn_core.lab.")
                  and ".".join(dep.split(".")[:3]) not in allowed]
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles():
    graph = _graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for dep in sorted(graph[module]):
            # importing a package runs its __init__: an edge to it is real
            if state.get(dep) == 1:
                cycles.append(" -> ".join(path[path.index(dep):] + [dep]))
            elif dep not in state:
                visit(dep, path + [dep])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not cycles, "\n".join(cycles)


def test_tnn_core_knows_no_screen():
    offenders = {_module_name(p): sorted({m.split(".")[0] for m in _imports(p)} & SCREEN)
                 for p in PACKAGE.rglob("*.py")}
    assert not {k: v for k, v in offenders.items() if v}


def test_the_functional_core_imports_torch_and_the_standard_library_only():
    for path in (PACKAGE / "core").glob("*.py"):
        third_party = {m.split(".")[0] for m in _imports(path)} - set(sys.stdlib_module_names)
        assert third_party <= {"torch", "tnn_core"}, (path.name, third_party)


# The screen: pages -> lab -> core. A page is its script, pages/<page>.py (registered in
# app.py; Streamlit finds a fresh server's first deep link by that file's name:
# pages/_ui/streamlit_internals.py), and, when it has more, the package pages/<page>/ beside
# it: its sections and its own figures (Python and .js), mirroring its lab unit. What pages
# share: pages/_ui (helpers) and pages/figures (the figure library: the contract, the
# shared JavaScript, and every figure two pages draw, each NAME.py beside its NAME.js). A
# page's modules import its own lab unit, its own package and the shared screen; the
# shared screen imports lab units only, never the core beneath them nor a page.
PAGE_UNITS = {"home": "lesson", "lessons": "lesson", "basics": "basics",
              "decomposition": "decomposition", "compare": "compare", "frequency": "frequency",
              "speed": "speed", "train": "train", "inspect": "inspect",
              "compress": "compress"}
SHARED_SCREEN = ("_ui", "figures")
PAGE_SCRIPTS = sorted((ROOT / "pages").glob("*.py"))
PAGE_PACKAGES = sorted(p for p in (ROOT / "pages").iterdir()
                       if p.is_dir() and p.name not in SHARED_SCREEN + ("__pycache__",))
PAGE_MODULES = PAGE_SCRIPTS + sorted(m for folder in PAGE_PACKAGES for m in folder.rglob("*.py"))
SCREEN_HELPERS = sorted([*(ROOT / "pages" / "_ui").glob("*.py"),
                         *(ROOT / "pages" / "figures").glob("*.py"), ROOT / "app.py"])


def _tnn_core_imports(path: Path) -> set[str]:
    return {m for m in _imports(path) if m.split(".")[0] == "tnn_core" and m != "tnn_core"}


def _page_of(module: Path) -> str:
    """The page a module of pages/ belongs to: its script's stem or its package's name."""
    first = module.relative_to(ROOT / "pages").parts[0]
    return first.removesuffix(".py")


def test_every_page_is_a_script_with_its_lab_unit_and_maybe_a_package_beside_it():
    assert sorted(p.stem for p in PAGE_SCRIPTS) == sorted(PAGE_UNITS)
    for package in PAGE_PACKAGES:  # a page's package: beside its script, imported as one
        assert package.name in PAGE_UNITS and (package / "__init__.py").is_file(), package


def test_the_app_registers_each_page_script_once():
    registered = [node.args[0].value
                  for node in ast.walk(ast.parse((ROOT / "app.py").read_text()))
                  if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "Page"]
    assert sorted(registered) == sorted(f"pages/{p.name}" for p in PAGE_SCRIPTS)


def _page_import_faults(page: str, imports: set[str]) -> list[str]:
    """What a module of ``page`` (its script or its package) imports beyond its lab unit,
    its package and the shared screen."""
    unit = f"tnn_core.lab.{PAGE_UNITS[page]}"
    core = {m for m in imports if m.startswith("tnn_core.") and m != "tnn_core.lab"}
    screen = {m for m in imports if m.startswith("pages.")}
    allowed = tuple(f"pages.{folder}" for folder in (*SHARED_SCREEN, page))
    return ([f"{m} (another lab unit)" for m in sorted(core)
             if not (m == unit or m.startswith(unit + "."))]
            + [f"{m} (another page)" for m in sorted(screen)
               if not (m in allowed or m.startswith(tuple(a + "." for a in allowed)))])


@pytest.mark.parametrize("module", PAGE_MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_imports_its_own_lab_unit_package_and_the_shared_screen_only(module):
    assert not _page_import_faults(_page_of(module), _imports(module))


def test_an_import_from_another_page_or_unit_is_caught():
    planted = {"pages.figures", "pages.speed.plan", "pages.inspect", "pages.inspect.header",
               "tnn_core.lab", "tnn_core.lab.speed", "tnn_core.lab.compress"}
    assert _page_import_faults("speed", planted) == [
        "tnn_core.lab.compress (another lab unit)", "pages.inspect (another page)",
        "pages.inspect.header (another page)"]


@pytest.mark.parametrize("module", SCREEN_HELPERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_screen_helpers_reach_the_core_through_the_lab_only(module):
    """pages/_ui, the figure library and app.py: lab units only; no page."""
    core = _tnn_core_imports(module)
    assert all(m.startswith("tnn_core.lab") for m in core), core
    pages = {m for m in _imports(module) if m.startswith("pages.")}
    assert all(m.startswith(("pages._ui", "pages.figures")) for m in pages), pages


def test_each_module_of_the_figure_library_has_its_javascript_twin():
    """pages/figures holds figures, not page sections: NAME.py mounts NAME.js."""
    folder = ROOT / "pages" / "figures"
    lonely = [p.name for p in folder.glob("*.py")
              if p.stem != "__init__" and not (folder / f"{p.stem}.js").is_file()]
    assert not lonely, lonely


MAX_FILE_LINES = 400
SOURCES = sorted([ROOT / "app.py", *(ROOT / "pages").rglob("*.py"), *PACKAGE.rglob("*.py"),
                  *(ROOT / "tests").glob("*.py")])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_file_holds_at_most_400_lines(path):
    """One concept per file: a file past MAX_FILE_LINES holds more than one."""
    lines = path.read_text().count("\n")
    assert lines <= MAX_FILE_LINES, f"{path.relative_to(ROOT)} has {lines} lines"


MAX_FUNCTION_LINES = 60


def _long_functions(path: Path) -> list[str]:
    """Functions of ``path`` over MAX_FUNCTION_LINES lines without a comment right above
    them (above their decorators) that says why."""
    lines = path.read_text().splitlines()
    found = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        length = node.end_lineno - node.lineno + 1
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        said = first >= 2 and lines[first - 2].strip().startswith("#")
        if length > MAX_FUNCTION_LINES and not said:
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_a_function_holds_at_most_60_lines_unless_a_comment_says_why():
    long = [f for path in SOURCES for f in _long_functions(path)]
    assert not long, "\n".join(long)


# The figures' JavaScript under the same rules: a file at most MAX_FILE_LINES lines, a
# function at most MAX_FUNCTION_LINES from its header to its closing brace unless the line
# right above its header says why (``// long: ...``; tests/js_functions.py reads them).
JS_SOURCES = sorted((ROOT / "pages").rglob("*.js"))


def test_the_figures_javascript_is_found():
    assert {"fft.js", "common.js", "decomposition.js"} <= {p.name for p in JS_SOURCES}


@pytest.mark.parametrize("path", JS_SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_javascript_file_holds_at_most_400_lines(path):
    lines = path.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_FILE_LINES, f"{path.relative_to(ROOT)} has {lines} lines"


def _long_js_functions(name: str, text: str) -> list[str]:
    return [f"{name}:{f.first} {f.name} ({f.lines} lines)"
            for f in js_functions.long_functions(text, MAX_FUNCTION_LINES)]


def test_a_javascript_function_holds_at_most_60_lines_unless_a_comment_says_why():
    long = [f for path in JS_SOURCES
            for f in _long_js_functions(str(path.relative_to(ROOT)),
                                        path.read_text(encoding="utf-8"))]
    assert not long, "\n".join(long)


def test_a_long_javascript_function_is_caught():
    planted = ("// what the figure draws\nexport default function (component) {\n"
               + "  draw();\n" * MAX_FUNCTION_LINES + "}\n")
    assert _long_js_functions("planted.js", planted) == [
        f"planted.js:2 <anonymous> ({MAX_FUNCTION_LINES + 2} lines)"]
