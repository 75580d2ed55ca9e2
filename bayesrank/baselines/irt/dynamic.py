"""Dynamic (longitudinal) IRT: abilities that may change along the ordered trial axis.

Paper Alg. "Dynamic IRT growth model": ``dynamic_irt_linear`` is the binomial Rasch
joint-ML fit with constant abilities; ``dynamic_irt_growth`` fits a per-model linear trend
``theta_0 + theta_1 t_n`` over the trials (:func:`fit_growth_irt`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from bayesrank.baselines._optim import check_ford_condition
from bayesrank.baselines.irt._common import (
    IrtFit,
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
from bayesrank.baselines.irt.xpl import fit_irt
from bayesrank.checks import check_choice, check_finite
from bayesrank.data import ResponseData
from bayesrank.errors import DataError, NotIdentifiedError
from bayesrank.ranking import ranking_method

__all__ = ["dynamic_irt", "fit_growth_irt", "is_rasch_fit"]


def fit_growth_irt(
    responses: np.ndarray,
    *,
    mask: np.ndarray | None = None,
    time_points: np.ndarray | None = None,
    slope_reg: float = 0.01,
    max_iter: int = 500,
    labels: Sequence[str] | None = None,
) -> IrtFit:
    """Logistic growth (longitudinal Rasch) model over ordered trials.

    .. math::
        P(R_{lmn} = 1) = \\sigma(\\theta_{0,l} + \\theta_{1,l} t_n - b_m),

    with times ``t_n`` rescaled to [0, 1] (default: equally spaced), centred
    difficulties and a ridge ``slope_reg * ||theta_1||^2`` on the slopes
    (Verhelst & Glas, 1993; paper Alg. "Dynamic IRT growth model").  The
    Bernoulli likelihood is convex; it is maximised by Newton's method with the
    exact Hessian and a line search.

    Returns an :class:`IrtFit` with ``ability`` = baseline ``theta_0`` and
    ``extra = {"slope": theta_1, "time": t}``.
    """
    R = np.asarray(responses)
    if R.ndim != 3:
        raise DataError(f"responses must be an (L, M, N) tensor, got shape {R.shape}")
    L, M, N = R.shape
    obs = np.ones(R.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if obs.shape != R.shape:
        raise DataError(f"mask shape {obs.shape} does not match responses {R.shape}")
    if np.any(((R != 0) & (R != 1)) & obs):
        raise DataError("the growth IRT model needs binary responses")
    slope_reg = check_finite("slope_reg", slope_reg, positive=True)
    t = _rescaled_times(time_points, N)
    Rf = np.where(obs, R, 0).astype(float)
    k = Rf.sum(axis=2)
    n = obs.sum(axis=2).astype(float)
    keep = informative_mask(k, n)
    what = "dynamic IRT (growth)"
    check_ford_condition(k[:, keep], n[:, keep], what, labels)
    Rk, Ok, kk = Rf[:, keep], obs[:, keep].astype(float), k[:, keep]
    S = kk.sum(axis=1)  # successes per model
    U = np.einsum("lmn,n->l", Rk, t)  # time-weighted successes per model
    K = kk.sum(axis=0)  # successes per item
    scale = max(float(Ok.sum()), 1.0)

    def evaluate(u: np.ndarray, v: np.ndarray) -> Terms:
        """Bernoulli NLL of sigmoid(theta0 + theta1 t - b): exact gradient and Hessian."""
        th0, th1, b = u[:L], u[L:], v[:, 0]
        eta = (th0[:, None] - b)[:, :, None] + th1[:, None, None] * t  # (L, Mk, N)
        e = np.exp(-np.abs(eta))  # softplus and sigmoid from one exponential
        softplus = np.maximum(eta, 0.0) + np.log1p(e)
        p = np.where(eta >= 0, 1.0, e) / (1.0 + e)
        if mask is not None:
            softplus *= Ok
            p *= Ok
        nll = softplus.sum() - (S @ th0 + U @ th1 - K @ b)
        p_lm = p.sum(axis=2)
        g_u = np.r_[p_lm.sum(axis=1) - S, (p @ t).sum(axis=1) - U + 2 * slope_reg * th1]

        def curvature() -> Hessian:
            w = p * (1.0 - p)  # zero where unobserved (p = 0 there)
            A, B, C = w.sum(axis=2), w @ t, w @ (t * t)
            H_uu = np.block(
                [
                    [np.diag(A.sum(axis=1)), np.diag(B.sum(axis=1))],
                    [np.diag(B.sum(axis=1)), np.diag(C.sum(axis=1) + 2 * slope_reg)],
                ]
            )
            uv = -np.concatenate([A, B])[:, :, None]
            return Hessian(H_uu / scale, uv / scale, A.sum(axis=0)[:, None, None] / scale)

        value = (nll + slope_reg * th1 @ th1) / scale
        return Terms(
            value, lambda: (g_u / scale, (K - p_lm.sum(axis=0))[:, None] / scale, curvature)
        )

    theta0, b0 = initial_location(kk[None], n[:, keep][None], np.ones((1, kk.shape[1]), bool))
    try:
        u, v, terms, n_iter = structured_newton(
            evaluate, np.r_[theta0[0], np.zeros(L)], b0[0][:, None], (0,), max_iter, what
        )
    except Diverged as exc:
        raise divergence_error(what, exc.u[:L], "baseline abilities", labels) from None
    th0, th1, b = u[:L], u[L:], v[:, 0]
    if not (np.all(np.isfinite(u)) and np.all(np.isfinite(v))):
        raise NotIdentifiedError(f"{what}: the iterations diverged (non-finite parameters)")
    difficulty = boundary_difficulty(k, n)
    difficulty[keep] = b
    return IrtFit(
        th0,
        difficulty,
        objective=terms.value * scale,
        n_iter=n_iter,
        extra={"slope": th1, "time": t},
    )


def is_rasch_fit(variant: str, score: str, slope_reg: float, time_points: np.ndarray | None,
                 N: int) -> bool:
    """Check :func:`dynamic_irt`'s options; whether it is the Rasch joint-ML fit on N trials
    (``variant="linear"``, or the growth model on one time point, whose slopes see no data)."""
    check_choice("variant", variant, ("linear", "growth"))
    check_choice("score", score, ("baseline", "final", "mean"))
    if variant == "growth" and N == 1:  # one time point: nothing to check but the options
        check_finite("slope_reg", slope_reg, positive=True)
        _rescaled_times(time_points, 1)
    return variant == "linear" or N == 1


def _rescaled_times(time_points: np.ndarray | None, N: int) -> np.ndarray:
    """The N trial times rescaled to [0, 1] (equally spaced by default; 0 for one trial)."""
    if time_points is None:
        return np.linspace(0.0, 1.0, N) if N > 1 else np.zeros(1)
    t = np.asarray(time_points, dtype=float)
    if t.shape != (N,) or not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
        raise DataError(f"time_points must be {N} strictly increasing finite values")
    return (t - t[0]) / (t[-1] - t[0]) if N > 1 else np.zeros(1)


@ranking_method
def dynamic_irt(
    data: ResponseData,
    *,
    variant: Literal["linear", "growth"] = "linear",
    max_iter: int = 500,
    slope_reg: float = 0.01,
    time_points: np.ndarray | None = None,
    score: Literal["baseline", "final", "mean"] = "baseline",
    return_item_params: bool = False,
) -> tuple[np.ndarray, dict]:
    """Dynamic IRT: abilities that may change along the (ordered) trial axis.

    - ``variant="linear"``: constant abilities over trials, the binomial
      Rasch joint-ML fit on the counts (identifier ``dynamic_irt_linear``);
    - ``variant="growth"``: the logistic growth model ``theta_0 + theta_1 t_n``
      of :func:`fit_growth_irt` (``dynamic_irt_growth``).  It reads trial order,
      so it is meaningful only when trials were run in a meaningful sequence.

    With a single trial (N = 1) the growth model's slopes see no data: the ridge
    holds them at 0 and ``theta_0`` is the Rasch joint-ML ability, so the rule fits the
    Rasch model (as ``variant="linear"``; its reasons name that fit) and every ``score``
    is ``theta_0``.

    ``score`` picks the growth-model ranking score: ``"baseline"`` theta_0
    (the paper's choice), ``"final"`` theta_0 + theta_1, or ``"mean"`` ability
    over the observed times.  ``return_item_params=True`` adds ``difficulty``
    and, for growth, ``baseline`` and ``slope`` to ``details``.
    """
    rasch_fit = is_rasch_fit(variant, score, slope_reg, time_points, data.N)
    data.require_binary("dynamic IRT")
    if rasch_fit:
        k, n = data.reductions.successes, data.reductions.trials
        fit = fit_irt(k, n, model="1pl", max_iter=max_iter, labels=data.models)
        details = fit.item_params() if return_item_params else {}
        if return_item_params and variant == "growth":
            details = {"difficulty": fit.difficulty, "baseline": fit.ability,
                       "slope": np.zeros(data.L)}
        return fit.ability, details
    fit = fit_growth_irt(
        data.R, mask=data.mask, time_points=time_points, slope_reg=slope_reg, max_iter=max_iter,
        labels=data.models,
    )
    slope, t = fit.extra["slope"], fit.extra["time"]
    scores = {
        "baseline": fit.ability,
        "final": fit.ability + slope * t[-1],
        "mean": fit.ability + slope * t.mean(),
    }[score]
    details = {}
    if return_item_params:
        details = {"difficulty": fit.difficulty, "baseline": fit.ability, "slope": slope}
    return scores, details
