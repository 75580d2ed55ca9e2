"""Shared sufficient statistics of a response tensor, computed once per dataset.

Every ranking rule reads its input from here instead of re-deriving it from R:

=========================  ==============  ============================================
attribute                  shape           meaning
=========================  ==============  ============================================
``successes``              (L, M)          k_lm = sum_n R_lmn (binary data)
``trials``                 (L, M)          n_lm = number of observed trials
``category_counts``        (L, M, C+1)     trials of cell (l, m) with outcome k
``cell_utility``           (L, M)          mean utility w[R] over observed trials
``cell_grades``            (L, M)          the same, equal means made equal (comparisons)
``wins``                   (L, L)          W_ij: trials where i's utility beats j's
``ties``                   (L, L)          T_ij: trials where both are equal (0 on diag)
``question_wins``          (L, L)          #questions with u_im > u_jm (questions vote)
``question_ties``          (L, L)          #questions with u_im = u_jm (diag 0)
``question_preferences``   (L, L)          P_ij = question wins + 1/2 question ties
``setwise``                SetwiseEvents   grouped (winner set, loser set) events
``observed_cells``         ObservedCells   the cells with trials, model by model
``prior_category_counts``  (M|L,M, C+1)    category counts of R0
=========================  ==============  ============================================

Pairwise counts are taken over question-trials that both models observed, so on
complete data ``W + W.T + T == M * N`` off the diagonal (paper, Sec. 2.2).  They
are matrix products over one-hot indicator blocks, processed in column chunks so
peak memory stays a small multiple of the input.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from bayesrank.data.response import ResponseData

__all__ = [
    "ObservedCells", "Reductions", "SetwiseEvents", "category_counts", "pair_counts",
    "question_pair_counts", "setwise_events",
]

_CHUNK_COLUMNS = 16384
_CHUNK_ELEMENTS = 2**22  # pairwise comparisons per block of questions

# values closer than this (relative to max(1, max |value|)) are one value: rounding
NEAR_TIE_TOL = 1e-12


def merge_near_ties(values: np.ndarray, *, per_row: bool = False) -> np.ndarray:
    """``values`` with every chain of sorted neighbours within rounding set to its smallest.

    Mean utilities that are equal as numbers can differ in the last bit when they come
    from different category counts (with weights 0, 1/3, 2/3, 1: 1/3 + 2/3 against
    3 x 1/3), and an exact comparison then turns a tie into a win.  Neighbours closer
    than ``NEAR_TIE_TOL * max(1, max |value|)`` (as ``scores_to_ranks``) are merged;
    NaN (unobserved) stays NaN.  ``per_row``: each row of a 2-D array is merged on its
    own (the draws of a stack, so a draw's result does not depend on the others).
    """
    u = np.asarray(values, dtype=float)
    rows = u.reshape(u.shape[0], -1) if per_row else u.reshape(1, -1)
    finite = np.where(np.isnan(rows), np.inf, rows)
    order = np.argsort(finite, axis=1, kind="stable")
    ordered = np.take_along_axis(finite, order, axis=1)
    scale = np.max(np.abs(np.where(np.isinf(ordered), 0.0, ordered)), axis=1, initial=0.0)
    tol = NEAR_TIE_TOL * np.maximum(1.0, scale)[:, None]
    starts = np.ones(ordered.shape, dtype=bool)
    with np.errstate(invalid="ignore"):  # inf - inf between unobserved cells: NaN, a start
        starts[:, 1:] = ~(np.diff(ordered, axis=1) <= tol)
    index = np.where(starts, np.arange(ordered.shape[1]), 0)
    first = np.maximum.accumulate(index, axis=1)
    merged = np.empty_like(rows)
    np.put_along_axis(merged, order, np.take_along_axis(ordered, first, axis=1), axis=1)
    merged[np.isnan(rows)] = np.nan
    return merged.reshape(u.shape)


def category_counts(R: np.ndarray, n_categories: int, mask: np.ndarray | None = None
                    ) -> np.ndarray:
    """Trials of every cell (the last axis of ``R`` holds its trials; ``mask``: observed)
    with each outcome, int64 (..., C+1); leading axes may be a batch (the study's draws)."""
    out = np.empty(R.shape[:-1] + (n_categories,), dtype=np.int64)
    for c in range(n_categories):
        out[..., c] = np.count_nonzero(R == c if mask is None else (R == c) & mask, axis=-1)
    return out


def _gram(blocks_left, blocks_right, shape: tuple[int, ...], n_cols: int) -> np.ndarray:
    """sum_c left_c @ right_c.T over column chunks; blocks are callables on a column slice."""
    out = np.zeros(shape, dtype=np.float64)
    for start in range(0, n_cols, _CHUNK_COLUMNS):
        cols = slice(start, min(start + _CHUNK_COLUMNS, n_cols))
        left = blocks_left(cols)
        right = left if blocks_right is None else blocks_right(cols)
        out += left @ np.swapaxes(right, -1, -2)
    return np.rint(out)


def _frozen_pairs(wins: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise counts (..., L, L) with zero diagonals (a model never meets itself), read-only."""
    eye = np.eye(wins.shape[-1], dtype=bool)
    for a in (wins, ties):
        a[..., eye] = 0.0
        a.setflags(write=False)
    return wins, ties


def pair_counts(
    X: np.ndarray, weights: np.ndarray, mask: np.ndarray | None = None, *, binary: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """W and T of outcomes ``X`` (..., L, K) over K question-trials (``mask``: observed).

    ``W[..., i, j]`` counts the trials both observed where i's utility ``weights[X]``
    beats j's, ``T`` those where they are equal (diagonals 0).  ``binary`` complete data
    need one product: ``A_ij = #(both succeed)``.  Leading axes are a batch (the study's
    draws); :attr:`Reductions.wins` is the data's own, a batch of none.
    """
    lead, (L, n_cols) = X.shape[:-2], X.shape[-2:]
    shape = lead + (L, L)
    if binary and mask is None:
        A = _gram(lambda c: X[..., c].astype(np.float32), None, shape, n_cols)
        S = np.diagonal(A, axis1=-2, axis2=-1)[..., None]
        wins = S - A
        ties = A + (n_cols - S - np.swapaxes(S, -1, -2) + A)
        return _frozen_pairs(wins, ties)
    wins = np.zeros(shape)
    ties = np.zeros(shape)
    for level in np.unique(weights):
        at = np.flatnonzero(weights == level)
        below = np.flatnonzero(weights < level)

        def indicator(cats, c):
            block = np.isin(X[..., c], cats)
            if mask is not None:
                block &= mask[..., c]
            return block.astype(np.float32)

        ties += _gram(lambda c, at=at: indicator(at, c), None, shape, n_cols)
        if below.size:
            wins += _gram(lambda c, at=at: indicator(at, c),
                          lambda c, below=below: indicator(below, c), shape, n_cols)
    return _frozen_pairs(wins, ties)


def question_pair_counts(
    grades: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Wins and ties over voters of grades (..., L, V): the (weighted) number of voters with
    ``g_iv > g_jv`` and with ``g_iv = g_jv`` (NaN: not graded, no vote on its pairs).

    The question-level counts grade with :attr:`Reductions.cell_grades` (questions vote);
    ``voting.pairwise_counts`` with any ballots.  Unweighted grades of few levels take
    products of one-hot blocks, others blocks of rows (memory bounded either way); leading
    axes are a batch.  Writable, diagonals 0.
    """
    lead, (L, V) = grades.shape[:-2], grades.shape[-2:]
    levels, codes = np.unique(grades, return_inverse=True)
    K, codes = np.count_nonzero(~np.isnan(levels)), codes.reshape(grades.shape)  # NaN: K

    def at(c, relation=np.equal):  # one-hot column j: voter j // K at level j % K
        j = np.arange(c.start, c.stop)
        return relation(codes[..., j // K], j % K).astype(np.float32)

    if weights is None and K <= min(L, 16):  # more levels: comparing is faster
        wins = _gram(at, lambda c: at(c, np.less), lead + (L, L), V * K)
        seen = _gram(lambda c: (codes[..., c] < K).astype(np.float32), None, wins.shape, V)
        ties = seen - wins - np.swapaxes(wins, -1, -2)
    else:
        wins, ties = np.empty(lead + (L, L)), np.empty(lead + (L, L))
        step = max(1, _CHUNK_ELEMENTS // max(int(np.prod(lead)) * L * V, 1))
        for start in range(0, L, step):
            block, rows = grades[..., start:start + step, None, :], slice(start, start + step)
            for out, hit in ((wins, block > grades[..., None, :, :]),
                             (ties, block == grades[..., None, :, :])):
                out[..., rows, :] = (hit.sum(axis=-1, dtype=np.int32) if weights is None
                                     else hit @ weights)
    ties[..., np.eye(L, dtype=bool)] = 0.0
    return wins, ties


@dataclass(frozen=True)
class SetwiseEvents:
    """Question-trial events as (winner set U, loser set V), grouped.

    ``winners[e]`` and ``losers[e]`` are boolean rows over models; ``counts[e]``
    is how many question-trials produced exactly that event.  Degenerate events
    (nobody or everybody present won) carry no ranking information and are dropped.
    """

    winners: np.ndarray
    losers: np.ndarray
    counts: np.ndarray

    @property
    def n_unique(self) -> int:
        return int(self.counts.size)

    @property
    def n_events(self) -> int:
        return int(self.counts.sum())


def setwise_events(R: np.ndarray, mask: np.ndarray | None = None) -> SetwiseEvents:
    """Grouped events of binary outcomes ``R`` (L, K) over K question-trials (``mask``:
    observed), in the byte order of the packed columns (:attr:`Reductions.setwise`)."""
    # Pack each question-trial column's winner bits (and presence bits when some
    # trials are missing) into one byte string, then group identical columns.
    parts = [np.packbits(R.view(np.bool_), axis=0)]
    if mask is not None:
        parts.append(np.packbits(mask, axis=0))
    key = np.ascontiguousarray(np.concatenate(parts, axis=0).T)
    rows = key.view(np.dtype((np.void, key.shape[1]))).ravel()
    _, first, counts = np.unique(rows, return_index=True, return_counts=True)
    winners = R[:, first].T.astype(bool)
    if mask is None:
        losers = ~winners
    else:
        present = mask[:, first].T
        winners &= present
        losers = present & ~winners
    keep = winners.any(axis=1) & losers.any(axis=1)
    return SetwiseEvents(
        winners=winners[keep], losers=losers[keep], counts=counts[keep].astype(np.int64)
    )


@dataclass(frozen=True)
class ObservedCells:
    """The observed cells (trials > 0) of an (L, M) table, model by model: what an
    analysis sums over where most cells are missing, so that it costs the observed cells,
    not L x M (the PPC's statistics, the Laplace route's search; the NUTS likelihoods' list
    of cells, :mod:`models.likelihoods`).

    A value per observed cell is an array (..., cells) in this order: a model's cells are
    contiguous (its sums are ``np.add.reduceat``), a question's are gathered by
    ``np.bincount``."""

    shape: tuple[int, int]
    rows: np.ndarray  # each cell's model (cells,)
    columns: np.ndarray  # each cell's question (cells,)
    per_model: np.ndarray  # observed cells of each model (L,)
    per_question: np.ndarray  # of each question (M,)

    @classmethod
    def of(cls, trials: np.ndarray) -> ObservedCells:
        """The cells of the (L, M) ``trials`` table with trials > 0."""
        observed = np.asarray(trials) > 0
        rows, columns = np.nonzero(observed)
        return cls(observed.shape, rows, columns, np.bincount(rows, minlength=observed.shape[0]),
                   np.bincount(columns, minlength=observed.shape[1]))

    @property
    def size(self) -> int:
        return int(self.rows.size)

    @property
    def every_cell(self) -> bool:
        return self.size == self.shape[0] * self.shape[1]

    @cached_property
    def flat(self) -> np.ndarray:
        """The cells' indices in the table read row by row (made once: the PPC reads it
        for every chunk of draws)."""
        return self.rows * self.shape[1] + self.columns

    @cached_property
    def starts(self) -> np.ndarray:
        """Where each model's cells start, and the end (L + 1,)."""
        return np.concatenate([[0], np.cumsum(self.per_model)])

    def gather(self, table: np.ndarray) -> np.ndarray:
        """The observed cells' values (..., cells) of a table (..., L, M)."""
        return table[..., self.rows, self.columns]

    def table(self, values: np.ndarray) -> np.ndarray:
        """Cell values (cells, ...) laid out in an (L, M, ...) table, 0 at the missing cells."""
        out = np.zeros(self.shape + values.shape[1:], dtype=np.result_type(values, float))
        out[self.rows, self.columns] = values
        return out

    def by_model(self, values: np.ndarray, part: slice = slice(None)) -> np.ndarray:
        """``values`` (..., cells) summed over each model's cells (..., L); ``part``: the
        values are those of the cells in that slice only."""
        rows = self.rows[part]
        out = np.zeros((*values.shape[:-1], self.shape[0]))
        if not rows.size:
            return out
        if part == slice(None):  # every cell: the models' starts, made once
            some = self.per_model > 0
            out[..., some] = np.add.reduceat(values, self.starts[:-1][some], axis=-1)
        else:
            starts = np.flatnonzero(np.diff(rows, prepend=-1))  # where a model's cells start
            out[..., rows[starts]] = np.add.reduceat(values, starts, axis=-1)
        return out

    def by_question(self, values: np.ndarray) -> np.ndarray:
        """``values`` (..., cells) summed over each question's cells (..., M)."""
        rows = values.reshape(-1, values.shape[-1])
        sums = [np.bincount(self.columns, weights=row, minlength=self.shape[1]) for row in rows]
        return np.reshape(sums, (*values.shape[:-1], self.shape[1]))

    def of_model(self, per_model: np.ndarray) -> np.ndarray:
        """Each cell's model's value of ``per_model`` (..., L): (..., cells)."""
        return np.repeat(per_model, self.per_model, axis=-1)

    def of_question(self, per_question: np.ndarray) -> np.ndarray:
        """Each cell's question's value of ``per_question`` (..., M): (..., cells)."""
        return np.take(per_question, self.columns, axis=-1)


class Reductions:
    """Lazily computed, cached reductions of one :class:`~bayesrank.ResponseData`."""

    def __init__(self, data: ResponseData) -> None:
        self.data = data

    # -- cell-level --------------------------------------------------------------------
    @cached_property
    def trials(self) -> np.ndarray:
        """n_lm: observed trials per model-question cell, int64 (L, M)."""
        d = self.data
        if d.mask is None:
            return np.full((d.L, d.M), d.N, dtype=np.int64)
        return d.mask.sum(axis=2, dtype=np.int64)

    @cached_property
    def observed_cells(self) -> ObservedCells:
        """The cells with at least one observed trial, model by model."""
        return ObservedCells.of(self.trials)

    @cached_property
    def successes(self) -> np.ndarray:
        """k_lm = sum_n R_lmn over observed trials, int64 (L, M); binary data only."""
        self.data.require_binary("successes k_lm")
        return self.data.R.sum(axis=2, dtype=np.int64)  # masked cells hold 0

    @cached_property
    def category_counts(self) -> np.ndarray:
        """Trials per cell with each outcome, int64 (L, M, C+1)."""
        d = self.data
        if d.is_binary:
            k = self.successes
            return np.stack([self.trials - k, k], axis=-1)
        return category_counts(d.R, d.n_categories, d.mask)

    @cached_property
    def cell_utility(self) -> np.ndarray:
        """Mean utility of each cell, sum_k w_k n_lmk / n_lm; NaN for unobserved cells."""
        n = self.trials
        total = self.category_counts @ self.data.weights
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, total / np.maximum(n, 1), np.nan)

    @cached_property
    def observed_score(self) -> np.ndarray:
        """Each model's observed accuracy (weighted score with categories), exactly.

        ``sum_{m,n observed} w_{R_lmn} / (number of observed trials of l)``: the share
        of its trials a model solved (the mean category weight of its outcomes), the
        number a benchmark reports, before any model or prior.
        """
        total = (self.category_counts @ self.data.weights).sum(axis=1)
        out = total / self.trials.sum(axis=1)
        out.setflags(write=False)
        return out

    @cached_property
    def cell_grades(self) -> np.ndarray:
        """:attr:`cell_utility` with means equal up to rounding made equal
        (:func:`merge_near_ties`): what comparisons between cells read (question-level
        preferences, Majority Judgment's grades)."""
        grades = merge_near_ties(self.cell_utility)
        grades.setflags(write=False)
        return grades

    @cached_property
    def solve_rate(self) -> np.ndarray:
        """p_hat_lm = k_lm / n_lm (binary data); NaN for unobserved cells."""
        self.data.require_binary("solve rates")
        return self.cell_utility

    # -- pairwise ---------------------------------------------------------------------
    @cached_property
    def _pairwise(self) -> tuple[np.ndarray, np.ndarray]:
        d = self.data
        mask = None if d.mask is None else d.mask.reshape(d.L, -1)
        return pair_counts(d.R.reshape(d.L, -1), d.weights, mask, binary=d.is_binary)

    @property
    def wins(self) -> np.ndarray:
        """W_ij: question-trials where model i's outcome beats model j's (float64, exact)."""
        return self._pairwise[0]

    @property
    def ties(self) -> np.ndarray:
        """T_ij: question-trials where models i and j tie (diagonal 0)."""
        return self._pairwise[1]

    @cached_property
    def comparisons(self) -> np.ndarray:
        """W + W.T + T: co-observed question-trials of each pair."""
        return self.wins + self.wins.T + self.ties

    @cached_property
    def _question_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        d = self.data
        # k_lm orders complete binary cells like k_lm / N, with no rounding to merge
        return _frozen_pairs(*question_pair_counts(self.successes if d.is_binary and d.complete
                                                   else self.cell_grades))

    @property
    def question_wins(self) -> np.ndarray:
        """W^(q)_ij = #{m: u_im > u_jm}: questions (as voters) preferring i to j."""
        return self._question_pairs[0]

    @property
    def question_ties(self) -> np.ndarray:
        """T^(q)_ij = #{m: u_im = u_jm} over questions both models observed (diag 0)."""
        return self._question_pairs[1]

    @cached_property
    def question_preferences(self) -> np.ndarray:
        """P_ij = #{m: u_im > u_jm} + 1/2 #{m: u_im = u_jm}, over questions both observed.

        ``u_lm`` is the cell's mean utility (the solve rate k_lm / n_lm for binary
        data): each question acts as a voter ranking the models by it.
        """
        P = self.question_wins + 0.5 * self.question_ties
        P.setflags(write=False)
        return P

    # -- setwise ----------------------------------------------------------------------
    @cached_property
    def setwise(self) -> SetwiseEvents:
        """Grouped (winner set, loser set) events over question-trials (binary data)."""
        d = self.data
        d.require_binary("setwise events")
        return setwise_events(d.R.reshape(d.L, -1),
                              None if d.mask is None else d.mask.reshape(d.L, -1))

    # -- prior --------------------------------------------------------------------------
    @cached_property
    def prior_category_counts(self) -> np.ndarray | None:
        """Category counts of R0: (M, C+1) if shared, (L, M, C+1) per model; None without R0."""
        R0 = self.data.R0
        return None if R0 is None else category_counts(R0, self.data.n_categories)

    @cached_property
    def prior_successes(self) -> np.ndarray | None:
        """Successes in R0 per question: (M,) shared or (L, M) per model (binary data)."""
        counts = self.prior_category_counts
        if counts is None:
            return None
        self.data.require_binary("prior successes")
        return counts[..., 1]
