"""tnn_core.checks: the one set of validators; each message names field, value and range."""

import numpy as np
import pytest

from tnn_core.checks import (
    SHORT_REPR_CHARS,
    check_choice,
    check_fraction,
    check_int,
    check_number,
    is_integer,
    is_number,
    short_repr,
)


@pytest.mark.parametrize("value", [2, 5, np.int64(3)])
def test_check_int_accepts_integers_in_range(value):
    assert check_int("rank", value, 2, 5) == int(value)
    assert type(check_int("rank", value, 2, 5)) is int


@pytest.mark.parametrize("value", [1, 6, 2.0, True, "3", None])
def test_check_int_refuses_with_field_range_and_value(value):
    with pytest.raises(ValueError) as err:
        check_int("rank", value, 2, 5, span="[2, n]")
    assert str(err.value) == f"rank must be an integer in [2, n] = [2, 5]; got {value!r}"


def test_check_int_without_upper_bound():
    assert check_int("dim", 10**9, 1) == 10**9
    with pytest.raises(ValueError, match=r"dim must be an integer in \[1, inf\); got 0"):
        check_int("dim", 0, 1)


@pytest.mark.parametrize("value", [1e-9, 0.5, 1, 1.0])
def test_check_fraction_accepts_half_open_unit_interval(value):
    assert check_fraction("decay", value) == float(value)


@pytest.mark.parametrize("value", [0, -0.1, 1.0001, float("nan"), float("inf"), True, "0.9"])
def test_check_fraction_refuses(value):
    with pytest.raises(ValueError, match=r"decay must be a number in \(0, 1\]; got "):
        check_fraction("decay", value)


def test_check_number_closed_low_and_unbounded():
    assert check_number("lr", 0.0, 0) == 0.0
    with pytest.raises(ValueError, match=r"lr must be a number in \[0, inf\); got -1"):
        check_number("lr", -1, 0)


def test_check_choice():
    assert check_choice("method", "fit", ("sample", "fit")) == "fit"
    with pytest.raises(ValueError, match=r"method must be one of \('sample', 'fit'\); got 'svd'"):
        check_choice("method", "svd", ("sample", "fit"))


# -- the readers of untrusted data ----------------------------------------------------------


@pytest.mark.parametrize(("value", "integer", "number"), [
    (3, True, True), (np.int64(-2), True, True), (2.0, False, True),
    (np.float32(0.5), False, True), (float("nan"), False, True), (True, False, False),
    (np.bool_(True), False, False), ("3", False, False), (None, False, False), ([1], False, False),
])
def test_is_integer_and_is_number_refuse_bools(value, integer, number):
    assert is_integer(value) is integer
    assert is_number(value) is number


def test_short_repr_quotes_small_values_whole_and_cuts_large_ones():
    assert short_repr([1, "a"]) == "[1, 'a']"
    nested = [[[[[[[[1]]]]]]]]
    assert len(short_repr(nested)) <= SHORT_REPR_CHARS
    huge = "x" * 10**6
    text = short_repr(huge)
    assert len(text) <= SHORT_REPR_CHARS and text.startswith("'xxx")
    text = short_repr(["y" * 40] * 10)  # reprlib alone: six strings of 30 characters
    assert len(text) == SHORT_REPR_CHARS and text.endswith("...")


@pytest.mark.parametrize("check", [lambda v: check_int("seq_len", v, 2, 10),
                                   lambda v: check_number("decay", v, 0, 1),
                                   lambda v: check_choice("kind", v, ("tno", "fd"))])
def test_a_huge_value_is_quoted_short(check):
    """An untrusted value (a checkpoint's metadata) is never rendered whole in a message."""
    huge = {f"key {i}": {"x" * 50: [1e300] * 20} for i in range(20)}
    with pytest.raises(ValueError) as raised:
        check(huge)
    assert str(raised.value).endswith(f"got {short_repr(huge)}")
    assert len(str(raised.value)) < 200
