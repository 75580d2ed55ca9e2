"""Loading and saving response data.

Formats (chosen by file suffix, or ``format=``):

- ``.npy``: one array R of shape (L, M, N) or (L, M).
- ``.npz``: either a bayesrank archive written by :func:`save` (keys ``R``,
  ``weights``, ``models``, ``questions`` and optionally ``mask``, ``R0``), or
  the paper authors' layout with one tensor per benchmark key (``aime24``,
  ``aime25``, ``hmmt_feb_2025``, ``brumo_2025``, ``combined``, ...), selected
  with ``key=`` (not needed when the archive holds one tensor); a greedy archive
  with the same keys is passed as ``R0=``.  1-D string arrays beside the tensors
  name their models and questions (``models``, ``questions``; ``models_n1`` for a
  key ``repair_n1``; else the one array named like ``model_names`` / ``problem_ids``),
  as in the real benchmark archives.
- ``.csv``, ``.jsonl``, ``.parquet``: long format, one row per trial, columns
  ``model, question, trial, outcome`` (renamed with ``columns=``).  Cells with
  fewer trials than the longest become missing trials (a mask), never zeros.
- ``.nc``: NetCDF written from :meth:`ResponseData.to_xarray`.
- ``.csv``, ``.jsonl``, ``.parquet`` with ``trials=N``: a wide table of success
  counts, a model column and one column per question, each cell out of N trials
  (MathArena's per-problem tables); see :func:`from_counts`.
- An evaluation harness's logs (Inspect AI, lm-eval, ...): :mod:`bayesrank.data.harness`.
- Pairwise battles (tables with columns ``model_a, model_b, winner``, leaderbot's ``.json``
  pair counts): :class:`~bayesrank.data.pairwise.PairwiseData`, see ``load_pairwise``.

Archives are read with ``allow_pickle=False``; nothing is ever unpickled.
Writes go to a temporary file in the target folder and are renamed into place,
so a failed write never leaves a half-written file.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayesrank.data import harness
from bayesrank.data.atomic import atomic_write
from bayesrank.data.counts import from_counts
from bayesrank.data.limits import check_npy, check_size
from bayesrank.data.pairwise import load_pairwise
from bayesrank.data.response import ResponseData
from bayesrank.data.tables import read_table
from bayesrank.errors import DataError, LoadError

__all__ = [
    "load", "save", "load_benchmarks", "save_benchmarks", "from_long", "from_counts",
    "align_prior", "atomic_write",
]

LONG_COLUMNS = ("model", "question", "trial", "outcome")


def parse_columns(text: str) -> dict[str, str]:
    """``"model=llm,outcome=correct"`` -> ``{"model": "llm", "outcome": "correct"}``.

    The command-line spelling of ``columns=``; a ValueError names a bad entry.
    """
    mapping: dict[str, str] = {}
    for item in (p.strip() for p in text.split(",") if p.strip()):
        ours, sep, theirs = item.partition("=")
        if not sep or not theirs or ours not in LONG_COLUMNS:
            raise ValueError(
                f"bad entry {item!r}: give OURS=YOURS pairs with OURS one of "
                f"{', '.join(LONG_COLUMNS)}, e.g. --columns trial=sample_idx,outcome=correct"
            )
        mapping[ours] = theirs
    return mapping


def columns_argument(text: str) -> dict[str, str]:
    """:func:`parse_columns` as an argparse ``type=`` (its message shown to the user)."""
    import argparse

    try:
        return parse_columns(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
_SUFFIX_FORMAT = {
    ".npy": "npy",
    ".npz": "npz",
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".nc": "netcdf",
    ".netcdf": "netcdf",
}


def _error(python: str, cli: str) -> LoadError:
    """A LoadError worded for Python callers, with ``cli_message`` for the command line."""
    exc = LoadError(python)
    exc.cli_message = cli  # type: ignore[attr-defined]
    return exc


def _format_of(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in set(_SUFFIX_FORMAT.values()):
            known = sorted(set(_SUFFIX_FORMAT.values()) | set(harness.FORMATS))
            raise LoadError(f"unknown format {fmt!r}; use one of {known}")
        return fmt
    try:
        return _SUFFIX_FORMAT[path.suffix.lower()]
    except KeyError:
        known = sorted(_SUFFIX_FORMAT)
        raise _error(
            f"cannot tell the format of {path} from its suffix {path.suffix!r}; "
            f"pass format= (one of {sorted(set(_SUFFIX_FORMAT.values()))})",
            f"cannot tell the format of {path} from its suffix {path.suffix!r}; "
            f"rename it to one of {', '.join(known)}",
        ) from None


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    if not zipfile.is_zipfile(path):
        raise LoadError(f"cannot read {path}: not a valid .npz archive (truncated or other format)")
    try:
        with zipfile.ZipFile(path) as archive:  # the declared sizes first (data/limits.py)
            for info in archive.infolist():
                if info.filename.endswith(".npy"):
                    with archive.open(info) as member:
                        check_npy(member, info.file_size, f"{path} member {info.filename}")
        with np.load(path, allow_pickle=False) as archive:
            return {k: archive[k] for k in archive.files}
    except ValueError as exc:
        if "pickle" in str(exc).lower():
            raise LoadError(f"{path} holds pickled objects, which bayesrank never loads") from exc
        raise LoadError(f"cannot read {path}: {exc}") from exc
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, NotImplementedError,
            RuntimeError) as exc:  # RuntimeError: an encrypted member
        raise LoadError(f"cannot read {path}: not a valid .npz archive ({exc})") from exc


def _prior_array(R0: Any, key: str | None) -> np.ndarray | None:
    """R0 given as an array, a .npy file, or a benchmark-keyed .npz archive."""
    if R0 is None or isinstance(R0, np.ndarray):
        return R0
    if isinstance(R0, str | os.PathLike):
        path = Path(R0)
        if not path.exists():
            raise LoadError(f"prior file {path} does not exist")
        if path.suffix.lower() == ".npz":
            arrays = _read_npz(path)
            return arrays[_pick_key(arrays, key, path)]
        return _read_npy(path)
    return np.asarray(R0)


def _is_label_array(array: np.ndarray) -> bool:
    """A 1-D array of names (models, questions, ...) rather than outcomes."""
    return array.ndim == 1 and array.dtype.kind in "US"


def _benchmark_keys(arrays: Mapping[str, np.ndarray]) -> list[str]:
    """Keys of the arrays that can be outcome tensors: numbers with 2 or 3 axes."""
    return [k for k, a in arrays.items() if a.ndim in (2, 3) and a.dtype.kind in "biuf"]


def _pick_key(arrays: Mapping[str, np.ndarray], key: str | None, path: Path) -> str:
    """The benchmark to load: ``key``, or the archive's only outcome tensor."""
    benchmarks = _benchmark_keys(arrays)
    if key is not None:
        if key not in arrays:
            raise LoadError(f"{path} has no key {key!r}; benchmarks: {sorted(benchmarks)}")
        if key not in benchmarks:
            a = arrays[key]
            held = (f"{a.size} names" if _is_label_array(a) else
                    f"an array of shape {a.shape} and dtype {a.dtype.name}")
            raise LoadError(f"{path}: {key!r} is not an outcome tensor of shape (L, M) or "
                            f"(L, M, N) (it holds {held}); benchmarks: {sorted(benchmarks)}")
        return key
    if len(benchmarks) == 1:
        return benchmarks[0]
    if not benchmarks:
        raise LoadError(f"{path} holds no outcome tensor (numbers of shape (L, M) or "
                        f"(L, M, N)); keys: {sorted(arrays)}")
    raise _error(f"{path} holds several benchmarks {sorted(benchmarks)}; choose one with key=",
                 f"{path} holds several benchmarks {sorted(benchmarks)}; choose one with --key")


