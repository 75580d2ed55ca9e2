"""IRT rules over a whole :class:`~bayesrank.study.batched.DrawStack` at once.

The JML / MAP Rasch, 2PL and 3PL fits of every draw run as one batch of
:func:`bayesrank.baselines.irt.xpl_batch.fit_xpl_batch` (``dynamic_irt``: where it is the
Rasch fit), ``rasch_mml`` of :func:`bayesrank.baselines.irt.mml.fit_rasch_mml_batch`.
Rules that fit the same model share one fit per stack
(:meth:`~bayesrank.study.batched.DrawStack.once`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from bayesrank.baselines._optim import prior_variance
from bayesrank.baselines.irt.dynamic import is_rasch_fit
from bayesrank.baselines.irt.mml import _mml_options, fit_rasch_mml_batch
from bayesrank.baselines.irt.xpl import _layout, fit_irt
from bayesrank.baselines.irt.xpl_batch import fit_xpl_batch
from bayesrank.checks import check_probability

if TYPE_CHECKING:
    from bayesrank.study.batched import DrawStack

__all__ = ["RULES"]


Scores = tuple[np.ndarray, list[str | None]]


#: Options of :func:`~bayesrank.baselines.irt.fit_irt` a rule may leave at their defaults
#: (``rasch`` has no discrimination ridge, for instance).
_FIT = {name: p.default for name, p in inspect.signature(fit_irt).parameters.items()
        if p.kind is p.KEYWORD_ONLY}


def _xpl(stack: DrawStack, model: str, *, prior=None, max_iter, return_item_params=False,
         **fit: object) -> Scores | None:
    """Abilities (D, L) of the ``model`` fit on every draw, and why a draw's fit failed.

    A failed draw has a NaN row and the reason the per-draw rule reports (the same
    :class:`~bayesrank.errors.NotIdentifiedError`, naming the pool's models).
    """
    if not stack.data.is_binary:
        return None
    o = {**_FIT, **fit}
    lay = replace(_layout(model, prior_variance(prior), max_iter, o["reg_discrimination"],
                          o["reg_guessing"], o["guessing_upper"], o["fix_guessing"]),
                  labels=tuple(map(str, stack.data.models)))

    def fit() -> Scores:
        got = fit_xpl_batch(stack.successes.astype(float), stack.trials.astype(float), lay,
                            max_iter)
        return got.theta, [None if e is None else f"{type(e).__name__}: {e}" for e in got.errors]

    theta, reasons = stack.once(("xpl", lay, max_iter), fit)
    return theta.copy(), list(reasons)


def _dynamic_irt(stack: DrawStack, *, variant, max_iter, score, slope_reg, time_points,
                 return_item_params) -> Scores | None:
    """The Rasch JML fit: ``variant="linear"``, and the growth model on single-trial draws
    (:func:`~bayesrank.baselines.irt.dynamic.dynamic_irt`: its slopes see no data there)."""
    if not is_rasch_fit(variant, score, slope_reg, time_points, stack.n_trials):
        return None  # the growth model over several trials keeps the per-draw path
    return _xpl(stack, "1pl", max_iter=max_iter)


def _rasch_mml(stack: DrawStack, *, quantile, max_iter, em_iter, n_quadrature, population_sd,
               return_item_params) -> np.ndarray | None:
    """EAP (or posterior-quantile) scores of the Rasch MML fit of every draw (each model's
    posterior, :meth:`~bayesrank.baselines.irt.mml.MmlBatch.person_scores`)."""
    if not stack.data.is_binary:
        return None
    em_iter, max_iter, population_sd = _mml_options(n_quadrature, em_iter, max_iter,
                                                    population_sd)
    if quantile is not None:
        check_probability("quantile", quantile)

    def fit():
        return fit_rasch_mml_batch(stack.successes.astype(float), stack.trials.astype(float),
                                   n_quadrature=n_quadrature, em_iter=em_iter,
                                   max_iter=max_iter, population_sd=population_sd)

    fit = stack.once(("mml", n_quadrature, em_iter, max_iter, population_sd), fit)
    return fit.person_scores(quantile)[..., 0 if quantile is None else 2]


#: Base rule name -> scores of every draw of a stack (D, L) (with reasons), or None.
RULES: dict[str, Callable[..., np.ndarray | Scores | None]] = {
    "rasch": partial(_xpl, model="1pl"),
    "rasch_2pl": partial(_xpl, model="2pl"),
    "rasch_3pl": partial(_xpl, model="3pl"),
    "rasch_mml": _rasch_mml,
    "dynamic_irt": _dynamic_irt,
}
