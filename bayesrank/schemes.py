"""Categorical schemes as data: predicates over completion signals -> categories, weights.

Paper: appendix "Categorical Ranking", table "Eight representative categorical
schemes" and Sec. "Derived Predicates and Thresholds".  A scheme ``s`` maps each
completion to a category ``phi_s(x) in {0, ..., C_s}`` and scores categories
with utilities ``w_s``; :func:`apply` turns a :class:`~bayesrank.data.signals.Signals`
table into :class:`~bayesrank.ResponseData` that every ranking method accepts
(e.g. ``bayesrank.rank(apply(signals, "conservative"), "bayes")`` is the
Dirichlet-multinomial Bayes@N ranking of the scheme).

A scheme is declared, not coded:

- **predicates** are named boolean functions of a completion, built from
  :class:`Threshold` (a signal against a fixed value or a *per-model*
  percentile), :class:`AnyOf` / :class:`AllOf` (of other predicate names, ``"!name"``
  negates) and :class:`Dominant` (the verifier's argmax label);
- a :class:`Category` holds a label, a weight and ``when``, a conjunction of
  predicate names; the first category (in ``precedence`` order, default
  0, 1, ..., C) whose conjunction holds takes the completion.  A completion
  that no category takes is an error, never a silent default.

The paper's shared predicates (:data:`PREDICATES`; thresholds per model, from
all of that model's observed completions):

- ``invalid``: ``repeated_pattern = 1`` or ``compass_C >= 0.5``;
- ``high_conf``: ``completion_bpt <= P40(completion_bpt)``;
- ``wrong_high_conf``: wrong and ``completion_bpt <= P60(completion_bpt | wrong)``;
- ``ood``: ``prompt_bpt >= P90(prompt_bpt)``;
- ``economical`` / ``moderate`` / ``verbose``: ``token_ratio`` at most P33,
  between (P33, P66], above P66;
- ``dominant_A/B/C``: ``argmax(compass_A, compass_B, compass_C)`` (ties go to
  A, then B); ``verifier_high``: ``compass_A >= 0.6``.

Percentiles are numpy's default (linear interpolation between order statistics).

Choices where the paper is silent (also in docs/schemes.md, and tested):

- "Conf" for a *wrong* completion is ``wrong_high_conf`` (the predicate the paper
  defines for wrong answers); for a correct one it is ``high_conf``.
- Format-aware category 3 "Correct" is correct *and unboxed* (boxed takes 4).
- Balanced comp. orders its products format-major: 2 = Wrong, Boxed, LowConf;
  3 = Wrong, Boxed, HighConf; 4..7 = Correct x (Unboxed, Boxed) x (Low, High).
  Weights then increase with format and confidence for correct answers and the
  confidently wrong boxed answer is penalised (-0.02), as the intents say.
- Rare-event "Abstain" is a valid completion with no boxed answer that is not
  correct (no final answer given); it is tested before the OOD/in-distribution
  categories.
- Verifier-calib. bands for correct answers: ``A_high`` = ``verifier_high``
  (A >= 0.6), ``A_mid`` = A dominant but below 0.6, ``A_low`` = A not dominant.
- Verifier-only's category 0 is "Repeated" (``repeated_pattern = 1``), as the
  paper's table says; an answer with ``compass_C >= 0.5`` is dominant C
  (category 1), also weight 0.  It is the only paper scheme whose category 0 is
  not ``invalid``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayesrank.data import ResponseData
from bayesrank.data.signals import Signals
from bayesrank.errors import DataError, UnknownMethodError

__all__ = [
    "PAPER_SCHEMES",
    "PREDICATES",
    "AllOf",
    "AnyOf",
    "Category",
    "Dominant",
    "Scheme",
    "Threshold",
    "apply",
    "categories",
    "get",
    "predicate",
    "resolve",
    "table",
]

_OPS = {
    "<=": np.less_equal, "<": np.less, ">=": np.greater_equal, ">": np.greater, "==": np.equal,
}


@dataclass(frozen=True)
class Threshold:
    """``signal op cut``, with ``cut`` a fixed ``value`` or a per-model ``percentile``.

    ``given`` (a predicate name) restricts the percentile to the model's
    completions where that predicate holds, e.g. ``P60(completion_bpt | wrong)``.
    """

    signal: str
    op: str
    value: float | None = None
    percentile: float | None = None
    given: str | None = None

    def __post_init__(self) -> None:
        if self.op not in _OPS:
            raise ValueError(f"Threshold op must be one of {list(_OPS)}, got {self.op!r}")
        if (self.value is None) == (self.percentile is None):
            raise ValueError("a Threshold needs exactly one of value= or percentile=")
        if self.percentile is not None and not 0 <= self.percentile <= 100:
            raise ValueError(f"percentile must lie in 0..100, got {self.percentile!r}")
        if self.given is not None and self.percentile is None:
            raise ValueError("given= only applies to a percentile threshold")


@dataclass(frozen=True)
class AnyOf:
    """True when any of the named predicates holds (``"!name"`` negates)."""

    parts: tuple[str, ...]


@dataclass(frozen=True)
class AllOf:
    """True when all of the named predicates hold (``"!name"`` negates)."""

    parts: tuple[str, ...]


@dataclass(frozen=True)
class Dominant:
    """The verifier's dominant label is ``label``: argmax over compass_A/B/C, ties to A then B."""

    label: str

    def __post_init__(self) -> None:
        if self.label not in ("A", "B", "C"):
            raise ValueError(f"Dominant label must be 'A', 'B' or 'C', got {self.label!r}")


