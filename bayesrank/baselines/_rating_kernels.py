"""Compiled event loops of the sequential rating systems (Elo, Glicko, TrueSkill).

Kept apart from :mod:`bayesrank.baselines.ratings` so that numba is imported
only when a sequential rating is first computed.  Every kernel takes a batch of B
independent event streams ``outcomes`` (B, E, L) int and ``present`` (B, E, L)
bool, rows in processing order, and a tie code: 0 = skip ties, 1 = every tie is a
draw, 2 = only (1, 1) ties are draws.  The streams run one after the other through the
same loop, from fresh ratings (see :mod:`bayesrank.baselines.ratings` on batches).

Label symmetry: every pairwise term comes from a label-free formula and each
model sums its terms over opponents in increasing index order, so two models
with identical outcome streams end with identical ratings -- bit-identical for
Elo and whenever ties are skipped, otherwise up to the rounding of a reordered
sum, far inside the tie tolerance of :func:`bayesrank.ranking.scores_to_ranks`.

Compilation happens on first use and is cached on disk (``cache=True``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

SKIP, DRAW, CORRECT_DRAW_ONLY = 0, 1, 2

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TAIL = -30.0  # below this the Mills-ratio series is more accurate than erfc


@njit(cache=True, inline="always")
def _split_event(outcomes, present, e, winners, losers):
    """Fill ``winners`` / ``losers`` with the present models scoring 1 / 0 in event e.

    Returns their counts; indices are in increasing order.
    """
    n_win = 0
    n_lose = 0
    for i in range(outcomes.shape[1]):
        if present[e, i]:
            if outcomes[e, i] != 0:
                winners[n_win] = i
                n_win += 1
            else:
                losers[n_lose] = i
                n_lose += 1
    return n_win, n_lose


# --------------------------------------------------------------------------------------
# Elo
# --------------------------------------------------------------------------------------
@njit(cache=True, inline="always")
def _elo_sum(i, score, group, n_group, strength):
    """sum over opponents j in ``group`` of (score - a_i / (a_i + a_j)); j = i adds 0."""
    acc = 0.0
    a_i = strength[i]
    for k in range(n_group):
        acc += score - a_i / (a_i + strength[group[k]])
    return acc


@njit(cache=True)
def elo_streams(outcomes, present, K, initial_rating, tie_code):
    """Final Elo ratings (B, L) of B independent streams (B, E, L), one after the other; each
    event's matches use the ratings at the start of the event."""
    B, n_events, L = outcomes.shape
    out = np.empty((B, L))
    strength = np.empty(L)  # a_i = 10^(r_i / 400), so E_ij = a_i / (a_i + a_j)
    delta = np.zeros(L)
    winners = np.empty(L, dtype=np.int64)
    losers = np.empty(L, dtype=np.int64)
    for b in range(B):
        stream, seen = outcomes[b], present[b]
        rating = np.full(L, initial_rating)
        shift = initial_rating
        for e in range(n_events):
            n_win, n_lose = _split_event(stream, seen, e, winners, losers)
            # E is invariant to a common shift of the ratings: subtracting the current
            # maximum keeps 10^(r/400) from overflowing.
            for i in range(L):
                strength[i] = 10.0 ** ((rating[i] - shift) / 400.0)
            # each side against the other, then its own ties: (1, 1) a draw unless ties are
            # skipped, (0, 0) only under "draw"
            for won in (True, False):
                team, n_team = (winners, n_win) if won else (losers, n_lose)
                rivals, n_rivals = (losers, n_lose) if won else (winners, n_win)
                for k in range(n_team):
                    i = team[k]
                    acc = _elo_sum(i, 1.0 if won else 0.0, rivals, n_rivals, strength)
                    if tie_code == DRAW or (won and tie_code != SKIP):
                        acc += _elo_sum(i, 0.5, team, n_team, strength)
                    delta[i] = K * acc
            for i in range(L):
                if seen[e, i]:  # a winner or a loser of the event
                    rating[i] += delta[i]
            shift = rating.max()
        out[b] = rating
    return out


# --------------------------------------------------------------------------------------
# Glicko
# --------------------------------------------------------------------------------------
_Q = math.log(10.0) / 400.0


@njit(cache=True, inline="always")
def glicko_g(rd):
    """g(RD) = 1 / sqrt(1 + 3 q^2 RD^2 / pi^2)."""
    return 1.0 / math.sqrt(1.0 + 3.0 * _Q * _Q * rd * rd / (math.pi * math.pi))


@njit(cache=True, inline="always")
def glicko_expected(diff, g_opponent):
    """E = 1 / (1 + 10^(-g(RD_j) (r_i - r_j) / 400)), written with q = ln(10) / 400."""
    return 1.0 / (1.0 + math.exp(-_Q * g_opponent * diff))


