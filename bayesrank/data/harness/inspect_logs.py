"""Inspect AI evaluation logs: ``.eval`` archives, ``.json`` logs, or a log directory.

One log is one task run by one model (``eval.task``, ``eval.model`` in its header).
Each sample ``samples/{id}_epoch_{epoch}.json`` of an ``.eval`` zip (the
``samples`` list of a ``.json`` log) holds ``scores: {scorer: {value, ...}}``;
the sample id is the question, the epoch the trial, and the value is read as
:mod:`.common` describes (``C``/``I``/``P``/``N`` or 0/1).  A directory is every
log under it, one benchmark per task, the models of a task side by side.

Inspect 0.3.x writes ``.eval`` members compressed with zstd, which Python's
``zipfile`` reads only from 3.14 on; where the ``inspect-ai`` package is
installed its own reader (``inspect_ai.log.read_eval_log``) opens them, else an
archive with deflate members (older Inspect) is read with ``zipfile`` and a zstd
one gets an error naming the fix.  ``.json`` logs are plain JSON, read without it.
"""

from __future__ import annotations

import re
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bayesrank.data.harness.common import Trial, read_json
from bayesrank.errors import DataError, LoadError

__all__ = ["sniff", "trials"]

_JSON_HEAD = re.compile(r'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
_SAMPLE = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")


@dataclass(frozen=True)
class _Log:
    task: str
    model: str
    status: str
    samples: list[dict]  # {"id", "epoch", "scores": {scorer: value}, "error"}


def _is_json_log(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            return bool(_JSON_HEAD.match(fh.read(256)))
    except (OSError, UnicodeDecodeError):
        return False


def _logs_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and (
        p.suffix == ".eval" or (p.suffix == ".json" and _is_json_log(p))))


def sniff(path: Path) -> bool:
    """An ``.eval`` file, an Inspect ``.json`` log, or a folder holding some."""
    if path.is_dir():
        return bool(_logs_in(path))
    return path.suffix == ".eval" or (path.suffix == ".json" and _is_json_log(path))


def _from_json(log: dict, path: Path) -> _Log:
    try:
        spec = log["eval"]
        return _Log(str(spec["task"]), str(spec["model"]), str(log.get("status", "")),
                    [_sample_of(s) for s in log.get("samples") or []])
    except (KeyError, TypeError) as exc:
        raise LoadError(f"{path} is not an Inspect log: it lacks {exc} (eval.task, eval.model, "
                        "samples[].scores)") from None


def _sample_of(sample: dict) -> dict:
    scores = sample.get("scores") or {}
    return {"id": sample["id"], "epoch": sample["epoch"], "error": sample.get("error"),
            "scores": {name: (s or {}).get("value") for name, s in scores.items()}}


def _with_inspect(path: Path) -> _Log | None:
    """The log read by inspect-ai itself, or None where it is not installed."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        return None
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # its errors differ by damage; report them as ours
        raise LoadError(f"cannot read {path} as an Inspect log ({type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:200]}): truncated or damaged; re-run "
                        "or re-copy it") from exc
    samples = [{"id": s.id, "epoch": s.epoch, "error": s.error,
                "scores": {k: v.value for k, v in (s.scores or {}).items()}}
               for s in log.samples or []]
    return _Log(log.eval.task, log.eval.model, str(log.status), samples)


def _with_zipfile(path: Path) -> _Log:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            head = "header.json" if "header.json" in names else "_journal/start.json"
            if head not in names:
                raise LoadError(f"{path} has neither header.json nor _journal/start.json: "
                                "not an Inspect .eval log")
            import json

            header = json.loads(archive.read(head))
            samples = [json.loads(archive.read(n)) for n in names if _SAMPLE.match(n)]
    except NotImplementedError as exc:  # zstd members before Python 3.14
        raise LoadError(
            f"{path} is compressed with a method Python {sys.version_info.major}."
            f"{sys.version_info.minor}'s zipfile cannot read ({exc}); install inspect-ai "
            "(pip install inspect-ai), whose reader bayesrank then uses, or convert the log "
            f"with: inspect log convert {path} --to json") from exc
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        raise LoadError(f"cannot read {path} as an Inspect .eval log ({exc}): truncated or "
                        "damaged; re-run or re-copy it") from exc
    header["samples"] = samples
    return _from_json(header, path)


def _read(path: Path) -> _Log:
    if path.suffix == ".eval":
        return _with_inspect(path) or _with_zipfile(path)
    if path.suffix != ".json" and zipfile.is_zipfile(path):  # an .eval renamed (format=)
        try:
            import inspect_ai.log  # noqa: F401  (teaches zipfile zstd before Python 3.14)
        except ImportError:
            pass
        return _with_zipfile(path)
    return _from_json(read_json(path, "an Inspect log"), path)


def _value(sample: dict, where: str, metric: str | None, path: Path) -> Any:
    scores = sample["scores"]
    if not scores:
        why = "it ended in an error" if sample.get("error") else "it was never scored"
        raise DataError(f"{where} has no score ({why}); re-run the failed samples (inspect "
                        f"eval-retry {path}) or score the log (inspect score {path})")
    if metric is not None:
        if metric not in scores:
            raise DataError(f"{where} has no scorer {metric!r}; its scorers: {sorted(scores)}")
        return scores[metric]
    if len(scores) > 1:
        raise DataError(f"{where} has several scorers {sorted(scores)}; choose one with "
                        f"metric= (--metric), e.g. metric={sorted(scores)[0]!r}")
    return next(iter(scores.values()))


def trials(path: Path, metric: str | None = None) -> Iterator[Trial]:
    """Every scored sample of the log(s) at ``path``, one :class:`Trial` per epoch."""
    for file in _logs_in(path) if path.is_dir() else [path]:
        log = _read(file)
        if log.status != "success":
            raise DataError(
                f"{file} is an Inspect log with status {log.status!r}: the run did not "
                f"finish, so questions or epochs are missing; finish it (inspect eval-retry "
                f"{file}) or move it out of the way")
        if not log.samples:
            raise DataError(f"{file} holds no samples (written with --no-log-samples?); "
                            "re-run the task with samples logged")
        for s in log.samples:
            where = f"{file} sample {s['id']!r} epoch {s['epoch']}"
            yield Trial(log.task, log.model, str(s["id"]), int(s["epoch"]),
                        _value(s, where, metric, file), where)
