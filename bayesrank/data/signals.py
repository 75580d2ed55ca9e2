"""Per-completion signals: the inputs of categorical schemes (paper table "Nine base signals").

A :class:`Signals` table holds, for every observed (model, question, trial)
completion, some of the nine base signals of the paper's appendix "Categorical
Ranking":

========================  ===================================================
``has_box``               boxed final answer present (0/1)
``is_correct``            exact-match correctness (0/1)
``token_ratio``           completion tokens / 32768
``repeated_pattern``      non-``stop`` finish reason (0/1)
``prompt_bpt``            prompt bits per token
``completion_bpt``        completion bits per token
``compass_A/B/C``         verifier P(correct) / P(wrong) / P(irrelevant)
========================  ===================================================

Every signal is optional when loading; a scheme that needs a missing one
raises a :class:`~bayesrank.errors.DataError` naming it
(:func:`bayesrank.schemes.apply`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from bayesrank.data import io
from bayesrank.data.harness import scorio_logs
from bayesrank.data.response import ResponseData
from bayesrank.data.tables import read_table
from bayesrank.errors import DataError, LoadError

__all__ = ["BINARY_SIGNALS", "PROBABILITY_SIGNALS", "SIGNALS", "Signals", "load_signals"]

#: The paper's nine base signals, in the order of its table.
SIGNALS = (
    "has_box", "is_correct", "token_ratio", "repeated_pattern", "prompt_bpt",
    "completion_bpt", "compass_A", "compass_B", "compass_C",
)
#: Signals that must be 0 or 1.
BINARY_SIGNALS = ("has_box", "is_correct", "repeated_pattern")
#: Signals that are probabilities (0 <= x <= 1).
PROBABILITY_SIGNALS = ("compass_A", "compass_B", "compass_C")
_KEYS = ("model", "question", "trial")


@dataclass(frozen=True, eq=False)
class Signals:
    """Validated signals of L models x M questions x N trials.

    Attributes
    ----------
    values : dict of str -> ndarray, shape (L, M, N)
        One float array per present signal; NaN exactly where no trial was observed.
    mask : ndarray of bool, shape (L, M, N), or None
        ``True`` where a trial was observed; None when every cell has N trials.
    models, questions : tuple of str
        Names in order of first appearance in the source.
    """

    values: Mapping[str, np.ndarray]
    models: tuple[str, ...]
    questions: tuple[str, ...]
    mask: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        return (len(self.models), len(self.questions), next(iter(self.values.values())).shape[2])

    @property
    def names(self) -> tuple[str, ...]:
        """The signals present, in the paper's order, then any others."""
        known = [s for s in SIGNALS if s in self.values]
        return (*known, *sorted(set(self.values) - set(known)))

    @property
    def observed(self) -> np.ndarray:
        """Boolean (L, M, N): True where a trial was observed."""
        return np.ones(self.shape, bool) if self.mask is None else self.mask

    def __getitem__(self, name: str) -> np.ndarray:
        return self.require((name,), "this lookup")[name]

    def require(self, names: Sequence[str], what: str) -> dict[str, np.ndarray]:
        """The arrays of ``names``; a :class:`DataError` naming every one that is missing."""
        missing = [n for n in names if n not in self.values]
        if missing:
            raise DataError(f"{what} needs signal(s) {missing}, which the signals table lacks "
                            f"(it has {list(self.names)})")
        return {n: self.values[n] for n in names}

    def outcomes(self, name: str = "is_correct", *, R0: Any = None) -> ResponseData:
        """A binary signal as :class:`~bayesrank.ResponseData` (default: correctness).

        ``R0`` (array or file, as :func:`bayesrank.load` takes it) adds prior
        outcomes, e.g. greedy decodes for the paper's tau_Greedy reference.
        """
        if name not in BINARY_SIGNALS:
            raise DataError(f"only a 0/1 signal {BINARY_SIGNALS} can be outcomes, not {name!r}")
        values = np.nan_to_num(self[name], nan=0.0).astype(np.int64)
        prior = None
        if R0 is not None:  # parse the prior with the loader's own rules (.npy / keyed .npz)
            prior = io.load(values, R0=R0).R0
        return ResponseData(values, models=self.models, questions=self.questions,
                               mask=self.mask, R0=prior, weights=[0.0, 1.0])

    def to_xarray(self) -> xr.Dataset:
        """Dataset with one variable per signal on dims ``(llm, question, trial)``."""
        dims = ("llm", "question", "trial")
        ds = xr.Dataset(
            {n: (dims, self.values[n]) for n in self.names},
            coords={"llm": list(self.models), "question": list(self.questions),
                    "trial": np.arange(self.shape[2])},
        )
        if self.mask is not None:
            ds["observed"] = (dims, self.mask)
        return ds

    def __repr__(self) -> str:
        L, M, N = self.shape
        return f"Signals(L={L}, M={M}, N={N}; {', '.join(self.names)})"



