"""Paired-comparison rules over a whole :class:`~bayesrank.study.batched.DrawStack`.

Bradley–Terry, Davidson, Rao–Kupper, Plackett–Luce and Bradley–Terry–Luce (ML and MAP)
fitted on every draw at once by the lockstep solvers of
:mod:`bayesrank.baselines.pairwise_batch` (damped Newton / MM with a per-draw
convergence mask).  A draw the per-draw rule would reject (no finite ML estimate: the
win graph is not strongly connected) or warn about (the solver ran out of iterations)
gets a NaN row; a free Rao–Kupper ``kappa`` gives None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from bayesrank.baselines._optim import fit_options, normalised_strengths, strengths
from bayesrank.baselines.pairwise_batch import (
    average_exchangeable,
    bt_fit_batch,
    btl_fit_batch,
    davidson_fit_batch,
    pl_mm_batch,
    rao_kupper_fit_batch,
    strongly_connected,
)
from bayesrank.checks import check_finite, check_in_interval
from bayesrank.data import reductions
from bayesrank.ranking import exchangeable_pairs

if TYPE_CHECKING:
    from bayesrank.study.batched import DrawStack

__all__ = ["RULES", "setwise_events"]


def _scores(theta: np.ndarray, ok: np.ndarray, stalled: np.ndarray, D: int, *mats: np.ndarray,
            score=strengths) -> np.ndarray:
    """Scores of the fitted draws ``ok``, ``theta`` averaged over the models that each draw's
    counts ``mats`` (all draws) make exchangeable; NaN rows for the others and stalled fits."""
    if mats:
        theta = average_exchangeable(theta, exchangeable_pairs(*(M[ok] for M in mats)))
    out = np.full((D, theta.shape[-1]), np.nan)
    fitted = score(theta)
    fitted[stalled] = np.nan
    out[ok] = fitted
    return out


def _identified(beats: np.ndarray, check: np.ndarray) -> np.ndarray:
    """Draws that pass ``check_identified`` where ``check`` says it runs."""
    ok = np.ones(beats.shape[0], bool)
    ok[check] = strongly_connected(beats[check])
    return ok


def _bt_fit(stack: DrawStack, prior_var: float | None, max_iter: int):
    """Bradley–Terry log-strengths of every draw that has an estimate, once per stack.

    ML needs a strongly connected win graph where some comparison is decisive; MAP always
    has one.  Returns (ok, theta (D, L) with NaN rows where not ok, stalled).  The rules
    bradley_terry, plackett_luce_map (the same MAP fit) and bradley_terry_luce (its Newton
    start) share it (:meth:`~bayesrank.study.batched.DrawStack.once`).
    """
    def fit():
        W = stack.wins
        check = (W > 0).any(axis=(1, 2)) if prior_var is None else np.zeros(len(W), bool)
        ok = _identified(W > 0, check)
        theta = np.full((stack.D, stack.data.L), np.nan)
        stalled = np.zeros(stack.D, bool)
        theta[ok], stalled[ok] = bt_fit_batch(W[ok], prior_var=prior_var, max_iter=max_iter)
        return ok, theta, stalled

    return stack.once(("bradley_terry", prior_var, max_iter), fit)


def _bradley_terry(stack: DrawStack, *, prior, max_iter):
    ok, theta, stalled = _bt_fit(stack, *fit_options(prior, max_iter))
    return _scores(theta[ok], ok, stalled[ok], stack.D, stack.wins)


def _davidson(stack: DrawStack, *, prior, max_iter):
    prior_var, max_iter = fit_options(prior, max_iter)
    W, T = stack.wins, stack.ties
    check = (W > 0).any(axis=(1, 2)) if prior is None else np.zeros(len(W), bool)
    ok = _identified((W > 0) | (T > 0), check)
    theta, _, stalled = davidson_fit_batch(W[ok], T[ok], prior_var=prior_var,
                                           max_iter=max_iter)
    return _scores(theta, ok, stalled, stack.D, W, T)


def _rao_kupper(stack: DrawStack, *, tie_strength, prior, max_iter):
    if tie_strength is None:
        return None  # kappa estimated by ML: per draw
    prior_var, max_iter = fit_options(prior, max_iter)
    kappa = check_in_interval("tie_strength (kappa)", tie_strength, 1.0, np.inf, closed="left")
    if kappa == 1:
        return None  # Bradley-Terry, or an error when there are ties: per draw
    W, T = stack.wins, stack.ties
    check = np.full(len(W), prior is None)
    ok = _identified((W > 0) | (T > 0), check)
    theta, stalled = rao_kupper_fit_batch(W[ok], T[ok], kappa=kappa, prior_var=prior_var,
                                          max_iter=max_iter)
    return _scores(theta, ok, stalled, stack.D, W, T)


def _plackett_luce(stack: DrawStack, *, prior, max_iter, tol):
    if prior is not None:  # the MAP rule is Bradley-Terry MAP
        return _bradley_terry(stack, prior=prior, max_iter=max_iter)
    max_iter = fit_options(prior, max_iter)[1]
    tol = check_finite("tol", tol, positive=True)
    W = stack.wins
    decisive = (W > 0).any(axis=(1, 2))
    ok = _identified(W > 0, decisive)
    theta = np.zeros((int(ok.sum()), stack.data.L))
    stalled = np.zeros(len(theta), bool)
    fit = decisive[ok]
    if fit.any():
        theta[fit], stalled[fit] = pl_mm_batch(W[ok][fit], max_iter=max_iter, tol=tol)
    return _scores(theta, ok, stalled, stack.D, W, score=normalised_strengths)


def setwise_events(stack: DrawStack) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Grouped (winners, losers, counts) events of every draw: ``reductions.setwise`` of each
    draw alone (:func:`~bayesrank.data.reductions.setwise_events`), padded with empty
    zero-count events at the end.  The columns are read from :attr:`DrawStack.outcomes`, so
    every row of a pool stack gets its own pool's events.

    Returns winners (D, E, L) bool, losers (D, E, L) bool, counts (D, E) float.
    """
    D, L = stack.D, stack.data.L
    events = [reductions.setwise_events(R) for R in stack.outcomes.reshape(D, L, -1)]
    E = max(e.n_unique for e in events)
    winners, losers, counts = np.zeros((D, E, L), bool), np.zeros((D, E, L), bool), np.zeros((D, E))
    for d, e in enumerate(events):
        winners[d, :e.n_unique], losers[d, :e.n_unique], counts[d, :e.n_unique] = (
            e.winners, e.losers, e.counts)
    return winners, losers, counts


