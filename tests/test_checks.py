"""The shared argument checks: what passes, what is refused, and what the message says."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bayesrank.checks import (
    check_choice,
    check_finite,
    check_in_interval,
    check_int,
    check_probability,
)
from bayesrank.errors import DataError


def test_choice_returns_the_value_or_lists_the_choices():
    assert check_choice("solver", "lp", ("lp", "power")) == "lp"
    with pytest.raises(DataError, match=r"solver must be one of 'lp', 'power', got 'cfr'"):
        check_choice("solver", "cfr", ("lp", "power"))


@pytest.mark.parametrize("value", [1, 7, np.int64(3)])
def test_int_accepts_integers(value):
    out = check_int("max_iter", value)
    assert out == value and type(out) is int


@pytest.mark.parametrize("value", [0, -2, True, 2.0, 2.5, "3", None])
def test_int_refuses_everything_else(value):
    with pytest.raises(DataError, match=r"max_iter must be a positive integer, got"):
        check_int("max_iter", value)


def test_int_minimum_is_in_the_message():
    assert check_int("burnin", 0, minimum=0) == 0
    with pytest.raises(DataError, match=r"population_size must be an integer >= 2, got 1"):
        check_int("population_size", 1, minimum=2)


def test_finite_with_sign_constraints():
    assert check_finite("c", 0.0, nonnegative=True) == 0.0
    assert check_finite("K", 3) == 3.0 and type(check_finite("K", 3)) is float
    with pytest.raises(DataError, match="K must be positive and finite, got 0.0"):
        check_finite("K", 0.0, positive=True)
    with pytest.raises(DataError, match="tau must be non-negative and finite"):
        check_finite("tau", -1e-9, nonnegative=True)
    for bad in (math.inf, math.nan):
        with pytest.raises(DataError, match="rating must be finite"):
            check_finite("rating", bad)
    for bad in (True, "1.5", [1.0], np.ones(2)):
        with pytest.raises(DataError, match="rating must be a number"):
            check_finite("rating", bad)


@pytest.mark.parametrize(
    ("closed", "inside", "outside", "shown"),
    [
        ("both", [0.0, 0.5, 1.0], [-0.1, 1.1, math.nan], "[0, 1]"),
        ("left", [0.0, 0.999], [1.0, -1e-12], "[0, 1)"),
        ("right", [1.0, 1e-12], [0.0, 1.5], "(0, 1]"),
        ("neither", [0.5], [0.0, 1.0], "(0, 1)"),
    ],
)
def test_interval_ends(closed, inside, outside, shown):
    for x in inside:
        assert check_in_interval("p", x, 0.0, 1.0, closed=closed) == x
    for x in outside:
        with pytest.raises(DataError) as info:
            check_in_interval("p", x, 0.0, 1.0, closed=closed)
        assert str(info.value).startswith(f"p must lie in {shown}, got")


def test_probability_is_strictly_inside():
    assert check_probability("quantile", 0.05) == 0.05
    for bad in (0.0, 1.0, math.nan, True):
        with pytest.raises(DataError, match="quantile"):
            check_probability("quantile", bad)


def test_errors_stay_value_errors():
    # callers that catch ValueError keep working
    with pytest.raises(ValueError):
        check_int("n", -1)
