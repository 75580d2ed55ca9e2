"""Bayesian Bradley-Terry and Davidson models of pairwise win counts.

Paper appendix, "Bradley--Terry (BT)", "Tie extensions" and "Bayesian Bradley--Terry via
MCMC".  For each unordered pair i < j, W_ij comparisons won by i, W_ji won by j and T_ij
tied (``data.reductions.wins``, ``data.reductions.ties``; of battles, :class:`PairwiseData`,
the counts themselves); log-strengths theta_i = log pi_i:

    theta  ~ ZeroSumNormal(scale)                    default scale 1, as the paper's
                                                     prior theta_i ~ N(0, 1)
    or, with ``hierarchical=True``,
    sigma  ~ HalfNormal(scale),  theta ~ ZeroSumNormal(sigma)

Bradley-Terry (model ``bradley_terry``): each pair's decisive outcomes,

    W_ij   ~ Binomial(W_ij + W_ji, logistic(theta_i - theta_j))   (observed ``wins``)

Davidson (model ``davidson``, or ``ties="davidson"``): the pair's three outcome counts are
multinomial with

    P(i > j) : P(j > i) : P(i ~ j) = pi_i : pi_j : nu sqrt(pi_i pi_j),
    log nu ~ Normal(0, 2)                              (observed ``outcomes``)

One function builds each variant, one line per line above: :func:`bradley_terry` and
:func:`davidson`, from the counts as :class:`PairCounts` prepares them once; :func:`build`
checks the options and picks the function by ``ties``.  Battles loaded with covariates
(``bayesrank.from_battles(frame, covariates=[...])``) get the contextual ("style
control") models of :mod:`models.contextual` instead, from the same two names.

Why this form (the measurements behind each choice: docs/samplers.md, "The pairwise
models' design record (moved from models/bradley_terry.py)"):

* The zero sum identifies the log-strengths (sum_i theta_i = 0) and keeps the posterior
  proper even when the comparison graph is disconnected (the relative strength of
  separate components is then set by the prior alone).
* The fixed scale is the default because a learnt one forms a funnel when the data say
  little about the spread (few models or few trials).  With many trials per pair both
  agree (the likelihood dominates).
* Every unordered pair i < j enters (a pair that never met has n = 0 and adds nothing),
  so models of equally sized data have equal shapes and can be fitted in one batch.
* Questions that every model solves or none does only add ties (dropped by
  Bradley-Terry, counted by Davidson), so they cannot add a slow direction, and the
  location is fixed on theta itself.  The sufficient statistics are L x L whatever the
  number of questions.  A model that never wins (or never loses) is bounded by the
  fixed-scale prior alone, which is proper and has no funnel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bayesrank.data import ResponseData
from bayesrank.data.pairwise import PairwiseData

from ._common import check_option, log_strengths, positive_scale, response_data
from .contextual import ContextualBattles, contextual_bradley_terry, contextual_davidson
from .likelihoods import multinomial_logits

__all__ = ["build", "bradley_terry", "davidson", "PairCounts", "pairs_of"]

OUTCOMES = ("i_wins", "j_wins", "tie")


def pairs_of(n_models: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (i, j) of all unordered pairs i < j, in row-major order."""
    return np.triu_indices(n_models, k=1)


@dataclass(frozen=True, eq=False, repr=False)
class PairCounts:
    """The pairwise counts as the models read them, prepared once (:meth:`of`).

    One entry per unordered pair i < j (:func:`pairs_of`), named ``"<i> vs <j>"`` in the
    coord ``pair``; the ties are read only by the model that needs them.
    """

    reductions: Any  # the data's reductions: wins W (L, L), ties T (L, L)
    coords: dict[str, list]  # llm, pair

    @classmethod
    def of(cls, data: ResponseData | PairwiseData) -> PairCounts:
        """The pairs of ``data``'s models (outcomes or battles: ``data.reductions``)."""
        names = list(data.models)
        i, j = pairs_of(len(names))
        pairs = [f"{names[a]} vs {names[b]}" for a, b in zip(i, j, strict=True)]
        return cls(data.reductions, {"llm": names, "pair": pairs})

    def __repr__(self) -> str:
        return f"PairCounts({len(self.coords['llm'])} models, {len(self.coords['pair'])} pairs)"

    @property
    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(i, j) of every pair."""
        return pairs_of(len(self.coords["llm"]))

    @property
    def wins(self) -> np.ndarray:
        """W_ij, the comparisons i won against j, per pair (int64)."""
        i, j = self.pairs
        return self.reductions.wins[i, j].astype(np.int64)

    @property
    def decisive(self) -> np.ndarray:
        """W_ij + W_ji, the pair's decisive comparisons (int64)."""
        i, j = self.pairs
        wins = self.reductions.wins
        return (wins[i, j] + wins[j, i]).astype(np.int64)

    @property
    def outcomes(self) -> np.ndarray:
        """(W_ij, W_ji, T_ij) per pair (pair, outcome), int64."""
        i, j = self.pairs
        wins, ties = self.reductions.wins, self.reductions.ties
        return np.stack([wins[i, j], wins[j, i], ties[i, j]], axis=-1).astype(np.int64)


