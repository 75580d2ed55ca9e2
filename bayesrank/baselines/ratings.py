"""Sequential rating systems: Elo, Glicko and TrueSkill over the induced match stream.

Paper: Appendix "Sequential Rating Systems" (``ssec:app:rating_systems``).  Every
question-trial ``(m, n)`` is one *event*; within it each pair of models that
both observed the trial plays one match: ``(1, 0)`` is a win, ``(0, 1)`` a loss,
``(1, 1)`` and ``(0, 0)`` are ties handled by ``tie_handling``:

- ``"skip"``: ties are not played;
- ``"draw"``: both kinds of tie are draws (score 1/2);
- ``"correct_draw_only"``: ``(1, 1)`` is a draw, ``(0, 0)`` is not played.

Processing order (the order of the paper's implementation, scorio 0.2.3, so that
the paper's rankings reproduce): events are visited **trial-major** --
``for n in trials: for m in questions`` -- i.e. all questions of trial 1, then
all questions of trial 2, ...  All matches of one event are computed from the
ratings at the start of the event and their increments are applied together,
so the result does not depend on the order of the models (only on the order of
events).  TrueSkill applies its drift ``tau`` once per *trial* (after every M
events); Glicko treats every event as one rating period.

Ratings are binary-only (a win needs "correct vs incorrect"); missing trials
(``mask``) simply do not play.  The event loops are compiled with numba on first
use and cached on disk.

Battles (:class:`~bayesrank.data.pairwise.PairwiseData` built from a battles table)
are one event per battle, in the table's order, with only its two models present; a
tie is ``(1, 1)`` and a both-bad tie ``(0, 0)``, and TrueSkill's drift applies after
every battle.

:func:`elo_ratings`, :func:`glicko_ratings` and :func:`trueskill_ratings` rate B
independent streams in one call (e.g. the trial draws of a study, see
:func:`event_streams`); the ranking rules are a batch of one, so a stream's result
does not depend on its batch.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bayesrank.checks import check_choice, check_finite
from bayesrank.data import ResponseData
from bayesrank.data.pairwise import PairwiseData
from bayesrank.errors import DataError
from bayesrank.ranking import ranking_method

__all__ = [
    "TIE_HANDLING",
    "elo",
    "elo_expected_score",
    "elo_ratings",
    "event_stream",
    "event_streams",
    "glicko",
    "glicko_expected_score",
    "glicko_g",
    "glicko_ratings",
    "glicko_update",
    "trueskill",
    "trueskill_ratings",
    "trueskill_update",
]

TIE_HANDLING = ("skip", "draw", "correct_draw_only")


def _kernels():
    from bayesrank.baselines import _rating_kernels

    return _rating_kernels


def _tie_code(tie_handling: str) -> int:
    return TIE_HANDLING.index(check_choice("tie_handling", tie_handling, TIE_HANDLING))


def event_stream(data: ResponseData) -> tuple[np.ndarray, np.ndarray]:
    """The match stream in processing order.

    Returns
    -------
    outcomes : numpy.ndarray of int8, shape (N * M, L)
        Row ``e = n * M + m`` holds ``R[:, m, n]`` (trial-major order).
    present : numpy.ndarray of bool, shape (N * M, L)
        Whether each model observed that trial (all True without a mask).
    """
    if isinstance(data, PairwiseData):  # one event per battle, in the table's order
        return data.event_stream()
    data.require_binary("sequential ratings (Elo, Glicko, TrueSkill)")
    outcomes, present = event_streams(data.R[None])
    if data.mask is not None:  # the mask's stream, in the same order
        present = event_streams(data.mask[None])[0]
    return outcomes[0], present[0]


def event_streams(outcomes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The match streams of D complete binary outcome tensors (D, L, M, n) (e.g. a study's
    trial draws), in processing order: stream ``d`` is :func:`event_stream` of
    ``outcomes[d]``, row ``e = n M + m`` holding ``outcomes[d, :, m, n]``; ``present``
    (D, n M, L) is all True."""
    D, L, M, n = outcomes.shape
    streams = np.ascontiguousarray(outcomes.transpose(0, 3, 2, 1)).reshape(D, n * M, L)
    return streams, np.ones(streams.shape, dtype=bool)