_LABEL_WORDS = {"models": ("model", "llm"), "questions": ("question", "problem", "item", "task")}


def _archive_labels(arrays: Mapping[str, np.ndarray], key: str, axis: str,
                    size: int) -> list[str] | None:
    """Names for one axis of benchmark ``key`` stored beside it, or None.

    Candidates, first match wins: ``{axis}_{suffix}`` for every ``_suffix`` that ends
    ``key`` (``models_n1`` for ``repair_n1``), then ``{axis}`` itself, then the one other
    array whose name says what it holds (``model_names``, ``problem_ids``; none when two
    fit); a candidate counts only when it is a 1-D array of ``size`` distinct strings.
    """
    def fits(a: np.ndarray | None) -> bool:
        return a is not None and _is_label_array(a) and a.size == size and len(set(a)) == size

    parts = key.split("_")
    suffixes = ["_".join(parts[i:]) for i in range(1, len(parts))]
    for name in [f"{axis}_{s}" for s in suffixes] + [axis]:
        if fits(arrays.get(name)):
            return [str(x) for x in arrays[name]]
    named = [name for name, a in arrays.items()
             if any(w in name.lower() for w in _LABEL_WORDS[axis]) and fits(a)]
    return [str(x) for x in arrays[named[0]]] if len(named) == 1 else None


