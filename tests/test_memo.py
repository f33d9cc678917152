"""The app's one cache of computed views (pages/_ui/memo.py)."""

import dataclasses

import numpy as np
import pytest

from pages._ui.memo import Memo, memo


def test_arrays_are_keyed_by_their_contents_and_underscore_arguments_not_at_all():
    calls = []

    def view(coeffs, band, digest, _model):
        calls.append(band)
        return coeffs * band

    cached = Memo(view, max_entries=4)
    a = cached(np.arange(3.0), 2, "d1", _model=object())
    b = cached(np.arange(3.0), 2, "d1", _model=object())  # equal array, another model object
    c = cached(np.arange(3.0) + 1, 2, "d1", _model=None)  # other contents: another key
    assert calls == [2, 2] and a is b and not np.array_equal(a, c)


def test_a_left_out_argument_needs_a_digest_beside_it():
    def unkeyed(band, _model):
        return band

    with pytest.raises(ValueError, match="_model left out of the key.*digest"):
        Memo(unkeyed, max_entries=1)
    Memo(lambda band, digest, _model: band, max_entries=1)  # keyed: accepted


def test_every_memo_in_the_app_keys_what_it_leaves_out():
    """Each page's memos are built when its module is imported: a violation fails there."""
    import importlib

    for module in ("pages._ui.checkpoints", "pages._ui.checkpoint_views", "pages._ui.kernels",
                   "pages.lessons.steps"):
        importlib.import_module(module)


def test_values_are_shared_read_only():
    @dataclasses.dataclass(frozen=True)
    class Inner:
        values: np.ndarray

    @dataclasses.dataclass(frozen=True)
    class View:
        values: np.ndarray
        inner: Inner
        parts: list
        named: dict

    cached = Memo(lambda n: View(np.zeros(n), Inner(np.zeros(n)), [np.zeros(n)],
                                 {"a": (np.zeros(n),)}), max_entries=2)
    view = cached(3)
    for array in (view.values, view.inner.values, view.parts[0], view.named["a"][0]):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        Memo(lambda n: np.zeros(n), max_entries=2)(3)[0] = 1.0


def test_a_value_error_is_kept_and_other_errors_are_not():
    calls = []

    def fails(kind):
        calls.append(kind)
        raise (ValueError if kind == "value" else RuntimeError)(kind)

    cached = Memo(fails, max_entries=4)
    for kind in ("value", "value", "runtime", "runtime"):
        with pytest.raises((ValueError, RuntimeError)):
            cached(kind)
    assert calls == ["value", "runtime", "runtime"]


def test_the_least_recently_used_key_is_dropped_first():
    calls = []
    cached = Memo(lambda x: calls.append(x) or x, max_entries=2)
    for x in (1, 2, 1, 3, 1, 2):
        cached(x)
    assert calls == [1, 2, 3, 2]


def test_an_unhashable_argument_must_be_passed_as_an_underscore_one():
    with pytest.raises(TypeError):
        Memo(lambda table: 0, max_entries=1)({1, 2})


def test_a_function_defined_again_by_a_page_run_keeps_its_memo():
    calls = []
    memos = []
    for _ in range(3):  # as a page script defines its cached function on every run
        @memo(max_entries=2)
        def view(n):
            calls.append(n)
            return n

        memos.append(view)
        view(7)
    assert calls == [7] and memos[0] is memos[2]
