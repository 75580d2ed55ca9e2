"""e^x, log1p and log that Numba's LLVM can vectorise, and the logistic cells' loop.

Numba compiles ``np.exp`` and ``np.log`` to scalar calls into the C library, so a loop
over binomial logit cells runs one cell at a time (about 13 ns a cell here, nearly all
in ``exp`` and ``log``).  Written as range reduction and a polynomial, with no call and
no branch, the same functions let LLVM run 8 cells per instruction (AVX-512).

* :func:`exp_nonpositive` -- e^x for x <= 0: x = k ln 2 + r with |r| <= ln 2 / 2
  (Cody and Waite's two-part ln 2), e^r by its Taylor polynomial of degree 13 (the
  remainder is below 4e-18 relatively), and 2^k built from its bits in two factors so
  that subnormal results round like any other product.  Within 1 ulp of NumPy's ``exp``
  (tests/test_vector_math.py).
* :func:`log1p_unit` -- log(1 + u) for 0 <= u <= 1: above sqrt(2) - 1 it takes
  ln 2 + log1p((u - 1) / 2), then log1p(v) = 2 atanh(s), s = v / (2 + v), |s| <= 0.172,
  by its series to s^21.  Within 2 ulp of NumPy's ``log1p``; the cells' previous
  log(1 + u) lost up to 1.1e-16 absolutely for small u.
* :func:`log_positive` -- log x for positive normal x, from its exponent and
  log1p of its fraction in [1, 2): within 1 ulp + 1.2e-16 of NumPy's ``log`` (not
  relatively near x = 1 from below, where the result is -ln 2 + log 2f).
* :func:`binomial_logit_cells` -- the binomial logit cells' loop of the Rasch and 2PL
  Ops (:mod:`models.rasch_cells`, :mod:`models.slope_cells`).
* :func:`binomial_logit_total` -- the sum of those cells and its gradient in one pass,
  without the (L, M) tables: what a fit's log-density and gradient need
  (:class:`models.slope_cells.SlopeCellsTotal`).
* :func:`binomial_logit_observed_total` (and ``_cells``) -- the same over a list of
  observed cells only, for tables with most cells missing
  (:class:`models.slope_cells.ObservedSlopeCellsTotal`).

The three functions are inlined by Numba (``inline="always"``): left to LLVM's inliner
they stayed calls in the beta-binomial's curve loop (:mod:`models.fast.beta_binomial`),
which then ran one cell at a time (its one-pass total: 16.8 against 10.3 ms at 50 x 14,000;
the binomial total's 5.6 ms did not change).

Each is compiled with one fast-math flag, ``contract`` (a * b + c as one fused
multiply-add: the polynomials take half the instructions and round once per step; 1.7x
faster a cell, 1.06 against 0.61 ns for e^x), and no other: reassociation would undo the
two-part ln 2.  They also need ``error_model="numpy"`` (Python's error model checks every
division for zero, a branch that stops vectorisation); :data:`KERNEL_OPTIONS` holds both
for a loop that calls them.  A loop that sums cells is compiled with :data:`SUM_OPTIONS`
instead: reassociation lets LLVM keep several partial sums, one per vector lane, which a
strict left-to-right sum forbids (a sum written without it ran one cell at a time, 10x
slower).  The functions it calls keep their own options: fast-math flags belong to each
compiled instruction and survive LLVM's inlining.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["KERNEL_OPTIONS", "OBSERVED_BLOCK", "SUM_OPTIONS", "binomial_logit_cells",
           "binomial_logit_observed_cells", "binomial_logit_observed_total", "binomial_logit_total",
           "exp_nonpositive", "log1p_unit", "log_positive", "softplus_and_sigmoid"]

#: The Numba options of these functions and of the loops that call them (module docstring).
KERNEL_OPTIONS = {"fastmath": {"contract"}, "error_model": "numpy"}
#: The options of a loop that also sums over cells: its additions may be reassociated.
SUM_OPTIONS = {"fastmath": {"contract", "reassoc", "nsz"}, "error_model": "numpy"}

_LOG2_E = 1.4426950408889634
_LN2_HIGH = 6.93147180369123816490e-01  # ln 2's leading 32 bits: k ln2_high is exact
_LN2_LOW = 1.90821492927058770002e-10  # ln 2 - ln2_high
_SQRT2_MINUS_1 = math.sqrt(2.0) - 1.0
_BELOW_SMALLEST = -746.0  # e^x < 2^-1075 rounds to 0: clamping there keeps k finite


@intrinsic
def _float_from_bits(typingctx, bits):
    """The float64 whose IEEE-754 bits are the int64 ``bits`` (a bit cast, no conversion)."""
    if bits != types.int64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@intrinsic
def _bits_of_float(typingctx, value):
    """The int64 holding the IEEE-754 bits of the float64 ``value``."""
    if value != types.float64:
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@njit(inline="always", **KERNEL_OPTIONS)
def exp_nonpositive(x: float) -> float:
    """e^x for x <= 0 (module docstring); NaN stays NaN."""
    x = _BELOW_SMALLEST if x < _BELOW_SMALLEST else x
    k = math.floor(x * _LOG2_E + 0.5)
    r = (x - k * _LN2_HIGH) - k * _LN2_LOW
    # Horner's rule written out: a loop here would be the innermost one and not vectorise
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    # 2^k = 2^half 2^(k - half): each factor a normal number for k >= -1076
    half = int(k) // 2
    first = _float_from_bits((half + 1023) << 52)
    second = _float_from_bits((int(k) - half + 1023) << 52)
    return (p * first) * second


@njit(inline="always", **KERNEL_OPTIONS)
def log1p_unit(u: float) -> float:
    """log(1 + u) for 0 <= u <= 1 (module docstring)."""
    above = u > _SQRT2_MINUS_1
    v = 0.5 * (u - 1.0) if above else u
    s = v / (2.0 + v)
    z = s * s
    p = 1.0 / 21.0
    p = p * z + 1.0 / 19.0
    p = p * z + 1.0 / 17.0
    p = p * z + 1.0 / 15.0
    p = p * z + 1.0 / 13.0
    p = p * z + 1.0 / 11.0
    p = p * z + 1.0 / 9.0
    p = p * z + 1.0 / 7.0
    p = p * z + 1.0 / 5.0
    p = p * z + 1.0 / 3.0
    # 2 s = v - s v, since s (2 + v) = v: the leading term without a rounded 2 s
    log1p_v = (v - s * v) + 2.0 * s * z * p
    return (_LN2_HIGH if above else 0.0) + (log1p_v + (_LN2_LOW if above else 0.0))


@njit(inline="always", **KERNEL_OPTIONS)
def log_positive(x: float) -> float:
    """log x for a positive normal x: x = 2^e f with f in [1, 2) read from its bits, then
    e ln 2 + log1p(f - 1).  Within 1 ulp + 1.2e-16 of NumPy's ``log`` (module docstring)."""
    bits = _bits_of_float(x)
    exponent = float((bits >> 52) - 1023)
    fraction = _float_from_bits((bits & 0xFFFFFFFFFFFFF) | (1023 << 52))
    return exponent * _LN2_HIGH + (log1p_unit(fraction - 1.0) + exponent * _LN2_LOW)


