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
    "avg_batch",
    "bayes_score",
    "inverse_difficulty",
    "inverse_difficulty_batch",
    "pass_at_k",
    "pass_hat_k",
    "g_pass_at_k_tau",
    "mg_pass_at_k",
    "draw_success_pmf",
    "cell_success_pmf",
    "pass_scores",
    "bayes",
    "thompson",
    "thompson_draws",
    "thompson_options",
    "thompson_pair_counts",
    "thompson_posterior",
    "thompson_scores",
]


@ranking_method
def avg(data: ResponseData) -> np.ndarray:
    """Mean utility over questions and trials, (1/M) sum_m mean_n w[R_lmn] (paper: avg@N)."""
    return avg_batch(data.reductions.cell_utility[None])[0]


def avg_batch(cell_utility: np.ndarray) -> np.ndarray:
    """:func:`avg` of B datasets from their cell utilities (B, L, M) -> (B, L) (NaN: unobserved).

    Without NaN, ``mean`` sums the same values in the same order as ``nanmean`` (the same
    scores), without its masked copy.
    """
    mean = np.nanmean if np.isnan(cell_utility).any() else np.mean
    return mean(cell_utility, axis=2)


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
    red = data.reductions
    scores, w = inverse_difficulty_batch(red.trials[None], red.successes[None],
                                         red.solve_rate[None], clip_range)
    return scores[0], {"question_weights": w[0]}


