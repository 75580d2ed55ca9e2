"""Rank uncertainty from posterior draws or from a normal approximation.

Pure functions over arrays; :class:`bayesrank.analysis.posterior.Posterior` and
:class:`bayesrank.analysis.posterior.NormalPosterior` wrap them with labels.

Conventions (paper, Sec. "Interval estimates and conservative ranking"):

- larger theta is better, rank 1 is best;
- superiority ``P_ij = P(theta_i > theta_j | R)``; draws with ``theta_i == theta_j``
  count 1/2, so ``P_ij + P_ji = 1`` off the diagonal;
- a model tied with others in a draw shares the tied positions equally, so the
  rank distribution is doubly stochastic and
  ``E[rank_i] = 1 + sum_{j != i} P_ji`` holds exactly.
"""

from __future__ import annotations

import hashlib

import numpy as np
import xarray as xr
from scipy import special, stats

from bayesrank.ranking import exchangeable_groups

__all__ = [
    "as_draw_matrix",
    "superiority_from_draws",
    "rank_probabilities_from_draws",
    "normal_superiority",
    "normal_rank_probabilities",
    "expected_ranks",
    "rank_intervals",
    "top_set_indices",
    "identical_rows",
    "swap_invariant_pairs",
    "mean_difference_mcse",
    "tie_groups",
    "tied_scores",
]

_PAIR_BLOCK = 2048  # pairs per block in the MCSE computation (bounds memory)
_PAIR_ELEMENTS = 2**25  # comparisons per block of independent draws (32 MB of booleans)


def as_draw_matrix(draws: np.ndarray) -> np.ndarray:
    """Validate draws of shape (S, L) or (chain, draw, L); return (S, L) float64."""
    a = np.asarray(draws, dtype=float)
    if a.ndim == 3:
        a = a.reshape(-1, a.shape[-1])
    if a.ndim != 2 or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"draws must have shape (S, L) or (chain, draw, L); got {np.shape(draws)}")
    if not np.all(np.isfinite(a)):
        raise ValueError("draws contain NaN or inf; check the sampler output")
    return a


