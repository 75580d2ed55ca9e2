"""The ``bayesrank`` package as it was at a git ref, for before/after benchmarks."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def extract_package(ref: str, dest: Path) -> Path:
    """Write the package at git ``ref`` of this repository under ``dest``; return ``dest``.

    ``bayesrank/`` as it is, and ``models/`` as ``bayesrank/models`` (the
    installed layout, pyproject's package-dir mapping): with ``dest`` first on
    ``PYTHONPATH`` both ``bayesrank`` and ``bayesrank.models`` come from ``ref``
    (without the second, an editable install's finder supplies today's models).
    """
    dest.mkdir(parents=True, exist_ok=True)
    for path, prefix in (("bayesrank", ""), ("models", "bayesrank/")):
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", f"--prefix={prefix}", ref, path],
            check=True, capture_output=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(dest, filter="data")
    return dest