def inverse_difficulty_batch(trials: np.ndarray, successes: np.ndarray, solve_rate: np.ndarray,
                             clip_range: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`inverse_difficulty` of B datasets: cell counts and solve rates (B, L, M).

    Returns the scores (B, L) and the question weights (B, M).
    """
    low, high = _clip_range(clip_range)
    pooled_n = trials.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(pooled_n > 0, successes.sum(axis=1) / np.maximum(pooled_n, 1), np.nan)
    w = np.where(pooled_n > 0, 1.0 / np.clip(p, low, high), 0.0)
    w = w / w.sum(axis=1, keepdims=True)
    observed = trials > 0
    if observed.all():  # the same sums as below, without the masks (a study's stacks)
        return (solve_rate * w[:, None, :]).sum(axis=2) / w.sum(axis=1)[:, None], w
    rate = np.where(observed, solve_rate, 0.0)
    scores = (rate * w[:, None, :]).sum(axis=2) / (observed * w[:, None, :]).sum(axis=2)
    return scores, w


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
    return np.nanmean(pmf[..., j0:].sum(axis=-1), axis=1)


@ranking_method
def mg_pass_at_k(data: ResponseData, *, k: int) -> np.ndarray:
    """mG-Pass@k: mean over questions of ``(2/k) E[(X - m0)_+]``, ``m0 = ceil(k/2)``.

    Equals ``(2/k) sum_{i=m0+1}^{k} G-Pass@k_{i/k}``; for ``k = 2`` it is Pass-hat@2.
    """
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
    return bayes_score(mu, sigma, quantile), {"mu": mu, "sigma": sigma}


def bayes_score(mu: np.ndarray, sigma: np.ndarray, quantile: float | None) -> np.ndarray:
    """:func:`bayes`'s score from the posterior moments (any shape): ``mu``, or
    ``mu + Phi^{-1}(q) sigma`` for a quantile ``q`` in (0, 1)."""
    if quantile is None:
        return mu
    return mu + stats.norm.ppf(check_probability("quantile", quantile)) * sigma


#: Joint draws compared at once in :func:`thompson_pair_counts` (bounds its temporaries).
_DRAW_CHUNK = 4096


def thompson_options(n_samples: int, prior_alpha: float, prior_beta: float,
                     seed: Any) -> tuple[int, float, float, int]:
    """The checked ``(n_samples, prior_alpha, prior_beta, entropy)`` of :func:`thompson`: the
    entropy every posterior's stream starts from is ``seed`` (a non-negative integer), or
    fresh for None."""
    checked = (check_int("n_samples", n_samples),
               check_finite("prior_alpha", prior_alpha, positive=True),
               check_finite("prior_beta", prior_beta, positive=True))
    if seed is None:
        return (*checked, int(np.random.SeedSequence().entropy))
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise DataError(f"seed must be a non-negative integer or None, got {seed!r}")
    return (*checked, int(seed))


def thompson_draws(
    alpha: np.ndarray,
    beta: np.ndarray,
    n_samples: int,
    entropy: int,
    cache: dict[tuple[float, float], np.ndarray] | None = None,
) -> np.ndarray:
    """``n_samples`` draws of ``Beta(alpha_l, beta_l)`` per model, each from its own stream.

    Model ``l``'s stream is seeded by ``SeedSequence((entropy, bits(alpha_l),
    bits(beta_l)))`` (the IEEE-754 bits of its posterior parameters), so its draws depend
    on its posterior only: not on the other models, their order or their number, and
    identical posteriors get identical draws.  ``cache`` maps ``(alpha, beta)`` to draws
    already made with the same ``n_samples`` and ``entropy`` (filled as it goes).

    Returns
    -------
    numpy.ndarray, shape (L, n_samples)
    """
    cache = {} if cache is None else cache
    out = np.empty((len(alpha), n_samples))
    for l, key in enumerate(zip(np.asarray(alpha, float).tolist(),
                                np.asarray(beta, float).tolist(), strict=True)):
        draws = cache.get(key)
        if draws is None:
            bits = np.array(key).view(np.uint64).tolist()
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([entropy, *bits])))
            draws = cache[key] = rng.beta(key[0], key[1], size=n_samples)
        out[l] = draws
    return out


def thompson_pair_counts(draws: np.ndarray) -> np.ndarray:
    """``C_jl = 2 #{t: p_j^t > p_l^t} + #{t: p_j^t = p_l^t}`` over joint draws (L, T).

    ``C_jl / (2T)`` is the Monte Carlo ``P(p_j > p_l)`` with sample ties counted 1/2;
    ``C_jl + C_lj = 2T`` and the diagonal is 0.  Integer counts, so sums over any set of
    models are exact whatever their order.

    Returns
    -------
    numpy.ndarray of int64, shape (L, L)
    """
    L, T = draws.shape
    greater = np.zeros((L, L), dtype=np.int64)
    for start in range(0, T, _DRAW_CHUNK):
        block = draws[:, start:start + _DRAW_CHUNK]
        for j in range(L):
            greater[j] += np.count_nonzero(block[j] > block, axis=1)
    counts = T + greater - greater.T  # 2 greater + (T - greater - greater.T) ties
    np.fill_diagonal(counts, 0)
    return counts


def thompson_scores(pair_counts: np.ndarray, n_samples: int) -> np.ndarray:
    """Minus the Monte Carlo mean rank ``1 + sum_{j != l} C_jl / (2T)`` (..., L, L) -> (..., L)."""
    return -(1.0 + pair_counts.sum(axis=-2) / (2.0 * n_samples))


def thompson_posterior(successes: np.ndarray, trials: np.ndarray, prior_alpha: float,
                       prior_beta: float) -> tuple[np.ndarray, np.ndarray]:
    """``alpha + S_l`` and ``beta + n_l - S_l`` from success and trial totals (any shape)."""
    successes = successes.astype(float)
    return prior_alpha + successes, prior_beta + trials - successes


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
    its ``n_l`` observed trials.  The expected rank ``E[r_l] = 1 + sum_{j != l} P(p_j > p_l)``
    is estimated from ``T = n_samples`` joint draws: ``P(p_j > p_l)`` by the fraction of
    draws with ``p_j^t > p_l^t`` (sample ties count 1/2), which is the mean over the draws
    of each draw's rank.  The score is minus that mean rank.  Binary data only.
    ``details["posterior"]``: the (alpha, beta) pairs.  Each model's draws come from its
    own stream (:func:`thompson_draws`; ``docs/baselines.md``: the departure from scorio);
    ``seed=None`` draws a fresh seed for the call.
    """
    data.require_binary("thompson")
    n_samples, prior_alpha, prior_beta, entropy = thompson_options(n_samples, prior_alpha,
                                                                   prior_beta, seed)
    red = data.reductions
    a, b = thompson_posterior(red.successes.sum(axis=1), red.trials.sum(axis=1), prior_alpha,
                              prior_beta)
    counts = thompson_pair_counts(thompson_draws(a, b, n_samples, entropy))
    return thompson_scores(counts, n_samples), {"posterior": np.stack([a, b], axis=1)}
