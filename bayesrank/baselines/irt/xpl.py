"""Rasch (1PL), 2PL and 3PL abilities by joint maximum likelihood or MAP.

Paper App. "Item Response Theory (IRT) Methods", Alg. "Binomial xPL IRT": with
``k_lm ~ Binomial(n_lm, p_lm)`` and

.. math::
    p_{lm} = c_m + (1 - c_m)\\,\\sigma\\big(a_m(\\theta_l - b_m)\\big)

(``a = 1, c = 0``: Rasch; ``c = 0``: 2PL), :func:`fit_irt` minimises the negative
log-likelihood plus a Gaussian ability prior (MAP) and weak ridges on ``log a`` and on the
guessing logit, with centred difficulties, by Newton's method (:mod:`._newton`).  The
ranking rules :func:`rasch`, :func:`rasch_2pl` and :func:`rasch_3pl` are ML with
``prior=None`` and MAP with a prior variance (the paper's ``*_map`` identifiers use 1.0).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import expit, log_expit

from bayesrank.baselines._optim import check_ford_condition, prior_variance
from bayesrank.baselines.irt._common import (
    IrtFit,
    IrtModel,
    binary_counts,
    binomial_counts,
    boundary_difficulty,
    informative_mask,
    initial_location,
)
from bayesrank.baselines.irt._newton import (
    Diverged,
    Hessian,
    Terms,
    divergence_error,
    structured_newton,
)
from bayesrank.checks import check_choice, check_finite, check_in_interval, check_int
from bayesrank.data import ResponseData
from bayesrank.errors import DataError, NotIdentifiedError
from bayesrank.ranking import ranking_method

__all__ = ["fit_irt", "rasch", "rasch_2pl", "rasch_3pl"]

# 3PL guessing logits tried as starts: the paper's c = 0.25 and c = 0.5 sigmoid(-3) ~ 0.024
_GUESSING_STARTS = (0.0, -3.0)
# |log a| <= 8 (as in scorio 0.2.3): an item at the bound acts as a step function of ability
_LOG_A_BOUND = 8.0


@dataclass(frozen=True)
class _Layout:
    """Model and penalties of a JML/MAP xPL fit (item columns: b, log a, guessing logit)."""

    model: IrtModel
    prior_var: float | None
    reg_a: float
    reg_c: float
    upper: float
    fixed_c: float | None
    labels: tuple[str, ...] | None = None  # model names for error messages

    @property
    def has_a(self) -> bool:
        return self.model != "1pl"

    @property
    def free_c(self) -> bool:
        return self.model == "3pl" and self.fixed_c is None

    @property
    def n_item_params(self) -> int:
        return 1 + self.has_a + self.free_c

    @property
    def scale_free(self) -> bool:
        """JML without a ridge on log a: the 2PL scale is fixed by mean(log a) = 0 instead."""
        return self.has_a and self.reg_a == 0 and self.prior_var is None

    @property
    def what(self) -> str:
        """The fit's name in messages, e.g. "2PL joint ML"."""
        return f"{self.model.upper()} {'MAP' if self.prior_var is not None else 'joint ML'}"


