"""Joint-ML / MAP 1PL, 2PL and 3PL fits of a batch of count matrices at once.

:func:`.xpl.fit_irt` (paper App. "Item Response Theory (IRT) Methods", Alg. "Binomial xPL
IRT") over a leading batch axis: B count matrices ``k, n`` (B, L, M) are fitted by the
compiled stages of :mod:`._xpl_kernel`, each problem with its own informative items,
stopping rule and errors.  :func:`.xpl.fit_irt` is this fit with B = 1 and the study's
stacked rules (:mod:`bayesrank.study.stack_irt`) call it on every draw of a stack, so
both run the same arithmetic per problem and give identical abilities.

Uninformative items of a problem (solved by every model or by none) stay in its arrays
with zero counts, which add exactly nothing to the objective; they are held out of the
Newton steps and of the centring ``sum_m b_m = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from bayesrank.baselines._optim import check_ford_condition
from bayesrank.baselines.graph_batch import strongly_connected_batch
from bayesrank.baselines.irt import _xpl_kernel
from bayesrank.baselines.irt._common import IrtModel, initial_location, over_problems
from bayesrank.baselines.irt._newton import divergence_error
from bayesrank.baselines.irt._xpl_kernel import DIVERGED_STATUS, MAX_ITER
from bayesrank.errors import NotIdentifiedError
from bayesrank.threads import worker_threads

__all__ = ["GUESSING_STARTS", "LOG_A_BOUND", "Layout", "StageResult", "XplBatchFit",
           "fit_xpl_batch", "kernel_config"]

# 3PL guessing logits tried as starts: the paper's c = 0.25 and c = 0.5 sigmoid(-3) ~ 0.024
GUESSING_STARTS = (0.0, -3.0)
# a thread for at least this many problems (one problem takes 0.1-10 ms)
_PROBLEMS_PER_THREAD = 8
# |log a| <= 8 (as in scorio 0.2.3): an item at the bound acts as a step function of ability
LOG_A_BOUND = 8.0


@dataclass(frozen=True)
class Layout:
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


@dataclass
class XplBatchFit:
    """Fits of B problems: abilities, item parameters (full item axis), errors, warnings."""

    theta: np.ndarray  # (B, L); NaN where the fit failed
    v: np.ndarray  # (B, M, q): b, log a, guessing logit (0 on uninformative items)
    keep: np.ndarray  # (B, M) informative items
    objective: np.ndarray  # (B,)
    n_iter: np.ndarray  # (B,)
    errors: list[NotIdentifiedError | None]
    unconverged: np.ndarray  # (B,) stages that stopped at max_iter (warnings)


def ford_condition_batch(k: np.ndarray, n: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Whether each problem meets Ford's condition (:func:`.check_ford_condition`), (B,).

    The bipartite "beats" graph of models and informative items (model l beats item m if
    ``k_lm > 0``, the item beats the model if ``k_lm < n_lm``) is strongly connected.  An
    uninformative item is tied to model 0 both ways, which adds no path between models.
    """
    B, L, M = k.shape
    graph = np.zeros((B, L + M, L + M), dtype=bool)
    graph[:, :L, L:] = k > 0
    graph[:, L:, :L] = np.swapaxes(k < n, 1, 2)
    graph[:, L:, 0] |= ~keep
    graph[:, 0, L:] |= ~keep
    return strongly_connected_batch(graph)


class StageResult(NamedTuple):
    """Final iterate, objective, iterations and status (``_xpl_kernel.CONVERGED``, ...)."""

    u: np.ndarray  # (B, L)
    v: np.ndarray  # (B, M, q)
    value: np.ndarray  # (B,)
    n_iter: np.ndarray  # (B,)
    status: np.ndarray  # (B,)


def kernel_config(lay: Layout) -> np.ndarray:
    """The layout as :mod:`._xpl_kernel` reads it (see :func:`._xpl_kernel.value`)."""
    return np.array([np.nan if lay.prior_var is None else lay.prior_var, lay.reg_a, lay.reg_c,
                     lay.upper, np.nan if lay.fixed_c is None else lay.fixed_c,
                     {"1pl": 1, "2pl": 2, "3pl": 3}[lay.model], lay.has_a, lay.scale_free,
                     lay.free_c, LOG_A_BOUND], dtype=float)


