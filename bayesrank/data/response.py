"""The response data model: one validated, immutable container for R.

Everything in bayesrank reads benchmark results through :class:`ResponseData`:
an integer tensor ``R`` of shape ``(L, M, N)`` (models x questions x trials)
with outcomes in ``{0, ..., C}``, optional prior outcomes ``R0`` (e.g. one
greedy decode per question), category weights ``w`` and an optional mask of
observed trials.  Derived statistics live in :attr:`ResponseData.reductions`
and are computed once.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import xarray as xr

from bayesrank.errors import DataError

if TYPE_CHECKING:
    from bayesrank.data.reductions import Reductions

__all__ = ["ResponseData", "as_response_data"]

#: Outcomes are 0/1 or category indices below this (a category costs a weight; an outcome
#: of 10**9 in a damaged file would otherwise ask for gigabytes of weights).
MAX_CATEGORIES = 2**16

_Index = int | str
_Selector = Sequence[_Index] | slice | np.ndarray | None


def _readonly(a: np.ndarray) -> np.ndarray:
    """A read-only private copy (never freezes the caller's array)."""
    a = np.array(a, order="C", copy=True)
    a.setflags(write=False)
    return a


def _first_index(flags: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(flags)[0])


def _integer_outcomes(values: Any, name: str, observed: np.ndarray | None) -> np.ndarray:
    """Return ``values`` as int64, refusing anything that is not an exact integer.

    NaN is accepted only where ``observed`` is False (a missing trial).
    """
    arr = np.asarray(values)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise DataError(f"{name} must be numeric (integer outcomes), got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise DataError(f"{name} must be real-valued, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        bad = ~np.isfinite(arr)
        if observed is not None:
            bad &= observed
        if bad.any():
            where = _first_index(bad)
            head = (f"{name} has {int(bad.sum())} NaN/inf value(s) in observed cells, first at "
                    f"index {where}")
            exc = DataError(f"{head}; mark missing trials with mask=... instead")
            exc.cli_message = (  # type: ignore[attr-defined]
                f"{head}; for missing trials leave their rows out of a long table "
                "(.csv/.jsonl/.parquet) or save the data with a mask (.npz/.nc)")
            raise exc
        filled = np.where(np.isfinite(arr), arr, 0.0)
        frac = filled != np.round(filled)
        if frac.any():
            where = _first_index(frac)
            raise DataError(
                f"{name} must hold integer outcomes (0/1, or category indices 0..C); found "
                f"{filled[where].item():g} at index {where}: threshold scores in [0, 1] "
                "(e.g. score == 1 is correct) or map them to categories first"
            )
        huge = np.abs(filled) > MAX_CATEGORIES
        if huge.any():  # also keeps the cast below from overflowing
            where = _first_index(huge)
            raise DataError(f"{name} has outcome {filled[where].item():g} at index {where}; "
                            f"outcomes are 0/1 or category indices 0..C (C < "
                            f"{MAX_CATEGORIES:,})")
        return filled.astype(np.int64)
    return arr.astype(np.int64)


def _names(names: Sequence[Any] | None, n: int, prefix: str, what: str) -> tuple[str, ...]:
    if names is None:
        width = len(str(max(n - 1, 0)))
        return tuple(f"{prefix}{i:0{width}d}" for i in range(n))
    out = tuple(str(x) for x in names)
    if len(out) != n:
        raise DataError(f"got {len(out)} {what} names for {n} {what}s")
    seen: set[str] = set()
    dupes = [x for x in out if x in seen or seen.add(x)]  # type: ignore[func-returns-value]
    if dupes:
        raise DataError(f"duplicate {what} names: {sorted(set(dupes))[:5]}")
    return out


def _unstated_categories(values: np.ndarray) -> DataError:
    """The one-line error for outcomes above 1 whose categories nobody stated."""
    found = np.unique(values)
    shown = ", ".join(str(int(v)) for v in found[:8]) + (", ..." if found.size > 8 else "")
    n_cat = int(found.max()) + 1
    even = ", ".join(f"{k / (n_cat - 1):g}" for k in range(n_cat))
    head = f"R has outcomes {{{shown}}}, not only binary 0/1"
    exc = DataError(
        f"{head}: for {n_cat} categories state them with weights=[{even}] (the score of each "
        f"outcome 0..{n_cat - 1}) or n_categories={n_cat}; if 1 = correct was meant, map the "
        "outcomes to 0/1 first")
    exc.cli_message = (  # type: ignore[attr-defined]
        f"{head}: for {n_cat} categories state them with --weights {even.replace(' ', '')} "
        f"(the score of each outcome 0..{n_cat - 1}); if 1 = correct was meant, map the "
        "outcomes to 0/1 first")
    return exc


class ResponseData:
    """Validated, immutable response tensor with names, weights and priors.

    Parameters
    ----------
    R : array_like, shape (L, M, N) or (L, M)
        Integer outcomes in ``{0, ..., C}``; ``R[l, m, n]`` is the outcome of
        model ``l`` on question ``m`` in trial ``n``.  A 2-D input is one trial
        per question (N = 1).  Booleans are binary outcomes.
    models, questions : sequence of str, optional
        Unique names; default ``model_0``, ``model_1``, ... and ``q0``, ``q1``, ...,
        zero-padded to one width (``model_00`` ... ``model_11`` for 12 models).
    R0 : array_like, optional
        Prior outcomes (e.g. greedy decodes): shared ``(M, D)`` (or ``(M,)``
        for D = 1) or per model ``(L, M, D)``.
    weights : array_like, optional
        Utility ``w_k`` of each category, length ``C + 1``.  Default ``[0, 1]``
        (binary data), and ``k / C`` when only ``n_categories`` is given.
    n_categories : int, optional
        ``C + 1``.  Default: ``len(weights)`` if given, else 2.  Outcomes above 1
        need one of the two stated: nothing guesses that 0/1/2 are three
        categories worth 0, 0.5 and 1 (a ``DataError`` names the values found).
    mask : array_like of bool, optional
        ``True`` where a trial was observed.  A model-question cell may have
        fewer than N trials; missing trials are never treated as failures.

    Notes
    -----
    Values of ``R`` at masked-out positions are stored as 0 but are never read:
    every reduction consults the mask.
    """

    __slots__ = ("_R", "_mask", "_R0", "_weights", "_models", "_questions", "__dict__")
    __hash__ = None  # type: ignore[assignment]

    def __init__(
        self,
        R: Any,
        *,
        models: Sequence[Any] | None = None,
        questions: Sequence[Any] | None = None,
        R0: Any = None,
        weights: Any = None,
        n_categories: int | None = None,
        mask: Any = None,
    ) -> None:
        if isinstance(R, pd.DataFrame | pd.Series):
            raise DataError(
                "R is a pandas table; ResponseData takes the (L, M, N) array of outcomes. For a "
                "long table with one row per trial call bayesrank.load(df) (add columns={'model': "
                "..., 'question': ..., 'trial': ..., 'outcome': ...} to rename yours); for a "
                "wide (models x questions) table call ResponseData(df.to_numpy(), "
                "models=df.index, questions=df.columns)"
            )
        raw = np.asarray(R)
        if raw.ndim == 2:
            raw = raw[:, :, None]
            if mask is not None:
                mask = np.asarray(mask)
                if mask.ndim == 2:
                    mask = mask[:, :, None]
        if raw.ndim != 3:
            raise DataError(
                f"R must have shape (L, M, N) or (L, M); got {raw.ndim} dimension(s) "
                f"with shape {raw.shape}"
            )
        axis_names = ("models (L)", "questions (M)", "trials (N)")
        for axis, label in zip(raw.shape, axis_names, strict=True):
            if axis == 0:
                raise DataError(f"R has an empty axis: 0 {label} in shape {raw.shape}")

        observed = None
        if mask is not None:
            m = np.asarray(mask)
            if m.dtype != np.bool_:
                raise DataError(f"mask must be a boolean array (True = observed), got {m.dtype}")
            if m.shape != raw.shape:
                raise DataError(f"mask has shape {m.shape} but R has shape {raw.shape}")
            if m.all():
                m = None
            else:
                empty_models = ~m.any(axis=(1, 2))
                if empty_models.any():
                    first = int(np.argmax(empty_models))
                    named = models is not None and len(models) == raw.shape[0]
                    raise DataError(
                        f"model {str(models[first])!r} has no observed trial" if named  # type: ignore[index]
                        else f"model index {first} has no observed trial"
                    )
            observed = m
        values = _integer_outcomes(raw, "R", observed)
        if observed is not None:
            values = np.where(observed, values, 0)
        self._check_range(values, observed, n_categories, weights, "R")
        max_val = int(values.max()) if observed is None else int(values[observed].max())
        if weights is not None:
            if np.iscomplexobj(weights):  # float() would drop the imaginary part
                raise DataError("weights must be real numbers, not complex")
            w = np.asarray(weights, dtype=float)
            if w.ndim != 1 or w.size < 2 or not np.all(np.isfinite(w)):
                raise DataError(f"weights must be a finite 1-D array of length >= 2, got {w!r}")
            if n_categories is not None and w.size != n_categories:
                raise DataError(f"len(weights)={w.size} but n_categories={n_categories}")
            n_cat = w.size
        else:
            if n_categories is None and max_val > 1:
                raise _unstated_categories(values if observed is None else values[observed])
            n_cat = n_categories if n_categories is not None else 2
            if n_cat < 2:
                raise DataError(f"n_categories must be >= 2, got {n_cat}")
            if n_cat > MAX_CATEGORIES:  # the weights alone would take 8 bytes a category
                raise DataError(f"R has outcome {max_val}, i.e. {n_cat:,} categories; "
                                f"outcomes are 0/1 or category indices 0..C (C < "
                                f"{MAX_CATEGORIES:,})")
            w = np.arange(n_cat, dtype=float) / (n_cat - 1)
        if max_val >= n_cat:
            raise DataError(f"R has outcome {max_val} but only {n_cat} categories (0..{n_cat - 1})")

        L, M, _ = values.shape
        self._models = _names(models, L, "model_", "model")
        self._questions = _names(questions, M, "q", "question")
        self._weights = _readonly(w)
        dtype = np.int8 if n_cat <= 127 else np.int32
        self._R = _readonly(values.astype(dtype))
        self._mask = None if observed is None else _readonly(observed)
        self._R0 = None if R0 is None else self._validate_prior(R0, L, M, n_cat)

    @staticmethod
    def _check_range(values, observed, n_categories, weights, name) -> None:
        vals = values if observed is None else values[observed]
        if vals.size and vals.min() < 0:
            where = _first_index((values < 0) if observed is None else (values < 0) & observed)
            raise DataError(
                f"{name} has negative outcome {int(vals.min())} at index {where}; if negative "
                "values mark trials that were not run, pass mask=(R >= 0) (or leave those "
                "rows out of a long table)")
        limit = np.size(weights) if weights is not None else n_categories
        if limit is not None and vals.size and vals.max() >= limit:
            bad = values >= limit if observed is None else (values >= limit) & observed
            raise DataError(
                f"{name} has outcome {int(vals.max())} outside 0..{limit - 1} at index "
                f"{_first_index(bad)}"
            )

    def _validate_prior(self, R0: Any, L: int, M: int, n_cat: int) -> np.ndarray:
        arr = np.asarray(R0)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim == 2:
            if arr.shape[0] != M:
                raise DataError(f"R0 has M={arr.shape[0]} questions but R has M={M}")
        elif arr.ndim == 3:
            if arr.shape[:2] != (L, M):
                raise DataError(
                    f"per-model R0 must have shape (L={L}, M={M}, D); got {arr.shape}"
                )
        else:
            raise DataError(f"R0 must have shape (M, D) or (L, M, D); got {arr.shape}")
        if arr.shape[-1] == 0:
            raise DataError("R0 has no prior trials (D = 0); pass R0=None instead")
        vals = _integer_outcomes(arr, "R0", None)
        if vals.min() < 0 or vals.max() >= n_cat:
            raise DataError(
                f"R0 outcomes must lie in 0..{n_cat - 1}; found {vals.min()}..{vals.max()}"
            )
        return _readonly(vals.astype(self._R.dtype))

    # -- basic properties -------------------------------------------------------------
    @property
    def R(self) -> np.ndarray:
        """Outcomes, shape (L, M, N), read-only (masked cells hold 0)."""
        return self._R

    @property
    def mask(self) -> np.ndarray | None:
        """Observed-trial mask (L, M, N), or None when every trial is observed."""
        return self._mask

    @property
    def R0(self) -> np.ndarray | None:
        """Prior outcomes, (M, D) shared or (L, M, D) per model, or None."""
        return self._R0

    @property
    def weights(self) -> np.ndarray:
        """Category utilities w, length C + 1."""
        return self._weights

    @property
    def models(self) -> tuple[str, ...]:
        return self._models

    @property
    def questions(self) -> tuple[str, ...]:
        return self._questions

    @property
    def shape(self) -> tuple[int, int, int]:
        return self._R.shape  # type: ignore[return-value]

    @property
    def L(self) -> int:
        return self._R.shape[0]

    @property
    def M(self) -> int:
        return self._R.shape[1]

    @property
    def N(self) -> int:
        return self._R.shape[2]

    @property
    def n_categories(self) -> int:
        """C + 1."""
        return self._weights.size

    @property
    def C(self) -> int:
        return self._weights.size - 1

    @property
    def is_binary(self) -> bool:
        return self.n_categories == 2

    @property
    def complete(self) -> bool:
        """True when every model-question cell has all N trials."""
        return self._mask is None

    @property
    def prior_shared(self) -> bool:
        """True when R0 is shared across models (shape (M, D))."""
        return self._R0 is not None and self._R0.ndim == 2

    def require_binary(self, what: str = "this method") -> None:
        """Raise a :class:`DataError` unless outcomes are binary."""
        if not self.is_binary:
            raise DataError(
                f"{what} needs binary outcomes (C = 1) but the data have {self.n_categories} "
                "categories; reduce them first (data.binarize(), i.e. R == C) or use a "
                "categorical method"
            )

    def require_models(self, what: str = "a ranking") -> None:
        """Raise a :class:`DataError` unless there are at least two models to rank."""
        if self.L < 2:
            raise DataError(
                f"{what} needs at least two models, but the data hold one ({self.models[0]!r}): "
                "there is nothing to rank; add the other models' results (its accuracy is "
                "bayesrank.rank(data, 'avg'))")

    def binarize(self, at: int | None = None) -> ResponseData:
        """Binary data: an outcome is a success when its category is at least ``at``.

        ``at`` defaults to ``C``, the top category (for the Reasoning Gym levels
        0 / partial / 1 that is "fully correct").  Models, questions, the mask and
        the prior outcomes (thresholded alike) are kept; the weights become (0, 1).
        """
        at = self.C if at is None else at
        if isinstance(at, bool) or not isinstance(at, int | np.integer) or not 1 <= at <= self.C:
            raise DataError(f"binarize(at=...) takes a category in 1..{self.C}, got {at!r}")
        R0 = None if self._R0 is None else (self._R0 >= at).astype(np.int8)
        return ResponseData((self._R >= at).astype(np.int8), models=self.models,
                            questions=self.questions, R0=R0, mask=self._mask)

    def require_complete(self, what: str = "this method") -> None:
        """Raise a :class:`DataError` when some trials are missing."""
        if not self.complete:
            raise DataError(f"{what} needs complete data, but some trials are missing (mask)")

    @cached_property
    def reductions(self) -> Reductions:
        """Shared sufficient statistics, computed lazily and cached."""
        from bayesrank.data.reductions import Reductions

        return Reductions(self)

    # -- conversions ---------------------------------------------------------------------
    def to_xarray(self) -> xr.Dataset:
        """Dataset with ``R`` on dims ``(llm, question, trial)`` and its companions."""
        coords = {
            "llm": list(self.models),
            "question": list(self.questions),
            "trial": np.arange(self.N),
            "category": np.arange(self.n_categories),
        }
        ds = xr.Dataset(
            {
                "R": (("llm", "question", "trial"), self._R),
                "weights": (("category",), self._weights),
            },
            coords=coords,
            attrs={"bayesrank_format": 1, "n_categories": self.n_categories},
        )
        if self._mask is not None:
            ds["mask"] = (("llm", "question", "trial"), self._mask.astype(np.int8))
        if self._R0 is not None:
            dims = ("question", "prior_trial") if self.prior_shared else (
                "llm", "question", "prior_trial")
            ds["R0"] = (dims, self._R0)
        return ds

    @classmethod
    def from_xarray(cls, ds: xr.Dataset) -> ResponseData:
        """Inverse of :meth:`to_xarray`."""
        if "R" not in ds:
            raise DataError("dataset has no variable 'R' (expected one written by to_xarray())")
        R = ds["R"].transpose("llm", "question", "trial").values
        mask = ds["mask"].transpose("llm", "question", "trial").values.astype(bool) if (
            "mask" in ds) else None
        R0 = None
        if "R0" in ds:
            r0 = ds["R0"]
            order = [d for d in ("llm", "question", "prior_trial") if d in r0.dims]
            R0 = r0.transpose(*order).values
        weights = ds["weights"].values if "weights" in ds else None
        return cls(
            R,
            models=[str(x) for x in ds["llm"].values],
            questions=[str(x) for x in ds["question"].values],
            R0=R0,
            weights=weights,
            mask=mask,
        )

    def to_frame(self) -> pd.DataFrame:
        """Long format: one row per observed trial, columns model, question, trial, outcome."""
        L, M, N = self.shape
        li, mi, ni = np.meshgrid(np.arange(L), np.arange(M), np.arange(N), indexing="ij")
        keep = np.ones(self.shape, bool) if self._mask is None else self._mask
        return pd.DataFrame(
            {
                "model": np.asarray(self.models, dtype=object)[li[keep]],
                "question": np.asarray(self.questions, dtype=object)[mi[keep]],
                "trial": ni[keep],
                "outcome": self._R[keep].astype(np.int64),
            }
        )

    def _positions(self, sel: _Selector, names: tuple[str, ...], what: str) -> np.ndarray:
        if sel is None:
            return np.arange(len(names))
        if isinstance(sel, slice):
            return np.arange(len(names))[sel]
        lookup = {n: i for i, n in enumerate(names)}
        out = []
        for s in np.atleast_1d(np.asarray(sel, dtype=object)):
            if isinstance(s, str):
                if s not in lookup:
                    raise DataError(f"unknown {what} {s!r}")
                out.append(lookup[s])
            elif isinstance(s, int | np.integer) and not isinstance(s, bool):
                if not -len(names) <= s < len(names):
                    raise DataError(f"{what} index {s} out of range for {len(names)} {what}s")
                out.append(int(s) % len(names))
            else:
                raise DataError(f"cannot select {what} by {s!r}: use names or integer positions")
        if not out:
            raise DataError(f"selection leaves no {what}")
        return np.asarray(out)

    def subset(
        self, *, models: _Selector = None, questions: _Selector = None, trials: _Selector = None
    ) -> ResponseData:
        """A new ResponseData restricted to the given models, questions and trials.

        Each selector is a sequence of names or integer positions, a slice, or
        None (keep all).  Trials are selected by position.
        """
        li = self._positions(models, self.models, "model")
        mi = self._positions(questions, self.questions, "question")
        ni = self._positions(trials, tuple(str(i) for i in range(self.N)), "trial")
        R = self._R[np.ix_(li, mi, ni)]
        mask = None if self._mask is None else self._mask[np.ix_(li, mi, ni)]
        R0 = None
        if self._R0 is not None:
            R0 = self._R0[mi] if self.prior_shared else self._R0[np.ix_(li, mi)]
        return ResponseData(
            R,
            models=[self.models[i] for i in li],
            questions=[self.questions[i] for i in mi],
            R0=R0,
            weights=self._weights,
            mask=mask,
        )

    # -- dunder ---------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResponseData):
            return NotImplemented

        def same(a, b):
            return (a is None and b is None) or (
                a is not None and b is not None and a.shape == b.shape and np.array_equal(a, b)
            )

        return (
            self.models == other.models
            and self.questions == other.questions
            and same(self._R, other._R)
            and same(self._mask, other._mask)
            and same(self._R0, other._R0)
            and same(self._weights, other._weights)
        )

    def __repr__(self) -> str:
        kind = "binary" if self.is_binary else f"categorical, C+1={self.n_categories}"
        parts = [f"L={self.L} models", f"M={self.M} questions", f"N={self.N} trials", kind]
        if self._mask is not None:
            missing = int(self._mask.size - self._mask.sum())
            parts.append(f"{missing} missing trials")
        if self._R0 is not None:
            where = "shared" if self.prior_shared else "per-model"
            parts.append(f"R0 {where}, D={self._R0.shape[-1]}")
        head = ", ".join(self.models[:4]) + (", ..." if self.L > 4 else "")
        return f"ResponseData({'; '.join(parts)}; models: {head})"


def as_response_data(data: Any, **kwargs: Any) -> ResponseData:
    """Return ``data`` if it is a ResponseData, else build one from an array."""
    if isinstance(data, ResponseData):
        if kwargs:
            raise TypeError(f"options {sorted(kwargs)} apply only when data is a raw array")
        return data
    return ResponseData(data, **kwargs)