def _read_source(source: Any, fmt: str | None) -> tuple[pd.DataFrame, str]:
    if isinstance(source, pd.DataFrame):
        return source, "table"
    if not isinstance(source, str | os.PathLike):
        raise TypeError(f"signals come from a DataFrame or a file path, not "
                        f"{type(source).__name__}")
    path = Path(source)
    if not path.exists():
        raise LoadError(f"no such file: {path}")
    if fmt in (None, "scorio") and scorio_logs.sniff(path):  # the paper's raw records
        return scorio_logs.signal_frame(path), str(path)
    if path.is_dir():
        raise LoadError(f"{path} is a directory, not a signals file")
    kind = io._format_of(path, fmt)
    if kind not in ("csv", "jsonl", "parquet"):
        raise LoadError(f"signals are read from long tables (csv, jsonl, parquet), not {kind}")
    return read_table(path, kind), str(path)


def _signal_array(column: pd.Series, name: str, source: str) -> np.ndarray:
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(f"{source}: signal {name!r} is {column.iloc[row]!r} at row {row}, "
                        "not a finite number")
    if name in BINARY_SIGNALS and not np.isin(values, (0.0, 1.0)).all():
        row = int(np.flatnonzero(~np.isin(values, (0.0, 1.0)))[0])
        raise DataError(f"{source}: signal {name!r} must be 0 or 1; found {values[row]!r} "
                        f"at row {row}")
    if name in PROBABILITY_SIGNALS and ((values < 0) | (values > 1)).any():
        row = int(np.flatnonzero((values < 0) | (values > 1))[0])
        raise DataError(f"{source}: signal {name!r} is a probability; found {values[row]!r} "
                        f"at row {row}")
    return values


def load_signals(
    source: Any,
    *,
    columns: Mapping[str, str] | None = None,
    signals: Sequence[str] | None = None,
    format: str | None = None,
) -> Signals:
    """Read a long table of per-completion signals.

    Parameters
    ----------
    source : pandas.DataFrame, str or Path
        One row per (model, question, trial) completion; ``.csv``, ``.jsonl``
        or ``.parquet`` files are read by the same readers as :func:`bayesrank.load`,
        and the paper's raw scorio records (a file or folder) give their signals
        (:mod:`bayesrank.data.harness.scorio_logs`).
    columns : mapping, optional
        Our name -> your column name, for the keys and the signals, e.g.
        ``{"model": "llm", "is_correct": "correct"}``.
    signals : sequence of str, optional
        Signal columns to keep.  Default: every one of the nine base signals
        present (others are ignored); naming a column explicitly also admits
        signals outside the nine (then only required to be finite numbers).
    format : str, optional
        Override the file suffix (csv, jsonl, parquet).

    Returns
    -------
    Signals
        Models and questions in order of first appearance; trial labels sorted
        and mapped to positions 0..N-1; cells with fewer trials than the
        longest are masked, never filled.
    """
    try:
        return _load_signals(source, columns, signals, format)
    except DataError as exc:
        raise io.one_line(exc) from exc.__cause__
    except (TypeError, ValueError, OverflowError, IndexError, UnicodeError) as exc:
        if not isinstance(source, str | os.PathLike):
            raise
        raise LoadError(f"cannot read signals from {source}: {type(exc).__name__}: "
                        f"{' '.join(str(exc).split())}") from exc


def _load_signals(source: Any, columns: Mapping[str, str] | None,
                  signals: Sequence[str] | None, format: str | None) -> Signals:
    frame, where = _read_source(source, format)
    rename = {v: k for k, v in (columns or {}).items()}
    df = frame.rename(columns=rename)
    wanted = list(signals) if signals is not None else [s for s in SIGNALS if s in df.columns]
    absent = [s for s in wanted if s not in df.columns]
    if absent:
        raise DataError(f"{where} lacks signal column(s) {absent}; found {list(frame.columns)}")
    if not wanted:
        raise DataError(f"{where} holds none of the signals {list(SIGNALS)}; found "
                        f"{list(frame.columns)} (map yours with columns=...)")
    missing_keys = [k for k in _KEYS if k not in df.columns]
    if missing_keys:
        raise DataError(f"{where} lacks key column(s) {missing_keys}; found {list(frame.columns)}")
    # The key checks (empty keys, duplicate completions, ordering, missing trials)
    # are those of the outcome loader: run it on the keys alone.
    layout = io.from_long(df[list(_KEYS)].assign(outcome=0), source=where)
    li = pd.Index(layout.models).get_indexer(df["model"].astype(str))
    qi = pd.Index(layout.questions).get_indexer(df["question"].astype(str))
    _, ti = np.unique(df["trial"].to_numpy(), return_inverse=True)
    values = {}
    for name in wanted:
        arr = np.full(layout.shape, np.nan)
        arr[li, qi, ti] = _signal_array(df[name], name, where)
        arr.setflags(write=False)
        values[name] = arr
    return Signals(values, layout.models, layout.questions, layout.mask)
