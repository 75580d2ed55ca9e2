"""Pairwise comparisons as data: battles between models, or their win and tie counts.

Chatbot Arena, LMArena, Arena-Hard and human preference studies record *battles*: two
models answer one prompt and a judge picks a winner or calls a tie.  Their sufficient
statistics for every paired-comparison rule are two L x L count matrices,

    W_ij = battles that i won against j,        T_ij = T_ji = battles of i and j tied,

which :class:`PairwiseData` holds with the models' names (and, when built from a
battles table, the battles in their order, which the sequential ratings Elo, Glicko and
TrueSkill play through).  It is the pairwise twin of :class:`~bayesrank.ResponseData`:
``bayesrank.rank(pairs, method)`` runs every rule that reads only ``W`` and ``T``
(:data:`PAIRWISE_RULES`, the ``pairwise`` column of :func:`bayesrank.methods`), and
``bayesrank.fit(pairs, "bradley_terry" | "davidson")`` samples the Bayesian
Bradley-Terry / Davidson posterior from the counts.  Rules that read per-question
outcomes (accuracy, Pass@k, Bayes@N, IRT, Majority Judgment, Davidson-Luce's setwise
events) have nothing to read here and say so.

The rules see ``pairs.reductions`` exactly as they see a tensor's reductions: ``wins``
and ``ties`` are the counts; the voting rules' preference counts (questions as voters
for a tensor) are the battles as voters, ``question_wins = W``, ``question_ties = T``,
``P = W + T / 2``; the setwise events of Bradley-Terry-Luce are the decisive battles
(one winner, one loser; a tie has no loser and carries no setwise event).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr
from scipy.sparse.csgraph import connected_components

from bayesrank.data.reductions import SetwiseEvents
from bayesrank.data.response import _names
from bayesrank.data.tables import read_table
from bayesrank.errors import DataError, LoadError

__all__ = [
    "PAIRWISE_MODELS", "PAIRWISE_RULES", "Battles", "PairwiseData", "from_battles",
    "load_battles", "load_pairwise",
]

#: Winner codes of a battle stream.
A_WINS, B_WINS, TIE, BOTH_BAD = 0, 1, 2, 3

#: The winner values of a battles table, by the columns naming its two sides
#: (LMArena / FastChat's ``model_a, model_b``; evalica's ``left, right``).
WINNER_VALUES: Mapping[tuple[str, str], Mapping[str, int]] = {
    ("model_a", "model_b"): {"model_a": A_WINS, "model_b": B_WINS, "tie": TIE,
                             "tie (bothbad)": BOTH_BAD, "both_bad": BOTH_BAD},
    ("left", "right"): {"left": A_WINS, "right": B_WINS, "tie": TIE, "draw": TIE,
                        "both_bad": BOTH_BAD},
}

#: Base rules (function names) that read only the win and tie counts, and the sequential
#: ratings, which play the battles in order.  Every other rule needs a response tensor.
PAIRWISE_RULES = frozenset({
    "bradley_terry", "bradley_terry_davidson", "rao_kupper", "bayesian_mcmc",
    "plackett_luce", "bradley_terry_luce",
    "pagerank", "spectral", "alpharank", "nash", "rank_centrality", "serial_rank",
    "hodge_rank",
    "borda", "copeland", "win_rate", "minimax", "schulze", "ranked_pairs", "kemeny_young",
    "nanson", "baldwin",
    "elo", "glicko", "trueskill",
})
SEQUENTIAL_RULES = frozenset({"elo", "glicko", "trueskill"})
_TENSOR_READS = {
    "davidson_luce": "setwise events of several models, where a tie of two has no loser "
                     "and a battle's tie is no event; bradley_terry_davidson models battles' "
                     "ties",
    "majority_judgment": "a grade of every model on every question",
}

#: Bayesian models that read only the counts (``bayesrank.fit``).
PAIRWISE_MODELS = ("bradley_terry", "davidson")

TieHandling = Literal["keep", "drop"]
BothBad = Literal["tie", "drop", "error"]


@dataclass(frozen=True)
class Battles:
    """Battles in their order: model indices ``a``, ``b`` and the winner code of each.

    ``outcome`` is 0 (``a`` won), 1 (``b`` won), 2 (tie) or 3 (tie, both bad).
    ``covariates`` (battles, K), when given: each battle's covariate differences
    ``x_a - x_b`` (side ``a``'s value minus side ``b``'s, e.g. response lengths), named by
    ``covariate_names``; what the contextual models of :mod:`models.contextual` read.
    """

    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    covariates: np.ndarray | None = None
    covariate_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        x = self.covariates
        if x is None and not self.covariate_names:
            return
        if x is None or x.ndim != 2 or x.shape != (self.a.size, len(self.covariate_names)):
            raise DataError(f"battle covariates must be (battles, covariates) = "
                            f"({self.a.size}, {len(self.covariate_names)}), got "
                            f"{None if x is None else x.shape}")

    def __len__(self) -> int:
        return int(self.a.size)


def _counts(values: Any, name: str) -> np.ndarray:
    """``values`` as a read-only float64 (L, L) array of whole, non-negative counts."""
    if isinstance(values, pd.DataFrame):
        values = values.to_numpy()
    arr = np.asarray(values)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number)
                                   or np.issubdtype(arr.dtype, np.bool_)):
        raise DataError(f"{name} must be a numeric (L, L) count matrix, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise DataError(f"{name} must be a square (L, L) count matrix, got shape {arr.shape}")
    arr = arr.astype(np.float64)
    if not np.isfinite(arr).all():
        where = tuple(int(k) for k in np.argwhere(~np.isfinite(arr))[0])
        raise DataError(f"{name} has a NaN or infinite count at {where}; counts are whole "
                        "numbers of battles (0 where two models never met)")
    if (arr < 0).any():
        where = tuple(int(k) for k in np.argwhere(arr < 0)[0])
        raise DataError(f"{name} has a negative count {arr[where]:g} at {where}; counts are "
                        "numbers of battles, >= 0")
    if (arr != np.round(arr)).any():
        where = tuple(int(k) for k in np.argwhere(arr != np.round(arr))[0])
        raise DataError(f"{name} has a fractional count {arr[where]:g} at {where}; counts are "
                        "whole numbers of battles (a tie is a count of T, not half a win)")
    arr = np.array(arr, order="C")
    arr.setflags(write=False)
    return arr


class PairwiseReductions:
    """What the ranking rules read from :class:`PairwiseData`: its counts, named as a
    tensor's :class:`~bayesrank.data.reductions.Reductions` name them."""

    def __init__(self, data: PairwiseData) -> None:
        self.data = data

    @property
    def wins(self) -> np.ndarray:
        """W_ij: battles i won against j."""
        return self.data.wins

    @property
    def ties(self) -> np.ndarray:
        """T_ij: battles of i and j tied (symmetric, diagonal 0)."""
        return self.data.ties

    @cached_property
    def comparisons(self) -> np.ndarray:
        """``W + W.T + T``: battles of each pair."""
        out = self.wins + self.wins.T + self.ties
        out.setflags(write=False)
        return out

    # the voting rules' ballots: each battle is a voter ranking its two models
    question_wins = wins
    question_ties = ties

    @cached_property
    def question_preferences(self) -> np.ndarray:
        """``P = W + T / 2``: battles preferring i to j, a tie half to each."""
        out = self.wins + 0.5 * self.ties
        out.setflags(write=False)
        return out

    @cached_property
    def setwise(self) -> SetwiseEvents:
        """Decisive battles as setwise events (winner set {i}, loser set {j}, count W_ij)."""
        i, j = np.nonzero(self.wins)
        eye = np.eye(self.data.L, dtype=bool)
        return SetwiseEvents(winners=eye[i], losers=eye[j],
                             counts=self.wins[i, j].astype(np.int64))

    @cached_property
    def observed_score(self) -> np.ndarray:
        """Each model's observed win rate, a tie counting half: ``sum_j P_ij / n_i``."""
        out = self.question_preferences.sum(axis=1) / self.comparisons.sum(axis=1)
        out.setflags(write=False)
        return out


