"""Rasch (1PL), 2PL and 3PL abilities by joint maximum likelihood or MAP.

Paper App. "Item Response Theory (IRT) Methods", Alg. "Binomial xPL IRT": with
``k_lm ~ Binomial(n_lm, p_lm)`` and

.. math::
    p_{lm} = c_m + (1 - c_m)\\,\\sigma\\big(a_m(\\theta_l - b_m)\\big)

(``a = 1, c = 0``: Rasch; ``c = 0``: 2PL), :func:`fit_irt` minimises the negative
log-likelihood plus a Gaussian ability prior (MAP) and weak ridges on ``log a`` and on the
guessing logit, with centred difficulties, by Newton's method (:mod:`._xpl_kernel`).  The
ranking rules :func:`rasch`, :func:`rasch_2pl` and :func:`rasch_3pl` are ML with
``prior=None`` and MAP with a prior variance (the paper's ``*_map`` identifiers use 1.0).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from scipy.special import expit

from bayesrank.baselines._optim import prior_variance
from bayesrank.baselines.irt._common import (
    IrtFit,
    IrtModel,
    binary_counts,
    binomial_counts,
    boundary_difficulty,
)
from bayesrank.baselines.irt.xpl_batch import LOG_A_BOUND, Layout, fit_xpl_batch
from bayesrank.checks import check_choice, check_finite, check_in_interval, check_int
from bayesrank.data import ResponseData
from bayesrank.errors import DataError
from bayesrank.ranking import ranking_method

__all__ = ["fit_irt", "rasch", "rasch_2pl", "rasch_3pl"]


def fit_irt(
    successes: np.ndarray,
    trials: np.ndarray | int,
    *,
    model: IrtModel = "1pl",
    prior_var: float | None = None,
    max_iter: int = 500,
    reg_discrimination: float = 0.01,
    reg_guessing: float = 0.1,
    guessing_upper: float = 0.5,
    fix_guessing: float | None = None,
    labels: Sequence[str] | None = None,
) -> IrtFit:
    """Fit a binomial 1PL/2PL/3PL model by joint ML or MAP (paper, Alg. "Binomial xPL IRT").

    Minimises

    .. math::
        -\\sum_{l,m}\\big[k_{lm}\\log p_{lm} + (n_{lm}-k_{lm})\\log(1-p_{lm})\\big]
        + \\frac{\\lVert\\theta\\rVert^2}{2\\,\\mathrm{prior\\_var}}
        + \\lambda_a \\lVert\\log a\\rVert^2 + \\lambda_c \\lVert\\gamma\\rVert^2

    subject to ``sum_m b_m = 0`` by Newton's method with an Armijo line search,
    using the exact (observed) Hessian where it is positive definite and the
    Fisher information (always positive semi-definite) elsewhere.  The item
    block of the Hessian is block-diagonal, so each step costs O(L^2 M) via a
    Schur complement.  2PL and 3PL fits start from the 1PL solution with
    ``a = 1``; the multimodal 3PL is started twice, at the paper's ``c = 0.25``
    and near the 2PL fit (``c ~ 0.024``), and the better optimum is kept.  (The paper
    names L-BFGS, which targets the same optimum in many more iterations: see
    ``docs/baselines.md``, "Measurements moved from the module docstrings".)

    Parameters
    ----------
    successes, trials : array_like (L, M)
        Counts ``k_lm`` and ``n_lm`` (trials may be a scalar).  Unobserved
        cells have ``n_lm = 0``.
    model : {"1pl", "2pl", "3pl"}
    prior_var : float, optional
        Variance of the Gaussian ability prior (MAP); None = joint ML.
    max_iter : int
        Iteration limit per stage (1PL, 2PL, 3PL); a RuntimeWarning is
        emitted if it is reached.  A stage also ends, without a warning, when
        20 accepted steps in a row each lower the objective by at most
        ``1e-14 * max(1, |f|)`` (the relative-reduction test ``ftol=1e-14`` of
        the paper's L-BFGS-B fits): it is flat to rounding there, and without
        the test such fits crawled along the flat ridge to ``max_iter``.
    reg_discrimination : float
        Ridge ``lambda_a`` on ``log a`` (a weak log-normal prior; it also fixes
        the JML 2PL scale).  0 gives the pure likelihood with the scale fixed by
        ``mean(log a) = 0`` instead.  ``|log a|`` is also bounded by 8 (as in
        scorio 0.2.3; the paper "constrains a_m"): items that separate models
        perfectly would otherwise push ``a`` to infinity, and at the bound they
        act as step functions (``extra["discrimination_at_bound"]``).
    reg_guessing : float
        Ridge ``lambda_c`` on the guessing logit ``gamma`` (3PL); must be > 0 when
        guessing is estimated, else boundary guessing values diverge.
    guessing_upper : float
        ``c_m = guessing_upper * sigmoid(gamma_m)`` lies in ``(0, guessing_upper)``.
    fix_guessing : float, optional
        Fixed common ``c`` (e.g. a known chance level) instead of estimating it.

    Raises
    ------
    NotIdentifiedError
        JML only: a model solves every informative trial (or none), or the data
        are separated (see module notes).
    """
    k, n = binomial_counts(successes, trials)
    lay = replace(_layout(model, prior_var, max_iter, reg_discrimination, reg_guessing,
                          guessing_upper, fix_guessing),
                  labels=None if labels is None else tuple(map(str, labels)))
    fit = fit_xpl_batch(k[None], n[None], lay, max_iter)
    if fit.errors[0] is not None:
        raise fit.errors[0]
    for _ in range(int(fit.unconverged[0])):
        warnings.warn(f"{lay.what}: no convergence within max_iter={max_iter} iterations",
                      RuntimeWarning, stacklevel=2)
    keep = fit.keep[0]  # none under MAP without informative items: the prior alone, theta = 0
    return _assemble(lay, k, n, keep, fit.theta[0], fit.v[0][keep], float(fit.objective[0]),
                     int(fit.n_iter[0]))


def _layout(model, prior_var, max_iter, reg_discrimination, reg_guessing, guessing_upper,
            fix_guessing) -> Layout:
    """Check :func:`fit_irt`'s options and bundle the model and its penalties."""
    check_choice("model", model, ("1pl", "2pl", "3pl"))
    prior_var = prior_variance(prior_var, "prior_var")
    check_int("max_iter", max_iter)
    check_finite("reg_discrimination", reg_discrimination, nonnegative=True)
    check_finite("reg_guessing", reg_guessing, nonnegative=True)
    check_in_interval("guessing_upper", guessing_upper, 0.0, 1.0, closed="neither")
    if fix_guessing is not None:
        check_in_interval("fix_guessing", fix_guessing, 0.0, 1.0, closed="left")
    if model == "3pl" and fix_guessing is None and reg_guessing == 0:
        raise DataError("reg_guessing must be > 0 when 3PL guessing is estimated")
    return Layout(model, prior_var, reg_discrimination, reg_guessing, guessing_upper,
                   fix_guessing)


def _assemble(lay: Layout, k, n, keep, theta, v, objective: float, n_iter: int) -> IrtFit:
    """The IrtFit on all items: fitted values on informative items, boundary values elsewhere
    (every item when there is no informative one: then nothing was fitted)."""
    M = k.shape[1]
    difficulty = boundary_difficulty(k, n)
    difficulty[keep] = v[:, 0]
    discrimination = guessing = None
    extra = {}
    if lay.has_a:
        discrimination = np.ones(M)
        discrimination[keep] = np.exp(v[:, 1])
        extra["discrimination_at_bound"] = np.zeros(M, dtype=bool)
        extra["discrimination_at_bound"][keep] = np.abs(v[:, 1]) >= LOG_A_BOUND
    if lay.model == "3pl":
        guessing = np.full(M, np.nan if lay.free_c else float(lay.fixed_c))
        if lay.free_c:
            guessing[keep] = lay.upper * expit(v[:, 2])
    return IrtFit(theta, difficulty, discrimination, guessing, objective, n_iter, extra)


def _xpl_rule(data: ResponseData, model: IrtModel, what: str, prior: float | None,
              return_item_params: bool, **fit: object) -> tuple[np.ndarray, dict]:
    """The ``model`` fit of a rule (:func:`fit_irt`): abilities, and item parameters on request."""
    k, n = binary_counts(data, what)
    result = fit_irt(k, n, model=model, prior_var=prior_variance(prior), labels=data.models,
                     **fit)
    return result.ability, (result.item_params() if return_item_params else {})


@ranking_method
def rasch(
    data: ResponseData,
    *,
    prior: float | None = None,
    max_iter: int = 500,
    return_item_params: bool = False,
) -> tuple[np.ndarray, dict]:
    """Rasch (1PL) abilities, ``k_lm ~ Binomial(n_lm, sigmoid(theta_l - b_m))``.

    ``prior=None`` is joint ML (identifier ``rasch``); a float is the variance
    of a Gaussian ability prior, N(0, prior), for MAP (``rasch_map``, prior=1).
    See :func:`fit_irt`.  ``return_item_params=True`` puts ``difficulty`` in
    ``details``.  On complete data the JML ranking equals the ranking by total
    successes (the Rasch sufficient statistic).
    """
    return _xpl_rule(data, "1pl", "Rasch IRT", prior, return_item_params, max_iter=max_iter)


@ranking_method
def rasch_2pl(
    data: ResponseData,
    *,
    prior: float | None = None,
    max_iter: int = 500,
    reg_discrimination: float = 0.01,
    return_item_params: bool = False,
) -> tuple[np.ndarray, dict]:
    """2PL abilities, ``sigmoid(a_m (theta_l - b_m))`` (Birnbaum, 1968); JML or MAP.

    Identifiers ``rasch_2pl`` (prior=None) and ``rasch_2pl_map`` (prior=1.0).
    ``reg_discrimination`` is the ridge on ``log a`` (see :func:`fit_irt`).
    """
    return _xpl_rule(data, "2pl", "2PL IRT", prior, return_item_params, max_iter=max_iter,
                     reg_discrimination=reg_discrimination)


@ranking_method
def rasch_3pl(
    data: ResponseData,
    *,
    prior: float | None = None,
    max_iter: int = 500,
    fix_guessing: float | None = None,
    guessing_upper: float = 0.5,
    reg_discrimination: float = 0.01,
    reg_guessing: float = 0.1,
    return_item_params: bool = False,
) -> tuple[np.ndarray, dict]:
    """3PL abilities, ``c_m + (1 - c_m) sigmoid(a_m (theta_l - b_m))``; JML or MAP.

    Identifiers ``rasch_3pl`` (prior=None) and ``rasch_3pl_map`` (prior=1.0).
    Guessing ``c_m`` is estimated in ``(0, guessing_upper)`` unless
    ``fix_guessing`` gives a known chance level (see :func:`fit_irt`).
    """
    return _xpl_rule(data, "3pl", "3PL IRT", prior, return_item_params, max_iter=max_iter,
                     fix_guessing=fix_guessing, guessing_upper=guessing_upper,
                     reg_discrimination=reg_discrimination, reg_guessing=reg_guessing)
