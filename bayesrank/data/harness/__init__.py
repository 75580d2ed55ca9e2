"""Evaluation harnesses' own logs as response data: found from the file or folder itself.

Each module reads one harness's log into scored trials (:class:`.common.Trial`);
:func:`read` turns them into one :class:`~bayesrank.ResponseData` per benchmark
(task).  ``bayesrank.load(path)`` and ``bayesrank.load_benchmarks(path)`` come
here when :func:`detect` recognises ``path`` (or ``format=`` names one of
:data:`FORMATS`).  Which version of each harness every reader was checked
against is in ``docs/harness.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from bayesrank.data.harness import (
    helm_runs,
    inspect_logs,
    lighteval_details,
    lm_eval_logs,
    openai_evals,
    scorio_logs,
)
from bayesrank.data.harness.common import responses
from bayesrank.data.response import ResponseData
from bayesrank.errors import LoadError

__all__ = ["FORMATS", "detect", "format_of", "load", "pick", "read"]

#: Format name -> reader module (``sniff(path)``, ``trials(path, metric)``, ``FIX``);
#: :func:`detect` asks them in this order.
FORMATS: dict[str, ModuleType] = {
    "inspect": inspect_logs,
    "lm_eval": lm_eval_logs,
    "scorio": scorio_logs,
    "helm": helm_runs,
    "openai_evals": openai_evals,
    "lighteval": lighteval_details,
}


def detect(path: Path) -> str | None:
    """The harness whose log ``path`` is, or None (then it is not a harness log)."""
    return next((name for name, module in FORMATS.items() if module.sniff(path)), None)


def format_of(path: Path, format: str | None) -> str | None:
    """The harness format to read ``path`` with: ``format`` if it names one, else detected."""
    if format is not None:
        return format if format in FORMATS else None
    return detect(path)


def read(path: Path, format: str, *, metric: str | None = None) -> dict[str, ResponseData]:
    """Every benchmark (task) of the log(s) at ``path``, by name."""
    module = FORMATS[format]
    fix = getattr(module, "FIX", "score it 0/1 first")
    return responses(module.trials(path, metric), path, fix=fix)


def pick(benchmarks: dict[str, ResponseData], key: str | None, path: Path) -> ResponseData:
    """The benchmark ``key``, or the only one; a LoadError naming them otherwise."""
    if key is not None:
        if key not in benchmarks:
            raise LoadError(f"{path} has no task {key!r}; its tasks: {sorted(benchmarks)}")
        return benchmarks[key]
    if len(benchmarks) == 1:
        return next(iter(benchmarks.values()))
    exc = LoadError(f"{path} holds several tasks {sorted(benchmarks)}; choose one with key= "
                    "or read them all with bayesrank.load_benchmarks")
    exc.cli_message = (  # type: ignore[attr-defined]
        f"{path} holds several tasks {sorted(benchmarks)}; choose one with --key")
    raise exc


def load(path: Path, format: str, *, key: str | None, metric: str | None,
         options: Mapping[str, Any]) -> ResponseData:
    """The one benchmark ``bayesrank.load`` asked for; ``options`` (those of tables and
    arrays: columns, trials, weights, ...) must all be None."""
    given = sorted(k for k, v in options.items() if v is not None)
    if given:
        raise LoadError(f"{'=, '.join(given)}= do not apply to {path}, a {format} log: it "
                        "names its models, questions and scores itself")
    return pick(read(path, format, metric=metric), key, path)
