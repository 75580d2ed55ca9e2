"""Graph, spectral and game-theoretic rules over a whole :class:`DrawStack` at once.

The rules read only the stack's trial-level pairwise counts (``wins``, ``ties``; L is
their size, so a stack of many model pools of one size works as well) and run
:mod:`bayesrank.baselines.graph_batch` on blocks of :data:`CHUNK` rows that share their
win probabilities.  Power iteration and fictitious play give None.  A draw on which the
per-draw rule would raise (disconnected comparison graph, reducible walk, repeated Perron
root, underflowing fixation probabilities) or search (the Nash linear program when the
best models do not dominate) gets a NaN row.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from bayesrank.baselines import graph
from bayesrank.baselines import graph_batch as gb
from bayesrank.checks import check_choice

if TYPE_CHECKING:
    from bayesrank.study.batched import DrawStack

__all__ = ["RULES"]


def _where_ok(ok: np.ndarray, scores: np.ndarray) -> np.ndarray:
    return np.where(ok[:, None], scores, np.nan)


#: Rows per block: a block's (B, L, L) temporaries stay in cache (a stack of many pools
#: has 10^4-10^5 rows, and one pass per temporary over all of them is memory bound).
CHUNK = 256


class _Rows:
    """A block of a stack's draws: pairwise counts and, once asked, its win probabilities."""

    def __init__(self, wins: np.ndarray, ties: np.ndarray) -> None:
        self.wins, self.ties = wins, ties
        self.D = wins.shape[0]

    @cached_property
    def _probabilities(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        P_hat, compared = gb.win_probabilities_batch(self.wins, self.ties)
        hit = (P_hat, compared, gb.connected_batch(compared))
        for a in hit:
            a.setflags(write=False)
        return hit

    def probabilities(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``P_hat``, the comparison graphs (read-only; 13 of the 15 identifiers start from
        them) and a fresh mask of the draws whose graph is connected."""
        P_hat, compared, connected = self._probabilities
        return P_hat, compared, connected.copy()


def _blocks(stack: DrawStack) -> list[_Rows]:
    """The stack's rows in blocks of :data:`CHUNK`, shared by every rule called on it
    (kept in the stack, :meth:`~bayesrank.study.batched.DrawStack.once`)."""
    def split() -> list[_Rows]:
        wins, ties = stack.wins, stack.ties
        return [_Rows(wins[s:s + CHUNK], ties[s:s + CHUNK]) for s in range(0, stack.D, CHUNK)]

    return stack.once(("graph_blocks", CHUNK), split)


def _over_blocks(rule: Callable[..., np.ndarray | None]) -> Callable[..., np.ndarray | None]:
    """``rule`` on every block of a stack, scores concatenated (None: the options' verdict)."""

    @functools.wraps(rule)
    def over_stack(stack: DrawStack, **options: object) -> np.ndarray | None:
        parts = []
        for rows in _blocks(stack):
            part = rule(rows, **options)
            if part is None:
                return None
            parts.append(part)
        return np.concatenate(parts) if parts else np.zeros((0, stack.wins.shape[1]))

    return over_stack


def _pagerank(rows: _Rows, *, damping, solver, max_iter, tol):
    damping = graph.pagerank_options(damping, solver, max_iter, tol)
    if solver != "exact":
        return None
    P_hat, compared, ok = rows.probabilities()
    L = rows.wins.shape[1]
    adjacency = np.swapaxes(np.where(compared, P_hat, 0.0), 1, 2)
    return _where_ok(ok, gb.pagerank_batch(adjacency, damping, np.full(L, 1.0 / L)))


def _spectral(rows: _Rows, *, solver, max_iter, tol):
    if not graph.check_solver(solver, max_iter, tol):
        return None
    P_hat, compared, ok = rows.probabilities()
    v, simple = gb.perron_batch(gb.spectral_matrix_batch(P_hat, compared))
    return _where_ok(ok & simple, v)


def _rank_centrality(rows: _Rows, *, tie_handling, smoothing, teleport, solver, max_iter,
                     tol):
    smoothing, teleport = graph.rank_centrality_options(tie_handling, smoothing, teleport,
                                                        solver, max_iter, tol)
    if solver != "exact":
        return None
    P, edges = gb.rank_centrality_chain_batch(rows.wins, rows.ties, tie_handling,
                                              smoothing, teleport)
    ok = gb.connected_batch(edges)
    if teleport == 0.0:
        ok &= gb.strongly_connected_batch(P > 0)
    P = np.where(ok[:, None, None], P, 1.0 / P.shape[1])  # any irreducible chain on failures
    return _where_ok(ok, gb.stationary_batch(P))


def _alpharank(rows: _Rows, *, alpha, population_size, solver, max_iter, tol):
    alpha, population_size = graph.alpharank_options(alpha, population_size, solver,
                                                     max_iter, tol)
    if solver != "exact":
        return None
    P_hat, _, ok = rows.probabilities()
    C = gb.alpharank_chain_batch(P_hat, alpha, population_size, constant_sum=True)
    L = C.shape[1]
    off = ~np.eye(L, dtype=bool)
    ok &= np.all(C[:, off] > 0, axis=1)
    C = np.where(ok[:, None, None], C, 1.0 / L)
    return _where_ok(ok, gb.stationary_batch(C))


def _nash(rows: _Rows, *, solver, score_type, selection, n_iter, temperature,
          return_equilibrium):
    graph.nash_options(score_type, solver, n_iter, temperature)
    check_choice("selection", selection, ("max_entropy", "lp"))  # which equilibria close
    if solver != "lp":
        return None
    P_hat, _, ok = rows.probabilities()
    A = graph.zero_sum_game(P_hat)
    AT = np.swapaxes(A, 1, 2)
    antisymmetric = np.all(np.abs(A + AT) <= 1e-12 + 1e-5 * np.abs(AT), axis=(1, 2))
    x, dominated = gb.top_set_equilibrium_batch(A)
    # selection="lp" solves the LP unless the game is all zero: only that case is closed
    zero = np.all(A == 0, axis=(1, 2))
    ok &= antisymmetric & (dominated if selection == "max_entropy" else zero)
    if score_type == "equilibrium":
        return _where_ok(ok, x)
    return _where_ok(ok, gb.mix_batch(P_hat if score_type == "vs_equilibrium" else A, x))


def _serial_rank(rows: _Rows, *, comparison):
    check_choice("comparison", comparison, ("prob_diff", "sign"))
    P_hat, _, ok = rows.probabilities()
    C = graph.zero_sum_game(P_hat)
    scores, _ = gb.serial_rank_batch(np.sign(C) if comparison == "sign" else C)
    return _where_ok(ok, scores)


def _hodge_rank(rows: _Rows, *, pairwise_stat, weight_method, epsilon, return_diagnostics):
    epsilon = graph.hodge_options(pairwise_stat, weight_method, epsilon)
    _, compared, ok = rows.probabilities()
    total = rows.wins + np.swapaxes(rows.wins, 1, 2) + rows.ties
    Y, w = gb.hodge_flow_batch(rows.wins, total, compared, pairwise_stat, weight_method,
                               epsilon)
    YT, wT = np.swapaxes(Y, 1, 2), np.swapaxes(w, 1, 2)
    valid = np.all(np.abs(Y + YT) <= 1e-8 + 1e-5 * np.abs(YT), axis=(1, 2))
    valid &= np.all((np.abs(w - wT) <= 1e-8 + 1e-5 * np.abs(wT)) & (w >= 0), axis=(1, 2))
    ok &= valid & gb.connected_batch(w > 0)
    L = w.shape[1]
    w = np.where(ok[:, None, None], w, 1.0 - np.eye(L))  # any connected graph on failures
    return _where_ok(ok, gb.hodge_potential_batch(Y, w))


#: Base rule name -> scores (D, L) of every draw of a stack (NaN rows: per-draw path).
RULES: dict[str, Callable[..., np.ndarray | None]] = {
    name: _over_blocks(rule) for name, rule in (
        ("pagerank", _pagerank),
        ("spectral", _spectral),
        ("rank_centrality", _rank_centrality),
        ("alpharank", _alpharank),
        ("nash", _nash),
        ("serial_rank", _serial_rank),
        ("hodge_rank", _hodge_rank),
    )
}