def bradley_terry(pairs: PairCounts, scale: float = 1.0, hierarchical: bool = False):
    """Bradley-Terry, line by line (module docstring)::

        theta  ~ ZeroSumNormal(scale)  (hierarchical: sigma ~ HalfNormal(scale))
        W_ij   ~ Binomial(W_ij + W_ji, logistic(theta_i - theta_j))
    """
    i, j = pairs.pairs
    with pm.Model(coords=pairs.coords) as model:
        theta = log_strengths(scale, hierarchical)
        w_ij = pm.Data("wins_ij", pairs.wins, dims="pair")
        n_ij = pm.Data("decisive", pairs.decisive, dims="pair")
        pm.Binomial("wins", n=n_ij, logit_p=theta[i] - theta[j], observed=w_ij, dims="pair")
    return model


def davidson(pairs: PairCounts, scale: float = 1.0, hierarchical: bool = False):
    """Davidson's ties, line by line (module docstring)::

        theta   ~ ZeroSumNormal(scale)  (hierarchical: sigma ~ HalfNormal(scale))
        log nu  ~ Normal(0, 2)
        (W_ij, W_ji, T_ij) ~ Multinomial(n_ij, softmax(theta_i, theta_j,
                                                       log nu + (theta_i + theta_j) / 2))
    """
    i, j = pairs.pairs
    with pm.Model(coords={**pairs.coords, "outcome": list(OUTCOMES)}) as model:
        theta = log_strengths(scale, hierarchical)
        theta_i, theta_j = theta[i], theta[j]
        counts = pm.Data("pair_counts", pairs.outcomes, dims=("pair", "outcome"))
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
    beta_scale: float | None = None,
) -> pm.Model:
    """Build the Bayesian Bradley-Terry (or, ``ties="davidson"``, Davidson) model of ``data``.

    Battles with covariates (:attr:`PairwiseData.covariate_names` not empty) get the
    contextual models, :func:`models.contextual.contextual_bradley_terry` and
    :func:`~models.contextual.contextual_davidson`: strengths with the covariates held
    equal, and their coefficients ``beta`` (covariate).

    Parameters
    ----------
    data : ResponseData, PairwiseData or array_like (L, M, N)
        Binary or categorical outcomes (pairwise wins compare utilities), or pairwise
        battles, whose win and tie counts are W and T themselves.
    ties : {None, "davidson"}
        Ignore ties (plain BT on decisive outcomes, :func:`bradley_terry`) or model them
        (:func:`davidson`).
    scale : float
        Prior sd of the log-strengths (of their spread when ``hierarchical``).
    hierarchical : bool
        Learn the spread of the log-strengths (partial pooling).
    beta_scale : float, optional
        Prior sd of the covariates' coefficients (contextual models only; default 1).

    Returns
    -------
    pymc.Model
        Ranking quantity ``theta`` = log-strengths (llm), zero-sum; observed
        ``wins`` (pair) without ties, ``outcomes`` (pair, outcome) with Davidson ties;
        with covariates ``a_wins`` or ``outcomes`` (battle).
    """
    check_option("ties", ties, (None, "davidson"))
    d = data if isinstance(data, PairwiseData) else response_data(data)
    scale = positive_scale("scale", scale)
    if isinstance(d, PairwiseData) and d.covariate_names:
        styled = contextual_bradley_terry if ties is None else contextual_davidson
        battles = ContextualBattles.of(d, ties=ties is not None)
        beta_scale = positive_scale("beta_scale", 1.0 if beta_scale is None else beta_scale)
        return styled(battles, scale, beta_scale, bool(hierarchical))
    if beta_scale is not None:
        raise ValueError("beta_scale is the prior sd of covariate coefficients, but these data "
                         "have no covariates (bayesrank.from_battles(frame, covariates=[...]))")
    variant = bradley_terry if ties is None else davidson
    return variant(PairCounts.of(d), scale, bool(hierarchical))
