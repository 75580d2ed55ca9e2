"""Batched evaluation of ranking rules over a stack of trial subsamples.

The study protocols rank the same data many times: the ``N`` single-trial draws,
``reps`` subsamples per budget, and the same draws again on every model pool.
Ranking each subsample alone re-validates a :class:`~bayesrank.ResponseData`,
re-reduces its counts and pays each rule's Python overhead once per draw.  Here
one :class:`DrawStack` reduces every draw of a stack at once:

- category counts ``n_dlmk`` of all draws, shape (D, L, M, C+1);
- trial-level wins and ties ``W_dij``, ``T_dij`` (paper Sec. 2.2) with one batched
  matrix product over one-hot indicator blocks;
- question-level wins and ties (questions as voters) by one broadcast comparison.

Pairwise and cell counts of a model pool are the rows and columns of the
full-pool counts, so :meth:`DrawStack.pool` restricts a stack to a pool without
recomputing anything (the model-pool bootstrap reduces its draws once).

Rules with a closed form over these counts (:data:`BATCHED_RULES`: avg, inverse
difficulty, Bayes@N with and without the R0 prior and its quantile score, Borda,
Copeland, win rate, Minimax, Schulze) are evaluated for every draw in one vectorised call;
each returns exactly the scores of the rule on each draw alone (same formula, same
floating-point operations up to summation order, well inside the 1e-12 tie tolerance of
:func:`bayesrank.ranking.scores_to_ranks`).  Every other rule (sequential ratings,
iterative fits, voting rules with combinatorial searches) keeps the per-draw path:
:meth:`DrawStack.subset` builds the draw's ``ResponseData`` with its reductions cache
already filled from the stack, and :func:`bayesrank.rank` runs the rule unchanged.

``tests/test_study_batched.py`` checks both paths against :func:`bayesrank.rank` on
each draw alone for every registered identifier.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import stats

from bayesrank.data import ResponseData
from bayesrank.errors import DataError, DisconnectedGraphError, NotIdentifiedError
from bayesrank.ranking import DEFAULT_TOL
from bayesrank.registry import get_method, rank

__all__ = [
    "BATCHED_RULES",
    "DrawRanks",
    "DrawStack",
    "batched_kendall_tau",
    "draws_per_stack",
    "is_batched",
    "rank_stack",
]

#: Errors that mean "this method cannot rank these data" (reported, never hidden).
#: Anything else is a bug and propagates.
SKIPPABLE = (DataError, NotIdentifiedError, DisconnectedGraphError)


#: Largest number of array elements one stack's reductions may hold (about 1 GiB of the
#: biggest temporaries); larger stacks are split into blocks of draws, and a single
#: draw above it is reduced on its own (the per-draw path).
STACK_ELEMENTS = 2**27


def draws_per_stack(data: ResponseData, draws: Sequence[np.ndarray]) -> int:
    """How many of ``draws`` one :class:`DrawStack` may hold (0: none, use the per-draw path).

    0 also when the data have missing trials or the draws differ in size.
    """
    if not data.complete or not draws or len({len(d) for d in draws}) != 1:
        return 0
    n = len(draws[0])
    per_draw = data.L * data.M * max(data.L, n * data.n_categories)
    return min(len(draws), STACK_ELEMENTS // per_draw)


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True)
class DrawStack:
    """Reductions of D equal-size trial subsamples of one complete dataset.

    Parameters
    ----------
    data : ResponseData
        The full data (every trial observed); draws select trials of it.
    draws : array of int, shape (D, n)
        Trial positions of each draw (the same for every model and question).
    counts : array of int64, shape (D, L, M, C+1)
        Category counts of every cell in every draw.
    wins, ties : arrays of float64, shape (D, L, L)
        Trial-level pairwise counts of every draw (``data.reductions.wins/ties``).
    question_wins, question_ties : arrays of float64, shape (D, L, L)
        Question-level pairwise counts (``data.reductions.question_wins/ties``).
    """

    data: ResponseData
    draws: np.ndarray
    counts: np.ndarray
    wins: np.ndarray
    ties: np.ndarray
    question_wins: np.ndarray
    question_ties: np.ndarray

    @classmethod
    def from_data(cls, data: ResponseData, draws: Sequence[np.ndarray]) -> DrawStack:
        """Reduce every draw of ``data`` in one pass.

        Raises
        ------
        ValueError
            When the data have missing trials or the draws differ in size (use
            the per-draw path of :func:`rank_stack` with ``stack=None`` there).
        """
        if not data.complete:
            raise ValueError("DrawStack needs complete data (no mask)")
        sizes = {len(d) for d in draws}
        if len(sizes) != 1:
            raise ValueError(f"draws of one stack must have one size, got sizes {sorted(sizes)}")
        idx = np.asarray([np.asarray(d, dtype=np.int64) for d in draws])
        D, n = idx.shape
        L, M = data.L, data.M
        R = np.moveaxis(data.R[:, :, idx], 2, 0)  # (D, L, M, n)
        cats = np.arange(data.n_categories, dtype=R.dtype)
        counts = (R[..., None] == cats).sum(axis=3, dtype=np.int64)  # (D, L, M, C+1)
        wins, ties = _trial_pairs(R.reshape(D, L, M * n), data.weights)
        q_wins, q_ties = _question_pairs(counts, data.weights, data.is_binary)
        return cls(data, _frozen(idx), _frozen(counts), wins, ties, q_wins, q_ties)

    @property
    def D(self) -> int:
        return self.counts.shape[0]

    @property
    def n_trials(self) -> int:
        return self.draws.shape[1]

    @cached_property
    def cell_utility(self) -> np.ndarray:
        """Mean utility of every cell of every draw, (D, L, M)."""
        return (self.counts @ self.data.weights) / self.n_trials

    def pool(self, models: np.ndarray) -> DrawStack:
        """The same draws on a model pool: rows (and columns) of every count, nothing redone."""
        li = np.asarray(models, dtype=np.int64)
        sub = self.data.subset(models=li)
        pair = np.ix_(np.arange(self.D), li, li)
        return DrawStack(sub, self.draws, _frozen(self.counts[:, li]),
                         _frozen(self.wins[pair]), _frozen(self.ties[pair]),
                         _frozen(self.question_wins[pair]), _frozen(self.question_ties[pair]))

    def subset(self, d: int) -> ResponseData:
        """Draw ``d`` as a ResponseData whose reductions cache is filled from the stack.

        The result equals ``data.subset(trials=draws[d])`` (same R, R0, names); its
        count and pairwise reductions are the stack's, so a rule run on it reads
        them instead of re-deriving them.
        """
        data = self.data
        sub = ResponseData(data.R[:, :, self.draws[d]], models=data.models,
                           questions=data.questions, R0=data.R0, weights=data.weights)
        red = sub.reductions
        cache = {
            "trials": np.full((data.L, data.M), self.n_trials, dtype=np.int64),
            "category_counts": self.counts[d],
            "_pairwise": (self.wins[d], self.ties[d]),
            "_question_pairs": (self.question_wins[d], self.question_ties[d]),
        }
        if data.is_binary:
            cache["successes"] = self.counts[d, :, :, 1]
        owner = type(red)
        for name, value in cache.items():  # only names the Reductions class caches
            if isinstance(getattr(owner, name, None), cached_property):
                red.__dict__[name] = value
        return sub


def _trial_pairs(X: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """W_dij and T_dij of every draw from outcomes X (D, L, K) over K question-trials."""
    D, L, K = X.shape
    if weights.size == 2 and weights[1] > weights[0]:
        Xf = X.astype(np.float32)
        A = np.rint(Xf @ np.swapaxes(Xf, 1, 2)).astype(np.float64)  # both succeed
        S = np.diagonal(A, axis1=1, axis2=2)
        wins = S[:, :, None] - A
        ties = A + (K - S[:, :, None] - S[:, None, :] + A)
    else:
        wins = np.zeros((D, L, L))
        ties = np.zeros((D, L, L))
        for level in np.unique(weights):
            at = np.isin(X, np.flatnonzero(weights == level)).astype(np.float32)
            below = np.isin(X, np.flatnonzero(weights < level)).astype(np.float32)
            ties += np.rint(at @ np.swapaxes(at, 1, 2))
            wins += np.rint(at @ np.swapaxes(below, 1, 2))
    eye = np.eye(L, dtype=bool)
    wins[:, eye] = 0.0
    ties[:, eye] = 0.0
    return _frozen(wins), _frozen(ties)


def _question_pairs(counts: np.ndarray, weights: np.ndarray, binary: bool):
    """Question-level wins/ties: #questions with u_im > u_jm (= u_jm), every draw."""
    u = counts[..., 1] if binary else counts @ weights  # same order as the cell utility
    D, L, M = u.shape
    wins = (u[:, :, None, :] > u[:, None, :, :]).sum(axis=3).astype(np.float64)
    ties = M - wins - np.swapaxes(wins, 1, 2)
    eye = np.eye(L, dtype=bool)
    wins[:, eye] = 0.0
    ties[:, eye] = 0.0
    return _frozen(wins), _frozen(ties)