Predicate = Threshold | AnyOf | AllOf | Dominant

#: The paper's shared predicates ("Derived Predicates and Thresholds").
PREDICATES: Mapping[str, Predicate] = {
    "repeated": Threshold("repeated_pattern", "==", value=1),
    "verifier_irrelevant": Threshold("compass_C", ">=", value=0.5),
    "invalid": AnyOf(("repeated", "verifier_irrelevant")),
    "correct": Threshold("is_correct", "==", value=1),
    "wrong": AllOf(("!correct",)),
    "boxed": Threshold("has_box", "==", value=1),
    "high_conf": Threshold("completion_bpt", "<=", percentile=40),
    "low_bpt_among_wrong": Threshold("completion_bpt", "<=", percentile=60, given="wrong"),
    "wrong_high_conf": AllOf(("wrong", "low_bpt_among_wrong")),
    "ood": Threshold("prompt_bpt", ">=", percentile=90),
    "economical": Threshold("token_ratio", "<=", percentile=33),
    "verbose": Threshold("token_ratio", ">", percentile=66),
    "moderate": AllOf(("!economical", "!verbose")),
    "verifier_high": Threshold("compass_A", ">=", value=0.6),
    "dominant_A": Dominant("A"),
    "dominant_B": Dominant("B"),
    "dominant_C": Dominant("C"),
    "abstain": AllOf(("!boxed", "wrong")),
}


@dataclass(frozen=True)
class Category:
    """One outcome category: its label, utility weight and the conjunction that selects it."""

    label: str
    weight: float
    when: tuple[str, ...]


@dataclass(frozen=True)
class Scheme:
    """A categorical scheme: categories 0..C (index = outcome value) and their weights.

    Parameters
    ----------
    name : str
        Display name (the paper's, e.g. ``"Efficiency-adj."``).
    categories : sequence of Category
        Category ``k`` is ``categories[k]``.
    precedence : sequence of int, optional
        Order in which categories are tried; default 0, 1, ..., C.
    predicates : mapping, optional
        Extra or overriding named predicates (merged over :data:`PREDICATES`).
    intent : str
        One line on what the scheme rewards.
    """

    name: str
    categories: tuple[Category, ...]
    precedence: tuple[int, ...] | None = None
    predicates: Mapping[str, Predicate] = field(default_factory=dict)
    intent: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", tuple(self.categories))
        if len(self.categories) < 2:
            raise ValueError(f"scheme {self.name!r} needs at least 2 categories")
        w = self.weights
        if not np.all(np.isfinite(w)):
            raise ValueError(f"scheme {self.name!r} has non-finite weights {w.tolist()}")
        order = tuple(range(len(self.categories))) if self.precedence is None else tuple(
            self.precedence)
        if sorted(order) != list(range(len(self.categories))):
            raise ValueError(f"scheme {self.name!r}: precedence {order} must list every category "
                             f"0..{len(self.categories) - 1} once")
        object.__setattr__(self, "precedence", order)
        known = self.all_predicates
        for k, cat in enumerate(self.categories):
            if not cat.when:
                raise ValueError(f"scheme {self.name!r} category {k} ({cat.label}) has no "
                                 "condition (when=...)")
            for lit in cat.when:
                if lit.lstrip("!") not in known:
                    raise ValueError(f"scheme {self.name!r} category {k} uses unknown predicate "
                                     f"{lit!r}; known: {sorted(known)}")

    @property
    def weights(self) -> np.ndarray:
        """Utilities ``w_0..w_C``."""
        return np.array([c.weight for c in self.categories], dtype=float)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(c.label for c in self.categories)

    @property
    def all_predicates(self) -> dict[str, Predicate]:
        return {**PREDICATES, **self.predicates}

    def signals_needed(self) -> tuple[str, ...]:
        """Every signal the scheme's categories read (directly or through predicates)."""
        preds = self.all_predicates
        needed: set[str] = set()
        for cat in self.categories:
            for lit in cat.when:
                needed |= _signals_of(lit.lstrip("!"), preds, ())
        return tuple(sorted(needed))