def _bradley_terry_luce(stack: DrawStack, *, prior, max_iter):
    data = stack.data
    opts = fit_options(prior, max_iter)
    if not data.is_binary:
        return None  # non-binary data: the rule raises a DataError per draw
    # Newton starts from Bradley-Terry on the pairwise wins the events imply (binary data:
    # the stack's W, both count question-trials); ML has the same identification condition
    ok, start, start_stalled = _bt_fit(stack, *opts)
    has_events = (stack.wins > 0).any(axis=(1, 2))
    theta = np.zeros((int(ok.sum()), data.L))
    stalled = np.zeros(len(theta), bool)
    fit = has_events[ok]
    if fit.any():
        U, V, c = setwise_events(stack)
        rows = np.flatnonzero(ok)[fit]
        theta[fit], stalled[fit] = btl_fit_batch(U[rows], V[rows], c[rows], start[rows],
                                                 prior_var=opts[0], max_iter=opts[1])
        stalled[fit] |= start_stalled[rows]
    return _scores(theta, ok, stalled, stack.D)


#: Base rule name -> scores of every draw of a stack (NaN rows: per-draw path).
RULES: dict[str, Callable[..., np.ndarray | None]] = {
    "bradley_terry": _bradley_terry,
    "bradley_terry_davidson": _davidson,
    "rao_kupper": _rao_kupper,
    "plackett_luce": _plackett_luce,
    "bradley_terry_luce": _bradley_terry_luce,
}