def _xpl_terms(theta, v, k, n, lay: _Layout, scale: float) -> Terms:
    """Negative log posterior, gradient, observed Hessian and Fisher information (xPL).

    Per cell, with ``eta = a (theta - b)``, ``p = c + (1 - c) sigma(eta)`` and
    ``s = (1 - c) sigma / p``, the loss ``-k log p - (n - k) log(1 - p)`` has

    - ``l_eta = (n - k) sigma - k s (1 - sigma)``,
      ``l_c = -k (1 - sigma) / p + (n - k) / (1 - c)``;
    - ``l_eta_eta = (n - k) sigma (1 - sigma)``
      ``- k [s (1 - sigma)(1 - 2 sigma) - s^2 (1 - sigma)^2]``,
      ``l_eta_c = k sigma (1 - sigma) / p^2``,
      ``l_cc = k (1 - sigma)^2 / p^2 + (n - k) / (1 - c)^2``;

    expected values (Fisher): ``n s sigma (1 - sigma)``, ``n sigma (1 - sigma) / p``,
    ``n (1 - sigma) / (p (1 - c))``.  Parameters enter through ``eta`` (theta: a;
    b: -a; log a: eta) and ``c = upper * sigmoid(gamma)``; the chain rule
    assembles the block Hessians.  Penalty Hessians are added exactly.
    """
    b = v[:, 0]
    log_a = v[:, 1] if lay.has_a else np.zeros_like(b)
    a = np.exp(log_a)
    eta = a * (theta[:, None] - b)
    log_sig = log_expit(eta)
    L, M, q = theta.size, b.size, lay.n_item_params
    if lay.model == "3pl":
        c = lay.upper * expit(v[:, 2]) if lay.free_c else np.full(M, float(lay.fixed_c))
        with np.errstate(divide="ignore"):
            log_c = np.log(c)  # -inf for c = 0: logaddexp then gives the 2PL term
        log_p = np.logaddexp(log_c, np.log1p(-c) + log_sig)
        nll = -np.sum(k * log_p + (n - k) * (np.log1p(-c) + log_expit(-eta)))
    else:
        nll = np.sum(n * (eta - log_sig) - k * eta)  # softplus(eta) = eta - log sigmoid(eta)
    value = nll
    if lay.prior_var is not None:
        value += 0.5 * theta @ theta / lay.prior_var
    if lay.has_a:
        value += lay.reg_a * log_a @ log_a
    if lay.free_c:
        value += lay.reg_c * v[:, 2] @ v[:, 2]

    def derivatives():
        sig = np.exp(log_sig)
        s1 = sig * (1.0 - sig)
        zero = np.zeros(M)
        if lay.model == "3pl":
            share = np.exp(np.log1p(-c) + log_sig - log_p)  # (1 - c) sigma / p
            q1 = share * (1.0 - sig)
            g_eta = (n - k) * sig - k * q1
            A_obs = (n - k) * s1 - k * (q1 * (1.0 - 2.0 * sig) - q1**2)
            A_fis = n * share * s1
        else:
            g_eta = n * sig - k
            A_obs = A_fis = n * s1
        # (d eta / d x, d c / d x) of each item parameter x
        comps = [(-a * np.ones((L, 1)), zero)] + ([(eta, zero)] if lay.has_a else [])
        cell_c = None
        if lay.free_c:
            unit = expit(v[:, 2])
            dc = lay.upper * unit * (1.0 - unit)
            comps.append((np.zeros((L, M)), dc))
            p = np.exp(log_p)
            g_c = -k * (1.0 - sig) / p + (n - k) / (1.0 - c)
            cell_c = {
                "obs": (k * s1 / p**2, k * (1.0 - sig) ** 2 / p**2 + (n - k) / (1.0 - c) ** 2),
                "fis": (n * s1 / p, n * (1.0 - sig) / (p * (1.0 - c))),
            }

        def second(x, y):
            """Second derivative of eta (and c) w.r.t. item parameters x, y of one item."""
            if lay.has_a and {x, y} == {0, 1}:
                return -a, 0.0
            if lay.has_a and x == y == 1:
                return eta, 0.0
            if lay.free_c and x == y == q - 1:
                return 0.0, dc * (1.0 - 2.0 * unit)
            return 0.0, 0.0

        g_v = np.stack(
            [
                (g_eta * de).sum(axis=0) + (0.0 if cell_c is None else (g_c * dcx).sum(0))
                for de, dcx in comps
            ],
            axis=1,
        )
        g_u = g_eta @ a
        if lay.prior_var is not None:
            g_u = g_u + theta / lay.prior_var
        if lay.has_a:
            g_v[:, 1] += 2.0 * lay.reg_a * log_a
        if lay.free_c:
            g_v[:, 2] += 2.0 * lay.reg_c * v[:, 2]

        def assemble(A, first_order: bool, kind: str) -> Hessian:
            X, Y = cell_c[kind] if cell_c is not None else (0.0, 0.0)
            G = g_eta if first_order else 0.0
            Gc = g_c if (first_order and cell_c is not None) else 0.0
            uu = np.diag((A * a * a).sum(axis=1))
            uv = np.empty((L, M, q))
            vv = np.empty((M, q, q))
            for i, (ei, ci) in enumerate(comps):
                # theta-item: eta_theta = a, c_theta = 0, eta_(theta, log a) = a
                mixed = a if (lay.has_a and i == 1) else 0.0
                uv[:, :, i] = A * a * ei + X * a * ci + G * mixed
                for j in range(i + 1):
                    ej, cj = comps[j]
                    e2, c2 = second(i, j)
                    h = A * ei * ej + X * (ei * cj + ej * ci) + Y * ci * cj + G * e2 + Gc * c2
                    vv[:, i, j] = vv[:, j, i] = h.sum(axis=0)
            if lay.prior_var is not None:
                uu[np.diag_indices(L)] += 1.0 / lay.prior_var
            if lay.has_a:
                vv[:, 1, 1] += 2.0 * lay.reg_a
            if lay.free_c:
                vv[:, 2, 2] += 2.0 * lay.reg_c
            return Hessian(uu / scale, uv / scale, vv / scale)

        def curvature() -> tuple[Hessian, ...]:
            obs, fis = assemble(A_obs, True, "obs"), assemble(A_fis, False, "fis")
            # Items whose observed block is indefinite (e.g. near-step items) take their
            # Fisher block: keeps Newton's fast convergence on the rest of the model.
            bad = np.linalg.eigvalsh(obs.vv)[:, 0] <= 0
            if bad.any() and not bad.all():
                mixed = Hessian(
                    obs.uu,
                    np.where(bad[None, :, None], fis.uv, obs.uv),
                    np.where(bad[:, None, None], fis.vv, obs.vv),
                )
                return (obs, mixed, fis)
            return (obs, fis)

        return g_u / scale, g_v / scale, curvature

    return Terms(value / scale, derivatives)


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
    and near the 2PL fit (``c ~ 0.024``), and the better optimum is kept.
    (The paper names L-BFGS; both target the same optimum, but on 20 x 120 x 80
    counts L-BFGS needs more than 500 iterations along the weakly curved
    2PL/3PL scale direction, where Newton needs ~20.)

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
        emitted if it is reached.
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
    keep = informative_mask(k, n)
    if lay.prior_var is None:
        check_ford_condition(k[:, keep], n[:, keep], lay.what, lay.labels)
    if not keep.any():  # MAP without informative items: the prior alone, theta = 0
        return _prior_only_fit(k, n, lay)
    kk, nn = k[:, keep], n[:, keep]
    scale = max(float(nn.sum()), 1.0)

    def solve(stage: _Layout, theta: np.ndarray, v: np.ndarray):
        return _solve(stage, kk, nn, theta, v, scale=scale, max_iter=max_iter, what=lay.what)

    theta, b = initial_location(kk, nn)
    try:
        theta, v, terms, n_iter = solve(replace(lay, model="1pl"), theta, b[:, None])
    except Diverged as exc:
        raise divergence_error(lay.what, exc.u, labels=lay.labels) from None
    if lay.has_a:  # 2PL and 3PL continue from the 1PL fit with a = 1
        theta, v, terms, it = _best_of_starts(solve, lay, theta, np.c_[v, np.zeros(v.shape[0])])
        n_iter += it
    if not (np.all(np.isfinite(theta)) and np.all(np.isfinite(v))):
        raise NotIdentifiedError(f"{lay.what}: the iterations diverged (non-finite parameters)")
    return _assemble(lay, k, n, keep, theta, v, terms.value * scale, n_iter)