@njit(cache=True)
def glicko_period(rating, rd, sum_info, sum_score, rd_max):
    """One player's Glicko update from the period sums.

    ``sum_info`` = sum_j g_j^2 E_ij (1 - E_ij), ``sum_score`` = sum_j g_j (S_ij - E_ij).
    Returns the new (rating, RD); unchanged when the sums carry no information.
    """
    if not (sum_info > 0.0) or not math.isfinite(sum_info):
        return rating, rd
    inv_d2 = _Q * _Q * sum_info
    precision = 1.0 / (rd * rd) + inv_d2
    new_rd = min(max(math.sqrt(1.0 / precision), 1e-12), rd_max)
    return rating + _Q / precision * sum_score, new_rd


@njit(cache=True, inline="always")
def _glicko_sums(i, score, group, n_group, rating, g):
    """Period sums of player i against the opponents in ``group`` (j = i skipped)."""
    info = 0.0
    total = 0.0
    for k in range(n_group):
        j = group[k]
        if j == i:
            continue
        e_ij = glicko_expected(rating[i] - rating[j], g[j])
        info += g[j] * g[j] * e_ij * (1.0 - e_ij)
        total += g[j] * (score - e_ij)
    return info, total


@njit(cache=True)
def glicko_streams(outcomes, present, initial_rating, initial_rd, c, rd_max, tie_code):
    """Final Glicko ratings and RDs (B, L) of B independent streams (B, E, L); every event
    is one rating period."""
    B, n_events, L = outcomes.shape
    ratings = np.empty((B, L))
    rds = np.empty_like(ratings)
    g = np.empty(L)
    new_rating = np.empty(L)
    new_rd = np.empty(L)
    winners = np.empty(L, dtype=np.int64)
    losers = np.empty(L, dtype=np.int64)
    for s in range(B):
        stream, seen = outcomes[s], present[s]
        rating = np.full(L, initial_rating)
        rd = np.full(L, min(initial_rd, rd_max))
        for e in range(n_events):
            for i in range(L):
                if c > 0.0:
                    rd[i] = min(math.sqrt(rd[i] * rd[i] + c * c), rd_max)
                g[i] = glicko_g(rd[i])
            n_win, n_lose = _split_event(stream, seen, e, winners, losers)
            for won in (True, False):  # as in elo_streams
                team, n_team = (winners, n_win) if won else (losers, n_lose)
                rivals, n_rivals = (losers, n_lose) if won else (winners, n_win)
                for k in range(n_team):
                    i = team[k]
                    info, total = _glicko_sums(i, 1.0 if won else 0.0, rivals, n_rivals, rating, g)
                    if tie_code == DRAW or (won and tie_code != SKIP):
                        info2, total2 = _glicko_sums(i, 0.5, team, n_team, rating, g)
                        info += info2
                        total += total2
                    new_rating[i], new_rd[i] = glicko_period(rating[i], rd[i], info, total,
                                                             rd_max)
            for i in range(L):
                if seen[e, i]:  # a winner or a loser of the event
                    rating[i], rd[i] = new_rating[i], new_rd[i]
        ratings[s], rds[s] = rating, rd
    return ratings, rds


# --------------------------------------------------------------------------------------
# TrueSkill (two-player updates, zero or positive draw margin)
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _normal_pdf(x):
    return _INV_SQRT_2PI * math.exp(-0.5 * x * x)


@njit(cache=True)
def win_corrections(x):
    """v(x) = phi(x) / Phi(x) and w(x) = v (v + x) for a decisive result, x = t - eps."""
    if x < _TAIL:
        # Asymptotic series of the inverse Mills ratio and of w = v (v + x).
        y = -x
        z = 1.0 / (y * y)
        v = y + (1.0 / y) * (1.0 - z * (2.0 - z * (10.0 - 74.0 * z)))
        w = 1.0 - z * (1.0 - z * (6.0 - 50.0 * z))
    else:
        v = _normal_pdf(x) / (0.5 * math.erfc(-x / _SQRT2))  # phi(x) / Phi(x)
        w = v * (v + x)
    return v, min(max(w, 0.0), 1.0)


@njit(cache=True)
def draw_corrections(t, eps):
    """Mean v and 1 - variance w of N(0, 1) truncated to [-eps - t, eps - t]."""
    if eps <= math.sqrt(2.220446049250313e-16) * (1.0 + abs(t)):
        return -t, 1.0  # zero-width draw: the performance difference is pinned at 0
    sign = 1.0
    if t > 0.0:  # reflect so that the interval lies on the upper side of 0
        t = -t
        sign = -1.0
    a = -eps - t
    b = eps - t
    mass = 0.5 * (math.erfc(a / _SQRT2) - math.erfc(b / _SQRT2))
    if mass > 1e-300:
        pa = _normal_pdf(a)
        pb = _normal_pdf(b)
        mean = (pa - pb) / mass
        second = (a * pa - b * pb) / mass
        variance = 1.0 + second - mean * mean
    else:
        # Far upper tail: the density on [a, b] is ~exp(-a u) (a > 0 here).
        width = b - a
        aw = a * width
        if aw > 50.0:
            v_tail, w_tail = win_corrections(-a)
            mean = v_tail
            variance = 1.0 - w_tail
        else:
            em1 = math.expm1(aw)
            mean = a + 1.0 / a - width / em1
            variance = 1.0 / (a * a) - width * width * math.exp(aw) / (em1 * em1)
    return sign * mean, min(max(1.0 - variance, 0.0), 1.0)