def _signals_of(name: str, preds: Mapping[str, Predicate], path: tuple[str, ...]) -> set[str]:
    if name in path:
        raise ValueError(f"predicates refer to each other in a circle: {' -> '.join(path)}")
    if name not in preds:
        raise ValueError(f"unknown predicate {name!r}; known: {sorted(preds)}")
    p = preds[name]
    path = (*path, name)
    if isinstance(p, Threshold):
        extra = _signals_of(p.given, preds, path) if p.given else set()
        return {p.signal} | extra
    if isinstance(p, Dominant):
        return {"compass_A", "compass_B", "compass_C"}
    out: set[str] = set()
    for part in p.parts:
        out |= _signals_of(part.lstrip("!"), preds, path)
    return out


class _Evaluator:
    """Evaluates named predicates on a signals table, caching each one."""

    def __init__(self, signals: Signals, preds: Mapping[str, Predicate]) -> None:
        self.signals = signals
        self.preds = preds
        self.cache: dict[str, np.ndarray] = {}

    def literal(self, lit: str) -> np.ndarray:
        value = self.named(lit.lstrip("!"))
        return ~value if lit.startswith("!") else value

    def named(self, name: str) -> np.ndarray:
        if name not in self.cache:
            self.cache[name] = self._compute(self.preds[name])
        return self.cache[name]

    def _compute(self, p: Predicate) -> np.ndarray:
        if isinstance(p, AnyOf):
            return np.logical_or.reduce([self.literal(q) for q in p.parts])
        if isinstance(p, AllOf):
            return np.logical_and.reduce([self.literal(q) for q in p.parts])
        if isinstance(p, Dominant):
            abc = np.stack([self.signals[f"compass_{x}"] for x in "ABC"], axis=-1)
            return np.argmax(np.nan_to_num(abc, nan=-1.0), axis=-1) == "ABC".index(p.label)
        x = self.signals[p.signal]
        if p.percentile is None:
            cut = np.full(x.shape[0], float(p.value))
        else:
            cut = per_model_percentile(x, p.percentile,
                                       self.named(p.given) if p.given else None)
        with np.errstate(invalid="ignore"):
            return _OPS[p.op](x, cut[:, None, None])


