"""The paper's raw inference records (scorio JSON Lines): one completion a line.

Each line holds ``model``, ``data_id`` (the question), ``seed`` (the trial) and
``processed_results: {is_correct, has_box}`` (plus ``output`` and ``tokens``, the
completion's finish reason, length and log-probabilities), the layout
``scorio.categorical.io`` (scorio 0.2.3) reads.  The outcome is ``is_correct``
(0/1); a file, or a folder of such files read together as scorio reads them, is
one benchmark named after the file's stem or the folder.  Lines of several models
may share a file: each line names its own.

The same records carry the completion signals of the paper's categorical schemes
(:mod:`bayesrank.data.signals`): :func:`signal_frame` gives ``has_box``,
``is_correct``, ``token_ratio`` (``output.num_completion_tokens / 32768``),
``repeated_pattern`` (``output.finish_reason`` other than ``"stop"``),
``completion_bpt = -tokens.completion_avg_logprob / ln 2`` and
``prompt_bpt = log2(tokens.prompt_ppl)`` (bits per token: the perplexity is
``exp`` of the mean negative log-probability, so its ``log2`` is the mean in bits).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from bayesrank.data.harness.common import Trial, json_lines, keyed_lines
from bayesrank.errors import DataError

__all__ = ["FIX", "signal_frame", "sniff", "trials"]

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


def _signals(row: dict) -> dict:
    out, tokens = row.get("output") or {}, row.get("tokens") or {}
    results = row.get("processed_results") or {}
    length, finish = out.get("num_completion_tokens"), out.get("finish_reason")
    avg_lp, prompt_ppl = tokens.get("completion_avg_logprob"), tokens.get("prompt_ppl")
    return {"model": str(row.get("model")), "question": str(row.get("data_id")),
            "trial": row.get("seed"), "has_box": results.get("has_box"),
            "is_correct": results.get("is_correct"),
            "token_ratio": None if length is None else length / 32768,
            "repeated_pattern": None if finish is None else int(finish != "stop"),
            "completion_bpt": None if avg_lp is None else -avg_lp / math.log(2),
            "prompt_bpt": None if prompt_ppl is None else math.log2(prompt_ppl)}


def signal_frame(path: Path) -> pd.DataFrame:
    """One row of signals per completion, for :func:`bayesrank.load_signals`.

    A signal no record carries is left out (absent); one that some records lack
    stays, as a missing value the signals loader names.
    """
    frame = pd.DataFrame([_signals(row) for file in _files(path)
                          for _, row in json_lines(file, "scorio records file")])
    if frame.empty:
        raise DataError(f"{path} holds no scorio record")
    return frame.dropna(axis=1, how="all")