@njit(cache=True, inline="always")
def _trueskill_pair(mu1, var1, mu2, var2, outcome, two_beta2, draw_margin):
    """Two-player TrueSkill update on variances: returns (mu1', var1', mu2', var2')."""
    c2 = two_beta2 + (var1 + var2)
    inv_c = 1.0 / math.sqrt(c2)
    eps = draw_margin * inv_c
    if outcome == 0.5:
        v, w = draw_corrections((mu1 - mu2) * inv_c, eps)
        new_mu1 = mu1 + var1 * inv_c * v
        new_mu2 = mu2 - var2 * inv_c * v
    elif outcome == 1.0:
        v, w = win_corrections((mu1 - mu2) * inv_c - eps)
        new_mu1 = mu1 + var1 * inv_c * v
        new_mu2 = mu2 - var2 * inv_c * v
    else:
        v, w = win_corrections((mu2 - mu1) * inv_c - eps)
        new_mu1 = mu1 - var1 * inv_c * v
        new_mu2 = mu2 + var2 * inv_c * v
    shrink = w * inv_c * inv_c
    new_var1 = var1 * max(1.0 - var1 * shrink, 1e-12)
    new_var2 = var2 * max(1.0 - var2 * shrink, 1e-12)
    return new_mu1, new_var1, new_mu2, new_var2


@njit(cache=True)
def trueskill_match(mu1, sigma1, mu2, sigma2, outcome, beta, draw_margin):
    """Two-player TrueSkill update; outcome 1 = first wins, 0 = second wins, 0.5 = draw."""
    m1, v1, m2, v2 = _trueskill_pair(mu1, sigma1 * sigma1, mu2, sigma2 * sigma2, outcome,
                                     2.0 * beta * beta, draw_margin)
    return m1, math.sqrt(v1), m2, math.sqrt(v2)


@njit(cache=True)
def _trueskill_pairs(first, n_first, second, n_second, same_group, outcome, mu, var, precision,
                     two_beta2, draw_margin, d_precision, d_natural):
    """Play every pair (first[a], second[b]) (a < b within one group) from the event start.

    Each pair's posterior N(mu', var') is a Gaussian site; its natural-parameter change
    (1/var' - 1/var, mu'/var' - mu/var) is accumulated per player.
    """
    for a in range(n_first):
        i = first[a]
        start = a + 1 if same_group else 0
        for b in range(start, n_second):
            j = second[b]
            mi, vi, mj, vj = _trueskill_pair(mu[i], var[i], mu[j], var[j], outcome, two_beta2,
                                             draw_margin)
            d_precision[i] += 1.0 / vi - precision[i]
            d_natural[i] += mi / vi - mu[i] * precision[i]
            d_precision[j] += 1.0 / vj - precision[j]
            d_natural[j] += mj / vj - mu[j] * precision[j]


@njit(cache=True)
def trueskill_streams(outcomes, present, n_per_round, mu0, sigma0, beta, tau, draw_margin,
                      tie_code):
    """Final TrueSkill (mu, sigma), each (B, L), of B independent streams (B, E, L), as
    :func:`bayesrank.baselines.ratings.trueskill` describes (drift after every
    ``n_per_round`` events)."""
    B, n_events, L = outcomes.shape
    mus = np.empty((B, L))
    sigmas = np.empty_like(mus)
    two_beta2 = 2.0 * beta * beta
    d_precision = np.zeros(L)
    d_natural = np.zeros(L)
    winners = np.empty(L, dtype=np.int64)
    losers = np.empty(L, dtype=np.int64)
    for s in range(B):
        stream, seen = outcomes[s], present[s]
        mu = np.full(L, mu0)
        var = np.full(L, sigma0 * sigma0)
        precision = 1.0 / var
        for e in range(n_events):
            n_win, n_lose = _split_event(stream, seen, e, winners, losers)
            _trueskill_pairs(winners, n_win, losers, n_lose, False, 1.0, mu, var, precision,
                             two_beta2, draw_margin, d_precision, d_natural)
            if tie_code != SKIP:
                _trueskill_pairs(winners, n_win, winners, n_win, True, 0.5, mu, var, precision,
                                 two_beta2, draw_margin, d_precision, d_natural)
            if tie_code == DRAW:
                _trueskill_pairs(losers, n_lose, losers, n_lose, True, 0.5, mu, var, precision,
                                 two_beta2, draw_margin, d_precision, d_natural)
            for i in range(L):
                if d_precision[i] == 0.0 and d_natural[i] == 0.0:
                    continue  # did not play in this event
                new_precision = precision[i] + d_precision[i]
                mu[i] = (mu[i] * precision[i] + d_natural[i]) / new_precision
                precision[i] = new_precision
                var[i] = 1.0 / new_precision
                d_precision[i] = 0.0
                d_natural[i] = 0.0
            if (e + 1) % n_per_round == 0:
                for i in range(L):
                    var[i] = var[i] + tau * tau
                    precision[i] = 1.0 / var[i]
        mus[s], sigmas[s] = mu, np.sqrt(var)
    return mus, sigmas
