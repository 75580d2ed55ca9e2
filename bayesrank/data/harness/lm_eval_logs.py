"""lm-evaluation-harness ``--log_samples`` output: ``samples_{task}_{date}.jsonl`` files.

lm-eval writes, for each task, one line per (document, filter) with ``doc_id``,
``filter``, ``metrics`` (the names of the metrics on the line) and each metric's
value (``"acc": 1.0``), next to ``results_{date}.json`` whose ``model_name`` names
the model (both under ``OUTPUT/{model_name_sanitized}/``).  A metric is chosen as
lm-eval's results name it, ``"{metric},{filter}"`` (``"exact_match,strict-match"``),
or by its bare name where one filter has it.  The document is the question; lm-eval
logs one score per document and filter (with ``repeats`` the score of the filtered
answer, e.g. a majority vote: the per-repeat answers in ``resps`` are unscored
text), so N = 1.  A folder is every samples file under it: one benchmark per task,
the models of a task (their folders) side by side.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from bayesrank.data.harness.common import Trial, json_lines, keyed_lines, read_json
from bayesrank.errors import DataError, LoadError

__all__ = ["FIX", "sniff", "trials"]

FIX = "choose a 0/1 metric (acc, exact_match, ...) with metric="
_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)$")


def _files(path: Path) -> list[Path]:
    return keyed_lines(path, {"doc_id", "filter", "metrics"}, "samples_*.jsonl")


def sniff(path: Path) -> bool:
    """A samples file (by its first line), or a folder holding some."""
    return (path.is_dir() or path.suffix in (".jsonl", ".json")) and bool(_files(path))


def _model(path: Path, date: str | None) -> str:
    """``model_name`` of the results file lm-eval wrote with ``path`` (same date)."""
    if date is None:
        raise LoadError(f"{path} is not named samples_{{task}}_{{date}}.jsonl as lm-eval names "
                        "it, so its results file (the model's name) cannot be found; keep "
                        "lm-eval's file names")
    found = sorted(path.parent.glob(f"*_{date}.json"))
    if not found:
        raise LoadError(f"{path} has no results_{date}.json beside it to name its model; keep "
                        "the results file lm-eval wrote with the samples")
    results = read_json(found[0], "an lm-eval results file")
    name = results.get("model_name") if isinstance(results, dict) else None
    if not name:
        raise LoadError(f"{found[0]} has no model_name (lm-eval older than 0.4.3?); re-run "
                        "with a newer lm-eval")
    return str(name)


def _chosen(options: list[str], metric: str | None, path: Path) -> str:
    if metric is None:
        if len(options) == 1:
            return options[0]
        raise DataError(f"{path} has several metrics {options}; choose one with metric= "
                        f"(--metric), e.g. metric={options[0]!r}")
    if metric in options:
        return metric
    bare = [o for o in options if o.split(",")[0] == metric]
    if len(bare) == 1:
        return bare[0]
    raise DataError(f"{path} has no single metric {metric!r}; its metrics: {options}")


def trials(path: Path, metric: str | None = None) -> Iterator[Trial]:
    """Every document's score of the chosen metric, one :class:`Trial` each."""
    for file in _files(path) if path.is_dir() else [path]:
        named = _NAME.match(file.stem)
        task = named["task"] if named else file.stem
        model = _model(file, named["date"] if named else None)
        rows = list(json_lines(file, "lm-eval samples file"))
        options = list(dict.fromkeys(f"{m},{row.get('filter')}" for _, row in rows
                                     for m in row.get("metrics") or []))
        if not options:
            raise DataError(f"{file} names no metric on any line; it is not lm-eval output "
                            "written with --log_samples")
        chosen = _chosen(options, metric, file)
        name, filter_key = chosen.split(",", 1)
        for number, row in rows:
            if str(row.get("filter")) != filter_key:
                continue
            where = f"line {number} of {file}"
            if name not in row:
                raise DataError(f"{where} (doc_id {row.get('doc_id')!r}) has no {name!r} "
                                "score; the samples file is incomplete: re-run the task")
            yield Trial(task, model, str(row["doc_id"]), 0, row[name], where)