# -- closed-form rules over the stack --------------------------------------------------------
# Each takes the stack and the identifier's options and returns scores (D, L), or None
# when these options or data are outside what it reproduces exactly (per-draw path then).


def _avg(stack: DrawStack) -> np.ndarray:
    return np.mean(stack.cell_utility, axis=2)


def _inverse_difficulty(stack: DrawStack, *, clip_range=(0.01, 0.99)) -> np.ndarray | None:
    if not stack.data.is_binary:
        return None
    low, high = (float(v) for v in clip_range)
    if not 0.0 < low < high <= 1.0:
        return None  # the rule raises; let it say why
    k = stack.counts[..., 1]
    n = stack.n_trials
    p = k.sum(axis=1) / (n * stack.data.L)  # pooled solve rate, (D, M)
    w = 1.0 / np.clip(p, low, high)
    w = w / w.sum(axis=1, keepdims=True)
    rate = k / n
    return (rate * w[:, None, :]).sum(axis=2) / w.sum(axis=1)[:, None]


def _bayes(stack: DrawStack, *, R0=None, quantile=None, weights=None) -> np.ndarray | None:
    data = stack.data
    if weights is not None or not (R0 is None or (isinstance(R0, str) and R0 == "data")):
        return None
    if R0 is not None and data.R0 is None:
        return None  # the rule raises DataError; the per-draw path reports it
    if quantile is not None and (isinstance(quantile, bool) or not 0.0 < float(quantile) < 1.0):
        return None
    w = data.weights
    nu = stack.counts + 1.0
    if R0 is not None:
        nu = nu + data.reductions.prior_category_counts
    T = nu.sum(axis=-1)
    shifted = w - w[0]
    mean_cell = (nu @ shifted) / T
    second_cell = (nu @ shifted**2) / T
    var_cell = (second_cell - mean_cell**2) / (T + 1.0)
    mu = w[0] + mean_cell.sum(axis=-1) / data.M
    if quantile is None:
        return mu
    sigma = np.sqrt(np.maximum(var_cell.sum(axis=-1), 0.0)) / data.M
    return mu + stats.norm.ppf(float(quantile)) * sigma


