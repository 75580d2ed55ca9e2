"""The paper's raw inference records (scorio JSON Lines): one completion a line.

Each line holds ``model``, ``data_id`` (the question), ``seed`` (the trial) and
``processed_results: {is_correct, has_box}`` (plus ``output`` and ``tokens``, the
completion's finish reason, length and log-probabilities), the layout
``scorio.categorical.io`` (scorio 0.2.3) reads.  The outcome is ``is_correct``
(0/1); a file, or a folder of such files read together as scorio reads them, is
one benchmark named after the file's stem or the folder.  Lines of several models
may share a file: each line names its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from bayesrank.data.harness.common import Trial, json_lines, keyed_lines
from bayesrank.errors import DataError

__all__ = ["FIX", "sniff", "trials"]

FIX = "processed_results.is_correct must be 0 or 1"
_KEYS = {"model", "data_id", "seed", "processed_results"}


def _files(path: Path) -> list[Path]:
    return keyed_lines(path, _KEYS)


def sniff(path: Path) -> bool:
    """JSON Lines whose first line has model, data_id, seed, processed_results (or a folder)."""
    return (path.is_dir() or path.suffix in (".jsonl", ".ndjson")) and bool(_files(path))


def trials(path: Path, metric: str | None = None) -> Iterator[Trial]:
    """Every completion's ``is_correct`` (or ``processed_results[metric]``), one Trial each."""
    name = metric or "is_correct"
    benchmark = path.stem if path.is_file() else path.name
    for file in _files(path) if path.is_dir() else [path]:
        for number, row in json_lines(file, "scorio records file"):
            where = f"line {number} of {file}"
            missing = sorted(_KEYS - set(row))
            if missing:
                raise DataError(f"{where} lacks {missing}; each line of a scorio records file "
                                "names model, data_id, seed and processed_results")
            results = row["processed_results"] or {}
            if results.get(name) is None:
                raise DataError(f"{where} (model {row['model']!r}, data_id {row['data_id']!r}, "
                                f"seed {row['seed']!r}) has no processed_results.{name}: the "
                                "completion was never graded; grade it or drop the line")
            yield Trial(benchmark, str(row["model"]), str(row["data_id"]), row["seed"],
                        results[name], where)