# --------------------------------------------------------------------------------------
# Elo
# --------------------------------------------------------------------------------------
def elo_expected_score(rating: float | np.ndarray, opponent: float | np.ndarray) -> np.ndarray:
    """Elo expected score E_ij = 1 / (1 + 10^((r_j - r_i) / 400))."""
    return 1.0 / (1.0 + 10.0 ** ((np.asarray(opponent, float) - np.asarray(rating, float)) / 400))


@ranking_method
def elo(
    data: ResponseData,
    *,
    K: float = 32.0,
    initial_rating: float = 1500.0,
    tie_handling: str = "correct_draw_only",
) -> np.ndarray:
    """Elo ratings from the induced match stream (Elo 1978; paper App. "Elo").

    For every match of an event, with S_ij in {0, 1/2, 1},

    .. math::
        E_{ij} = \\frac{1}{1 + 10^{(r_j - r_i)/400}}, \\qquad
        r_i \\leftarrow r_i + K (S_{ij} - E_{ij}),

    where all matches of one question-trial use the event-start ratings and the
    increments are summed.  Events run trial-major (see module docstring).

    Parameters
    ----------
    data : ResponseData
        Binary outcomes.
    K : float
        Step size (the paper uses ``K = 0.05``).
    initial_rating : float
        Starting rating of every model.
    tie_handling : {"skip", "draw", "correct_draw_only"}
        How ``(1, 1)`` / ``(0, 0)`` pairs are played.

    Returns
    -------
    numpy.ndarray
        Final ratings (larger is better).
    """
    outcomes, present = event_stream(data)
    return elo_ratings(outcomes[None], present[None], K=K, initial_rating=initial_rating,
                       tie_handling=tie_handling)[0]


def elo_ratings(outcomes: np.ndarray, present: np.ndarray, *, K: float, initial_rating: float,
                tie_handling: str) -> np.ndarray:
    """Final Elo ratings (B, L) of B independent match streams (B, E, L); the options (and
    their defaults) are :func:`elo`'s."""
    K = check_finite("K", K, positive=True)
    initial_rating = check_finite("initial_rating", initial_rating)
    code = _tie_code(tie_handling)
    return _kernels().elo_streams(outcomes, present, K, initial_rating, code)


# --------------------------------------------------------------------------------------
# Glicko
# --------------------------------------------------------------------------------------
def glicko_g(rd: Any) -> np.ndarray:
    """Glicko attenuation g(RD) = 1 / sqrt(1 + 3 q^2 RD^2 / pi^2), q = ln(10) / 400."""
    return np.vectorize(_kernels().glicko_g, otypes=[float])(np.asarray(rd, dtype=float))


def glicko_expected_score(rating: Any, opponent_rating: Any, opponent_rd: Any) -> np.ndarray:
    """Glicko expected score E = 1 / (1 + 10^(-g(RD_j) (r_i - r_j) / 400)).

    For a prediction between two uncertain players pass
    ``opponent_rd = sqrt(RD_i^2 + RD_j^2)`` (Glickman's "expected score" example).
    """
    k = _kernels()
    diff = np.asarray(rating, dtype=float) - np.asarray(opponent_rating, dtype=float)
    return np.vectorize(k.glicko_expected, otypes=[float])(diff, glicko_g(opponent_rd))


