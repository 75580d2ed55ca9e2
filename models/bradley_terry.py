"""Bayesian Bradley-Terry on pairwise win counts, optionally with Davidson ties.

Paper appendix, "Bradley--Terry (BT)", "Tie extensions" and "Bayesian
Bradley--Terry via MCMC".  Log-strengths theta_i = log pi_i get an exactly
centred Gaussian prior (sum_i theta_i = 0, so they are identifiable):

    theta  ~ ZeroSumNormal(scale)                    default scale 1, as the paper's
                                                     prior theta_i ~ N(0, 1)
    or, with ``hierarchical=True``,
    sigma  ~ HalfNormal(scale),  theta ~ ZeroSumNormal(sigma)

The fixed scale is the default because a learnt one forms a funnel when the
data say little about the spread (few models or few trials): on 6 x 10 x 8
data it gave divergent transitions, the fixed scale none.  With many trials
per pair both agree (the likelihood dominates).

Without ties (``ties=None``) each unordered pair i < j that met at least once
contributes its decisive outcomes (W = ``data.reductions.wins``):

    W_ij ~ Binomial(W_ij + W_ji, logistic(theta_i - theta_j))        (observed ``wins``)

With ``ties="davidson"`` the pair's three outcome counts (i wins, j wins, tie;
T = ``data.reductions.ties``) are multinomial with

    P(i > j) : P(j > i) : P(i ~ j) = pi_i : pi_j : nu sqrt(pi_i pi_j),
    log nu ~ Normal(0, 2)                              (observed ``outcomes``)

Every unordered pair i < j enters (a pair that never met has n = 0 and adds
nothing), so models of equally sized data have equal shapes and can be fitted
in one batch.  The zero-sum prior keeps the posterior proper even when the
comparison graph is disconnected (the relative strength of separate components
is then set by the prior alone).

Real benchmark data (issue 9).  Questions that every model solves or none
does only add ties (dropped by Bradley-Terry, counted by Davidson), so they
cannot add a slow direction, and the location is fixed on theta itself.  The
sufficient statistics are L x L whatever the number of questions.  A model
that never wins (or never loses) would be bounded by the fixed-scale prior
alone, which is proper and has no funnel; no real set has one: every model
won and lost some comparisons, and the fewest decisive comparisons of a pair
are 434 (LiveCodeBench repair 15 x 713 x 10), 68 (ZeroEval MATH-L5
38 x 721 x 1, where 2 ordered pairs never won), 733 (Reasoning Gym hard
10 x 4550 x 1) and 2 (MathArena AIME 2025 I 16 x 15 x 4).  ``bayesrank.fit``
with its defaults of then (nutpie, 4 x (1,000 + 1,000), target_accept 0.8,
``random_seed=0``) passes on all four, full size, with this parameterisation
unchanged:

    set                 model          R-hat   min bulk / tail ESS  divergences  steps/draw
    lcb_repair          bradley_terry  1.0030  5,814 / 2,547        0            5.9
    lcb_repair          davidson       1.0029  4,582 / 2,764        0            6.3
    zeroeval_math_l5    bradley_terry  1.0054  4,056 / 2,321        0            7.0
    zeroeval_math_l5    davidson       1.0053  5,143 / 2,409        0            7.0
    reasoning_gym_hard  bradley_terry  1.0020  4,758 / 2,966        0            4.6
    reasoning_gym_hard  davidson       1.0036  3,302 / 2,760        0            5.5
    aime2025_I          bradley_terry  1.0036  4,306 / 2,814        0            6.3
    aime2025_I          davidson       1.0036  3,464 / 2,751        0            6.6

Sampling takes 1-4 s of these fits; the rest is compiling the model (Numba,
for nutpie; about half a second once the machine's cache holds it) and the
pointwise log-likelihood (docs/samplers.md, ``benchmarks/bench_pairwise_real.py``).
On a 43 x 400 x 10 tensor the default Davidson fit takes 2.3 s, Bradley-Terry 4.2 s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bayesrank.data import ResponseData
from bayesrank.data.pairwise import PairwiseData

from ._common import check_option, positive_scale, response_data
from .likelihoods import multinomial_logits

__all__ = ["build", "bradley_terry", "pairs_of"]

OUTCOMES = ("i_wins", "j_wins", "tie")


def pairs_of(n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (i, j) of all unordered pairs i < j, in row-major order."""
    return np.triu_indices(n_models, k=1)


