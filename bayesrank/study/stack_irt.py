"""IRT rules over a whole :class:`~bayesrank.study.batched.DrawStack` at once.

The JML / MAP Rasch, 2PL and 3PL fits of every draw of a stack run as one batch through
:func:`bayesrank.baselines.irt.xpl_batch.fit_xpl_batch`, the same solver that
:func:`bayesrank.baselines.irt.fit_irt` runs with a batch of one, so each draw's
abilities (and ranks) are exactly those of the per-draw path.  A draw whose fit fails
(:class:`~bayesrank.errors.NotIdentifiedError`: Ford's condition, abilities running off)
gets a row of NaN scores and the reason the per-draw rule gives (the rules return
``(scores, reasons)``), so :func:`~bayesrank.study.batched.rank_stack` reports it without
fitting the draw again.  ``dynamic_irt`` with ``variant="linear"`` is the Rasch JML fit.

Rules return None (per-draw path) for non-binary data and for options they do not
reproduce: anything the per-draw rule would reject, and the growth variant of
``dynamic_irt`` on draws of several trials (on single-trial draws it is the Rasch JML
fit).  ``rasch_mml`` (EM over Gauss-Hermite quadrature) runs the same way through
:func:`bayesrank.baselines.irt.mml.fit_rasch_mml_batch`.  Rules that fit the same model
share one fit per stack (:meth:`~bayesrank.study.batched.DrawStack.once`): ``rasch``,
``dynamic_irt_linear`` and, on single-trial draws, ``dynamic_irt_growth``; ``rasch_mml``
and ``rasch_mml_credible``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from bayesrank.baselines._optim import prior_variance
from bayesrank.baselines.irt.mml import _mml_options, fit_rasch_mml_batch
from bayesrank.baselines.irt.xpl import _layout
from bayesrank.baselines.irt.xpl_batch import fit_xpl_batch
from bayesrank.checks import check_probability
from bayesrank.errors import DataError

if TYPE_CHECKING:
    from bayesrank.study.batched import DrawStack

__all__ = ["RULES"]


Scores = tuple[np.ndarray, list[str | None]]


def _xpl(stack: DrawStack, model: str, *, prior=None, max_iter=500, reg_discrimination=0.01,
         reg_guessing=0.1, guessing_upper=0.5, fix_guessing=None,
         return_item_params=False) -> Scores | None:
    """Abilities (D, L) of the ``model`` fit on every draw, and why a draw's fit failed.

    A failed draw has a NaN row and the reason the per-draw rule reports (the same
    :class:`~bayesrank.errors.NotIdentifiedError`, naming the pool's models).
    """
    if not stack.data.is_binary:
        return None
    try:
        lay = _layout(model, prior_variance(prior), max_iter, reg_discrimination, reg_guessing,
                      guessing_upper, fix_guessing)
    except (DataError, ValueError, TypeError):
        return None  # the rule rejects these options; the per-draw path says why
    lay = replace(lay, labels=tuple(map(str, stack.data.models)))

    def fit() -> Scores:
        k = stack.counts[..., 1].astype(float)
        got = fit_xpl_batch(k, np.full(k.shape, float(stack.n_trials)), lay, max_iter)
        return got.theta, [None if e is None else f"{type(e).__name__}: {e}" for e in got.errors]

    theta, reasons = stack.once(("xpl", lay, max_iter), fit)
    return theta.copy(), list(reasons)


def _rasch(stack: DrawStack, **options) -> Scores | None:
    return _xpl(stack, "1pl", **options)


def _rasch_2pl(stack: DrawStack, **options) -> Scores | None:
    return _xpl(stack, "2pl", **options)


def _rasch_3pl(stack: DrawStack, **options) -> Scores | None:
    return _xpl(stack, "3pl", **options)


def _dynamic_irt(stack: DrawStack, *, variant="linear", max_iter=500, score="baseline",
                 return_item_params=False, **growth: object) -> Scores | None:
    """The Rasch JML fit: ``variant="linear"``, and the growth model on single-trial draws
    (:func:`~bayesrank.baselines.irt.dynamic.dynamic_irt`: its slopes see no data there)."""
    if score not in ("baseline", "final", "mean"):
        return None
    if variant != "linear" and (variant != "growth" or stack.n_trials != 1 or growth):
        return None  # the growth model over several trials keeps the per-draw path
    return _xpl(stack, "1pl", max_iter=max_iter)


def _rasch_mml(stack: DrawStack, *, quantile=None, max_iter=100, em_iter=20, n_quadrature=21,
               population_sd=1.0, return_item_params=False) -> np.ndarray | None:
    """EAP (or posterior-quantile) scores of the Rasch MML fit of every draw (each model's
    posterior, :meth:`~bayesrank.baselines.irt.mml.MmlBatch.person_scores`)."""
    if not stack.data.is_binary:
        return None
    try:
        em_iter, max_iter, population_sd = _mml_options(n_quadrature, em_iter, max_iter,
                                                        population_sd)
        if quantile is not None:
            check_probability("quantile", quantile)
    except (DataError, ValueError, TypeError):
        return None

    def fit():
        k = stack.counts[..., 1].astype(float)
        return fit_rasch_mml_batch(k, np.full(k.shape, float(stack.n_trials)),
                                   n_quadrature=n_quadrature, em_iter=em_iter,
                                   max_iter=max_iter, population_sd=population_sd)

    fit = stack.once(("mml", n_quadrature, em_iter, max_iter, population_sd), fit)
    return fit.person_scores(quantile)[..., 0 if quantile is None else 2]


#: Base rule name -> scores of every draw of a stack (D, L) (with reasons), or None.
RULES: dict[str, Callable[..., np.ndarray | Scores | None]] = {
    "rasch": _rasch,
    "rasch_2pl": _rasch_2pl,
    "rasch_3pl": _rasch_3pl,
    "rasch_mml": _rasch_mml,
    "dynamic_irt": _dynamic_irt,
}