def _preferences(stack: DrawStack, tie_policy: str) -> np.ndarray | None:
    if tie_policy == "half":
        return stack.question_wins + 0.5 * stack.question_ties
    return stack.question_wins if tie_policy == "ignore" else None


def _borda(stack: DrawStack, **_: object) -> np.ndarray:
    return _preferences(stack, "half").sum(axis=2)


def _copeland(stack: DrawStack, **_: object) -> np.ndarray:
    P = _preferences(stack, "half")
    return np.sign(P - np.swapaxes(P, 1, 2)).sum(axis=2)


def _win_rate(stack: DrawStack, **_: object) -> np.ndarray:
    W = stack.question_wins
    won = W.sum(axis=2)
    decided = won + W.sum(axis=1)
    return np.divide(won, decided, out=np.full(won.shape, 0.5), where=decided > 0)


def _minimax(stack: DrawStack, *, variant="margin", tie_policy="half", **_: object):
    P = _preferences(stack, tie_policy)
    if P is None or variant not in ("margin", "winning_votes", "pairwise_opposition"):
        return None
    against = np.swapaxes(P, 1, 2).copy()
    margin_against = against - P
    eye = np.eye(P.shape[1], dtype=bool)
    against[:, eye] = -np.inf
    if variant == "pairwise_opposition":
        worst = against.max(axis=2)
    elif variant == "margin":
        worst = np.maximum(margin_against, 0.0).max(axis=2)
    else:
        worst = np.where(margin_against > 0, against, 0.0).max(axis=2)
    return -np.where(np.isfinite(worst), worst, 0.0)


def _dag_levels(above: np.ndarray) -> np.ndarray | None:
    """Kahn levels of every draw's acyclic relation (D, L, L), as ``voting.dag_levels``.

    Sources get level L, the next layer L - 1, ...; None when some draw has a cycle
    (the rule then reports it per draw).
    """
    D, L, _ = above.shape
    adj = above.astype(np.int64)
    indegree = adj.sum(axis=1)
    alive = np.ones((D, L), dtype=bool)
    scores = np.zeros((D, L))
    level = float(L)
    while alive.any():
        sources = alive & (indegree == 0)
        if (alive.any(axis=1) & ~sources.any(axis=1)).any():
            return None
        scores[sources] = level
        level -= 1.0
        alive &= ~sources
        indegree = indegree - np.einsum("dl,dlj->dj", sources.astype(np.int64), adj)
    return scores