def _read_npy(path: Path) -> np.ndarray:
    try:
        with open(path, "rb") as stream:
            check_npy(stream, os.fstat(stream.fileno()).st_size, str(path))
        return np.load(path, allow_pickle=False)
    except ValueError as exc:
        raise LoadError(f"cannot read {path}: {exc}") from exc
    except (EOFError, OSError) as exc:
        raise LoadError(f"cannot read {path}: truncated or not a .npy file ({exc})") from exc


def _from_npz(path: Path, key: str | None, R0: Any, names: dict[str, Any]) -> ResponseData:
    arrays = _read_npz(path)
    if "R" in arrays and key is None:  # bayesrank's own archive
        return ResponseData(
            arrays["R"],
            models=names.get("models", arrays.get("models")),
            questions=names.get("questions", arrays.get("questions")),
            R0=_prior_array(R0, key) if R0 is not None else arrays.get("R0"),
            weights=names.get("weights", arrays.get("weights")),
            mask=arrays["mask"].astype(bool) if "mask" in arrays else None,
        )
    chosen = _pick_key(arrays, key, path)
    R = arrays[chosen]
    stored = {axis: _archive_labels(arrays, chosen, axis, R.shape[i])
              for i, axis in enumerate(("models", "questions"))}
    labels = {axis: v for axis, v in stored.items() if v is not None and axis not in names}
    return ResponseData(R, R0=_prior_array(R0, chosen), **labels, **names)


_TRUE_WORDS = frozenset({"1", "true", "yes"})
_FALSE_WORDS = frozenset({"0", "false", "no"})


def _show(value: Any) -> str:
    """A cell as a person reads it in the file: ``nan``, ``3``, ``'maybe'`` (no numpy repr)."""
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return repr(value)
        return value.strip()
    if isinstance(value, float | np.floating):
        return f"{float(value):g}"
    return str(value)


def _place(frame: pd.DataFrame, pos: int, source: str, first_line: int | None) -> str:
    """Where row ``pos`` is: a line of the file (as an editor counts) or the frame's row label."""
    if first_line is None:
        return f"row {frame.index[pos]!r} of {source}"
    return f"line {pos + first_line} of {source}"


def _outcomes(frame: pd.DataFrame, source: str, first_line: int | None) -> np.ndarray:
    """Outcomes as floats: numbers, booleans, or the words true/false and yes/no.

    Words are read only where they are unambiguous: every outcome of the table is
    then one of 0/1, true/false, yes/no (any case).
    """
    column = frame["outcome"]
    if pd.api.types.is_bool_dtype(column):
        return column.to_numpy(dtype=float)
    numeric = pd.to_numeric(column, errors="coerce")
    text = column.astype(str).str.strip().str.lower()
    words = text.isin(list(_TRUE_WORDS | _FALSE_WORDS))
    if (words & numeric.isna()).any():  # true/false or yes/no present
        binary = words | numeric.isin([0, 1])
        if not binary.all():
            pos = int(np.flatnonzero(~binary.to_numpy())[0])
            raise DataError(
                f"outcome {_show(column.iloc[pos])} at {_place(frame, pos, source, first_line)} "
                "is not binary, but other outcomes are words (true/false, yes/no); give every "
                "outcome as 0/1, true/false or yes/no"
            )
        return (text.isin(list(_TRUE_WORDS)) | (numeric == 1)).to_numpy(dtype=float)
    values = numeric.to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise DataError(
            f"outcome {_show(column.iloc[pos])} at {_place(frame, pos, source, first_line)} "
            "is not a number (give 0, 1, ..., C, or true/false, yes/no)"
        )
    return values