class PairwiseData:
    """Validated, immutable pairwise comparisons: win and tie counts with model names.

    Parameters
    ----------
    wins : array_like, shape (L, L)
        ``W[i, j]``: battles model i won against model j (whole numbers >= 0, diagonal 0).
    ties : array_like, shape (L, L), optional
        ``T[i, j] = T[j, i]``: tied battles of i and j.  Default: no ties.
    models : sequence of str, optional
        Unique names; default ``model_0``, ``model_1``, ...
    battles : Battles, optional
        The battles in order (set by :func:`from_battles`): what Elo, Glicko and
        TrueSkill play through.  Counts alone have no order, so those rules refuse them.

    Raises
    ------
    DataError
        On a non-square or mismatched shape, a NaN, negative or fractional count, a
        battle of a model with itself (non-zero diagonal), asymmetric ties, fewer than two
        models, or a disconnected comparison graph (models that never meet the others,
        directly or through opponents, cannot be put on one scale).
    """

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, wins: Any, ties: Any = None, *, models: Sequence[Any] | None = None,
                 battles: Battles | None = None) -> None:
        W = _counts(wins, "wins")
        T = np.zeros_like(W) if ties is None else _counts(ties, "ties")
        if T.shape != W.shape:
            raise DataError(f"ties has shape {T.shape} but wins has shape {W.shape}")
        L = W.shape[0]
        names = _names(models, L, "model_", "model")
        for M, what in ((W, "wins"), (T, "ties")):
            diagonal = np.flatnonzero(np.diag(M))
            if diagonal.size:
                raise DataError(f"{what} has {int(M[diagonal[0], diagonal[0]])} battle(s) of "
                                f"{names[diagonal[0]]!r} against itself on its diagonal; drop "
                                "self-battles (model_a == model_b) before counting")
        if not np.array_equal(T, T.T):
            i, j = (int(k) for k in np.argwhere(T != T.T)[0])
            raise DataError(f"ties must be symmetric (a tie of i and j is one battle of both), "
                            f"but T[{i}, {j}] = {T[i, j]:g} and T[{j}, {i}] = {T[j, i]:g}; "
                            "pass T + T.T if each tie was counted once")
        if L < 2:
            raise DataError(f"pairwise data need at least two models, got {L}")
        _require_connected(W + W.T + T, names)
        self._wins, self._ties, self._models = W, T, names
        self._battles = battles

    # -- contents ------------------------------------------------------------------------
    @property
    def wins(self) -> np.ndarray:
        """W (L, L), read-only float64."""
        return self._wins

    @property
    def ties(self) -> np.ndarray:
        """T (L, L), symmetric, read-only float64."""
        return self._ties

    @property
    def models(self) -> tuple[str, ...]:
        return self._models

    @property
    def L(self) -> int:
        return len(self._models)

    @property
    def battles(self) -> Battles | None:
        """The battles in order, when built from a battles table; None for counts."""
        return self._battles

    @property
    def covariate_names(self) -> tuple[str, ...]:
        """Names of the battles' covariates (``from_battles(..., covariates=...)``); empty
        without them.  With covariates ``bayesrank.fit`` fits the contextual models."""
        return () if self._battles is None else self._battles.covariate_names

    @property
    def n_battles(self) -> int:
        """Battles counted in W and T."""
        return int(self._wins.sum() + np.triu(self._ties, 1).sum())

    @cached_property
    def reductions(self) -> PairwiseReductions:
        return PairwiseReductions(self)

    def __repr__(self) -> str:
        ties = int(np.triu(self._ties, 1).sum())
        order = "" if self._battles is None else ", in order"
        style = (f"; covariates {', '.join(self.covariate_names)}" if self.covariate_names
                 else "")
        return (f"PairwiseData({self.L} models, {self.n_battles:,} battles{order}: "
                f"{int(self._wins.sum()):,} decisive, {ties:,} ties{style})")

    def to_frame(self) -> pd.DataFrame:
        """One row per unordered pair that met: ``model_a, model_b, wins_a, wins_b, ties``."""
        i, j = np.nonzero(np.triu(self.reductions.comparisons, 1))
        names = np.asarray(self._models, dtype=object)
        return pd.DataFrame({"model_a": names[i], "model_b": names[j],
                             "wins_a": self._wins[i, j].astype(np.int64),
                             "wins_b": self._wins[j, i].astype(np.int64),
                             "ties": self._ties[i, j].astype(np.int64)})

    def to_xarray(self) -> xr.Dataset:
        """``wins`` and ``ties`` on dims ``(llm, llm_other)`` and, when known, the battles
        (``battle_a``, ``battle_b``, ``battle_outcome`` on dim ``battle``, and
        ``battle_covariates`` on ``(battle, covariate)`` when they have covariates); what a
        saved posterior keeps of its data (:meth:`from_xarray` reads it back)."""
        pair = ("llm", "llm_other")
        data: dict[str, Any] = {"wins": (pair, self._wins), "ties": (pair, self._ties)}
        coords: dict[str, list] = {"llm": list(self._models), "llm_other": list(self._models)}
        battles = self._battles
        if battles is not None:
            data.update(battle_a=("battle", battles.a), battle_b=("battle", battles.b),
                        battle_outcome=("battle", battles.outcome))
        if battles is not None and battles.covariates is not None:
            data["battle_covariates"] = (("battle", "covariate"), battles.covariates)
            coords["covariate"] = list(battles.covariate_names)
        return xr.Dataset(data, coords=coords,
                          attrs={"bayesrank_format": 1, "bayesrank_data": "pairwise"})

    @classmethod
    def from_xarray(cls, ds: xr.Dataset) -> PairwiseData:
        """The PairwiseData that :meth:`to_xarray` wrote."""
        battles = None
        if "battle_a" in ds:
            style = ((np.asarray(ds["battle_covariates"].values, dtype=np.float64),
                      tuple(str(c) for c in ds["covariate"].values))
                     if "battle_covariates" in ds else (None, ()))
            battles = Battles(*(np.asarray(ds[f"battle_{k}"].values)
                                for k in ("a", "b", "outcome")), *style)
        return cls(ds["wins"].values, ds["ties"].values,
                   models=[str(m) for m in ds["llm"].values], battles=battles)

    # -- what the rules and models may read ----------------------------------------------
    def require_models(self, what: str = "a ranking") -> None:
        """Always two models or more (checked when built); the twin of ResponseData's."""

    def require_binary(self, what: str) -> None:
        """A battle's outcome is a win, a loss or a tie: nothing to binarize."""

    def for_rule(self, rule: str) -> PairwiseData:
        """``self`` when ranking rule ``rule`` reads only pairwise counts (or, for the
        sequential ratings, the battles in order); else the one-line error saying why."""
        if rule not in PAIRWISE_RULES:
            reads = _TENSOR_READS.get(rule, "each model's outcomes per question")
            raise DataError(
                f"{rule} needs the L x M x N response tensor (it reads {reads}), which "
                "pairwise battles do not have; rank battles with a "
                "pairwise rule (bayesrank.methods().query('pairwise') lists them, e.g. "
                "bradley_terry, bradley_terry_davidson, elo)")
        if rule in SEQUENTIAL_RULES and self._battles is None:
            raise DataError(
                f"{rule} plays the battles one after another, but these pairwise data are "
                "counts without an order; build them from the battles table "
                "(bayesrank.from_battles(frame) or bayesrank.load('battles.csv')), or use an "
                "order-free rule such as bradley_terry")
        return self

    def require_model(self, model: str) -> PairwiseData:
        """``self`` when Bayesian model ``model`` reads only the counts, else why not."""
        if model not in PAIRWISE_MODELS:
            raise DataError(
                f"model {model!r} needs the L x M x N response tensor (it models outcomes per "
                "question), which pairwise battles do not have; fit pairwise data with "
                f"{' or '.join(repr(m) for m in PAIRWISE_MODELS)}")
        return self

    def event_stream(self) -> tuple[np.ndarray, np.ndarray]:
        """The battles as the sequential ratings' match stream, one event per battle.

        Row ``e`` is present for its two models only; a win is (1, 0), a tie (1, 1) and a
        both-bad tie (0, 0), so the ratings' ``tie_handling="correct_draw_only"`` plays
        ties and skips both-bad ties, ``"draw"`` plays both and ``"skip"`` neither.
        """
        battles = self.for_rule("elo")._battles
        assert battles is not None
        E, rows = len(battles), np.arange(len(battles))
        outcomes = np.zeros((E, self.L), dtype=np.int8)
        present = np.zeros((E, self.L), dtype=bool)
        code = battles.outcome
        outcomes[rows, battles.a] = (code == A_WINS) | (code == TIE)
        outcomes[rows, battles.b] = (code == B_WINS) | (code == TIE)
        present[rows, battles.a] = present[rows, battles.b] = True
        return outcomes, present