def _layout(model, prior_var, max_iter, reg_discrimination, reg_guessing, guessing_upper,
            fix_guessing) -> _Layout:
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
    return _Layout(model, prior_var, reg_discrimination, reg_guessing, guessing_upper,
                   fix_guessing)


def _solve(lay: _Layout, k, n, theta, v, *, scale: float, max_iter: int, what: str):
    """One Newton stage of the xPL objective from ``(theta, v)``; raises Diverged.

    ``what`` names the whole fit in warnings (the 1PL stage of a 3PL fit says "3PL ...").
    """
    return structured_newton(
        lambda u, w: _xpl_terms(u, w, k, n, lay, scale),
        theta,
        v,
        (0, 1) if lay.scale_free else (0,),
        max_iter,
        what,
        bounds={1: _LOG_A_BOUND} if lay.has_a else None,
    )


def _best_of_starts(solve: Callable, lay: _Layout, theta: np.ndarray, v: np.ndarray):
    """2PL / 3PL stage from the 1PL fit: the best optimum over the guessing starts.

    The 3PL likelihood is multimodal: guessing starts both at the paper's c = 0.25 and
    near the 2PL solution (c ~ 0.024), and the better optimum is kept; only the warnings
    of the kept run are passed on.
    """
    M = v.shape[0]
    starts = [v] if not lay.free_c else [np.c_[v, np.full(M, g)] for g in _GUESSING_STARTS]
    best, failure, caught = None, None, []
    for start in starts:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            try:
                out = solve(lay, theta, start)
            except Diverged as exc:
                failure = failure or exc
                continue
        if best is None or out[2].value < best[2].value:
            best, caught = out, record
    if best is None:
        raise divergence_error(lay.what, failure.u, labels=lay.labels) from None
    for w in caught:
        warnings.warn(w.message, w.category, stacklevel=3)  # the caller of fit_irt
    return best