def _missing_columns_error(missing: list[str], frame: pd.DataFrame, source: str) -> LoadError:
    found = ", ".join(map(str, frame.columns))
    head = f"{source} lacks column(s) {', '.join(missing)}; found {found}"
    example = ",".join(f"{c}=..." for c in missing)
    wide = ("outcome" in missing and "question" in missing and frame.shape[1] > 1
            and frame.iloc[:, 1:].apply(pd.to_numeric, errors="coerce").notna().all().all())
    hint = "; a wide table of success counts, one column per question, loads with {}"
    one = "model" in missing
    return _error(
        f"{head} (map yours with columns={{{', '.join(repr(c) + ': ...' for c in missing)}}}"
        + (hint.format("trials=N") if wide else "")
        + ("; a table of one model's runs loads with models=['its name']" if one else "") + ")",
        f"{head} (map yours with --columns {example}"
        + (hint.format("--trials N") if wide else "") + ")",
    )


def _from_wide_counts(frame: pd.DataFrame, trials: int, *, columns: Mapping[str, str] | None,
                      R0: Any, source: str) -> ResponseData:
    """A wide table of counts: a model column, then one column per question."""
    model_col = (columns or {}).get("model", "model")
    if model_col not in frame.columns:
        raise LoadError(f"{source}: a wide table of counts (trials={trials}) needs a "
                        f"{model_col!r} column naming the models; found "
                        f"{', '.join(map(str, frame.columns))}")
    counts = frame.drop(columns=[model_col])
    if counts.shape[1] == 0:
        raise LoadError(f"{source} has no question columns beside {model_col!r}")
    values = counts.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    bad = np.isnan(values)
    if bad.any():
        r, c = (int(i) for i in np.argwhere(bad)[0])
        value = counts.iat[r, c]
        held = "nothing (an empty cell)" if pd.isna(value) else _show(value)
        raise LoadError(f"{source}: model {frame[model_col].iloc[r]!s}, question "
                        f"{counts.columns[c]!s} holds {held}, not a count")
    models = [str(m) for m in frame[model_col]]
    try:
        return from_counts(values, trials, models=models,
                           questions=[str(q) for q in counts.columns], R0=R0)
    except DataError as exc:
        raise LoadError(f"{source}: {exc}") from None


