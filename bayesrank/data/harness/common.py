"""What every harness reader shares: scored trials in, one ResponseData per benchmark out.

A reader turns a harness's log into :class:`Trial` records, each the harness's own
score of one model on one question in one trial (an Inspect epoch, a scorio seed),
and says where in the file it was read.  :func:`responses` checks them (no
(model, question, trial) twice, every score a known value) and builds one
:class:`~bayesrank.ResponseData` per benchmark (task).

Scores become outcomes without any threshold of ours:

* 0/1, ``True``/``False``, ``0.0``/``1.0``: binary outcomes;
* Inspect's grades ``C`` (correct), ``I`` (incorrect), ``P`` (partial), ``N`` (no
  answer): when a benchmark holds only ``C`` and ``I`` they are binary (C = 1);
  otherwise four categories ``0 = N, 1 = I, 2 = P, 3 = C`` with the weights
  Inspect's own ``value_to_float`` gives them, ``w = (0, 0, 0.5, 1)``;
* anything else (a score of 0.7, a dict of sub-scores) is refused with a
  :class:`~bayesrank.errors.DataError` naming the file and the value.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bayesrank.data.response import ResponseData
from bayesrank.errors import DataError, LoadError

__all__ = ["GRADES", "GRADE_WEIGHTS", "Trial", "json_lines", "keyed_lines", "read_json",
           "responses"]

#: Inspect's score letters in category order: NOANSWER, INCORRECT, PARTIAL, CORRECT.
GRADES = ("N", "I", "P", "C")
#: Their utilities, as Inspect's ``value_to_float`` scores them.
GRADE_WEIGHTS = (0.0, 0.0, 0.5, 1.0)


@dataclass(frozen=True)
class Trial:
    """One scored trial as a harness logged it.

    Attributes
    ----------
    benchmark, model, question : str
        The task, the model and the question (sample / document id).
    trial : int or str
        The repeat (epoch, seed); 0 where the harness ran one.
    value : Any
        The harness's score, unconverted.
    where : str
        The file (and line or member) it was read from, for error messages.
    """

    benchmark: str
    model: str
    question: str
    trial: Any
    value: Any
    where: str


def _binary(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and value in (0, 1):
        return int(value)
    return None


def _codes(trials: list[Trial], fix: str) -> tuple[list[int], tuple[float, ...]]:
    """Outcome codes and category weights of one benchmark's trials."""
    binary = [_binary(t.value) for t in trials]
    if all(b is not None for b in binary):
        return binary, (0.0, 1.0)  # type: ignore[return-value]
    letters = [isinstance(t.value, str) and t.value in GRADES for t in trials]
    if all(letters):
        if {t.value for t in trials} <= {"C", "I"}:
            return [int(t.value == "C") for t in trials], (0.0, 1.0)
        return [GRADES.index(t.value) for t in trials], GRADE_WEIGHTS
    unknown = [t for t, b, g in zip(trials, binary, letters, strict=True) if b is None and not g]
    if not unknown:  # only letters and 0/1, mixed
        t = next(t for t, b in zip(trials, binary, strict=True) if b is not None)
        raise DataError(f"{t.where}: score {t.value!r} is a number, but other scores of "
                        f"{t.benchmark!r} are letters C/I/P/N; {fix}")
    t = unknown[0]
    raise DataError(f"{t.where}: score {t.value!r} of question {t.question!r} is neither 0/1 "
                    f"nor one of C, I, P, N; {fix}")


def responses(trials: Iterable[Trial], source: Path | str, *,
              fix: str = "score it 0/1 first") -> dict[str, ResponseData]:
    """One ResponseData per benchmark, from scored trials.

    Models and questions keep their order of first appearance; trial labels are
    sorted to positions 0..N-1; a (model, question) with fewer trials than the
    longest gets missing trials (a mask), never zeros.  ``fix`` ends the error
    for a score that is not 0/1 or C/I/P/N (what the user can do about it).
    """
    seen: dict[tuple, str] = {}
    by_benchmark: dict[str, list[Trial]] = {}
    for t in trials:
        cell = (t.benchmark, t.model, t.question, t.trial)
        if cell in seen:
            raise DataError(
                f"{t.where} scores model {t.model!r} on question {t.question!r} (trial "
                f"{t.trial!r}) of {t.benchmark!r} again, as {seen[cell]} did; keep one run "
                "per model and task (move the other log away)")
        seen[cell] = t.where
        by_benchmark.setdefault(t.benchmark, []).append(t)
    if not by_benchmark:
        raise LoadError(f"{source} holds no scored sample")
    return {name: _tensor(rows, *_codes(rows, fix)) for name, rows in by_benchmark.items()}


def _tensor(rows: list[Trial], codes: list[int], weights: tuple[float, ...]) -> ResponseData:
    """R[l, m, n] from the rows' positions; cells without a row are masked, never zero."""
    models = list(dict.fromkeys(r.model for r in rows))
    questions = list(dict.fromkeys(r.question for r in rows))
    trials = sorted({r.trial for r in rows})
    index = [{name: i for i, name in enumerate(axis)} for axis in (models, questions, trials)]
    at = tuple(np.array([axis[key] for key in keys]) for axis, keys in zip(
        index, ([r.model for r in rows], [r.question for r in rows], [r.trial for r in rows]),
        strict=True))
    shape = (len(models), len(questions), len(trials))
    values, observed = np.zeros(shape, np.int64), np.zeros(shape, bool)
    values[at], observed[at] = codes, True
    return ResponseData(values, models=models, questions=questions, weights=list(weights),
                        mask=None if observed.all() else observed)


def read_json(path: Path, what: str) -> Any:
    """A JSON file's content; a LoadError naming the file when it is not JSON."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise LoadError(f"cannot read {path} as {what}: {exc} (truncated or damaged; "
                        "re-export it)") from exc


def json_lines(path: Path, what: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line of a JSON Lines file."""
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LoadError(f"line {number} of {path} is not JSON ({exc.msg}); a {what} "
                                "has one JSON object a line (truncated? re-export it)") from exc
            if not isinstance(row, dict):
                raise LoadError(f"line {number} of {path} is not a JSON object; a {what} "
                                "has one object a line")
            yield number, row


def first_line(path: Path) -> dict | None:
    """The first line of a JSON Lines file as an object, or None (for sniffing)."""
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    return row if isinstance(row, dict) else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return None


def keyed_lines(path: Path, keys: set[str], pattern: str = "*.jsonl") -> list[Path]:
    """The JSON Lines files at ``path`` (itself, or under a folder, matching ``pattern``)
    whose first line has every key of ``keys``: how a reader recognises its files."""
    files = sorted(path.rglob(pattern)) if path.is_dir() else [path]
    return [p for p in files if (row := first_line(p)) is not None and keys <= set(row)]