@njit(inline="always", **KERNEL_OPTIONS)
def softplus_and_sigmoid(x: float) -> tuple[float, float]:
    """log(1 + e^x) and 1 / (1 + e^-x) from one u = e^-|x|: max(x, 0) + log1p(u), and
    1 / (1 + u) for x >= 0, u / (1 + u) below."""
    magnitude = abs(x)
    u = exp_nonpositive(-magnitude)
    return 0.5 * (x + magnitude) + log1p_unit(u), (1.0 if x >= 0.0 else u) / (1.0 + u)


@njit(**KERNEL_OPTIONS)
def binomial_logit_cells(k, n, theta, a, beta, log_coef):
    """Binomial logit cells at x_lm = a_m theta_l + beta_m, row by row, vectorised:
    log C(n, k) + k x - n softplus(x) and the residual k - n sigma(x), both (L, M).

    The loop of :class:`models.slope_cells.SlopeCells`, and of
    :class:`models.rasch_cells.RaschCells` with a = 1 and beta = -b (1 theta_l - b_m is
    theta_l - b_m exactly).
    """
    L, M = k.shape
    cells = np.empty((L, M))
    residual = np.empty((L, M))
    for i in range(L):
        k_row, n_row, coef_row = k[i], n[i], log_coef[i]
        cells_row, residual_row = cells[i], residual[i]
        for j in range(M):
            x = a[j] * theta[i] + beta[j]
            softplus, sigmoid = softplus_and_sigmoid(x)
            cells_row[j] = coef_row[j] + k_row[j] * x - n_row[j] * softplus
            residual_row[j] = k_row[j] - n_row[j] * sigmoid
    return cells, residual