def glicko_update(
    rating: float,
    rd: float,
    opponent_ratings: Any,
    opponent_rds: Any,
    scores: Any,
    *,
    rd_max: float = math.inf,
) -> tuple[float, float]:
    """One Glicko rating-period update of one player (Glickman 1999, Step 2).

    With ``q = ln(10) / 400`` and ``g(RD) = 1 / sqrt(1 + 3 q^2 RD^2 / pi^2)``,

    .. math::
        E_j = \\frac{1}{1 + 10^{-g(RD_j)(r - r_j)/400}}, \\quad
        d^{-2} = q^2 \\sum_j g(RD_j)^2 E_j (1 - E_j),

    .. math::
        RD' = (RD^{-2} + d^{-2})^{-1/2}, \\quad
        r' = r + \\frac{q}{RD^{-2} + d^{-2}} \\sum_j g(RD_j)(s_j - E_j).

    This is the same compiled code the :func:`glicko` event loop runs.

    Returns
    -------
    (float, float)
        The new rating and rating deviation (RD clipped to ``rd_max``).
    """
    k = _kernels()
    r_opp = np.asarray(opponent_ratings, dtype=float).ravel()
    rd_opp = np.asarray(opponent_rds, dtype=float).ravel()
    s = np.asarray(scores, dtype=float).ravel()
    if not (r_opp.shape == rd_opp.shape == s.shape):
        raise DataError(
            f"opponent_ratings, opponent_rds and scores must have equal length, got "
            f"{r_opp.size}, {rd_opp.size}, {s.size}"
        )
    rd = check_finite("rd", rd, positive=True)
    info = 0.0
    total = 0.0
    for r_j, rd_j, s_j in zip(r_opp, rd_opp, s, strict=True):
        g_j = k.glicko_g(rd_j)
        e_j = k.glicko_expected(float(rating) - r_j, g_j)
        info += g_j * g_j * e_j * (1.0 - e_j)
        total += g_j * (s_j - e_j)
    new_rating, new_rd = k.glicko_period(float(rating), rd, info, total, float(rd_max))
    return float(new_rating), float(new_rd)


@ranking_method
def glicko(
    data: ResponseData,
    *,
    initial_rating: float = 1500.0,
    initial_rd: float = 350.0,
    c: float = 0.0,
    rd_max: float = 350.0,
    tie_handling: str = "correct_draw_only",
) -> tuple[np.ndarray, dict[str, Any]]:
    """Glicko ratings, one rating period per question-trial (Glickman 1999; paper App. "Glicko").

    At the start of each period ``RD <- min(sqrt(RD^2 + c^2), rd_max)``; then every
    model that played updates with :func:`glicko_update` against all its
    opponents of the period (ratings and RDs taken at the period start).

    Parameters
    ----------
    initial_rating, initial_rd : float
        Starting rating and deviation (``initial_rd`` is capped at ``rd_max``).
    c : float
        RD inflation per period (0 in the paper).
    rd_max : float
        Upper bound of RD.
    tie_handling : {"skip", "draw", "correct_draw_only"}

    Returns
    -------
    scores : numpy.ndarray
        Final ratings.
    details : dict
        ``rating_deviation``: final RD per model.
    """
    outcomes, present = event_stream(data)
    rating, rd = glicko_ratings(outcomes[None], present[None], initial_rating=initial_rating,
                                initial_rd=initial_rd, c=c, rd_max=rd_max,
                                tie_handling=tie_handling)
    return rating[0], {"rating_deviation": rd[0]}


def glicko_ratings(outcomes: np.ndarray, present: np.ndarray, *, initial_rating: float,
                   initial_rd: float, c: float, rd_max: float,
                   tie_handling: str) -> tuple[np.ndarray, np.ndarray]:
    """Final Glicko ratings and RDs, each (B, L), of B independent match streams (B, E, L);
    the options (and their defaults) are :func:`glicko`'s."""
    initial_rating = check_finite("initial_rating", initial_rating)
    initial_rd = check_finite("initial_rd", initial_rd, positive=True)
    c = check_finite("c", c, nonnegative=True)
    rd_max = check_finite("rd_max", rd_max, positive=True)
    code = _tie_code(tie_handling)
    return _kernels().glicko_streams(outcomes, present, initial_rating, initial_rd, c, rd_max,
                                     code)