def per_model_percentile(x: np.ndarray, q: float, where: np.ndarray | None = None) -> np.ndarray:
    """``P_q`` of each model's observed values of ``x`` (L, M, N), optionally where ``where``.

    NaN (a missing trial) is never counted; a model with no value gets NaN, which
    makes every comparison with it false.
    """
    values = x if where is None else np.where(where, x, np.nan)
    flat = values.reshape(values.shape[0], -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN model: NaN is the answer
        return np.nanpercentile(flat, q, axis=1)


def _paper(name: str, intent: str, cats: Sequence[tuple[str, float, tuple[str, ...]]],
           precedence: tuple[int, ...] | None = None) -> Scheme:
    return Scheme(name, tuple(Category(*c) for c in cats), precedence=precedence, intent=intent)


_INVALID = ("Invalid", 0.0, ("invalid",))

#: The paper's eight representative schemes (table "Eight representative categorical
#: schemes"), keyed by a snake_case identifier; ``Scheme.name`` is the paper's label.
PAPER_SCHEMES: Mapping[str, Scheme] = {
    "conservative": _paper("Conservative", "Penalize confidently-wrong", [
        _INVALID,
        ("Wrong & HighConf", -0.10, ("wrong", "wrong_high_conf")),
        ("Wrong & LowConf", 0.05, ("wrong", "!wrong_high_conf")),
        ("Correct", 1.00, ("correct",)),
    ]),
    "efficiency_adjusted": _paper("Efficiency-adj.", "Discount verbose correct", [
        _INVALID,
        ("Wrong & Economical", 0.10, ("wrong", "economical")),
        ("Wrong & Moderate", 0.07, ("wrong", "moderate")),
        ("Wrong & Verbose", 0.03, ("wrong", "verbose")),
        ("Correct & Economical", 1.00, ("correct", "economical")),
        ("Correct & Moderate", 0.92, ("correct", "moderate")),
        ("Correct & Verbose", 0.85, ("correct", "verbose")),
    ]),
    "format_aware": _paper("Format-aware", "Reward boxed correct", [
        _INVALID,
        ("Wrong & Unboxed", 0.10, ("wrong", "!boxed")),
        ("Wrong & Boxed", 0.05, ("wrong", "boxed")),
        ("Correct & Unboxed", 0.90, ("correct", "!boxed")),
        ("Correct & Boxed", 1.00, ("correct", "boxed")),
    ]),
    "balanced_composite": _paper("Balanced comp.", "Format x confidence", [
        _INVALID,
        ("Wrong & Unboxed", 0.10, ("wrong", "!boxed")),
        ("Wrong & Boxed & LowConf", 0.06, ("wrong", "boxed", "!wrong_high_conf")),
        ("Wrong & Boxed & HighConf", -0.02, ("wrong", "boxed", "wrong_high_conf")),
        ("Correct & Unboxed & LowConf", 0.90, ("correct", "!boxed", "!high_conf")),
        ("Correct & Unboxed & HighConf", 0.95, ("correct", "!boxed", "high_conf")),
        ("Correct & Boxed & LowConf", 0.97, ("correct", "boxed", "!high_conf")),
        ("Correct & Boxed & HighConf", 1.00, ("correct", "boxed", "high_conf")),
    ]),
    "ood_robust": _paper("OOD-robust", "Reward in-distribution", [
        _INVALID,
        ("OOD & Wrong", 0.05, ("ood", "wrong")),
        ("InDist & Wrong", 0.10, ("!ood", "wrong")),
        ("OOD & Correct", 0.95, ("ood", "correct")),
        ("InDist & Correct", 1.00, ("!ood", "correct")),
    ]),
    "rare_event": _paper("Rare-event", "OOD + abstention", [
        _INVALID,
        ("OOD & Wrong", 0.05, ("ood", "wrong")),
        ("OOD & Correct", 1.00, ("ood", "correct")),
        ("InDist & Wrong", 0.08, ("!ood", "wrong")),
        ("InDist & Correct", 0.95, ("!ood", "correct")),
        ("Abstain", 0.20, ("abstain",)),
    ], precedence=(0, 5, 1, 2, 3, 4)),
    "verifier_calibrated": _paper("Verifier-calib.", "Penalize false-positive", [
        _INVALID,
        ("Wrong & A>=0.6", -0.05, ("wrong", "verifier_high")),
        ("Wrong & A<0.6", 0.05, ("wrong", "!verifier_high")),
        ("Correct & A_low", 0.88, ("correct", "!dominant_A")),
        ("Correct & A_mid", 0.94, ("correct", "dominant_A", "!verifier_high")),
        ("Correct & A_high", 1.00, ("correct", "verifier_high")),
    ]),
    "verifier_only": _paper("Verifier-only", "No ground truth", [
        ("Repeated", 0.0, ("repeated",)),
        ("Dominant = C", 0.0, ("dominant_C",)),
        ("Dominant = B", 0.1, ("dominant_B",)),
        ("Dominant = A", 1.0, ("dominant_A",)),
    ]),
}


def get(name: str | Scheme) -> Scheme:
    """A paper scheme by identifier (``"format_aware"``) or label (``"Format-aware"``)."""
    if isinstance(name, Scheme):
        return name
    key = str(name).strip().lower()
    for ident, scheme in PAPER_SCHEMES.items():
        if key in (ident, scheme.name.lower()):
            return scheme
    raise UnknownMethodError(f"unknown categorical scheme {name!r}; the paper's are "
                                f"{list(PAPER_SCHEMES)}")


def resolve(selection: str | Scheme | Sequence[str | Scheme] | Mapping[str, Scheme]
            ) -> dict[str, Scheme]:
    """Schemes by name: ``"paper"`` (all eight), a comma-separated string, a list or a mapping."""
    if isinstance(selection, Mapping):
        return {str(k): get(v) for k, v in selection.items()}
    if isinstance(selection, Scheme):
        return {selection.name: selection}
    if isinstance(selection, str):
        if selection.strip().lower() == "paper":
            return {s.name: s for s in PAPER_SCHEMES.values()}
        selection = [s for s in (p.strip() for p in selection.split(",")) if s]
    schemes = [get(s) for s in selection]
    if not schemes:
        raise ValueError("no categorical schemes selected")
    names = [s.name for s in schemes]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"schemes listed twice: {dupes}")
    return dict(zip(names, schemes, strict=True))


