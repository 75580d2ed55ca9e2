"""Batched evaluation of ranking rules over a stack of trial subsamples.

The study protocols rank the same data many times: the ``N`` single-trial draws,
``reps`` subsamples per budget, and the same draws again on every model pool.
Ranking each subsample alone re-validates a :class:`~bayesrank.ResponseData`,
re-reduces its counts and pays each rule's Python overhead once per draw.  Here
one :class:`DrawStack` reduces every draw of a stack at once (category counts, trial- and
question-level pairwise counts, each by one batched operation).  Pairwise and cell counts
of a model pool are the rows and columns of the full-pool counts, so :meth:`DrawStack.pool`
and :meth:`DrawStack.pools` restrict a stack to one pool or to many at once without
recomputing anything.

Every rule with a stacked form (:data:`BATCHED_RULES`, :mod:`bayesrank.study.stack_rules`)
runs once over the whole stack; the other rules, and the draws or options a stacked form
leaves, take the per-draw path (:func:`rank_stack`) on :meth:`DrawStack.subset`, whose
reductions cache is filled from the stack.

``tests/test_study_batched.py`` checks both paths against :func:`bayesrank.rank` on
each draw alone for every registered identifier.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, cached_property

import numpy as np

from bayesrank.baselines import METHODS, rule_defaults, voting
from bayesrank.data import ResponseData, reductions
from bayesrank.errors import DataError, DisconnectedGraphError, NotIdentifiedError
from bayesrank.ranking import competition_ranks
from bayesrank.registry import get_method, rank
from bayesrank.study.stack_rules import BATCHED_RULES, SEPARABLE_RULES

__all__ = [
    "BATCHED_RULES",
    "DrawRanks",
    "DrawStack",
    "PoolData",
    "PoolStackError",
    "SEPARABLE_RULES",
    "batched_kendall_tau",
    "draws_per_stack",
    "is_batched",
    "pools_per_stack",
    "rank_stack",
    "stacked_scores",
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


def pools_per_stack(stack: DrawStack, size: int) -> int:
    """How many pools of ``size`` models :meth:`DrawStack.pools` may stack (0: not even one).

    Each row of a pool stack holds the pool's counts (size, M, C+1) and pairwise
    counts (size, size); rules build temporaries up to (size, size, M) per row.  A
    row is never larger than a row of ``stack`` (:func:`draws_per_stack`), so when
    ``stack`` fit the budget, at least one pool does.
    """
    per_row = int(size) * stack.data.M * max(int(size), stack.data.n_categories)
    return (STACK_ELEMENTS // per_row) // stack.D


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
    source : ResponseData, optional
        Only in a pool stack (:meth:`pools`): the data whose models the rows' pools index.
    models : array of int, shape (D, L), optional
        Only in a pool stack: the models (positions in ``source``) of every row.  There
        ``data`` is a :class:`PoolData`: what every row shares (L, M, N, questions,
        weights); per-model inputs are read through the stack (counts,
        :attr:`prior_counts`, :attr:`outcomes`, :meth:`subset`).
    """

    data: ResponseData
    draws: np.ndarray
    counts: np.ndarray
    wins: np.ndarray
    ties: np.ndarray
    question_wins: np.ndarray
    question_ties: np.ndarray
    source: ResponseData | None = None
    models: np.ndarray | None = None

    @classmethod
    def from_data(cls, data: ResponseData, draws: Sequence[np.ndarray]) -> DrawStack:
        """Reduce every draw of ``data`` in one pass (ValueError when the data have missing
        trials or the draws differ in size: :func:`draws_per_stack` says 0 there)."""
        if not data.complete:
            raise ValueError("DrawStack needs complete data (no mask)")
        sizes = {len(d) for d in draws}
        if len(sizes) != 1:
            raise ValueError(f"draws of one stack must have one size, got sizes {sorted(sizes)}")
        idx = np.asarray([np.asarray(d, dtype=np.int64) for d in draws])
        D, n = idx.shape
        L, M = data.L, data.M
        R = np.moveaxis(data.R[:, :, idx], 2, 0)  # (D, L, M, n)
        counts = reductions.category_counts(R, data.n_categories)  # (D, L, M, C+1)
        wins, ties = reductions.pair_counts(R.reshape(D, L, M * n), data.weights,
                                            binary=data.is_binary)
        # as Reductions._question_pairs of each draw alone: k_lm, or the merged grades
        q_wins, q_ties = map(_frozen, reductions.question_pair_counts(
            counts[..., 1] if data.is_binary
            else reductions.merge_near_ties((counts @ data.weights) / n, per_row=True)))
        return cls(data, _frozen(idx), _frozen(counts), wins, ties, q_wins, q_ties)

    @property
    def D(self) -> int:
        return self.draws.shape[0]

    @property
    def n_trials(self) -> int:
        return self.draws.shape[1]

    # as the reductions of each draw alone: k_lm (binary data) and n_lm, (D, L, M)
    successes = property(lambda self: self.counts[..., 1])
    trials = cached_property(lambda self: np.full(self.successes.shape, self.n_trials, np.int64))

    def once(self, key: tuple, compute: Callable[[], object]):
        """``compute()`` once per stack and ``key``, kept like a ``cached_property``.

        Rules that run the same fit or solve on a stack (the same model with the same
        options under several identifiers) share it; a rule that changes the result it
        gets must copy it first.
        """
        shared = self.__dict__.setdefault("_shared", {})
        if key not in shared:
            shared[key] = compute()
        return shared[key]

    @cached_property
    def cell_utility(self) -> np.ndarray:
        """Mean utility of every cell of every draw, (D, L, M)."""
        return (self.counts @ self.data.weights) / self.n_trials

    @cached_property
    def cell_grades(self) -> np.ndarray:
        """:attr:`cell_utility` with equal means made equal, each draw on its own (as
        ``Reductions.cell_grades`` of the draw alone)."""
        return reductions.merge_near_ties(self.cell_utility, per_row=True)

    def question_preferences(self, tie_policy: str = "half") -> np.ndarray:
        """Question-level preferences of every draw, (D, L, L): ``W + T/2`` (``"half"``,
        as ``Reductions.question_preferences`` of the draw alone) or ``W`` (``"ignore"``)."""
        return voting.preference_matrix(self.question_wins, self.question_ties, tie_policy,
                                        batch=True)

    def pool(self, models: np.ndarray) -> DrawStack:
        """The same draws on a model pool: rows (and columns) of every count, nothing redone."""
        if self.models is not None:
            raise ValueError("a pool stack cannot be restricted again; restrict the full stack")
        li = np.asarray(models, dtype=np.int64)
        sub = self.data.subset(models=li)
        pair = np.ix_(np.arange(self.D), li, li)
        return DrawStack(sub, self.draws, _frozen(self.counts[:, li]),
                         _frozen(self.wins[pair]), _frozen(self.ties[pair]),
                         _frozen(self.question_wins[pair]), _frozen(self.question_ties[pair]))

    def pools(self, pools: np.ndarray) -> DrawStack:
        """Every draw on every pool of one size, as one stack of ``P * D`` rows.

        Row ``p * D + d`` holds draw ``d`` restricted to ``pools[p]`` (the rows and
        columns of this stack's counts, as :meth:`pool`), so a rule evaluated on it
        gives, row by row, its scores on each ``pool(pools[p])``.

        Parameters
        ----------
        pools : array of int, shape (P, k)
            Model positions of each pool (all pools of one size, at least one).
        """
        members = np.asarray(pools, dtype=np.int64)
        if members.ndim != 2 or not members.size:
            raise ValueError(f"pools must be a non-empty (P, k) array, got shape {members.shape}")
        if self.models is not None:
            raise ValueError("this stack is already a pool stack; stack pools of the full stack")
        return _PoolStack(self, members)

    @cached_property
    def outcomes(self) -> np.ndarray:
        """Outcomes of every row, (D, L, M, n): ``data.R[:, :, draws[d]]`` of each draw
        (of ``source.R`` restricted to the row's models in a pool stack)."""
        if self.models is None:
            return _frozen(np.moveaxis(self.data.R[:, :, self.draws], 2, 0))
        R = self.source.R
        return _frozen(R[self.models[:, :, None, None], np.arange(R.shape[1])[:, None],
                         self.draws[:, None, None, :]])

    @cached_property
    def prior_counts(self) -> np.ndarray | None:
        """Category counts of R0 seen by every row: (M, C+1) shared, (L, M, C+1) per model,
        (D, L, M, C+1) per model in a pool stack; None without R0."""
        if self.models is None:
            return self.data.reductions.prior_category_counts
        counts = self.source.reductions.prior_category_counts
        return counts if counts is None or counts.ndim == 2 else counts[self.models]

    def subset(self, d: int) -> ResponseData:
        """Draw ``d`` as a ResponseData whose reductions cache is filled from the stack.

        The result equals ``data.subset(trials=draws[d])`` (same R, R0, names; in a
        pool stack ``source.subset(models=models[d], trials=draws[d])``); its count
        and pairwise reductions are the stack's, so a rule run on it reads them
        instead of re-deriving them.
        """
        data = self.data if self.models is None else self.source.subset(models=self.models[d])
        sub = ResponseData(data.R[:, :, self.draws[d]], models=data.models,
                           questions=data.questions, R0=data.R0, weights=data.weights)
        red = sub.reductions
        cache = {
            "trials": self.trials[d],
            "category_counts": self.counts[d],
            "_pairwise": (self.wins[d], self.ties[d]),
            "_question_pairs": (self.question_wins[d], self.question_ties[d]),
        }
        if data.is_binary:
            cache["successes"] = self.successes[d]
        owner = type(red)
        for name, value in cache.items():  # only names the Reductions class caches
            if isinstance(getattr(owner, name, None), cached_property):
                red.__dict__[name] = value
        return sub