# --------------------------------------------------------------------------------------
# TrueSkill
# --------------------------------------------------------------------------------------
def trueskill_update(
    mu1: float,
    sigma1: float,
    mu2: float,
    sigma2: float,
    outcome: float = 1.0,
    *,
    beta: float = 25.0 / 6.0,
    draw_margin: float = 0.0,
) -> tuple[float, float, float, float]:
    """Two-player TrueSkill update (Herbrich, Minka & Graepel 2006), no drift.

    With ``c^2 = 2 beta^2 + sigma_1^2 + sigma_2^2``, ``t = (mu_w - mu_l) / c`` and
    ``eps = draw_margin / c``, a decisive match moves
    ``mu_w += sigma_w^2 / c * v``, ``mu_l -= sigma_l^2 / c * v`` and
    ``sigma^2 <- sigma^2 (1 - sigma^2 / c^2 * w)`` with
    ``v = phi(t - eps) / Phi(t - eps)``, ``w = v (v + t - eps)``; a draw uses the
    mean and variance of N(0, 1) truncated to ``[-eps - t, eps - t]``
    (``v -> -t``, ``w -> 1`` when ``eps = 0``).

    Parameters
    ----------
    outcome : {1, 0.5, 0}
        1 if the first player won, 0 if the second won, 0.5 for a draw.

    Returns
    -------
    (mu1', sigma1', mu2', sigma2')
    """
    if outcome not in (0.0, 0.5, 1.0):
        raise DataError(f"outcome must be 1 (first wins), 0 (second wins) or 0.5, got {outcome}")
    beta = check_finite("beta", beta, positive=True)
    draw_margin = check_finite("draw_margin", draw_margin, nonnegative=True)
    for name, value in (("sigma1", sigma1), ("sigma2", sigma2)):
        check_finite(name, value, positive=True)
    out = _kernels().trueskill_match(
        float(mu1), float(sigma1), float(mu2), float(sigma2), float(outcome), beta, draw_margin
    )
    return tuple(float(x) for x in out)  # type: ignore[return-value]


@ranking_method
def trueskill(
    data: ResponseData,
    *,
    mu_initial: float = 25.0,
    sigma_initial: float = 25.0 / 3.0,
    beta: float = 25.0 / 6.0,
    tau: float = 25.0 / 300.0,
    tie_handling: str = "skip",
    draw_margin: float = 0.0,
) -> tuple[np.ndarray, dict[str, Any]]:
    """TrueSkill skill means from two-player updates (paper App. "TrueSkill").

    Within an event every played pair is updated by :func:`trueskill_update` from
    the event-start beliefs; the resulting Gaussian sites ``N(mu', sigma'^2)`` are
    combined in natural parameters,
    ``1/sigma^2 <- 1/sigma^2 + sum (1/sigma'^2 - 1/sigma^2)`` and likewise for
    ``mu/sigma^2``.  After each trial (M events) every ``sigma`` is inflated to
    ``sqrt(sigma^2 + tau^2)``.  The paper skips ties (decisive matches only).

    Returns
    -------
    scores : numpy.ndarray
        Final ``mu``.
    details : dict
        ``sigma``: final skill standard deviations.
    """
    outcomes, present = event_stream(data)
    per_round = 1 if isinstance(data, PairwiseData) else data.M  # a battle is its own round
    mu, sigma = trueskill_ratings(outcomes[None], present[None], per_round, mu_initial=mu_initial,
                                  sigma_initial=sigma_initial, beta=beta, tau=tau,
                                  tie_handling=tie_handling, draw_margin=draw_margin)
    return mu[0], {"sigma": sigma[0]}


def trueskill_ratings(outcomes: np.ndarray, present: np.ndarray, events_per_trial: int, *,
                      mu_initial: float, sigma_initial: float, beta: float, tau: float,
                      tie_handling: str, draw_margin: float) -> tuple[np.ndarray, np.ndarray]:
    """Final TrueSkill ``mu`` and ``sigma``, each (B, L), of B match streams (B, E, L).

    The drift ``tau`` is applied after every ``events_per_trial`` events (M questions); the
    options (and their defaults) are :func:`trueskill`'s.
    """
    mu_initial = check_finite("mu_initial", mu_initial)
    sigma_initial = check_finite("sigma_initial", sigma_initial, positive=True)
    beta = check_finite("beta", beta, positive=True)
    tau = check_finite("tau", tau, nonnegative=True)
    draw_margin = check_finite("draw_margin", draw_margin, nonnegative=True)
    code = _tie_code(tie_handling)
    return _kernels().trueskill_streams(outcomes, present, events_per_trial, mu_initial,
                                        sigma_initial, beta, tau, draw_margin, code)