def _require_connected(comparisons: np.ndarray, names: Sequence[str]) -> None:
    """A DataError naming the models cut off when the comparison graph is disconnected."""
    n, labels = connected_components(comparisons > 0, directed=False)
    if n <= 1:
        return
    sizes = np.bincount(labels)
    main = int(np.argmax(sizes))
    apart = [names[k] for k in np.flatnonzero(labels != main)]
    shown = ", ".join(repr(m) for m in apart[:5]) + (", ..." if len(apart) > 5 else "")
    raise DataError(
        f"the comparison graph is disconnected ({n} groups of models that never meet): "
        f"{len(apart)} model(s) ({shown}) have no chain of battles to the other "
        f"{int(sizes[main])}, so no rule can put them on one scale; drop their battles or "
        "add battles linking the groups")


# -- battles tables ------------------------------------------------------------------------
def battle_columns(columns: Sequence[Any]) -> tuple[str, str] | None:
    """The two side columns of a battles table (``model_a, model_b`` or ``left, right``,
    with ``winner``), or None when ``columns`` are not a battles table's."""
    names = set(map(str, columns))
    if "winner" not in names:
        return None
    for sides in WINNER_VALUES:
        if set(sides) <= names:
            return sides
    return None


def from_battles(
    frame: pd.DataFrame,
    *,
    ties: TieHandling = "keep",
    both_bad: BothBad = "tie",
    models: Sequence[Any] | None = None,
    covariates: Sequence[str] | None = None,
    source: str = "the battles table",
) -> PairwiseData:
    """Pairwise data from a table of battles, one row per battle.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``model_a, model_b, winner`` with winner one of ``model_a``, ``model_b``,
        ``tie``, ``tie (bothbad)`` or ``both_bad`` (LMArena / FastChat), or evalica's
        ``left, right, winner`` with winner ``left``, ``right``, ``tie`` / ``draw`` or
        ``both_bad``.  Other columns are ignored.  Rows are battles in the order the
        sequential ratings (Elo, Glicko, TrueSkill) play them: sort by time first.
    ties : {"keep", "drop"}
        ``"keep"``: ties are counted in ``T`` (Davidson and Rao-Kupper model them,
        Bradley-Terry ignores them, the voting rules count half a win each);
        ``"drop"``: tied battles are left out altogether.
    both_bad : {"tie", "drop", "error"}
        A tie where the judge found both answers bad (``tie (bothbad)``): ``"tie"``
        counts it as a tie (LMArena's own leaderboard does), ``"drop"`` leaves it out
        (leaderbot's default), ``"error"`` refuses a table that has any.  With
        ``ties="drop"`` every tie is dropped whatever this says.
    models : sequence of str, optional
        The models and their order; default: every model named in the table, sorted.
        A battle of a model not listed is an error.
    covariates : sequence of str, optional
        Per-battle covariates to control for ("style control": response length, markdown
        counts, ...), by name.  Covariate ``length`` is read from the two columns
        ``length_a`` and ``length_b`` (``length_left`` and ``length_right`` for evalica's
        sides), each side's value, and enters as the difference ``x_a - x_b``; or, without
        them, from one column ``length`` already holding that difference for the battle
        (as arena-rank's ``feature_cols`` and LMArena's normalised style features do).
        Every value must be a finite number, and each covariate must vary between battles
        and not be a linear combination of the others.  With covariates,
        ``bayesrank.fit(pairs, "bradley_terry" | "davidson")`` fits the contextual model
        (:mod:`models.contextual`).
    source : str
        How errors name the table.

    Returns
    -------
    PairwiseData
        ``W``, ``T`` and the battles kept, in their order.

    Raises
    ------
    DataError
        Missing columns, an empty or missing model name, an unknown winner value, a
        battle of a model with itself, or a disconnected comparison graph; for
        covariates: missing or non-numeric columns, a NaN or infinite value, a covariate
        that does not vary, or covariates that are linearly dependent.
    """
    _check_tie_options(ties, both_bad)
    covariate_names = _covariate_names(covariates)
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"from_battles takes a pandas DataFrame, got {type(frame).__name__}")
    sides = battle_columns(frame.columns)
    if sides is None:
        raise DataError(f"{source} has columns {list(map(str, frame.columns))[:8]}; a battles "
                        "table needs model_a, model_b, winner (LMArena) or left, right, "
                        "winner (evalica)")
    if not len(frame):
        raise DataError(f"{source} has no battles")
    left, right = (frame[c] for c in sides)
    for column, values in zip(sides, (left, right), strict=True):
        empty = values.isna() | (values.astype(str).str.strip() == "")
        if empty.any():
            raise DataError(f"{source}: row {int(np.flatnonzero(empty)[0])} has no model in "
                            f"column {column!r}; every battle names both models")
    a_names, b_names = left.astype(str).to_numpy(), right.astype(str).to_numpy()
    allowed = WINNER_VALUES[sides]
    winner = frame["winner"].astype(str).str.strip().str.lower()
    unknown = ~winner.isin(list(allowed))
    if unknown.any():
        row = int(np.flatnonzero(unknown)[0])
        raise DataError(f"{source}: row {row} has winner {frame['winner'].iloc[row]!r}; "
                        f"with columns {sides[0]}, {sides[1]} the winner is one of "
                        f"{', '.join(allowed)}")
    code = winner.map(allowed).to_numpy(np.int8)
    same = a_names == b_names
    if same.any():
        row = int(np.flatnonzero(same)[0])
        raise DataError(f"{source}: row {row} is a battle of {a_names[row]!r} against itself; "
                        "drop self-battles")
    if both_bad == "error" and (code == BOTH_BAD).any():
        row = int(np.flatnonzero(code == BOTH_BAD)[0])
        raise DataError(f"{source}: row {row} is a both-bad tie and both_bad='error'; pass "
                        "both_bad='tie' to count such ties as ties or 'drop' to leave them out")
    keep = np.ones(code.size, dtype=bool)
    if ties == "drop":
        keep &= code < TIE
    elif both_bad == "drop":
        keep &= code != BOTH_BAD
    x = (None if not covariate_names else
         _battle_covariates(frame, covariate_names, sides, keep, source))
    a_names, b_names, code = a_names[keep], b_names[keep], code[keep]
    if not code.size:
        raise DataError(f"{source}: no battle is left after dropping ties (ties={ties!r}, "
                        f"both_bad={both_bad!r})")
    names = sorted(set(a_names) | set(b_names)) if models is None else [str(m) for m in models]
    index = {m: k for k, m in enumerate(names)}
    if len(index) != len(names):
        raise DataError(f"models= names a model twice: {names[:8]}")
    stray = sorted((set(a_names) | set(b_names)) - set(index))
    if stray:
        raise DataError(f"{source} has battles of {stray[:5]}, not among models=; add them "
                        "or drop their battles")
    a = np.fromiter((index[m] for m in a_names), np.int64, a_names.size)
    b = np.fromiter((index[m] for m in b_names), np.int64, b_names.size)
    L = len(names)
    W, T = np.zeros((L, L)), np.zeros((L, L))
    decisive = code < TIE
    winner_idx = np.where(code == A_WINS, a, b)[decisive]
    loser_idx = np.where(code == A_WINS, b, a)[decisive]
    np.add.at(W, (winner_idx, loser_idx), 1.0)
    np.add.at(T, (a[~decisive], b[~decisive]), 1.0)
    T = T + T.T
    return PairwiseData(W, T, models=names, battles=Battles(a, b, code, x, covariate_names))