@njit(**SUM_OPTIONS)
def binomial_logit_total(k, n, theta, a, beta, log_coef):
    """The sum of :func:`binomial_logit_cells`' cells and its gradient, in one pass.

    With x_lm = a_m theta_l + beta_m and r_lm = k_lm - n_lm sigma(x_lm):
    total = sum_lm [log C(n, k)_lm + k_lm x_lm - n_lm softplus(x_lm)],
    d/d theta_l = sum_m r_lm a_m, d/d a_m = sum_l r_lm theta_l, d/d beta_m = sum_l r_lm.
    ``k`` and ``n`` may be of any numeric dtype (read as floats, not copied).
    """
    L, M = k.shape
    d_theta = np.empty(L)
    d_a = np.zeros(M)
    d_beta = np.zeros(M)
    total = 0.0
    for i in range(L):
        k_row, n_row, coef_row = k[i], n[i], log_coef[i]
        ability = theta[i]
        row_total = 0.0
        row_score = 0.0
        for j in range(M):
            x = a[j] * ability + beta[j]
            softplus, sigmoid = softplus_and_sigmoid(x)
            successes, trials = float(k_row[j]), float(n_row[j])
            row_total += coef_row[j] + successes * x - trials * softplus
            residual = successes - trials * sigmoid
            row_score += residual * a[j]
            d_a[j] += residual * ability
            d_beta[j] += residual
        total += row_total
        d_theta[i] = row_score
    return total, d_theta, d_a, d_beta


#: Cells per block of :func:`binomial_logit_observed_total` (its buffers stay in L1/L2).
OBSERVED_BLOCK = 2048


@njit(**SUM_OPTIONS)
def _logit_cells_block(x, successes, trials, log_coef, slope, residual):
    """The sum of the binomial logit cells at ``x`` and of their residuals times ``slope``
    (contiguous arrays, vectorised), each residual written to ``residual``: the middle loop
    of :func:`binomial_logit_observed_total`."""
    total = 0.0
    score = 0.0
    for q in range(x.shape[0]):
        softplus, sigmoid = softplus_and_sigmoid(x[q])
        total += log_coef[q] + successes[q] * x[q] - trials[q] * softplus
        r = successes[q] - trials[q] * sigmoid
        residual[q] = r
        score += r * slope[q]
    return total, score


@njit(**SUM_OPTIONS)
def binomial_logit_observed_total(k, n, theta, a, beta, log_coef, starts, columns):
    """:func:`binomial_logit_total` over the observed cells only, listed row by row.

    Row l's observed cells are (l, columns[c]) for c in [starts[l], starts[l + 1]) (the
    compressed-row layout); ``k`` and ``n`` are the (L, M) tables (any number type),
    ``log_coef`` holds log C(n, k) of the observed cells alone, in their order.  A row's
    cells go in blocks of :data:`OBSERVED_BLOCK` through three loops: gather each cell's
    logit, slope and counts; score the block contiguously (vectorised:
    :func:`_logit_cells_block`, which also sums the row's gradient); add the residuals into
    the questions' gradients.  Written as one loop, the gathers and scattered additions
    kept LLVM from vectorising the cells (docs/scale.md, "Sparse coverage").
    """
    x, successes = np.empty(OBSERVED_BLOCK), np.empty(OBSERVED_BLOCK)
    trials, slope = np.empty(OBSERVED_BLOCK), np.empty(OBSERVED_BLOCK)
    residual = np.empty(OBSERVED_BLOCK)
    d_theta, d_a, d_beta = np.zeros(theta.shape[0]), np.zeros(a.shape[0]), np.zeros(a.shape[0])
    total = 0.0
    for i in range(theta.shape[0]):
        ability, k_row, n_row = theta[i], k[i], n[i]
        for start in range(starts[i], starts[i + 1], OBSERVED_BLOCK):
            stop = min(start + OBSERVED_BLOCK, starts[i + 1])
            size = stop - start
            for q in range(size):
                j = columns[start + q]
                slope[q] = a[j]
                x[q] = a[j] * ability + beta[j]
                successes[q], trials[q] = k_row[j], n_row[j]
            part, score = _logit_cells_block(x[:size], successes[:size], trials[:size],
                                             log_coef[start:stop], slope[:size], residual[:size])
            total += part
            d_theta[i] += score
            for q in range(size):
                j = columns[start + q]
                d_a[j] += residual[q] * ability
                d_beta[j] += residual[q]
    return total, d_theta, d_a, d_beta


@njit(**KERNEL_OPTIONS)
def binomial_logit_observed_cells(k, n, theta, a, beta, log_coef, starts, columns):
    """:func:`binomial_logit_cells` at the observed cells (listed as in
    :func:`binomial_logit_observed_total`), as (L, M) tables that are 0 at every other cell
    (whose counts are 0: their log-pmf and residual are 0 anyway)."""
    cells = np.zeros(k.shape)
    residual = np.zeros(k.shape)
    for i in range(theta.shape[0]):
        for c in range(starts[i], starts[i + 1]):
            j = columns[c]
            x = a[j] * theta[i] + beta[j]
            softplus, sigmoid = softplus_and_sigmoid(x)
            cells[i, j] = log_coef[c] + k[i, j] * x - n[i, j] * softplus
            residual[i, j] = k[i, j] - n[i, j] * sigmoid
    return cells, residual
