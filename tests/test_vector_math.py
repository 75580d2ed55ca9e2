"""The vectorisable e^x and log1p of the logistic cells against NumPy, in ulp."""

from __future__ import annotations

import re

import numpy as np
from bayesrank.models.fast import rasch_cells, slope_cells
from bayesrank.models.fast._vector_math import (
    KERNEL_OPTIONS,
    binomial_logit_cells,
    binomial_logit_total,
    exp_nonpositive,
    log1p_unit,
    log_positive,
    softplus_and_sigmoid,
)
from numba import njit
from scipy.special import expit


def _ulp_error(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return np.abs(got - want) / np.spacing(want)


def _grid(low: float, high: float) -> np.ndarray:
    """Evenly spaced and geometrically spaced points of [low, high] (0 < low)."""
    return np.concatenate([np.linspace(low, high, 100_001), np.geomspace(low, high, 100_001)])


@njit(**KERNEL_OPTIONS)
def _map(function_id, values):
    out = np.empty_like(values)
    for j in range(values.shape[0]):
        out[j] = exp_nonpositive(values[j]) if function_id == 0 else log1p_unit(values[j])
    return out


def test_exp_is_within_one_ulp_of_numpy_down_to_subnormals():
    x = -np.concatenate([[0.0], _grid(1e-300, 700.0), np.linspace(700.0, 708.0, 10_001)])
    assert _ulp_error(_map(0, x), np.exp(x)).max() <= 1.0
    # subnormal results: within one unit of the smallest subnormal, and 0 where e^x is
    deep = -np.linspace(708.5, 744.0, 10_001)
    assert np.abs(_map(0, deep) - np.exp(deep)).max() <= np.spacing(0.0)
    assert np.all(_map(0, np.array([-746.0, -800.0, -np.inf])) == 0.0)
    assert np.isnan(exp_nonpositive(np.nan))


def test_log1p_is_within_two_ulp_of_numpy_on_the_unit_interval():
    u = np.concatenate([_grid(1e-300, 1.0), [np.sqrt(2.0) - 1.0, np.nextafter(np.sqrt(2) - 1, 1)]])
    assert _ulp_error(_map(1, u), np.log1p(u)).max() <= 2.0
    assert log1p_unit(0.0) == 0.0
    # small u keeps its relative precision, which log(1 + u) does not
    assert abs(log1p_unit(1e-20) - 1e-20) <= 1e-36


@njit(**KERNEL_OPTIONS)
def _softplus_and_sigmoid_of(values):
    softplus, sigmoid = np.empty_like(values), np.empty_like(values)
    for j in range(values.shape[0]):
        softplus[j], sigmoid[j] = softplus_and_sigmoid(values[j])
    return softplus, sigmoid


def test_softplus_and_sigmoid_match_a_stable_reference_at_any_logit():
    x = np.concatenate([np.linspace(-40.0, 40.0, 2_000_001),
                        [-750.0, -1e300, 0.0, 750.0, 1e300]])
    softplus, sigmoid = _softplus_and_sigmoid_of(x)
    # below 0 it is log1p(e^x): e^x within 1 ulp, log1p within 2, so 3 ulp (4.4e-16) at most;
    # both the strict and the contracted (FMA) build reach 3 ulp on this grid, at x near -6
    reference = np.logaddexp(0.0, x)
    assert np.max(np.abs(softplus - reference) / np.spacing(reference)) <= 3.0
    # e^-|x| within 1 ulp, then 1 + u and the division rounded: 3 ulp (6.7e-16) at most
    np.testing.assert_allclose(sigmoid, expit(x), rtol=6.7e-16, atol=0.0)


def test_the_cells_loop_vectorises_and_the_rasch_and_2pl_loops_share_it():
    """Guards the point of the module: one branch or call too many in the cells' loop and
    LLVM runs it one cell at a time again (2-2.4x slower per gradient, docs/samplers.md)."""
    L, M = 3, 17
    rng = np.random.default_rng(0)
    k, n = rng.integers(0, 4, (L, M)).astype(float), np.full((L, M), 3.0)
    theta, b, log_coef = rng.normal(size=L), rng.normal(size=M), rng.normal(size=(L, M))
    binomial_logit_cells(k, n, theta, np.ones(M), -b, log_coef)
    llvm = binomial_logit_cells.inspect_llvm(binomial_logit_cells.signatures[0])
    assert re.search(r"<[248] x double>", llvm)
    rasch = njit(**KERNEL_OPTIONS)(rasch_cells._rasch_cells_loop)(k, n, theta, b, log_coef)
    slope = njit(**KERNEL_OPTIONS)(slope_cells._slope_cells_loop)(
        k, n, theta, np.ones(M), -b, log_coef)
    for got, want in zip(rasch, slope, strict=True):
        np.testing.assert_array_equal(got, want)
    # the one-pass sum and gradient: vectorised too, its sums included
    binomial_logit_total(k.astype(np.int32), n.astype(np.int32), theta, np.ones(M), -b, log_coef)
    llvm = binomial_logit_total.inspect_llvm(binomial_logit_total.signatures[0])
    assert re.search(r"fadd reassoc nsz contract <[248] x double>", llvm)


def test_log_is_within_an_ulp_and_1e_16_of_numpy_on_positive_normal_numbers():
    @njit(**KERNEL_OPTIONS)
    def logs(values):
        out = np.empty_like(values)
        for j in range(values.shape[0]):
            out[j] = log_positive(values[j])
        return out

    x = np.concatenate([np.geomspace(np.finfo(float).tiny, 1e300, 200_001),
                        np.linspace(0.01, 40.0, 200_001), [1.0, 2.0, 0.5]])
    want = np.log(x)
    assert np.all(np.abs(logs(x) - want) <= np.spacing(np.abs(want)) + 1.2e-16)
    assert np.all(logs(np.array([1.0, 2.0, 0.5])) == want[-3:])