def _pair_indicators(x: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """1[x_i > x_j] + 1/2 1[x_i == x_j] for the listed pairs, last axis = pair."""
    xi, xj = x[..., i], x[..., j]
    return (xi > xj) + 0.5 * (xi == xj)


def superiority_from_draws(draws: np.ndarray, *, independent: bool = False
                           ) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise superiority probabilities and their Monte Carlo standard errors.

    ``P_ij = (1/S) sum_s (1[theta_i^s > theta_j^s] + 1/2 1[theta_i^s = theta_j^s])``.
    The MCSE of each entry is the MCSE of the mean of that indicator,
    ``sd / sqrt(ESS_mean)``, with the ESS from :func:`arviz.ess` (so
    autocorrelated MCMC draws are not treated as independent).

    Parameters
    ----------
    draws : array_like, shape (chain, draw, L) or (S, L)
        A 2-D input is one chain.
    independent : bool
        The draws are independent by construction (exact or Laplace draws): ESS is their
        number, nothing to estimate (at 1,000 models the ESS of 499,500 pairs took
        minutes).

    Returns
    -------
    prob, mcse : numpy.ndarray, shape (L, L)
        ``prob`` has 0.5 on the diagonal (a model against itself) and ``mcse`` 0 there.
    """
    from arviz_stats.base import array_stats

    a = np.asarray(draws, dtype=float)
    if a.ndim == 2:
        a = a[None]
    if independent:
        return _independent_superiority(as_draw_matrix(a))
    as_draw_matrix(a)  # validation only
    L = a.shape[-1]
    iu, ju = np.triu_indices(L, 1)
    prob = np.full((L, L), 0.5)
    mcse = np.zeros((L, L))
    for start in range(0, iu.size, _PAIR_BLOCK):
        i, j = iu[start : start + _PAIR_BLOCK], ju[start : start + _PAIR_BLOCK]
        ind = _pair_indicators(a, i, j)  # (chain, draw, pairs)
        p = ind.mean(axis=(0, 1))
        sd = ind.reshape(-1, i.size).std(axis=0, ddof=1) if ind[..., 0].size > 1 else 0 * p
        # arviz's array core: its Dataset form keeps each block alive (3 GB at L = 1,000)
        ess = array_stats.ess(ind, chain_axis=0, draw_axis=1, method="mean")
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.where(sd > 0, sd / np.sqrt(ess), 0.0)
        prob[i, j], prob[j, i] = p, 1.0 - p
        mcse[i, j] = mcse[j, i] = se
    return prob, mcse


def _independent_superiority(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`superiority_from_draws` of independent draws x (S, L): from the counts of
    draws with theta_i > theta_j and theta_i = theta_j alone (the indicator's mean is
    (n_> + n_= / 2) / S, its mean square (n_> + n_= / 4) / S), compared a few models
    against all at a time in booleans: no pair's indicator series is made."""
    S, L = x.shape
    above, equal = np.empty((L, L)), np.empty((L, L))
    step = max(1, _PAIR_ELEMENTS // (S * L))
    for start in range(0, L, step):
        rows = slice(start, start + step)
        block = x[:, rows, None]
        above[rows] = np.count_nonzero(block > x[:, None, :], axis=0)
        equal[rows] = np.count_nonzero(block == x[:, None, :], axis=0)
    prob = (above + 0.5 * equal) / S
    variance = np.maximum((above + 0.25 * equal) / S - prob * prob, 0.0) * (S / max(S - 1, 1))
    mcse = np.sqrt(variance / S) if S > 1 else np.zeros((L, L))
    np.fill_diagonal(prob, 0.5)
    np.fill_diagonal(mcse, 0.0)
    return prob, mcse


def rank_probabilities_from_draws(draws: np.ndarray) -> np.ndarray:
    """Rank distribution ``P[i, r-1] = P(rank of model i = r)`` from draws.

    Ranks come from one argsort per draw.  Models tied in a draw spread their
    mass evenly over the positions they occupy together.

    Parameters
    ----------
    draws : array_like, shape (S, L) or (chain, draw, L)

    Returns
    -------
    numpy.ndarray, shape (L, L)
        Rows are models, columns ranks 1..L; rows and columns sum to 1.
    """
    x = as_draw_matrix(draws)
    S, L = x.shape
    order = np.argsort(-x, axis=1, kind="stable")
    ordered = np.take_along_axis(x, order, axis=1)
    starts_group = np.ones((S, L), dtype=bool)
    starts_group[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    position = np.broadcast_to(np.arange(L), (S, L))
    if starts_group.all():
        flat = (order * L + position).ravel()
        return np.bincount(flat, minlength=L * L).reshape(L, L) / S
    # Tie groups occupy positions first..last; each member gets 1/(last-first+1) on each.
    ends_group = np.ones((S, L), dtype=bool)
    ends_group[:, :-1] = starts_group[:, 1:]
    first = np.maximum.accumulate(np.where(starts_group, position, 0), axis=1)
    last = np.minimum.accumulate(np.where(ends_group, position, L - 1)[:, ::-1], axis=1)[:, ::-1]
    share = 1.0 / (last - first + 1)
    width = L + 1  # difference array over positions, one spare column
    up = np.bincount((order * width + first).ravel(), weights=share.ravel(), minlength=L * width)
    down = np.bincount((order * width + last + 1).ravel(), weights=share.ravel(),
                       minlength=L * width)
    probs = np.cumsum((up - down).reshape(L, width), axis=1)[:, :L] / S
    return np.clip(probs, 0.0, 1.0)


def normal_superiority(mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Exact ``P(theta_i > theta_j)`` for independent normals: Phi((mu_i-mu_j)/sqrt(s_i^2+s_j^2)).

    Pairs with zero combined variance get 1, 0 or 1/2 by comparing the means.
    """
    mu, sigma = _normal_parameters(mu, sigma)
    diff = mu[:, None] - mu[None, :]
    scale = np.sqrt(sigma[:, None] ** 2 + sigma[None, :] ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = special.ndtr(diff / scale)
    degenerate = scale == 0
    p[degenerate] = 0.5 + 0.5 * np.sign(diff[degenerate])
    np.fill_diagonal(p, 0.5)
    return p


def _normal_parameters(mu, sigma) -> tuple[np.ndarray, np.ndarray]:
    mu = np.asarray(mu, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    if mu.ndim != 1 or sigma.shape != mu.shape:
        raise ValueError(f"mu and sigma must be 1-D of equal length; got {mu.shape}, {sigma.shape}")
    if not (np.all(np.isfinite(mu)) and np.all(np.isfinite(sigma))) or np.any(sigma < 0):
        raise ValueError("mu must be finite and sigma finite and >= 0")
    return mu, sigma


def normal_rank_probabilities(
    mu: np.ndarray, sigma: np.ndarray, *, nodes_per_model: int = 401, half_width: float = 9.0
) -> np.ndarray:
    """Exact rank distribution of independent normals ``theta_l ~ N(mu_l, sigma_l^2)``.

    ``P(rank_i = r) = integral phi_i(x) P(exactly r-1 of the others exceed x) dx``.
    The count of others above ``x`` is Poisson-binomial: its distribution over
    all models is built once per node by the usual convolution recursion, and
    model ``i`` is removed by the inverse recursion run in its stable direction
    (forward when ``P(theta_i > x) <= 1/2``, backward otherwise).  The integral
    uses the trapezoid rule on the union of per-model grids
    ``mu_l + sigma_l z``, ``|z| <= half_width``, so every model's density is
    resolved at its own scale.  Cost O(K L^2) for K nodes.

    Models with ``sigma = 0`` are point masses; they are handled by a tiny
    positive scale (1e-12 of the spread of the means).

    Returns
    -------
    numpy.ndarray, shape (L, L)
        ``P[i, r-1]``; rows are renormalised to sum to 1.  The trapezoid rule
        is second order: absolute error about 1e-5 at the default 401 nodes per
        model (1e-6 at 1601), far below the Monte Carlo error of any practical
        number of draws.
    """
    mu, sigma = _normal_parameters(mu, sigma)
    L = mu.size
    if L == 1:
        return np.ones((1, 1))
    floor = 1e-12 * max(float(np.ptp(mu)), float(sigma.max()), 1.0)
    sigma = np.maximum(sigma, floor)
    z = np.linspace(-half_width, half_width, nodes_per_model)
    x = np.unique((mu[:, None] + sigma[:, None] * z[None, :]).ravel())
    above = special.ndtr((mu[:, None] - x[None, :]) / sigma[:, None])  # P(theta_l > x), (L, K)
    density = stats.norm.pdf(x[None, :], mu[:, None], sigma[:, None])  # (L, K)

    # Poisson-binomial over all L models: everyone[c, k] = P(c models exceed x_k).
    everyone = np.zeros((L + 1, x.size))
    everyone[0] = 1.0
    for a in above:
        everyone[1:] = everyone[1:] * (1 - a) + everyone[:-1] * a
        everyone[0] *= 1 - a
    probs = np.empty((L, L))
    for i in range(L):
        others = _remove_trial(everyone, above[i])  # (L, K): c = 0..L-1 others above
        probs[i] = np.trapezoid(density[i] * others, x, axis=1)
    probs = np.clip(probs, 0.0, None)
    return probs / probs.sum(axis=1, keepdims=True)


def _remove_trial(counts: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Invert one Bernoulli(a) convolution of a Poisson-binomial pmf, node by node.

    ``counts`` (L+1, K) is the pmf with the trial; returns the (L, K) pmf without it.
    Forward recursion divides by (1-a) and is stable for a <= 1/2, backward divides
    by a and is stable for a > 1/2; each node uses its stable direction.
    """
    n = counts.shape[0] - 1
    forward = np.empty((n, counts.shape[1]))
    backward = np.empty_like(forward)
    low = a <= 0.5
    keep = np.where(low, 1 - a, 1.0)  # avoid dividing by ~0 where the branch is unused
    hit = np.where(low, 1.0, a)
    forward[0] = counts[0] / keep
    for c in range(1, n):
        forward[c] = (counts[c] - a * forward[c - 1]) / keep
    backward[n - 1] = counts[n] / hit
    for c in range(n - 1, 0, -1):
        backward[c - 1] = (counts[c] - (1 - a) * backward[c]) / hit
    return np.clip(np.where(low, forward, backward), 0.0, 1.0)


def expected_ranks(rank_probs: np.ndarray) -> np.ndarray:
    """E[rank_i] = sum_r r P(rank_i = r)."""
    p = np.asarray(rank_probs, dtype=float)
    return p @ np.arange(1, p.shape[1] + 1)


def rank_intervals(rank_probs: np.ndarray, prob: float = 0.9) -> tuple[np.ndarray, np.ndarray]:
    """Equal-tailed credible interval of each model's rank.

    ``lower`` is the smallest r with ``P(rank <= r) >= (1-prob)/2``, ``upper`` the
    smallest r with ``P(rank <= r) >= 1 - (1-prob)/2``.
    """
    if not 0 < prob < 1:
        raise ValueError(f"prob must lie in (0, 1), got {prob}")
    cdf = np.cumsum(np.asarray(rank_probs, dtype=float), axis=1)
    tail = (1 - prob) / 2
    eps = 1e-12
    lower = np.argmax(cdf >= tail - eps, axis=1) + 1
    upper = np.argmax(cdf >= 1 - tail - eps, axis=1) + 1
    return lower, upper


def top_set_indices(p_best: np.ndarray, alpha: float = 0.05) -> np.ndarray:
    """Smallest set of models that contains the best one with probability >= 1 - alpha.

    ``P(best in S) = sum_{i in S} P(best = i)``, so the smallest such set takes
    models in decreasing order of ``P(best)`` until the running sum reaches
    ``1 - alpha`` (ties in ``P(best)`` keep index order).  Returns indices in
    that order.
    """
    if not 0 <= alpha < 1:
        raise ValueError(f"alpha must lie in [0, 1), got {alpha}")
    p = np.asarray(p_best, dtype=float)
    order = np.argsort(-p, kind="stable")
    covered = np.cumsum(p[order])
    size = int(np.searchsorted(covered, (1 - alpha) * covered[-1] - 1e-12)) + 1
    return order[: min(size, p.size)]


# -- ties: exchangeable models and orders that rest on Monte Carlo error ---------------
def identical_rows(*features: np.ndarray) -> list[np.ndarray]:
    """Groups (of size >= 2) of models whose feature rows are identical.

    Each of ``features`` has shape (L, ...): rows of sufficient statistics per model
    (e.g. success counts and trials per question); a model's row is its rows of all of
    them.  Under a model whose prior is exchangeable over models, models with identical
    rows have the same posterior distribution of theta, so any order between them is
    noise.  Rows are grouped by a digest of their bytes, then compared whole within a
    group: no copy of the features is made (at 1,000 x 20,000 cells, sorting the
    concatenated rows took gigabytes).
    """
    parts = [np.ascontiguousarray(np.asarray(f).reshape(len(f), -1)) for f in features]
    groups: dict[bytes, list[int]] = {}
    for model in range(len(parts[0])):
        digest = hashlib.blake2b(digest_size=16)
        for part in parts:
            digest.update(part[model].dtype.str.encode())
            digest.update(memoryview(part[model]))
        groups.setdefault(digest.digest(), []).append(model)
    out = []
    for members in groups.values():
        while len(members) > 1:  # the same digest: the same rows, checked
            same = [m for m in members if all(
                np.array_equal(part[m], part[members[0]]) for part in parts)]
            if len(same) > 1:
                out.append(np.array(same))
            members = [m for m in members if m not in same]
    return sorted(out, key=lambda group: group[0])


def swap_invariant_pairs(wins: np.ndarray, ties: np.ndarray | None = None) -> list[np.ndarray]:
    """Groups (of size >= 2) of models that can be swapped without changing ``W`` (and ``T``).

    Such models are exchangeable under a Bradley-Terry-type model; the relation is
    :func:`bayesrank.ranking.exchangeable_groups`, the one the baselines use.
    """
    return _groups_of(exchangeable_groups(wins, ties))


def _groups_of(labels: np.ndarray) -> list[np.ndarray]:
    groups = [np.flatnonzero(labels == v) for v in np.unique(labels)]
    return [g for g in groups if g.size > 1]


def mean_difference_mcse(chain_draws: np.ndarray, *, independent: bool = False
                         ) -> np.ndarray:
    """MCSE of the posterior-mean difference ``E[theta_i - theta_j]``, shape (L, L).

    ``sd(theta_i - theta_j) / sqrt(ESS_mean(theta_i - theta_j))`` from the
    (chain, draw, L) draws; the difference's own ESS accounts for the
    correlation between the two abilities (large under a zero-sum constraint).
    ``independent``: draws independent by construction, whose ESS is their number; the
    variances of the differences are then read from the abilities' covariance matrix.
    """
    import arviz as az

    x = np.asarray(chain_draws, dtype=float)
    L = x.shape[-1]
    i, j = np.triu_indices(L, k=1)
    out = np.zeros((L, L))
    if i.size == 0 or x.shape[0] * x.shape[1] < 4:
        return out
    if independent:  # var(theta_i - theta_j) = C_ii + C_jj - 2 C_ij: one product
        flat = x.reshape(-1, L)
        centred = flat - flat.mean(axis=0)
        C = centred.T @ centred / (flat.shape[0] - 1)
        diagonal = np.diagonal(C)
        variance = np.maximum(diagonal[:, None] + diagonal[None, :] - 2.0 * C, 0.0)
        out = np.sqrt(variance / flat.shape[0])
        np.fill_diagonal(out, 0.0)
        return out
    for start in range(0, i.size, _PAIR_BLOCK):
        bi, bj = i[start:start + _PAIR_BLOCK], j[start:start + _PAIR_BLOCK]
        diff = x[..., bi] - x[..., bj]
        sd = diff.reshape(-1, bi.size).std(axis=0, ddof=1)
        ds = xr.Dataset({"d": (("chain", "draw", "pair"), diff)})
        ess = np.asarray(az.ess(ds, method="mean")["d"].values, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.where(sd > 0, sd / np.sqrt(ess), 0.0)
        out[bi, bj] = out[bj, bi] = np.nan_to_num(se)
    return out


def tie_groups(
    scores: np.ndarray,
    tolerance: np.ndarray | None = None,
    exchangeable: list[np.ndarray] | tuple = (),
) -> list[np.ndarray]:
    """Groups of models whose order is not established: exchangeable or within MC error.

    Exchangeable models (from the data) always form one group.  Then, walking
    the models from best to worst score, a model joins the current group when
    its score is within ``tolerance[i, k]`` of every member ``k`` (complete
    linkage, so a chain of small gaps cannot tie a clearly better model with a
    clearly worse one); otherwise it starts a new group.
    """
    scores = np.asarray(scores, dtype=float)
    L = scores.size
    label = np.arange(L)
    for group in exchangeable:
        label[np.asarray(group)] = int(np.min(group))
    units = {}
    for idx in range(L):
        units.setdefault(label[idx], []).append(idx)
    unit_list = [np.asarray(v) for v in units.values()]
    unit_scores = np.array([scores[u].mean() for u in unit_list])
    order = np.argsort(-unit_scores, kind="stable")
    groups: list[list[int]] = []
    current: list[int] = []
    for u in order:
        members = unit_list[u]
        within = current and tolerance is not None and all(
            abs(scores[a] - scores[b]) <= tolerance[a, b] for a in members for b in current
        )
        if within:
            current.extend(members.tolist())
        else:
            if current:
                groups.append(current)
            current = members.tolist()
    if current:
        groups.append(current)
    return [np.asarray(sorted(g)) for g in groups if len(g) > 1]


def tied_scores(scores: np.ndarray, groups: list[np.ndarray]) -> np.ndarray:
    """Scores with every tie group set to its mean, so competition ranks tie exactly."""
    out = np.asarray(scores, dtype=float).copy()
    for g in groups:
        out[g] = out[g].mean()
    return out
