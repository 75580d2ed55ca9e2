"""Metric-based rules: mean accuracy, inverse difficulty, the Pass@k family, Bayes@N, Thompson.

Paper appendix, "Pointwise Methods", "Evaluation-metric Methods" and "Thompson sampling
ranking".  Each rule maps a model's per-question counts to one score (larger is better).

The Pass@k family scores a question by the number ``X`` of successes among ``k`` of the
``n`` trials drawn without replacement, ``X ~ Hypergeom(n, nu, k)`` with ``nu`` successes:

================  ==============================================================
Pass@k            ``P(X >= 1) = 1 - C(n - nu, k) / C(n, k)``  (Chen et al. 2021)
Pass-hat@k        ``P(X = k) = C(nu, k) / C(n, k)``  (Yao et al. 2024)
G-Pass@k_tau      ``P(X >= max(1, ceil(tau k)))``  (Liu et al. 2025)
mG-Pass@k         ``(2 / k) E[(X - ceil(k/2))_+]``  (Liu et al. 2025)
================  ==============================================================

and a model's score is the mean over questions.  The hypergeometric probabilities are
evaluated once per distinct ``(n, nu)`` pair with :data:`scipy.stats.hypergeom` and looked up
for every cell, so the cost does not depend on the number of trials.  With missing trials
``n`` is the cell's own count; unobserved cells are left out of the question average.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from bayesrank.checks import check_finite, check_in_interval, check_int, check_probability
from bayesrank.conjugate import bayes_at_n
from bayesrank.data import ResponseData
from bayesrank.errors import DataError
from bayesrank.ranking import ranking_method

__all__ = [
    "avg",
    "inverse_difficulty",
    "pass_at_k",
    "pass_hat_k",
    "g_pass_at_k_tau",
    "mg_pass_at_k",
    "draw_success_pmf",
    "cell_success_pmf",
    "pass_scores",
    "bayes",
    "thompson",
]


@ranking_method
def avg(data: ResponseData) -> np.ndarray:
    """Mean utility over questions and trials, (1/M) sum_m mean_n w[R_lmn] (paper: avg@N)."""
    return np.nanmean(data.reductions.cell_utility, axis=1)


@ranking_method
def inverse_difficulty(
    data: ResponseData, *, clip_range: Sequence[float] = (0.01, 0.99)
) -> tuple[np.ndarray, dict[str, Any]]:
    """Accuracy weighted towards hard questions (paper, "Inverse-difficulty weighting").

    ``p_m = sum_{l,n} R_lmn / (L N)`` is the pooled solve rate of question ``m``,
    ``w_m ∝ 1 / clip(p_m, a, b)`` normalised to sum 1, and ``s_l = sum_m w_m p_hat_lm``.
    With missing cells the weights are renormalised over the questions a model answered.
    Binary data only.  ``details["question_weights"]`` holds ``w``.
    """
    data.require_binary("inverse_difficulty")
    low, high = _clip_range(clip_range)
    red = data.reductions
    n, k = red.trials, red.successes
    pooled_n = n.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(pooled_n > 0, k.sum(axis=0) / np.maximum(pooled_n, 1), np.nan)
    w = np.where(pooled_n > 0, 1.0 / np.clip(p, low, high), 0.0)
    w = w / w.sum()
    observed = n > 0
    rate = np.where(observed, red.solve_rate, 0.0)
    scores = (rate * w).sum(axis=1) / (observed * w).sum(axis=1)
    return scores, {"question_weights": w}


def _clip_range(clip_range: Sequence[float]) -> tuple[float, float]:
    try:
        low, high = (float(v) for v in clip_range)
    except (TypeError, ValueError):
        raise DataError(f"clip_range must be two numbers (low, high), got {clip_range!r}") from None
    if not (0.0 < low < high <= 1.0):
        raise DataError(f"clip_range must satisfy 0 < low < high <= 1, got {clip_range!r}")
    return low, high


def draw_success_pmf(data: ResponseData, k: int, what: str = "this metric") -> np.ndarray:
    """``P(X_lm = j)``, ``j = 0..k``: successes among ``k`` trials drawn without replacement.

    ``X_lm ~ Hypergeom(n_lm, nu_lm, k)`` for every observed cell (NaN rows for unobserved
    cells).  Binary data only; every observed cell needs ``n_lm >= k`` trials.

    Returns
    -------
    numpy.ndarray, shape (L, M, k + 1)
    """
    data.require_binary(what)
    k = check_int("k", k)
    red = data.reductions
    n, nu = red.trials, red.successes
    observed = n > 0
    short = observed & (n < k)
    if short.any():
        li, mi = np.argwhere(short)[0]
        raise DataError(
            f"{what} draws k={k} trials without replacement, but model {data.models[li]!r} has "
            f"only {n[li, mi]} trial(s) on question {data.questions[mi]!r}; use k <= "
            f"{int(n[observed].min())}"
        )
    return cell_success_pmf(n, nu, k)


def cell_success_pmf(n: np.ndarray, nu: np.ndarray, k: int) -> np.ndarray:
    """``P(X = j)``, ``j = 0..k``, ``X ~ Hypergeom(n, nu, k)``, for cells of any shape.

    ``n`` trials and ``nu`` successes per cell (same shape); cells with ``n = 0`` get NaN
    rows, every other cell needs ``n >= k`` (checked by :func:`draw_success_pmf`).  The
    pmf is evaluated once per distinct ``(n, nu)`` and looked up, so a cell's row does not
    depend on the other cells.

    Returns
    -------
    numpy.ndarray, shape ``n.shape + (k + 1,)``
    """
    observed = n > 0
    out = np.full(n.shape + (k + 1,), np.nan)
    if not observed.any():
        return out
    n_obs, nu_obs = n[observed], nu[observed]
    _, first, inverse = np.unique(n_obs * (int(n_obs.max()) + 1) + nu_obs,
                                     return_index=True, return_inverse=True)
    j = np.arange(k + 1)
    table = stats.hypergeom.pmf(j[None, :], n_obs[first][:, None], nu_obs[first][:, None], k)
    out[observed] = table[inverse.ravel()]
    return out


def pass_scores(pmf: np.ndarray, metric: str) -> np.ndarray:
    """Pass@k-family scores from cell pmfs (..., L, M, k + 1): mean over questions.

    ``metric`` is "pass_at_k" (``1 - P(X = 0)``), "pass_hat_k" (``P(X = k)``) or
    "mg_pass_at_k" (``(2/k) E[(X - ceil(k/2))_+]``); unobserved (NaN) cells are left out
    of the question mean.  The rules call this with a leading batch of one.
    """
    k = pmf.shape[-1] - 1
    if metric == "pass_at_k":
        per_cell = 1.0 - pmf[..., 0]
    elif metric == "pass_hat_k":
        per_cell = pmf[..., -1]
    else:
        excess = np.maximum(np.arange(k + 1) - math.ceil(k / 2), 0)
        per_cell = (2.0 / k) * (pmf * excess).sum(axis=-1)
    return np.nanmean(per_cell, axis=-1)


def _question_mean(per_cell: np.ndarray) -> np.ndarray:
    return np.nanmean(per_cell, axis=1)


@ranking_method
def pass_at_k(data: ResponseData, *, k: int) -> np.ndarray:
    """Pass@k: mean over questions of ``1 - C(n - nu, k) / C(n, k)`` (unbiased; Chen et al.)."""
    return pass_scores(draw_success_pmf(data, k, "pass_at_k")[None], "pass_at_k")[0]


@ranking_method
def pass_hat_k(data: ResponseData, *, k: int) -> np.ndarray:
    """Pass-hat@k (G-Pass@k): mean over questions of ``C(nu, k) / C(n, k)``."""
    return pass_scores(draw_success_pmf(data, k, "pass_hat_k")[None], "pass_hat_k")[0]


def _threshold(tau: float, k: int) -> int:
    tau = check_in_interval("tau", tau, 0.0, 1.0)
    # round before ceil so tau = 0.7, k = 10 gives 7 although 0.7 * 10 = 7.000000000000001
    return max(1, math.ceil(round(tau * k, 9)))


@ranking_method
def g_pass_at_k_tau(data: ResponseData, *, k: int, tau: float) -> np.ndarray:
    """G-Pass@k_tau: mean over questions of ``P(X >= max(1, ceil(tau k)))``.

    ``tau = 0`` (or any ``tau <= 1/k``) is Pass@k, ``tau = 1`` is Pass-hat@k.
    """
    pmf = draw_success_pmf(data, k, "g_pass_at_k_tau")
    j0 = _threshold(tau, check_int("k", k))
    return _question_mean(pmf[..., j0:].sum(axis=-1))


@ranking_method
def mg_pass_at_k(data: ResponseData, *, k: int) -> np.ndarray:
    """mG-Pass@k: mean over questions of ``(2/k) E[(X - m0)_+]``, ``m0 = ceil(k/2)``.

    Equals ``(2/k) sum_{i=m0+1}^{k} G-Pass@k_{i/k}``; for ``k = 2`` it is Pass-hat@2.
    """
    k = check_int("k", k)
    return pass_scores(draw_success_pmf(data, k, "mg_pass_at_k")[None], "mg_pass_at_k")[0]


@ranking_method
def bayes(
    data: ResponseData,
    *,
    R0: Any = None,
    quantile: float | None = None,
    weights: Any = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Bayes@N posterior mean (or a normal-quantile lower score) of each model's utility.

    Uses :func:`bayesrank.conjugate.bayes_at_n` (Dirichlet-multinomial, categorical weights).

    Parameters
    ----------
    R0 : None, "data" or array_like
        ``None``: uniform Dirichlet(1) prior only (paper ``bayes``, Bayes_U@N); ``"data"``:
        the data's own prior outcomes, e.g. greedy decodes (``bayes_greedy``; an error when
        the data carry none); an array of prior outcomes (M, D) or (L, M, D).
    quantile : float, optional
        ``q`` in (0, 1): score ``mu + Phi^{-1}(q) sigma`` (``bayes_ci`` uses 0.05) instead
        of ``mu``.
    weights : array_like, optional
        Category utilities; default the data's.

    ``details``: ``mu`` and ``sigma``.
    """
    mu, sigma = bayes_at_n(data, weights=weights, R0=R0)
    if quantile is None:
        return mu, {"mu": mu, "sigma": sigma}
    quantile = check_probability("quantile", quantile)
    return mu + stats.norm.ppf(quantile) * sigma, {"mu": mu, "sigma": sigma}