def _stage(lay: Layout, k, n, keep, scale, theta, v, max_iter) -> StageResult:
    """One Newton stage of the xPL objective for every problem given (rows of k, n, ...).

    Each problem runs :func:`._xpl_kernel.stage` alone (compiled, without the GIL), on
    threads by :func:`._common.over_problems` (iterations per problem: ``docs/study.md``).
    """
    cfg, B = kernel_config(lay), k.shape[0]
    args = [np.ascontiguousarray(x, dtype=dt) for x, dt in (
        (k, float), (n, float), (keep, bool), (scale, float), (theta, float), (v, float))]
    run = lambda rows: _xpl_kernel.stages(*(x[rows] for x in args), cfg, int(max_iter))  # noqa: E731
    parts = over_problems(run, B, _PROBLEMS_PER_THREAD, worker_threads())
    u, w, value, n_iter, status = (np.concatenate(x) for x in zip(*parts, strict=True))
    return StageResult(u, w, value, n_iter, status)


def fit_xpl_batch(k: np.ndarray, n: np.ndarray, lay: Layout, max_iter: int) -> XplBatchFit:
    """Fit B binomial xPL problems (counts ``k``, ``n`` of shape (B, L, M)) in lockstep.

    Per problem exactly :func:`.xpl.fit_irt`'s staged fit after Ford's condition (JML), from
    the smoothed start (:func:`._common.initial_location`); of the 3PL's two guessing starts
    the first is kept unless the second is strictly better.  A problem that fails gets its
    :class:`NotIdentifiedError` in ``errors`` and NaN abilities; a problem without
    informative items (MAP) keeps abilities 0.
    """
    B, L, M = k.shape
    keep = (k.sum(axis=1) > 0) & ((n - k).sum(axis=1) > 0)
    errors: list[NotIdentifiedError | None] = [None] * B
    kk = np.where(keep[:, None, :], k, 0.0)
    nn = np.where(keep[:, None, :], n, 0.0)
    if lay.prior_var is None:  # the per-problem check only where the batched one fails
        for b in np.flatnonzero(~ford_condition_batch(kk, nn, keep)):
            try:
                check_ford_condition(k[b][:, keep[b]], n[b][:, keep[b]], lay.what, lay.labels)
            except NotIdentifiedError as exc:
                errors[b] = exc
    scale = np.maximum(nn.sum(axis=(1, 2)), 1.0)
    q = lay.n_item_params
    out = XplBatchFit(np.zeros((B, L)), np.zeros((B, M, q)), keep, np.full(B, np.nan),
                      np.zeros(B, dtype=int), errors, np.zeros(B, dtype=int))
    idx = np.flatnonzero(np.array([e is None for e in errors]) & keep.any(axis=1))
    theta0, b0 = initial_location(kk[idx], nn[idx], keep[idx])
    one = _stage(Layout("1pl", lay.prior_var, lay.reg_a, lay.reg_c, lay.upper, lay.fixed_c),
                 kk[idx], nn[idx], keep[idx], scale[idx], theta0, b0[..., None], max_iter)
    out.unconverged[idx] += one.status == MAX_ITER
    out.n_iter[idx] = one.n_iter
    for i in np.flatnonzero(one.status == DIVERGED_STATUS):
        errors[idx[i]] = divergence_error(lay.what, one.u[i], labels=lay.labels)
    alive = one.status != DIVERGED_STATUS
    idx, theta, v, value = idx[alive], one.u[alive], one.v[alive], one.value[alive]
    if lay.has_a:
        v = np.concatenate([v, np.zeros_like(v)], axis=2)
        starts = ([v] if not lay.free_c else
                  [np.concatenate([v, np.where(keep[idx], g, 0.0)[..., None]], axis=2)
                   for g in GUESSING_STARTS])
        rows = np.tile(idx, len(starts))
        two = _stage(lay, kk[rows], nn[rows], keep[rows], scale[rows], np.tile(theta, (len(
            starts), 1)), np.concatenate(starts), max_iter)
        best = np.full(idx.size, -1)
        for s in range(len(starts)):
            at = s * idx.size + np.arange(idx.size)
            ok = two.status[at] != DIVERGED_STATUS
            better = ok & ((best < 0) | (two.value[at] < two.value[np.maximum(best, 0)]))
            best = np.where(better, at, best)
        for i in np.flatnonzero(best < 0):  # every start ran off: report the first
            errors[idx[i]] = divergence_error(lay.what, two.u[i], labels=lay.labels)
        found = best >= 0
        idx, best = idx[found], best[found]
        theta, v, value = two.u[best], two.v[best], two.value[best]
        out.unconverged[idx] += two.status[best] == MAX_ITER
        out.n_iter[idx] += two.n_iter[best]
    out.theta[idx], out.v[idx], out.objective[idx] = theta, v, value * scale[idx]
    for i in idx:
        if not (np.all(np.isfinite(out.theta[i])) and np.all(np.isfinite(out.v[i]))):
            errors[i] = NotIdentifiedError(
                f"{lay.what}: the iterations diverged (non-finite parameters)")
    for i, e in enumerate(errors):
        if e is not None:
            out.theta[i] = np.nan
    return out