def _covariate_names(covariates: Any) -> tuple[str, ...]:
    """``covariates=`` as a tuple of unique names (empty for None)."""
    if covariates is None:
        return ()
    if isinstance(covariates, str) or not isinstance(covariates, Sequence):
        raise DataError(f"covariates must be a list of names, got {covariates!r}; write "
                        f"covariates=[{covariates!r}] for one")
    names = tuple(str(c) for c in covariates)
    if not names:
        raise DataError("covariates=[] names no covariate; leave it out (None) to rank "
                        "without style control")
    if len(set(names)) != len(names):
        raise DataError(f"covariates names a covariate twice: {list(names)}")
    return names


#: The column suffixes of each side's covariate values, by the battles table's sides.
SIDE_SUFFIXES = {("model_a", "model_b"): ("_a", "_b"), ("left", "right"): ("_left", "_right")}


def _battle_covariates(frame: pd.DataFrame, names: tuple[str, ...], sides: tuple[str, str],
                       keep: np.ndarray, source: str) -> np.ndarray:
    """The kept battles' covariate differences x_a - x_b (battles, K), validated."""
    suffix_a, suffix_b = SIDE_SUFFIXES[sides]
    columns = set(map(str, frame.columns))
    rows = np.flatnonzero(keep)
    x = np.empty((rows.size, len(names)))
    for k, name in enumerate(names):
        pair = (f"{name}{suffix_a}", f"{name}{suffix_b}")
        if set(pair) <= columns:
            x[:, k] = (_numeric(frame, pair[0], rows, source)
                       - _numeric(frame, pair[1], rows, source))
        elif name in columns:
            x[:, k] = _numeric(frame, name, rows, source)
        else:
            raise DataError(f"{source} has no column for covariate {name!r}: give each side's "
                            f"value in {pair[0]} and {pair[1]}, or the difference (side "
                            f"{sides[0]} minus side {sides[1]}) in {name}")
    spread = x.std(axis=0)
    flat = np.flatnonzero(spread == 0)
    if flat.size:
        name = names[int(flat[0])]
        raise DataError(f"{source}: covariate {name!r} has the same difference x_a - x_b = "
                        f"{x[0, flat[0]]:g} in every battle, so it cannot separate style "
                        "from strength; drop it from covariates=")
    if len(names) > 1 and np.linalg.matrix_rank(x / spread) < len(names):
        raise DataError(f"{source}: the covariates {list(names)} are linearly dependent (one "
                        "is a combination of the others), so their coefficients are not "
                        "identified; drop one of them")
    x.setflags(write=False)
    return x