def from_long(
    frame: pd.DataFrame,
    *,
    columns: Mapping[str, str] | None = None,
    R0: Any = None,
    weights: Any = None,
    n_categories: int | None = None,
    models: Sequence[str] | None = None,
    source: str = "table",
    first_line: int | None = None,
) -> ResponseData:
    """Build ResponseData from a long table with one row per (model, question, trial).

    Without a trial column the table holds one trial per (model, question) (N = 1;
    a repeated cell is then an error naming the missing column).  Models and
    questions keep their order of first appearance; trial labels are
    sorted and mapped to positions 0..N-1.  Missing (model, question, trial)
    combinations become masked (missing) trials.  Outcomes are numbers,
    booleans, or the words true/false and yes/no (any case) when every outcome
    is binary.

    Parameters
    ----------
    columns : mapping, optional
        ``{our name: your column}`` for any of model, question, trial, outcome.
    models : sequence of one str, optional
        A table of one model's runs without a model column (e.g. an agent's
        rewards per task and trial): ``models=["gpt-4o"]`` names that model.
        A table with a model column names its models itself.
    source : str
        What the table is called in error messages (a file name).
    first_line : int, optional
        Line of the file holding the table's first row (2 for a CSV with a
        header); errors then name lines, else the frame's row labels.
    """
    rename = {v: k for k, v in (columns or {}).items()}
    unknown = sorted(set(columns or {}) - set(LONG_COLUMNS))
    if unknown:
        raise DataError(f"columns= maps unknown name(s) {unknown}; use {list(LONG_COLUMNS)}")
    df = frame.rename(columns=rename)
    if models is not None:
        df = _one_model_table(df, models, source)
    no_trial = "trial" not in df.columns and {"model", "question", "outcome"} <= set(df.columns)
    if no_trial:  # one trial per (model, question), e.g. greedy decodes: N = 1
        df = df.assign(trial=0)
    missing = [c for c in LONG_COLUMNS if c not in df.columns]
    if missing:
        raise _missing_columns_error(missing, frame, source)
    if df.empty:
        raise DataError(f"{source} has no rows")
    for col in ("model", "question", "trial"):
        if df[col].isna().any():
            pos = int(np.flatnonzero(df[col].isna().to_numpy())[0])
            raise DataError(f"empty {col} at {_place(df, pos, source, first_line)}")
    dup = df.duplicated(subset=["model", "question", "trial"], keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(dup)[:4].tolist()
        first = df.iloc[rows[0]]
        where = ", ".join(_place(df, r, source, first_line).split(" of ")[0] for r in rows)
        if no_trial:
            raise DataError(
                f"{source} has no trial column, so it holds one trial per (model, question), "
                f"but {int(dup.sum())} rows share one; first: ({first['model']}, "
                f"{first['question']}) at {where}: add the trial column (columns={{'trial': "
                "...}, --columns trial=...)")
        raise DataError(
            f"{source} has {int(dup.sum())} rows sharing a (model, question, trial); first: "
            f"({first['model']}, {first['question']}, {first['trial']}) at {where}")
    outcome = _outcomes(df, source, first_line)
    model_order = pd.unique(df["model"].astype(str))
    question_order = pd.unique(df["question"].astype(str))
    m_pos = pd.Index(model_order).get_indexer(df["model"].astype(str))
    q_pos = pd.Index(question_order).get_indexer(df["question"].astype(str))
    trials, ti = np.unique(df["trial"].to_numpy(), return_inverse=True)
    shape = (len(model_order), len(question_order), len(trials))
    values = np.zeros(shape, dtype=float)
    observed = np.zeros(shape, dtype=bool)
    values[m_pos, q_pos, ti] = outcome
    observed[m_pos, q_pos, ti] = True
    return ResponseData(
        values,
        models=list(model_order),
        questions=list(question_order),
        R0=R0,
        weights=weights,
        n_categories=n_categories,
        mask=None if observed.all() else observed,
    )


def _refuse_names_for_tables(**names: Any) -> None:
    """A table names its models and questions in its columns: ``questions=`` (and a wide
    table's ``models=``) would be ignored, so they are refused."""
    given = [name for name, value in names.items() if value is not None]
    if given:
        raise LoadError(f"{'= and '.join(given)}= name the axes of an array; a table names "
                        f"them in its columns (rename them in the table itself)")


def _one_model_table(df: pd.DataFrame, models: Any, source: str) -> pd.DataFrame:
    """``df`` with a model column naming its one model ``models[0]`` (from_long's ``models``)."""
    names = [models] if isinstance(models, str) else list(models)
    if "model" in df.columns:
        raise DataError(f"{source} has a model column, which names its models; models= "
                        f"names the one model of a table without one")
    if len(names) != 1:
        raise DataError(f"{source} has no model column, so it holds one model's runs; "
                        f"models= must name one model, got {len(names)}: {names[:4]}")
    return df.assign(model=str(names[0]))


_FIRST_LINE = {"csv": 2, "jsonl": 1}  # a CSV's header is line 1


def _read_netcdf(path: Path) -> ResponseData:
    import xarray as xr

    try:
        with xr.open_dataset(path, engine="h5netcdf") as ds:
            check_size(int(ds.nbytes), str(path))  # declared, before anything is read
            ds = ds.load()
    except LoadError:
        raise
    except Exception as exc:
        raise LoadError(f"cannot read {path} as NetCDF: {exc}") from exc
    return ResponseData.from_xarray(ds)


def _prior_table(frame: pd.DataFrame, columns: Mapping[str, str] | None,
                 source: str, first_line: int | None) -> ResponseData:
    """A long prior table; without a model column it is shared, without a trial column D = 1."""
    rename = {v: k for k, v in (columns or {}).items()}
    df = frame.rename(columns=rename)
    if "model" not in df.columns:
        df = df.assign(model=_SHARED)
    if "trial" not in df.columns:
        df = df.assign(trial=0)
    return from_long(df, source=f"prior {source}", first_line=first_line)


_SHARED = "\x00shared"  # the one "model" of a prior table without a model column


def _named_prior(R0: Any, columns: Mapping[str, str] | None) -> ResponseData | None:
    """R0 from a file that names its models and questions (aligned to the data by name)."""
    if not isinstance(R0, str | os.PathLike):
        return None
    path = Path(R0)
    if not path.exists():
        raise LoadError(f"prior file {path} does not exist")
    fmt = _format_of(path, None)
    if fmt in ("csv", "jsonl", "parquet"):
        return _prior_table(read_table(path, fmt), columns, str(path), _FIRST_LINE.get(fmt))
    if fmt == "netcdf":
        return _read_netcdf(path)
    if fmt == "npz" and "R" in _read_npz(path):
        return _from_npz(path, None, None, {})
    return None  # a bare array (.npy, benchmark-keyed .npz): aligned by position


def _mismatch(kind: str, wanted: Sequence[str], have: Sequence[str]) -> str | None:
    absent = [x for x in wanted if x not in set(have)]
    extra = [x for x in have if x not in set(wanted)]
    if not absent and not extra:
        return None
    parts = []
    if absent:
        parts.append(f"no prior for {len(absent)} {kind}(s) of the data: {absent[:5]}")
    if extra:
        parts.append(f"{len(extra)} {kind}(s) not in the data: {extra[:5]}")
    return "; ".join(parts)


def align_prior(prior: ResponseData, data: ResponseData, source: str = "prior") -> np.ndarray:
    """Prior outcomes ordered like ``data``: (M, D) shared or (L, M, D) per model.

    Raises a :class:`DataError` naming the models and questions that do not match.
    """
    if prior.mask is not None:
        raise DataError(f"{source} has fewer prior trials for some cells; every (model, "
                        "question) needs the same number of prior outcomes")
    shared = prior.models == (_SHARED,)
    problems = [p for p in (
        _mismatch("question", data.questions, prior.questions),
        None if shared else _mismatch("model", data.models, prior.models),
    ) if p]
    if problems:
        raise DataError(f"{source} does not match the data by name: {'; '.join(problems)}")
    qi = [prior.questions.index(q) for q in data.questions]
    if shared:
        return np.asarray(prior.R[0][qi])
    mi = [prior.models.index(m) for m in data.models]
    return np.asarray(prior.R[np.ix_(mi, qi)])


def _with_prior(data: ResponseData, R0: np.ndarray) -> ResponseData:
    return ResponseData(data.R, models=data.models, questions=data.questions, R0=R0,
                        weights=data.weights, mask=data.mask)


def load(
    source: Any,
    *,
    key: str | None = None,
    R0: Any = None,
    format: str | None = None,
    columns: Mapping[str, str] | None = None,
    models: Any = None,
    questions: Any = None,
    weights: Any = None,
    n_categories: int | None = None,
    trials: int | None = None,
    metric: str | None = None,
    covariates: Sequence[str] | None = None,
) -> ResponseData:
    """Load response data from an array, a DataFrame, a file or a harness's logs.

    Parameters
    ----------
    source : ResponseData, array_like, pandas.DataFrame, str or Path
        Paths include harness logs, files or folders (:mod:`bayesrank.data.harness`).
    key : str, optional
        Benchmark inside a multi-benchmark ``.npz`` (also selects R0 from a
        keyed prior archive), or the task of harness logs holding several.
    R0 : array_like, str or Path, optional
        Prior outcomes (e.g. greedy decodes), or a file holding them: a long
        table (``.csv``, ``.jsonl``, ``.parquet`` with columns question,
        outcome and optionally model and trial, renamed with ``columns`` like
        the data) or a ``.nc`` / ``.npz`` written by bayesrank, aligned to the
        data by model and question names (without a model column the prior is
        shared by all models); or a bare array (``.npy``, or ``.npz`` keyed
        like the data), aligned by position.
    format : str, optional
        Override the suffix: npy, npz, csv, jsonl, parquet, netcdf, a harness's; ``battles``
        or ``pair_counts`` for pairwise data.
    columns : mapping, optional
        Long-format column names, ``{our name: yours}``, e.g.
        ``{"model": "llm", "trial": "sample_idx", "outcome": "correct"}``.
    models, questions, weights, n_categories
        Passed to :class:`ResponseData` (for array-like sources).  For a long
        table without a model column (one model's runs), ``models=["name"]``
        names its model (:func:`from_long`).
    trials : int, optional
        The table (a ``.csv`` / ``.jsonl`` / ``.parquet`` file or a DataFrame) is wide:
        a ``model`` column (renamed with ``columns``) and one column per question
        holding success counts out of ``trials`` (:func:`from_counts`).
    metric : str, optional
        The score to read from harness logs that hold several (an Inspect scorer, ...).
    covariates : sequence of str, optional
        A battles table's per-battle covariates to control for (style control,
        :func:`bayesrank.from_battles`); refused for anything but battles.
    """
    style = {} if covariates is None else {"covariates": covariates}
    pairs = load_pairwise(source, format, refused=dict(  # battles: bayesrank.data.pairwise
        key=key, R0=R0, columns=columns, models=models, questions=questions, weights=weights,
        n_categories=n_categories, trials=trials, metric=metric), **style)
    if pairs is not None:
        return pairs  # type: ignore[return-value]
    if covariates is not None:
        shown = "the DataFrame" if isinstance(source, pd.DataFrame) else source
        raise LoadError(f"covariates apply to pairwise battles, and {shown} is not a battles "
                        "table (columns model_a, model_b, winner and the covariates); leave "
                        "covariates out for a response tensor")
    try:
        named = _named_prior(R0, columns)
        data = _load(source, key=key, R0=None if named is not None else R0, format=format,
                     columns=columns, models=models, questions=questions, weights=weights,
                     n_categories=n_categories, trials=trials, metric=metric)
        if named is None:
            return data
        return _with_prior(data, align_prior(named, data, f"prior {R0}"))
    except DataError as exc:
        raise one_line(exc) from exc.__cause__
    except (TypeError, ValueError, OverflowError, IndexError, UnicodeError) as exc:
        if not isinstance(source, str | os.PathLike):
            raise
        # what a file holds, in the wrong shape or type: still its reader's one line
        raise LoadError(f"cannot read {source}: {_flat(f'{type(exc).__name__}: {exc}')}"
                        ) from exc


def _flat(text: str) -> str:
    return " ".join(text.split())


def one_line(exc: DataError) -> DataError:
    """``exc`` itself when its message is one line, else a copy on one line (an array's
    repr in a message spans several)."""
    text = str(exc)
    if "\n" not in text.strip():
        return exc
    flat = type(exc)(_flat(text))
    if hasattr(exc, "cli_message"):
        flat.cli_message = _flat(exc.cli_message)  # type: ignore[attr-defined]
    return flat


def _load(source: Any, *, key, R0, format, columns, models, questions, weights,
          n_categories, trials=None, metric=None) -> ResponseData:
    names = {
        k: v
        for k, v in dict(
            models=models, questions=questions, weights=weights, n_categories=n_categories
        ).items()
        if v is not None
    }
    if trials is not None and (isinstance(trials, bool) or not isinstance(trials, int | np.integer)
                               or trials < 1):
        raise LoadError(f"trials= must be a whole number >= 1, got {trials!r}")
    if isinstance(source, ResponseData):
        return source if R0 is None else _with_prior(source, _prior_array(R0, key))
    if isinstance(source, pd.DataFrame):
        _refuse_names_for_tables(questions=questions, models=models if trials else None)
        if trials is not None:
            return _from_wide_counts(source, int(trials), columns=columns,
                                     R0=_prior_array(R0, key), source="the DataFrame")
        return from_long(source, columns=columns, R0=_prior_array(R0, key), weights=weights,
                         n_categories=n_categories, models=models, source="the DataFrame")
    if not isinstance(source, str | os.PathLike):
        if trials is not None:
            raise LoadError("trials= reads a wide table of counts (a .csv/.jsonl/.parquet file "
                            "or a DataFrame); for an array of counts use from_counts(k, n)")
        return ResponseData(source, R0=_prior_array(R0, key), **names)
    path = Path(source)
    if not path.exists():
        raise LoadError(f"no such file: {path}")
    if (log_format := harness.format_of(path, format)) is not None:  # a harness's logs
        data = harness.load(path, log_format, key=key, metric=metric,
                            options=dict(columns=columns, trials=trials, **names))
        return data if R0 is None else _with_prior(data, _prior_array(R0, key))
    if metric is not None:
        raise LoadError(f"metric= chooses a score of a harness's logs; {path} is not one")
    if path.is_dir():
        raise LoadError(f"{path} is a directory, not a data file")
    fmt = _format_of(path, format)
    if trials is not None and fmt not in ("csv", "jsonl", "parquet"):
        raise LoadError(f"trials= reads a wide table of counts (.csv/.jsonl/.parquet), "
                        f"not a {fmt} file")
    if fmt == "npy":
        return ResponseData(_read_npy(path), R0=_prior_array(R0, key), **names)
    if fmt == "npz":
        return _from_npz(path, key, R0, names)
    if fmt == "netcdf":
        data = _read_netcdf(path)
        return data if R0 is None else _with_prior(data, _prior_array(R0, key))
    _refuse_names_for_tables(questions=questions, models=models if trials else None)
    table = read_table(path, fmt)
    if trials is not None:
        return _from_wide_counts(table, int(trials), columns=columns, R0=_prior_array(R0, key),
                                 source=str(path))
    return from_long(
        table,
        columns=columns,
        R0=_prior_array(R0, key),
        weights=weights,
        n_categories=n_categories,
        models=models,
        source=str(path),
        first_line=_FIRST_LINE.get(fmt),
    )


def _npz_payload(data: ResponseData) -> dict[str, np.ndarray]:
    payload = {
        "R": data.R,
        "weights": data.weights,
        "models": np.asarray(data.models, dtype=str),
        "questions": np.asarray(data.questions, dtype=str),
    }
    if data.mask is not None:
        payload["mask"] = data.mask
    if data.R0 is not None:
        payload["R0"] = data.R0
    return payload


def save(data: ResponseData, path: str | os.PathLike, *, format: str | None = None) -> Path:
    """Write ``data`` to ``path`` (format from the suffix); ``load(save(x)) == x``."""
    target = Path(path)
    fmt = _format_of(target, format)

    def write(tmp: Path) -> None:
        if fmt == "npy":
            if data.mask is not None or data.R0 is not None:
                raise DataError(".npy holds R only; use .npz or .nc to keep the mask/R0")
            with open(tmp, "wb") as fh:
                np.save(fh, data.R, allow_pickle=False)
        elif fmt == "npz":
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, **_npz_payload(data))
        elif fmt == "netcdf":
            data.to_xarray().to_netcdf(tmp, engine="h5netcdf")
        else:
            frame = data.to_frame()
            if fmt == "csv":
                frame.to_csv(tmp, index=False)
            elif fmt == "jsonl":
                frame.to_json(tmp, orient="records", lines=True)
            else:
                frame.to_parquet(tmp, index=False)

    return atomic_write(target, write)