def bradley_terry(
    wins: np.ndarray,
    ties: np.ndarray | None,
    *,
    coords: dict[str, list],
    scale: float = 1.0,
    hierarchical: bool = False,
) -> pm.Model:
    """Bradley-Terry (``ties is None``) or Davidson model on pairwise counts.

    Parameters
    ----------
    wins : ndarray (L, L)
        W_ij = comparisons won by i against j.
    ties : ndarray (L, L) or None
        T_ij = tied comparisons (Davidson); None for plain Bradley-Terry.
    coords : dict
        Must hold ``llm``; ``pair`` (and ``outcome``) are added here.
    scale : float
        Prior sd of the log-strengths (or of the half-normal prior on their
        spread when ``hierarchical``).
    hierarchical : bool
        Learn the spread of the log-strengths.
    """
    i, j = pairs_of(wins.shape[0])
    names = coords["llm"]
    coords = {**coords, "pair": [f"{names[a]} vs {names[b]}" for a, b in zip(i, j, strict=True)]}
    with pm.Model(coords=coords) as model:
        sigma = pm.HalfNormal("sigma", scale) if hierarchical else scale
        theta = pm.ZeroSumNormal("theta", sigma=sigma, dims="llm")
        theta_i, theta_j = theta[i], theta[j]
        if ties is None:
            w_ij = pm.Data("wins_ij", wins[i, j].astype(np.int64), dims="pair")
            n_ij = pm.Data("decisive", (wins[i, j] + wins[j, i]).astype(np.int64), dims="pair")
            pm.Binomial("wins", n=n_ij, logit_p=theta_i - theta_j, observed=w_ij, dims="pair")
        else:
            model.add_coord("outcome", list(OUTCOMES))
            table = np.stack([wins[i, j], wins[j, i], ties[i, j]], axis=-1).astype(np.int64)
            counts = pm.Data("pair_counts", table, dims=("pair", "outcome"))
            log_nu = pm.Normal("log_nu", 0.0, 2.0)
            pm.Deterministic("nu", pt.exp(log_nu))
            logits = pt.stack([theta_i, theta_j, log_nu + 0.5 * (theta_i + theta_j)], axis=-1)
            multinomial_logits("outcomes", counts, logits, dims=("pair", "outcome"))
    return model


def build(
    data: ResponseData | PairwiseData | Any,
    *,
    ties: str | None = None,
    scale: float = 1.0,
    hierarchical: bool = False,
) -> pm.Model:
    """Build the Bayesian Bradley-Terry model of ``data``.

    Parameters
    ----------
    data : ResponseData, PairwiseData or array_like (L, M, N)
        Binary or categorical outcomes (pairwise wins compare utilities), or pairwise
        battles, whose win and tie counts are W and T themselves.
    ties : {None, "davidson"}
        Ignore ties (plain BT on decisive outcomes) or model them (Davidson).
    scale : float
        Prior sd of the log-strengths (of their spread when ``hierarchical``).
    hierarchical : bool
        Learn the spread of the log-strengths (partial pooling).

    Returns
    -------
    pymc.Model
        Ranking quantity ``theta`` = log-strengths (llm), zero-sum; observed
        ``wins`` (pair) without ties, ``outcomes`` (pair, outcome) with Davidson ties.
    """
    check_option("ties", ties, (None, "davidson"))
    d = data if isinstance(data, PairwiseData) else response_data(data)
    red = d.reductions
    return bradley_terry(
        red.wins,
        red.ties if ties == "davidson" else None,
        coords={"llm": list(d.models)},
        scale=positive_scale("scale", scale),
        hierarchical=bool(hierarchical),
    )