def _prior_only_fit(k: np.ndarray, n: np.ndarray, lay: _Layout) -> IrtFit:
    """No informative item: abilities are the prior mean 0, items keep boundary values."""
    L, M = k.shape
    ones = np.ones(M) if lay.has_a else None
    guess = np.full(M, np.nan if lay.fixed_c is None else lay.fixed_c)
    return IrtFit(np.zeros(L), boundary_difficulty(k, n), ones,
                  guess if lay.model == "3pl" else None)


def _assemble(lay: _Layout, k, n, keep, theta, v, objective: float, n_iter: int) -> IrtFit:
    """The IrtFit on all items: fitted values on informative items, boundary values elsewhere."""
    M = k.shape[1]
    difficulty = boundary_difficulty(k, n)
    difficulty[keep] = v[:, 0]
    discrimination = guessing = None
    extra = {}
    if lay.has_a:
        discrimination = np.ones(M)
        discrimination[keep] = np.exp(v[:, 1])
        extra["discrimination_at_bound"] = np.zeros(M, dtype=bool)
        extra["discrimination_at_bound"][keep] = np.abs(v[:, 1]) >= _LOG_A_BOUND
    if lay.model == "3pl":
        guessing = np.full(M, np.nan if lay.free_c else float(lay.fixed_c))
        if lay.free_c:
            guessing[keep] = lay.upper * expit(v[:, 2])
    return IrtFit(theta, difficulty, discrimination, guessing, objective, n_iter, extra)


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
    k, n = binary_counts(data, "Rasch IRT")
    fit = fit_irt(k, n, model="1pl", prior_var=prior_variance(prior), max_iter=max_iter,
                  labels=data.models)
    return fit.ability, (fit.item_params() if return_item_params else {})


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
    k, n = binary_counts(data, "2PL IRT")
    fit = fit_irt(
        k,
        n,
        model="2pl",
        prior_var=prior_variance(prior),
        max_iter=max_iter,
        reg_discrimination=reg_discrimination,
        labels=data.models,
    )
    return fit.ability, (fit.item_params() if return_item_params else {})


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
    k, n = binary_counts(data, "3PL IRT")
    fit = fit_irt(
        k,
        n,
        model="3pl",
        prior_var=prior_variance(prior),
        max_iter=max_iter,
        fix_guessing=fix_guessing,
        labels=data.models,
        guessing_upper=guessing_upper,
        reg_discrimination=reg_discrimination,
        reg_guessing=reg_guessing,
    )
    return fit.ability, (fit.item_params() if return_item_params else {})
