"""The beta-binomial cells' Numba loops (nutpie): :mod:`models.fast.beta_binomial`'s Ops
compiled, the whole table's cells, its one-pass total and the observed cells' pass.

The table goes in blocks of up to OBSERVED_BLOCK questions, one model's row at a time: the
block's inputs are copied into the rows of one buffer and its outputs written to the rows
of another, so that the loop over the cells, which LLVM vectorises, reads and writes two
arrays (eleven separate arrays needed more run-time aliasing checks than LLVM makes, and
ran one cell at a time: 36 against 12 ns a cell).  That loop scores the curve: p, q,
their logs and the first trial's derivatives, with the branch-free e^x and logs of
:mod:`._vector_math`.  A scalar loop then adds, for the cells with more than one trial
only, the rising products; at one trial per cell (the leaderboards' case) it does not run.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._vector_math import (
    KERNEL_OPTIONS,
    OBSERVED_BLOCK,
    SUM_OPTIONS,
    exp_nonpositive,
    log1p_unit,
    log_positive,
)

__all__ = ["LARGE", "SMALL", "beta_binomial_observed", "beta_binomial_slope_total",
           "beta_binomial_table"]

#: a product of terms outside (SMALL, LARGE) is moved into the log-sum
SMALL, LARGE = 1e-200, 1e200

#: rows of a block's input buffer
X, FLOOR, LOG_REST, INV_REST, HITS, TRIALS, LOG_COEF = range(7)
#: rows of a block's output buffer (S: logistic(x), S1: logistic(-x), P: p)
CELLS, D_ETA, D_C, D_LOG_DELTA, S, S1, P = range(7)
#: at or above it p is a normal number, whose log log_positive takes exactly; below it only
#: when c < 2^-1000 too (p >= c), and then log p is made again by logaddexp
_NORMAL = 2.0**-1000


@njit(**KERNEL_OPTIONS)
def _floor_terms(c, block):
    """The floors' rows of a block: c, log(1 - c) and 1 / (1 - c) (vectorised).  log(1 - c) is
    -log1p(c / (1 - c)) up to c = 1/2, relatively exact for small c, where 1 - c rounds;
    above, 1 - c is exact and its log is taken."""
    for j in range(c.shape[0]):
        rest = 1.0 - c[j]
        small = c[j] <= 0.5
        block[FLOOR, j] = c[j]
        block[LOG_REST, j] = (-log1p_unit(c[j] / rest if small else 0.0) if small
                              else log_positive(rest))
        block[INV_REST, j] = 1.0 / rest


@njit(**KERNEL_OPTIONS)
def _curve_block(block, size, out):
    """log C + [k > 0] log p + [n - k > 0] log q and its derivatives in eta and c, with
    logistic(x), logistic(-x) and p, for the first ``size`` cells of ``block``."""
    for q in range(size):
        x, c = block[X, q], block[FLOOR, q]
        magnitude = abs(x)
        u = exp_nonpositive(-magnitude)
        softplus_tail = log1p_unit(u)
        inverse = 1.0 / (1.0 + u)
        s = inverse if x >= 0.0 else u * inverse  # logistic(x)
        s1 = u * inverse if x >= 0.0 else inverse  # logistic(-x)
        rest = 1.0 - c
        p = c + rest * s
        # log p: log(1 - c) + log logistic(x) at c = 0, where p may underflow
        log_p = (log_positive(p) if p >= _NORMAL
                 else block[LOG_REST, q] + 0.5 * (x - magnitude) - softplus_tail)
        log_q = block[LOG_REST, q] - (0.5 * (x + magnitude) + softplus_tail)
        hit, miss = block[HITS, q] > 0.0, block[TRIALS, q] - block[HITS, q] > 0.0
        out[CELLS, q] = block[LOG_COEF, q] + (log_p if hit else 0.0) + (log_q if miss else 0.0)
        inverse_p = 1.0 / p
        # (1 - c) s / p in [0, 1]; p = 0 only where c = 0 and s underflows
        ratio = rest * s * inverse_p if p > 0.0 else 1.0
        out[D_ETA, q] = (ratio * s1 if hit else 0.0) - (s if miss else 0.0)
        out[D_C, q] = (s1 * inverse_p if hit else 0.0) - (block[INV_REST, q] if miss else 0.0)
        out[D_LOG_DELTA, q] = 0.0
        out[S, q] = s
        out[S1, q] = s1
        out[P, q] = p


@njit(error_model="numpy")
def _rising(base, count, delta):
    """log prod_{1<=i<count} (base + i delta), sum 1 / (base + i delta) and sum i delta /
    (base + i delta): one side's trials beyond the first."""
    product, logs, slope, dispersion = 1.0, 0.0, 0.0, 0.0
    for i in range(1, count):
        term = base + i * delta
        slope += 1.0 / term
        dispersion += i * delta / term
        product *= term
        if not SMALL < product < LARGE:
            logs += np.log(product)
            product = 1.0
    return logs + np.log(product), slope, dispersion


