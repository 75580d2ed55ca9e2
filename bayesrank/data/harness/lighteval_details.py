"""lighteval details: ``details/{model}/{date}/details_{task}_{date}.parquet``.

lighteval (``logging/evaluation_tracker.py``) saves one parquet file per task,
one row per document, columns ``doc`` (its ``id``: the document's index in the
task's data set, set by lighteval), ``metric`` (``{metric name: value}``) and
``model_response``, under ``OUTPUT/details/{model_name}/{date}/``: the model is
the folder path between ``details`` and the date, the task the file name less
``details_`` and ``_{date}``.  The outcome is the chosen metric (``metric=``
where the file has several), which must be 0 or 1; N = 1.  A folder is every
details file under it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from bayesrank.data.harness.common import Trial
from bayesrank.errors import DataError, LoadError

__all__ = ["FIX", "sniff", "trials"]

FIX = "choose a 0/1 metric with metric="
_COLUMNS = {"doc", "metric", "model_response"}


def _is_details(path: Path) -> bool:
    import pyarrow.parquet as pq

    try:
        return _COLUMNS <= set(pq.read_schema(path).names)
    except Exception:  # not parquet, damaged: not ours to judge here
        return False


def _files(path: Path) -> list[Path]:
    files = sorted(path.rglob("details_*.parquet")) if path.is_dir() else [path]
    return [p for p in files if _is_details(p)]


def sniff(path: Path) -> bool:
    """A details parquet file (by its columns), or a folder holding some."""
    return (path.is_dir() or path.suffix in (".parquet", ".pq")) and bool(_files(path))


def _model_and_task(path: Path) -> tuple[str, str]:
    date = path.parent.name
    parts = path.parent.parent.parts
    if "details" not in parts or not path.stem.endswith(f"_{date}"):
        raise LoadError(f"{path} is not at details/{{model}}/{{date}}/details_{{task}}_{{date}}"
                        ".parquet, where lighteval writes it and which names its model; keep "
                        "lighteval's folders")
    model = "/".join(parts[len(parts) - parts[::-1].index("details"):])
    return model, path.stem.removeprefix("details_").removesuffix(f"_{date}")


def trials(path: Path, metric: str | None = None) -> Iterator[Trial]:
    """Every document's score of the chosen metric, one :class:`Trial` each."""
    import pandas as pd

    for file in _files(path) if path.is_dir() else [path]:
        if not _is_details(file):
            raise LoadError(f"cannot read {file} as lighteval details: not a parquet file with "
                            "columns doc, metric and model_response (truncated, or another file)")
        model, task = _model_and_task(file)
        try:
            frame = pd.read_parquet(file, columns=["doc", "metric"])
        except Exception as exc:
            raise LoadError(f"cannot read {file} as parquet ({exc}): truncated or damaged"
                            ) from exc
        names = list(dict.fromkeys(k for m in frame["metric"] for k in (m or {})))
        if metric is None and len(names) != 1:
            raise DataError(f"{file} has metrics {names}; choose one with metric= (--metric)")
        name = metric or names[0]
        for row, (doc, scores) in enumerate(zip(frame["doc"], frame["metric"], strict=True)):
            where = f"row {row} of {file}"
            if not (doc or {}).get("id"):
                raise DataError(f"{where} has no doc.id (lighteval sets it to the document's "
                                "index); the file is not lighteval's or was edited")
            if name not in (scores or {}):
                raise DataError(f"{where} (doc {doc['id']!r}) has no {name!r} score; its "
                                f"metrics: {sorted(scores or {})}")
            yield Trial(task, model, str(doc["id"]), 0, _plain(scores[name]), where)


def _plain(value):
    """A numpy scalar (as parquet gives it) as the Python number it holds."""
    return value.item() if hasattr(value, "item") else value
