"""A lesson's view may set exactly the controls its page binds to the URL: the table
``tnn_core.lab.common.url_controls`` (which lessons read as ``lesson.VIEW_PAGES``) against
what the page's script, its package (pages/<page>/), the figure modules it mounts and the
pages/_ui controls it draws bind, read from their source with ``ast``, and the sliders of
those figures (each figure module's ``CONTROLS``, declared once in
``tnn_core.lab.common.figure_controls``)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from tnn_core.lab import lesson as lesson_lab
from tnn_core.lab.common import page_controls
from tnn_core.lab.common.decomposition_figures import SIDES

ROOT = Path(__file__).resolve().parents[1]


def _query_param_keys(node: ast.Assign) -> set[str]:
    """``st.query_params["x"] = ...``: a figure's value that the page writes to the URL."""
    targets = [t for target in node.targets
               for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
    return {t.slice.value for t in targets if isinstance(t, ast.Subscript)
            and isinstance(t.value, ast.Attribute) and t.value.attr == "query_params"
            and isinstance(t.slice, ast.Constant)}


def _fields(node: ast.AST) -> set[str]:
    """The URL keys of the declared widgets ``node`` names: ``fields.NAME``
    (``page_controls.NAME``), or ``fields.side_method(side)``, Compare's a_method and
    b_method."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr == "side_method":
        return {page_controls.side_method(side).name for side in SIDES}
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
            node.value.id == "fields":
        named = getattr(page_controls, node.attr)
        return {named.name} if isinstance(named, page_controls.Field) else set()
    return set()


def _bound_keys(path: Path) -> set[str]:
    """The keys of a page's controls in the URL: the declared widgets it draws
    (``controls.control(widget, fields.NAME)``, a helper given ``fields.NAME``), values the
    page writes to it (``st.query_params[...] =`` or ``figures.keep_in_link``)."""
    keys = set()
    for node in ast.walk(ast.parse(path.read_text())):
        keys |= _fields(node)
        if isinstance(node, ast.Assign):
            keys |= _query_param_keys(node)
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if name == "keep_in_link" and node.args:  # figures.keep_in_link({"name": value})
                keys |= {k.value for d in ast.walk(node.args[0]) if isinstance(d, ast.Dict)
                         for k in d.keys if isinstance(k, ast.Constant)}
    return keys


# url_path -> the page's script, as app.py lists them
PAGE_FILES = {url: ROOT / path for path, url in re.findall(
    r'st\.Page\("([^"]+)"[^)]*?url_path="([^"]+)"', (ROOT / "app.py").read_text(), re.S)}
SHARED = {"checkpoints.checkpoint_select": {"checkpoint"},  # controls drawn by pages/_ui
          "cell_picker.follow_cell": {"cell_i", "cell_j"}}
NOT_CONTROLS = {"train": {"run"}}  # in the address but no control: the running run's id


def test_view_controls_are_the_pages_bound_widgets():
    """A lesson may set exactly the controls a page binds to its URL: its own, those of the
    controls of pages/_ui it draws, and its figures' sliders."""
    helpers = set().union(*map(_bound_keys, (ROOT / "pages" / "_ui").glob("*.py")))
    assert helpers == set().union(*SHARED.values())
    for page, keys in lesson_lab.VIEW_PAGES.items():
        assert set(keys) == _bound(page), page


def test_a_figure_slider_left_out_of_the_table_is_caught():
    """Basics' row without the Toeplitz figure's λ slider no longer matches the page."""
    assert set(lesson_lab.VIEW_PAGES["basics"]) - {"decay"} != _bound("basics")


def _bound(page: str) -> set[str]:
    """What ``page`` binds to its URL: its modules' widgets and written values, its figures'
    sliders, the pages/_ui controls it draws."""
    own, figures = _page_modules(PAGE_FILES[page])
    modules = own + [ROOT / "pages" / "figures" / f"{name}.py" for name in figures]
    sources = "".join(path.read_text() for path in modules)
    shared = set().union(*(k for f, k in SHARED.items() if f"{f}(" in sources))
    sliders = {c.name for name in figures
               for c in importlib.import_module(f"pages.figures.{name}").CONTROLS}
    bound = set().union(*map(_bound_keys, modules)) - NOT_CONTROLS.get(page, set())
    return bound | sliders | shared


def _page_modules(script: Path) -> tuple[list[Path], list[str]]:
    """A page's script and the modules of its package (pages/<page>/), and the names of
    the figure modules (pages/figures/NAME.py) they import: their controls are the page's."""
    own = [script, *sorted((script.parent / script.stem).glob("*.py"))]
    names = set()
    for node in ast.walk(ast.parse("".join(path.read_text() for path in own))):
        if isinstance(node, ast.ImportFrom) and node.module == "pages.figures":
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "pages.figures."):
            names.add(node.module.rsplit(".", 1)[1])
    return own, sorted(names)