def _schulze(stack: DrawStack, *, tie_policy="half", strength="winning_votes", **_: object):
    """Schulze beatpath levels: widest-path (max-min) closure by Floyd-Warshall, every draw."""
    P = _preferences(stack, tie_policy)
    if P is None or strength not in ("margin", "winning_votes"):
        return None
    margin = P - np.swapaxes(P, 1, 2)
    p = np.where(margin > 0, margin if strength == "margin" else P, 0.0)
    eye = np.eye(P.shape[1], dtype=bool)
    p[:, eye] = 0.0
    for k in range(p.shape[1]):
        np.maximum(p, np.minimum(p[:, :, k:k + 1], p[:, k:k + 1, :]), out=p)
    p[:, eye] = 0.0
    return _dag_levels(p > np.swapaxes(p, 1, 2))


#: Base rule name -> closed form over a :class:`DrawStack` (scores of every draw, (D, L)).
BATCHED_RULES: dict[str, Callable[..., np.ndarray | None]] = {
    "avg": _avg,
    "inverse_difficulty": _inverse_difficulty,
    "bayes": _bayes,
    "borda": _borda,
    "copeland": _copeland,
    "win_rate": _win_rate,
    "minimax": _minimax,
    "schulze": _schulze,
}
from bayesrank.study.stack_irt import RULES as _irt_RULES  # noqa: E402, I001
BATCHED_RULES.update(_irt_RULES)

#: Rules whose score of a model depends on that model's own counts only: their scores on a
#: model pool are the full-pool scores of the pool's members (the bootstrap computes them once).
SEPARABLE_RULES = frozenset({"avg", "bayes"})


def is_batched(method: str) -> bool:
    """Whether ``method`` has a closed form over a :class:`DrawStack`."""
    return get_method(method).base in BATCHED_RULES


def batched_scores(stack: DrawStack, method: str) -> np.ndarray | None:
    """Scores (D, L) of ``method`` on every draw of ``stack``, or None (use the per-draw path).

    A rule that can fail on single draws may return ``(scores, reasons)`` instead: NaN rows
    with the per-draw path's reason (``"ErrorClass: message"``) for each such draw.
    """
    spec = get_method(method)
    rule = BATCHED_RULES.get(spec.base)
    return None if rule is None else rule(stack, **dict(spec.defaults))