def load_benchmarks(path: str | os.PathLike, *, R0: Any = None, format: str | None = None,
                    metric: str | None = None) -> dict[str, ResponseData]:
    """Every benchmark of a paper-layout ``.npz`` (and its keyed prior archive), or every
    task of a harness's logs (``format``, ``metric`` as in :func:`load`)."""
    p = Path(path)
    if p.exists() and (log_format := harness.format_of(p, format)) is not None:
        tasks = harness.read(p, log_format, metric=metric)
        return {k: d if R0 is None else load(d, key=k, R0=R0) for k, d in tasks.items()}
    arrays = _read_npz(p)
    return {key: load(p, key=key, R0=R0) for key in _benchmark_keys(arrays)}


def save_benchmarks(
    benchmarks: Mapping[str, ResponseData],
    path: str | os.PathLike,
    *,
    prior_path: str | os.PathLike | None = None,
) -> Path:
    """Write tensors in the paper's layout: one key per benchmark (+ a keyed R0 archive)."""
    for key, d in benchmarks.items():
        if d.mask is not None:
            raise DataError(
                f"benchmark {key!r} has missing trials; the paper layout cannot hold them"
            )

    def write_arrays(arrays: Mapping[str, np.ndarray]) -> Callable[[Path], None]:
        def write(tmp: Path) -> None:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, **arrays)

        return write

    if prior_path is not None:
        missing = [k for k, d in benchmarks.items() if d.R0 is None]
        if missing:
            raise DataError(f"benchmarks {missing} have no R0 to write to {prior_path}")
        atomic_write(prior_path, write_arrays({k: d.R0 for k, d in benchmarks.items()}))
    return atomic_write(path, write_arrays({k: d.R for k, d in benchmarks.items()}))