def _numeric(frame: pd.DataFrame, column: str, rows: np.ndarray, source: str) -> np.ndarray:
    """Column ``column`` at ``rows`` as finite floats, else a DataError naming the row."""
    values = frame[column]
    if not (pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values)):
        raise DataError(f"{source}: covariate column {column!r} holds {values.dtype} values, "
                        "not numbers; convert it (e.g. counts or lengths) before loading")
    out = values.to_numpy(dtype=np.float64, na_value=np.nan)[rows]
    bad = ~np.isfinite(out)
    if bad.any():
        row = int(rows[np.flatnonzero(bad)[0]])
        raise DataError(f"{source}: row {row} has {out[bad][0]} in covariate column "
                        f"{column!r}; drop or fill the battles with missing covariates first "
                        f"({int(bad.sum())} of them)")
    return out


# -- files ---------------------------------------------------------------------------------
_TABLE_SUFFIX = {".csv": "csv", ".jsonl": "jsonl", ".parquet": "parquet"}


def _table_columns(path: Path, fmt: str) -> list[str]:
    """The column names of a table file, read without reading the table."""
    try:
        if fmt == "csv":
            return list(pd.read_csv(path, nrows=0).columns)
        if fmt == "jsonl":
            with open(path, encoding="utf-8") as handle:
                first = handle.readline()
            row = json.loads(first) if first.strip() else {}
            return list(row) if isinstance(row, dict) else []
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    except Exception:  # not readable as that format: the tensor reader says why
        return []


