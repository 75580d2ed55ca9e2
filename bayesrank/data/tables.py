"""Reading a table file (CSV, JSON Lines, Parquet) into a DataFrame, errors as LoadError.

Shared by the response-tensor reader (:mod:`bayesrank.data.io`) and the battles reader
(:mod:`bayesrank.data.pairwise`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bayesrank.errors import LoadError

__all__ = ["read_table"]


def read_table(path: Path, fmt: str) -> pd.DataFrame:
    """The table in ``path`` read as ``fmt`` (``csv``, ``jsonl`` or ``parquet``)."""
    try:
        if fmt == "csv":
            return pd.read_csv(path)
        if fmt == "jsonl":
            return pd.read_json(path, lines=True)
        return pd.read_parquet(path)
    except ImportError as exc:
        raise LoadError(f"reading {path} needs an optional package: {exc}") from exc
    except Exception as exc:  # parser errors differ by engine; report them uniformly
        raise LoadError(f"cannot read {path} as {fmt}: {exc}") from exc