@njit(error_model="numpy")
def _trials_block(block, size, delta, normaliser, out):
    """Adds the trials beyond the first to the first ``size`` cells (scalar), and makes log p
    again where a floor below 2^-1000 left p subnormal (:data:`_NORMAL`)."""
    for q in range(size):
        hits, trials = int(block[HITS, q]), int(block[TRIALS, q])
        c, p = block[FLOOR, q], out[P, q]
        if hits > 0 and 0.0 < c and p < _NORMAL:
            x = block[X, q]
            taken = block[LOG_REST, q] + min(x, 0.0) - np.log1p(np.exp(-abs(x)))
            out[CELLS, q] += np.logaddexp(np.log(c), taken) - taken
        if trials < 2:
            continue
        s, s1 = out[S, q], out[S1, q]
        rest = 1.0 - c
        log_p, slope_p, dispersion_p = _rising(p, hits, delta)
        log_q, slope_q, dispersion_q = _rising(rest * s1, trials - hits, delta)
        out[CELLS, q] += log_p + log_q - normaliser[0, trials]
        out[D_ETA, q] += rest * s * s1 * (slope_p - slope_q)
        out[D_C, q] += s1 * (slope_p - slope_q)
        out[D_LOG_DELTA, q] = dispersion_p + dispersion_q - normaliser[1, trials]


@njit(error_model="numpy")
def _normaliser(most, delta):
    """sum_{i<t} log(1 + i delta) and its derivative in log delta (rows 0 and 1) for t = 0,
    ..., ``most``."""
    normaliser = np.zeros((2, most + 1))
    for t in range(2, most + 1):
        normaliser[0, t] = normaliser[0, t - 1] + np.log1p((t - 1) * delta)
        normaliser[1, t] = normaliser[1, t - 1] + (t - 1) * delta / (1.0 + (t - 1) * delta)
    return normaliser


@njit(error_model="numpy")
def _most(trials):
    """The table's largest trial count, at least 1."""
    return max(1, int(trials.max()))


@njit(error_model="numpy")
def _most_observed(trials, starts, columns):
    """The largest trial count of the observed cells, at least 1 (row l's are (l,
    columns[c]) for c in [starts[l], starts[l + 1]))."""
    most = 1
    for i in range(starts.shape[0] - 1):
        for c in range(starts[i], starts[i + 1]):
            most = max(most, int(trials[i, columns[c]]))
    return most


@njit(error_model="numpy")
def _score_block(block, size, delta, normaliser, most, out):
    """Every output row of a block: the vectorised curve, then, where needed, the trials."""
    _curve_block(block, size, out)
    if most > 1 or out[P, :size].min() < _NORMAL:  # a reduction, no temporary array
        _trials_block(block, size, delta, normaliser, out)


@njit(error_model="numpy")
def _workspace(most, log_delta):
    """delta, the normaliser up to ``most`` trials (:func:`_normaliser`) and a block's input
    and output buffers."""
    delta = np.exp(log_delta.item())
    return (delta, _normaliser(most, delta), np.empty((7, OBSERVED_BLOCK)),
            np.empty((7, OBSERVED_BLOCK)))


@njit(error_model="numpy")
def beta_binomial_table(k, n, eta, c, log_delta, log_coef):
    """:class:`BetaBinomialCells` compiled by Numba: (cells, d eta, d c, d log delta), (L, M)."""
    L, M = k.shape
    most = _most(n)
    delta, normaliser, block, out = _workspace(most, log_delta)
    tables = np.empty((4, L, M))
    for start in range(0, M, OBSERVED_BLOCK):
        stop = min(start + OBSERVED_BLOCK, M)
        size = stop - start
        _floor_terms(c[start:stop], block)
        for i in range(L):
            block[X, :size] = eta[i, start:stop]
            block[HITS, :size] = k[i, start:stop]
            block[TRIALS, :size] = n[i, start:stop]
            block[LOG_COEF, :size] = log_coef[i, start:stop]
            _score_block(block, size, delta, normaliser, most, out)
            tables[:, i, start:stop] = out[:4, :size]
    return tables[CELLS], tables[D_ETA], tables[D_C], tables[D_LOG_DELTA]


@njit(**KERNEL_OPTIONS)
def _slope_inputs(block, size, ability, a, beta, k, n, log_coef):
    """A row's cells of a block: x = a ability + beta, the counts (any number type), log C."""
    for q in range(size):
        block[X, q] = a[q] * ability + beta[q]
        block[HITS, q] = k[q]
        block[TRIALS, q] = n[q]
        block[LOG_COEF, q] = log_coef[q]


@njit(**SUM_OPTIONS)
def _add_block(out, size, ability, a, d_a, d_beta, d_c):
    """A scored block's sums: the cells', the row's d/d theta and d/d log delta (returned),
    and each question's d/d a, d/d beta and d/d c (added in place)."""
    total, score, dispersion = 0.0, 0.0, 0.0
    for q in range(size):
        slope = out[D_ETA, q]
        total += out[CELLS, q]
        score += slope * a[q]
        dispersion += out[D_LOG_DELTA, q]
        d_a[q] += slope * ability
        d_beta[q] += slope
        d_c[q] += out[D_C, q]
    return total, score, dispersion