class PoolStackError(TypeError):
    """A rule read something of a pool stack's ``data`` that differs from row to row."""


class PoolData:
    """``data`` of a pool stack: what every row shares, whatever its pool.

    Rows hold different models, so the model-specific parts of a ResponseData (R, R0,
    names, reductions) have no single value here: reading them raises
    :class:`PoolStackError` (the bootstrap then ranks that rule pool by pool, on
    :meth:`DrawStack.pool` stacks); the per-row inputs are the stack's (``models``).
    """

    def __init__(self, source: ResponseData, size: int) -> None:
        self.L = int(size)
        self.M, self.N = source.M, source.N
        self.questions = source.questions
        self.weights = source.weights
        self.n_categories, self.C = source.n_categories, source.C
        self.is_binary, self.complete = source.is_binary, source.complete

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise PoolStackError(f"data.{name} differs between the rows of a pool stack (each row "
                             "has its own models); read the stack's per-row arrays instead")

    def __repr__(self) -> str:
        return f"PoolData(L={self.L} models of each pool; M={self.M}; N={self.N})"


class _PoolStack(DrawStack):
    """:meth:`DrawStack.pools`: the stacked pool restrictions, each gathered on first use
    (a rule that reads only the question-level counts never copies the cell counts)."""

    def __init__(self, parent: DrawStack, pools: np.ndarray) -> None:
        models = np.repeat(pools, parent.D, axis=0)  # (P * D, k), pool-major
        draws = np.repeat(parent.draws[None], len(pools), axis=0).reshape(-1, parent.n_trials)
        shared = PoolData(parent.data, pools.shape[1])
        for name, value in (("data", shared), ("draws", _frozen(draws)),
                            ("source", parent.data), ("models", _frozen(models)),
                            ("_parent", parent)):
            object.__setattr__(self, name, value)

    @cached_property
    def _rows(self) -> np.ndarray:
        return np.tile(np.arange(self._parent.D), self.D // self._parent.D)[:, None]

    def _pairs(self, full: np.ndarray) -> np.ndarray:
        m = self.models
        return _frozen(full[self._rows[:, :, None], m[:, :, None], m[:, None, :]])

    @cached_property
    def counts(self) -> np.ndarray:
        return _frozen(self._parent.counts[self._rows, self.models])

    # the pairwise counts: the parent's, restricted to every row's pool
    wins = cached_property(lambda self: self._pairs(self._parent.wins))
    ties = cached_property(lambda self: self._pairs(self._parent.ties))
    question_wins = cached_property(lambda self: self._pairs(self._parent.question_wins))
    question_ties = cached_property(lambda self: self._pairs(self._parent.question_ties))


def is_batched(method: str) -> bool:
    """Whether ``method`` has a closed form over a :class:`DrawStack`."""
    return get_method(method).base in BATCHED_RULES


def batched_scores(stack: DrawStack, method: str, **options: object) -> np.ndarray | None:
    """:func:`stacked_scores` of ``method``'s base rule with the identifier's options
    (:attr:`~bayesrank.baselines.MethodSpec.options`), ``options`` over them."""
    spec = get_method(method)
    return stacked_scores(stack, spec.base, **{**spec.options, **options})


@cache
def _rule_defaults(base: str) -> dict[str, object]:
    return rule_defaults(next(s.function for s in METHODS.values() if s.base == base))


def stacked_scores(stack: DrawStack, base: str, **options: object) -> np.ndarray | None:
    """The stacked form of base rule ``base`` (:data:`BATCHED_RULES`) with ``options`` over
    the rule's own defaults: scores (D, L), or ``(scores, reasons)`` with NaN rows and the
    per-draw path's reason (``"ErrorClass: message"``) for draws it could not rank, or None
    (per-draw path: no stacked form, or options or data its core rejects with a DataError)."""
    rule = BATCHED_RULES.get(base)
    if rule is None:
        return None
    try:
        return rule(stack, **{**_rule_defaults(base), **options})
    except DataError:
        return None  # the per-draw path says why


@dataclass
class DrawRanks:
    """One method's competition ranks on every draw of a stack (None where it failed)."""

    ranks: list[np.ndarray | None]
    reasons: list[str | None]
    warnings: int
    seconds: float


def finite_ranks(scores: np.ndarray) -> np.ndarray:
    """:func:`competition_ranks` of every row of ``scores`` (..., L) whose scores are all
    finite; NaN rows for the others (draws or pools that take another path)."""
    finite = np.isfinite(scores).all(axis=-1)
    ranks = np.full(scores.shape, np.nan)
    if finite.any():
        ranks[finite] = competition_ranks(scores[finite])
    return ranks


def _scores_once(sub: ResponseData, method: str) -> tuple[np.ndarray, bool]:
    """What ``bayesrank.rank(sub, method)`` ranks by: the rule's scores (False) or the
    ranks it gives itself (True), without building a Ranking."""
    spec = get_method(method)
    rule = getattr(spec.function, "__wrapped_rule__", None)
    if rule is None:  # not a ranking_method rule: take the public path
        return np.asarray(rank(sub, method).ranks, dtype=float), True
    out = rule(sub, **dict(spec.defaults))
    scores, details = out if isinstance(out, tuple) else (out, {})
    scores = np.asarray(scores, dtype=float)
    if scores.shape != (sub.L,):
        raise ValueError(f"{sub.L} models but scores of shape {scores.shape}")
    given = details.get("ranks")
    if given is not None:
        return np.asarray(given, dtype=float), True
    if not np.all(np.isfinite(scores)):
        competition_ranks(scores)  # raises, naming the values, as bayesrank.rank would
    return scores, False


def _per_draw(subs: Sequence[ResponseData], method: str) -> DrawRanks:
    """``method`` on every draw alone; the draws' scores are turned into ranks together."""
    out = DrawRanks([], [], 0, 0.0)
    start = time.perf_counter()
    scored: list[int] = []  # draws whose scores (finite) still need their ranks
    with warnings.catch_warnings(record=True) as caught:  # "always": every draw's count
        warnings.simplefilter("always")
        for d, sub in enumerate(subs):
            try:
                r, are_ranks = _scores_once(sub, method)
                why = None
                if not are_ranks:
                    scored.append(d)
            except SKIPPABLE as exc:
                r, why = None, f"{type(exc).__name__}: {exc}"
            out.ranks.append(r)
            out.reasons.append(why)
    out.warnings = len(caught)
    if scored:
        for d, r in zip(scored, competition_ranks(np.asarray([out.ranks[d] for d in scored])),
                        strict=True):
            out.ranks[d] = r
    out.seconds = time.perf_counter() - start
    return out


def rank_stack(
    stack: DrawStack,
    methods: Sequence[str],
    *,
    scores_cache: dict[str, np.ndarray] | None = None,
) -> dict[str, DrawRanks]:
    """Every method's ranks on every draw of ``stack``.

    Closed forms (:data:`BATCHED_RULES`) run once over the stack; every other rule, and
    the draws a stacked rule left NaN without a reason (:func:`stacked_scores`), run per
    draw on :meth:`DrawStack.subset` (reductions shared from the stack; that path reports
    why a draw fails).  ``scores_cache`` maps a method to precomputed scores (D, L) of this
    stack (the bootstrap passes pool restrictions of separable rules).
    """
    out: dict[str, DrawRanks] = {}
    subs: dict[int, ResponseData] = {}
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
        ranked = finite_ranks(scores) if scores is not None else np.full((stack.D, 1), np.nan)
        scored = ~np.isnan(ranked[:, 0])
        reasons: list[str | None] = [None] * stack.D if given is None else list(given)
        ranks: list[np.ndarray | None] = [r if ok else None for r, ok in zip(ranked, scored,
                                                                          strict=True)]
        # draws the rule neither scored nor explained take the per-draw path
        alone = np.flatnonzero(~scored & np.array([why is None for why in reasons]))
        for d in alone:
            if d not in subs:
                subs[d] = stack.subset(d)
        rest = _per_draw([subs[d] for d in alone], m)
        for d, r, why in zip(alone, rest.ranks, rest.reasons, strict=True):
            ranks[d], reasons[d] = r, why
        out[m] = DrawRanks(ranks, reasons, rest.warnings, time.perf_counter() - start)
    return out


def pair_signs(ranks: np.ndarray) -> np.ndarray:
    """``sign(r_i - r_j)`` of every pair i < j of every row of ``ranks`` (..., L): (..., pairs)."""
    r = np.asarray(ranks, dtype=float)
    i, j = np.triu_indices(r.shape[-1], 1)
    by_model = np.ascontiguousarray(np.moveaxis(r, -1, 0))  # whole rows per model: fast gathers
    return np.moveaxis(np.sign(by_model[i] - by_model[j]).astype(np.int8), 0, -1)


def signs_kendall_tau(sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """Kendall tau-b from :func:`pair_signs` of two rankings (rows of ``sa`` against ``sb``,
    one row or a row each); see :func:`batched_kendall_tau`."""
    n0 = sa.shape[-1]
    s = np.einsum("dp,dp->d" if sb.ndim == 2 else "dp,p->d", sa, sb, dtype=np.int64)
    tied_a = n0 - np.count_nonzero(sa, axis=-1)
    tied_b = n0 - np.count_nonzero(sb, axis=-1)
    denom = np.sqrt((n0 - tied_a) * (n0 - np.asarray(tied_b)).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = np.where(denom > 0, s / np.where(denom > 0, denom, 1.0), np.nan)
    return np.clip(tau, -1.0, 1.0)


def batched_kendall_tau(ranks: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Kendall tau-b of every row of ``ranks`` (D, L) against ``target`` (L,) or its row (D, L).

    ``tau_b = S / sqrt((n0 - n1)(n0 - n2))`` with ``S`` the sum over pairs of
    ``sign(a_i - a_j) sign(b_i - b_j)``, ``n0 = L(L-1)/2`` and ``n1``, ``n2`` the pairs
    tied in each ranking; NaN when either ranking is constant (as
    :func:`bayesrank.kendall_tau`).
    """
    return signs_kendall_tau(pair_signs(np.atleast_2d(ranks)), pair_signs(target))