@dataclass
class DrawRanks:
    """One method's competition ranks on every draw of a stack (None where it failed)."""

    ranks: list[np.ndarray | None]
    reasons: list[str | None]
    warnings: int
    seconds: float


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """``scores_to_ranks(scores)`` (competition ties, default tolerance) as float, faster.

    Works row by row on a (D, L) stack too.  Scores within the tolerance
    ``1e-12 max(1, max |s|)`` (per row) of their sorted neighbour share a group
    (chains merge); a model's rank is 1 + the number of models in better groups,
    i.e. the first sorted position of its group + 1.
    """
    s = np.asarray(scores, dtype=float)
    if s.ndim not in (1, 2):
        raise ValueError(f"scores must be 1-D, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"scores must be finite; got {s[~np.isfinite(s)][:3]}")
    rows = np.atleast_2d(s)
    tol = DEFAULT_TOL * np.maximum(1.0, np.max(np.abs(rows), axis=1, initial=0.0))
    order = np.argsort(-rows, axis=1, kind="stable")
    ordered = np.take_along_axis(rows, order, axis=1)
    new_group = np.ones(rows.shape, dtype=bool)
    new_group[:, 1:] = -np.diff(ordered, axis=1) > tol[:, None]
    first = np.maximum.accumulate(np.where(new_group, np.arange(rows.shape[1]), 0), axis=1)
    ranks = np.empty(rows.shape)
    np.put_along_axis(ranks, order, first + 1.0, axis=1)
    return ranks if s.ndim == 2 else ranks[0]


def _rank_once(sub: ResponseData, method: str) -> np.ndarray:
    """``bayesrank.rank(sub, method).ranks`` without building the Ranking twice."""
    spec = get_method(method)
    rule = getattr(spec.function, "__wrapped_rule__", None)
    if rule is None:  # not a ranking_method rule: take the public path
        return np.asarray(rank(sub, method).ranks, dtype=float)
    out = rule(sub, **dict(spec.defaults))
    scores, details = out if isinstance(out, tuple) else (out, {})
    scores = np.asarray(scores, dtype=float)
    if scores.shape != (sub.L,):
        raise ValueError(f"{sub.L} models but scores of shape {scores.shape}")
    given = details.get("ranks")
    return competition_ranks(scores) if given is None else np.asarray(given, dtype=float)


def _per_draw(subs: Sequence[ResponseData], method: str) -> DrawRanks:
    out = DrawRanks([], [], 0, 0.0)
    start = time.perf_counter()
    for sub in subs:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                r = _rank_once(sub, method)
                why = None
            except SKIPPABLE as exc:
                r, why = None, f"{type(exc).__name__}: {exc}"
        out.ranks.append(r)
        out.reasons.append(why)
        out.warnings += len(caught)
    out.seconds = time.perf_counter() - start
    return out


def ranks_from_scores(scores: np.ndarray) -> list[np.ndarray]:
    """Competition ranks (float) of each row, exactly as :class:`bayesrank.Ranking` makes them."""
    return list(competition_ranks(scores))


def rank_stack(
    stack: DrawStack,
    methods: Sequence[str],
    *,
    scores_cache: dict[str, np.ndarray] | None = None,
) -> dict[str, DrawRanks]:
    """Every method's ranks on every draw of ``stack``.

    Closed forms (:data:`BATCHED_RULES`) run once over the stack; every other rule
    runs per draw on :meth:`DrawStack.subset` (reductions shared from the stack), and so
    do the draws where a stacked rule returns non-finite scores (e.g. an iterative fit
    that fails on that draw: the per-draw path reports why), unless the rule returned
    ``(scores, reasons)`` with the per-draw path's reason for each such draw.
    ``scores_cache`` maps a method to precomputed scores (D, L) of this stack (the
    bootstrap passes pool restrictions of separable rules).
    """
    out: dict[str, DrawRanks] = {}
    subs: list[ResponseData] | None = None
    for m in methods:
        start = time.perf_counter()
        scores = None if scores_cache is None else scores_cache.get(m)
        if scores is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                scores = batched_scores(stack, m)
        given: list[str | None] | None = None
        if isinstance(scores, tuple):  # (scores, reasons) from a rule that knows why it fails
            scores, given = scores
        if scores is not None and np.all(np.isfinite(scores)):
            ranks = ranks_from_scores(scores)
            out[m] = DrawRanks(ranks, [None] * stack.D, 0, time.perf_counter() - start)
            continue
        if subs is None:
            subs = [stack.subset(d) for d in range(stack.D)]
        # draws the rule scored or explained keep that; the rest take the per-draw path
        reasons: list[str | None] = [None] * stack.D if given is None else list(given)
        scored = np.zeros(stack.D, dtype=bool)
        ranks: list[np.ndarray | None] = [None] * stack.D
        if scores is not None:
            scored = np.all(np.isfinite(scores), axis=1)
            ranks = [r if ok else None for r, ok in zip(
                ranks_from_scores(np.where(scored[:, None], scores, 0.0)), scored, strict=True)]
        rest = np.flatnonzero(~scored & np.array([r is None for r in reasons]))
        per = _per_draw([subs[d] for d in rest], m)
        for d, r, why in zip(rest, per.ranks, per.reasons, strict=True):
            ranks[d], reasons[d] = r, why
        out[m] = DrawRanks(ranks, reasons, per.warnings, time.perf_counter() - start)
    return out


def batched_kendall_tau(ranks: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Kendall tau-b of every row of ``ranks`` (D, L) against ``target`` (L,).

    ``tau_b = S / sqrt((n0 - n1)(n0 - n2))`` with ``S`` the sum over pairs of
    ``sign(a_i - a_j) sign(b_i - b_j)``, ``n0 = L(L-1)/2`` and ``n1``, ``n2`` the pairs
    tied in each ranking; NaN when either ranking is constant (as
    :func:`bayesrank.kendall_tau`).
    """
    a = np.asarray(ranks, dtype=float)
    b = np.asarray(target, dtype=float)
    L = b.size
    upper = np.triu(np.ones((L, L), dtype=bool), 1)
    sa = np.sign(a[:, :, None] - a[:, None, :])[:, upper]  # (D, pairs)
    sb = np.sign(b[:, None] - b[None, :])[upper]
    s = (sa * sb).sum(axis=1)
    n0 = upper.sum()
    tied_a = (sa == 0).sum(axis=1)
    tied_b = (sb == 0).sum()
    denom = np.sqrt((n0 - tied_a) * float(n0 - tied_b))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(denom > 0, s / np.where(denom > 0, denom, 1.0), np.nan)
    return np.clip(tau, -1.0, 1.0)