def _read_json(path: Path, forced: bool, **options: Any) -> PairwiseData | None:
    """A ``.json`` file: LMArena's list of battle records (``clean_battle_*.json``) or
    leaderbot's pair counts; None for other JSON unless ``forced`` (other readers' turn)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        if not forced:
            return None
        raise LoadError(f"cannot read {path} as JSON: {type(exc).__name__}: "
                        f"{' '.join(str(exc).split())}") from exc
    if (isinstance(raw, list) and raw and isinstance(raw[0], dict)
            and battle_columns(list(raw[0]))):
        return from_battles(pd.DataFrame.from_records(raw), source=str(path), **options)
    if isinstance(raw, dict) and {"models", "X", "Y"} <= set(raw):
        return _pair_counts(raw, path, **options)
    if not forced:
        return None
    raise LoadError(f"{path} is neither a list of battles (records with model_a, model_b, "
                    "winner) nor pair counts (an object with models, X, Y)")


def _pair_counts(raw: dict, path: Path, ties: TieHandling = "keep",
                 both_bad: BothBad = "tie", covariates: Any = None) -> PairwiseData:
    """leaderbot's JSON of pair counts: ``models``, ``X`` (pairs i < j), ``Y`` (rows
    ``[wins_i, wins_j, ties]`` and optionally ``ties_both_bad``); ``ties`` and ``both_bad``
    as in :func:`from_battles`."""
    _check_tie_options(ties, both_bad)
    if covariates is not None:
        raise DataError(f"{path} holds pair counts, which have no per-battle covariates; "
                        "style control needs the battles table with covariate columns")
    try:
        names, X, Y = raw["models"], np.asarray(raw["X"]), np.asarray(raw["Y"], dtype=float)
    except (ValueError, TypeError) as exc:
        raise LoadError(f"cannot read {path} as pair counts (JSON with models, X, Y): "
                        f"{type(exc).__name__}: {' '.join(str(exc).split())}") from exc
    if X.ndim != 2 or X.shape[1] != 2 or Y.ndim != 2 or Y.shape[0] != X.shape[0] \
            or Y.shape[1] not in (3, 4):
        raise LoadError(f"{path}: X must be (pairs, 2) and Y (pairs, 3 or 4), got {X.shape} "
                        f"and {Y.shape}")
    L = len(names)
    if X.size and (X.min() < 0 or X.max() >= L or not np.issubdtype(X.dtype, np.integer)):
        raise LoadError(f"{path}: X must hold model indices 0..{L - 1}")
    bad = Y[:, 3] if Y.shape[1] == 4 else np.zeros(len(Y))
    if both_bad == "error" and bad.any():
        raise DataError(f"{path} counts both-bad ties and both_bad='error'; pass "
                        "both_bad='tie' to count them as ties or 'drop' to leave them out")
    tied = (Y[:, 2] + (bad if both_bad == "tie" else 0.0)) * (ties == "keep")
    W, T = np.zeros((L, L)), np.zeros((L, L))
    np.add.at(W, (X[:, 0], X[:, 1]), Y[:, 0])
    np.add.at(W, (X[:, 1], X[:, 0]), Y[:, 1])
    np.add.at(T, (X[:, 0], X[:, 1]), tied)
    np.add.at(T, (X[:, 1], X[:, 0]), tied)
    return PairwiseData(W, T, models=names)


def _check_tie_options(ties: Any, both_bad: Any) -> None:
    if ties not in ("keep", "drop"):
        raise DataError(f"ties must be 'keep' or 'drop', got {ties!r}")
    if both_bad not in ("tie", "drop", "error"):
        raise DataError(f"both_bad must be 'tie', 'drop' or 'error', got {both_bad!r}")


def load_battles(source: Any, *, format: str | None = None, ties: TieHandling = "keep",
                 both_bad: BothBad = "tie",
                 covariates: Sequence[str] | None = None) -> PairwiseData:
    """Read pairwise data with the tie and covariate options of :func:`from_battles`.

    ``source``: a battles table (DataFrame, ``.csv``, ``.jsonl``, ``.parquet``) or
    leaderbot's ``.json`` pair counts (which have no covariates); :func:`bayesrank.load`
    reads the same with the default options (ties kept, both-bad ties counted as ties, no
    covariates).
    """
    style = {} if covariates is None else {"covariates": covariates}
    pairs = load_pairwise(source, format, ties=ties, both_bad=both_bad, **style)
    if pairs is None:
        shown = "the DataFrame" if isinstance(source, pd.DataFrame) else str(source)
        raise LoadError(f"{shown} is not a battles table (columns model_a, model_b, winner or "
                        "left, right, winner) nor pair counts (.json with models, X, Y); "
                        "pass format='battles' or 'pair_counts' to say which")
    return pairs


def load_pairwise(source: Any, format: str | None = None, *,
                  refused: Mapping[str, Any] | None = None, **options: Any) -> PairwiseData | None:
    """``source`` as PairwiseData when it is a battles table or pair counts, else None.

    What :func:`bayesrank.load` asks first: a DataFrame or a ``.csv`` / ``.jsonl`` /
    ``.parquet`` file whose columns are a battles table's (:func:`battle_columns`), or
    ``format="battles"`` forcing one; a ``.json`` file: LMArena's list of battle records
    or leaderbot's pair counts (``models, X, Y``; ``format="pair_counts"`` for another
    suffix).  ``options`` go to
    :func:`from_battles` (``ties``, ``both_bad``, ``models``; pair counts take the first
    two).  ``refused``: options of the tensor readers, a LoadError when any is set (not
    None) on pairwise data.
    """
    pairs = _pairwise_source(source, format, options)
    extra = sorted(k for k, v in (refused or {}).items() if v is not None)
    if pairs is not None and extra:
        where = source if isinstance(source, str | os.PathLike) else "the DataFrame"
        raise LoadError(f"{', '.join(extra)} apply to response tensors, not to the pairwise "
                        f"battles in {where}; for options of battles call "
                        "bayesrank.load_battles(path, ...) or bayesrank.from_battles(frame, ...)")
    return pairs


def _pairwise_source(source: Any, format: str | None, options: dict) -> PairwiseData | None:
    if format not in (None, "battles", "pair_counts"):
        return None
    if isinstance(source, pd.DataFrame):
        if format == "battles" or (format is None and battle_columns(source.columns)):
            return from_battles(source, source="the DataFrame", **options)
        return None
    if not isinstance(source, str | os.PathLike):
        return None
    path = Path(source)
    if not path.is_file():
        if format is None:
            return None  # the tensor reader names the problem
        raise LoadError(f"no such file: {path}")
    suffix = path.suffix.lower()
    if format == "pair_counts" or suffix == ".json":
        return _read_json(path, format is not None, **options)
    fmt = _TABLE_SUFFIX.get(suffix)
    if fmt is None:
        if format == "battles":
            raise LoadError(f"cannot read {path} as battles: use a .csv, .jsonl or .parquet "
                            "table")
        return None
    if format is None and battle_columns(_table_columns(path, fmt)) is None:
        return None
    return from_battles(read_table(path, fmt), source=str(path), **options)
