"""OpenAI evals JSON Lines logs (``oaieval ... --record_path``).

The first line is ``{"spec": {completion_fns, eval_name, base_eval, split,
run_config, created_by, run_id, created_at}}``; each event line is ``{run_id,
event_id, sample_id, type, data, created_by, created_at}``, and a ``match``
event's ``data.correct`` (a bool) scores its sample; the last line is
``{"final_report": {...}, "run_id"}``.  The model is the run's one completion
function, the benchmark its ``eval_name``, the question the ``sample_id``, N = 1.
A log without a final report (an unfinished run) or run with several completion
functions (which one the matches score is not said) is refused.  A folder is
every log under it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from bayesrank.data.harness.common import Trial, json_lines, keyed_lines
from bayesrank.errors import DataError

__all__ = ["FIX", "sniff", "trials"]

FIX = "a match event's data.correct is true or false"


def _files(path: Path) -> list[Path]:
    return keyed_lines(path, {"spec"}, "*.jsonl")


def sniff(path: Path) -> bool:
    """A JSON Lines file whose first line is ``{"spec": ...}`` (or a folder of them)."""
    return (path.is_dir() or path.suffix in (".jsonl", ".json")) and bool(_files(path))


def trials(path: Path, metric: str | None = None) -> Iterator[Trial]:
    """Every ``match`` event's ``data.correct``, one :class:`Trial` per sample."""
    if metric is not None:
        raise DataError(f"metric= does not apply to {path}: an OpenAI evals log scores "
                        "samples by its match events only")
    for file in _files(path) if path.is_dir() else [path]:
        rows = list(json_lines(file, "OpenAI evals log"))
        spec = rows[0][1]["spec"]
        fns = list(spec.get("completion_fns") or [])
        if len(fns) != 1:
            raise DataError(f"{file} was run with {len(fns)} completion functions {fns}; "
                            "which model its matches score is not stated: run each model "
                            "on its own (one completion function per log)")
        if not any("final_report" in row for _, row in rows):
            raise DataError(f"{file} has no final_report line: the run did not finish, so "
                            "samples may be missing; re-run it")
        matches = [(n, row) for n, row in rows if row.get("type") == "match"]
        if not matches:
            raise DataError(f"{file} has no match event: this eval does not score samples "
                            "right/wrong (a model-graded or metrics-only eval?)")
        for number, row in matches:
            where = f"line {number} of {file}"
            data = row.get("data") or {}
            if row.get("sample_id") is None or "correct" not in data:
                raise DataError(f"{where} is a match event without sample_id or "
                                "data.correct; the log is damaged")
            yield Trial(str(spec["eval_name"]), str(fns[0]), str(row["sample_id"]), 0,
                        data["correct"], where)