def predicate(signals: Signals, name: str,
              predicates: Mapping[str, Predicate] | None = None) -> np.ndarray:
    """Boolean (L, M, N) of one named predicate (``"!name"`` negates) on ``signals``.

    ``predicates`` adds to or overrides :data:`PREDICATES`.  Unobserved trials
    are False for a predicate that compares a signal (NaN compares false).
    """
    signals = _check_signals_type(signals)
    preds = {**PREDICATES, **(predicates or {})}
    signals.require(tuple(sorted(_signals_of(name.lstrip("!"), preds, ()))),
                    f"predicate {name!r}")
    return _Evaluator(signals, preds).literal(name)


def categories(signals: Signals, scheme: str | Scheme) -> np.ndarray:
    """Category of every completion, int array (L, M, N); -1 where no trial was observed."""
    signals = _check_signals_type(signals)
    scheme = get(scheme)
    signals.require(scheme.signals_needed(), f"scheme {scheme.name!r}")
    ev = _Evaluator(signals, scheme.all_predicates)
    observed = signals.observed
    out = np.full(signals.shape, -1, dtype=np.int64)
    for k in scheme.precedence:
        hit = np.logical_and.reduce([ev.literal(lit) for lit in scheme.categories[k].when])
        out[(out < 0) & hit & observed] = k
    left = (out < 0) & observed
    if left.any():
        l, m, n = (int(i) for i in np.argwhere(left)[0])
        raise DataError(
            f"scheme {scheme.name!r} puts {int(left.sum())} completion(s) in no category; first: "
            f"model {signals.models[l]!r}, question {signals.questions[m]!r}, trial {n}")
    return out


def apply(signals: Signals, scheme: str | Scheme) -> ResponseData:
    """Categorical outcomes of ``scheme`` on ``signals``, with the scheme's weights.

    Returns
    -------
    ResponseData
        ``R[l, m, n]`` = category of the completion, ``weights`` = the scheme's
        ``w``; models, questions and missing trials as in ``signals``.

    Raises
    ------
    DataError
        When a signal the scheme needs is absent, or a completion falls in no category.
    """
    scheme = get(scheme)
    cats = categories(signals, scheme)
    return ResponseData(np.maximum(cats, 0), models=signals.models,
                           questions=signals.questions, weights=scheme.weights,
                           mask=signals.mask)


def table(schemes: Mapping[str, Scheme] | None = None) -> pd.DataFrame:
    """One row per (scheme, category): label, weight, condition; the paper's table as data."""
    rows = []
    for ident, s in (schemes or PAPER_SCHEMES).items():
        for k, c in enumerate(s.categories):
            rows.append({"scheme": ident, "name": s.name, "category": k, "label": c.label,
                         "weight": c.weight, "when": " & ".join(c.when)})
    return pd.DataFrame(rows)


def _check_signals_type(signals: Any) -> Signals:
    if not isinstance(signals, Signals):
        raise TypeError(f"expected a Signals table (bayesrank.load_signals), got "
                        f"{type(signals).__name__}")
    return signals