@njit(error_model="numpy")
def beta_binomial_slope_total(k, n, theta, a, beta, c, log_delta, log_coef):
    """:class:`BetaBinomialSlopeTotal` compiled by Numba: the cells' sum at eta = a theta +
    beta and its gradient in theta, a, beta, c and log delta, without an (L, M) table."""
    L, M = k.shape
    most = _most(n)
    delta, normaliser, block, out = _workspace(most, log_delta)
    d_theta, d_a, d_beta, d_c = np.zeros(L), np.zeros(M), np.zeros(M), np.zeros(M)
    total, d_log_delta = 0.0, 0.0
    for start in range(0, M, OBSERVED_BLOCK):
        stop = min(start + OBSERVED_BLOCK, M)
        size = stop - start
        _floor_terms(c[start:stop], block)
        for i in range(L):
            _slope_inputs(block, size, theta[i], a[start:stop], beta[start:stop],
                          k[i, start:stop], n[i, start:stop], log_coef[i, start:stop])
            _score_block(block, size, delta, normaliser, most, out)
            part, score, dispersion = _add_block(out, size, theta[i], a[start:stop],
                                                 d_a[start:stop], d_beta[start:stop],
                                                 d_c[start:stop])
            total += part
            d_theta[i] += score
            d_log_delta += dispersion
    # PyTensor's scalars are 0-d arrays
    return np.full((), total), d_theta, d_a, d_beta, d_c, np.full((), d_log_delta)


@njit(**KERNEL_OPTIONS)
def _observed_inputs(block, floors, slope, size, ability, a, beta, c, k, n, log_coef, columns):
    """A row's observed cells of a block, gathered: x = a ability + beta, the slopes and
    floors of their questions, their counts (rows ``k``, ``n`` of any number type), log C."""
    for q in range(size):
        j = columns[q]
        slope[q] = a[j]
        floors[q] = c[j]
        block[X, q] = a[j] * ability + beta[j]
        block[HITS, q] = k[j]
        block[TRIALS, q] = n[j]
        block[LOG_COEF, q] = log_coef[q]


@njit(**SUM_OPTIONS)
def _sum_block(out, size, slope):
    """A scored block's sum of cells, of d/d eta times the slope, and of d/d log delta."""
    total, score, dispersion = 0.0, 0.0, 0.0
    for q in range(size):
        total += out[CELLS, q]
        score += out[D_ETA, q] * slope[q]
        dispersion += out[D_LOG_DELTA, q]
    return total, score, dispersion


@njit(error_model="numpy")
def beta_binomial_observed(k, n, theta, a, beta, c, log_delta, log_coef, starts, columns,
                           tables):
    """:class:`ObservedBetaBinomialTotal` compiled by Numba, writing the cells' four outputs
    into ``tables`` (4, L, M) too unless it is empty (:class:`ObservedBetaBinomialCells`).

    Row l's observed cells are (l, columns[c]) for c in [starts[l], starts[l + 1]).  A row's
    cells go in blocks of OBSERVED_BLOCK through three loops, as the binomial's do
    (:func:`models.fast._vector_math.binomial_logit_observed_total`): gather, score
    (vectorised), add into the questions' gradients.
    """
    L, M = k.shape
    most = _most_observed(n, starts, columns)
    delta, normaliser, block, out = _workspace(most, log_delta)
    floors, slope = np.empty(OBSERVED_BLOCK), np.empty(OBSERVED_BLOCK)
    d_theta, d_a, d_beta, d_c = np.zeros(L), np.zeros(M), np.zeros(M), np.zeros(M)
    total, d_log_delta = 0.0, 0.0
    write = tables.shape[1] > 0
    for i in range(L):
        ability = theta[i]
        for start in range(starts[i], starts[i + 1], OBSERVED_BLOCK):
            stop = min(start + OBSERVED_BLOCK, starts[i + 1])
            size = stop - start
            _observed_inputs(block, floors, slope, size, ability, a, beta, c, k[i], n[i],
                             log_coef[start:stop], columns[start:stop])
            _floor_terms(floors[:size], block)
            _score_block(block, size, delta, normaliser, most, out)
            part, score, dispersion = _sum_block(out, size, slope)
            total += part
            d_theta[i] += score
            d_log_delta += dispersion
            for q in range(size):
                j = columns[start + q]
                d_a[j] += out[D_ETA, q] * ability
                d_beta[j] += out[D_ETA, q]
                d_c[j] += out[D_C, q]
                if write:
                    for row in range(4):
                        tables[row, i, j] = out[row, q]
    return np.full((), total), d_theta, d_a, d_beta, d_c, np.full((), d_log_delta)