_DRAW_CHUNK = 4096


@ranking_method
def thompson(
    data: ResponseData,
    *,
    n_samples: int = 10000,
    prior_alpha: float = 1.0,
    prior_beta: float = 1.0,
    seed: int | None = 42,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Negative posterior expected rank under independent Beta posteriors (paper, Thompson).

    ``p_l | R ~ Beta(alpha + S_l, beta + n_l - S_l)`` with ``S_l`` the model's successes over
    its ``n_l`` observed trials; ``T = n_samples`` joint draws give ranks ``r_l^(t)`` (1 =
    best) and the score ``-(1/T) sum_t r_l^(t)``.  Seeded and reproducible; models with
    identical posteriors get the average of their estimates (they are exactly tied).
    Binary data only.  ``details["posterior"]``: the (alpha, beta) pairs.
    """
    data.require_binary("thompson")
    n_samples = check_int("n_samples", n_samples)
    prior_alpha = check_finite("prior_alpha", prior_alpha, positive=True)
    prior_beta = check_finite("prior_beta", prior_beta, positive=True)
    red = data.reductions
    successes = red.successes.sum(axis=1).astype(float)
    a = prior_alpha + successes
    b = prior_beta + red.trials.sum(axis=1) - successes
    L = data.L
    rng = np.random.default_rng(seed)
    rank_sum = np.zeros(L)
    rows_left = int(n_samples)
    while rows_left:
        rows = min(rows_left, _DRAW_CHUNK)
        draws = rng.beta(a, b, size=(rows, L))
        order = np.argsort(-draws, axis=1)
        ranks = np.empty_like(order)
        np.put_along_axis(ranks, order, np.arange(1, L + 1)[None, :], axis=1)
        rank_sum += ranks.sum(axis=0)
        rows_left -= rows
    mean_rank = rank_sum / n_samples
    _, group = np.unique(np.stack([a, b], axis=1), axis=0, return_inverse=True)
    group = group.ravel()
    mean_rank = (np.bincount(group, mean_rank) / np.bincount(group))[group]
    return -mean_rank, {"posterior": np.stack([a, b], axis=1)}
