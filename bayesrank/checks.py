"""Argument checks shared by every layer: one place, one wording, one error class.

Each check returns the validated value (converted to ``int`` / ``float`` where that is
the point of the check) or raises :class:`~bayesrank.errors.DataError` (a ``ValueError``)
whose message names the argument, states what it must be and repeats the value given.
Nothing is coerced silently: ``True`` is not an integer of iterations, ``2.5`` is not a
number of draws, ``nan`` is not a variance.

>>> check_choice("solver", "exact", ("exact", "power"))
'exact'
>>> check_int("max_iter", 0)
Traceback (most recent call last):
    ...
bayesrank.errors.DataError: max_iter must be a positive integer, got 0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from bayesrank.errors import DataError

__all__ = [
    "category_weights_argument",
    "check_choice",
    "check_finite",
    "check_in_interval",
    "check_int",
    "check_probability",
    "names_argument",
]

Closed = Literal["both", "left", "right", "neither"]


def check_choice[T](name: str, value: T, allowed: Sequence[Any]) -> T:
    """``value`` if it is one of ``allowed``, else a DataError listing the choices."""
    if value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise DataError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_int(name: str, value: Any, *, minimum: int = 1) -> int:
    """``value`` as an ``int`` if it is an integer (not a bool or a float) ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        need = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise DataError(f"{name} must be {need}, got {value!r}")
    return int(value)


def _real(name: str, value: Any) -> float:
    """``value`` as a float, refusing bools, strings, arrays and anything non-numeric."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise DataError(f"{name} must be a number, got {value!r}")
    return float(value)


def check_finite(
    name: str, value: Any, *, positive: bool = False, nonnegative: bool = False
) -> float:
    """``value`` as a finite float; with ``positive`` (``> 0``) or ``nonnegative`` (``>= 0``)."""
    x = _real(name, value)
    if not math.isfinite(x) or (positive and x <= 0) or (nonnegative and x < 0):
        need = ("positive and finite" if positive
                else "non-negative and finite" if nonnegative else "finite")
        raise DataError(f"{name} must be {need}, got {value!r}")
    return x


def check_in_interval(
    name: str, value: Any, low: float, high: float, *, closed: Closed = "both"
) -> float:
    """``value`` as a float inside the interval from ``low`` to ``high``.

    ``closed`` says which ends belong to it, as in :class:`pandas.Interval`: ``"both"``
    ``[low, high]``, ``"left"`` ``[low, high)``, ``"right"`` ``(low, high]``, ``"neither"``
    ``(low, high)``.  NaN lies in no interval.
    """
    x = _real(name, value)
    above = x >= low if closed in ("both", "left") else x > low
    below = x <= high if closed in ("both", "right") else x < high
    if not (above and below):
        left = "[" if closed in ("both", "left") else "("
        right = "]" if closed in ("both", "right") else ")"
        raise DataError(f"{name} must lie in {left}{low:g}, {high:g}{right}, got {value!r}")
    return x


def check_probability(name: str, value: Any) -> float:
    """``value`` as a float strictly between 0 and 1 (a quantile level or a probability)."""
    x = _real(name, value)
    if not 0.0 < x < 1.0:
        raise DataError(f"{name} must lie strictly between 0 and 1, got {value!r}")
    return x


def category_weights_argument(text: str) -> list[float]:
    """``--weights 0,0.5,1``: the score of each outcome 0..C, for ``argparse`` ``type=``.

    >>> category_weights_argument("0,0.5,1")
    [0.0, 0.5, 1.0]
    """
    import argparse

    try:
        values = [float(v) for v in text.split(",")]
    except ValueError:
        values = []
    if len(values) < 2 or not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(
            f"expected the score of each outcome 0..C, comma-separated (e.g. 0,0.5,1), "
            f"got {text!r}")
    return values


def names_argument(text: str) -> list[str]:
    """``--covariates length,markdown``: comma-separated names, for ``argparse`` ``type=``.

    >>> names_argument("length,markdown")
    ['length', 'markdown']
    """
    import argparse

    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated names (e.g. length,markdown), "
                                         f"got {text!r}")
    return names
