"""The ``bayesrank`` package as it was at a git ref, for before/after benchmarks."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def extract_package(ref: str, dest: Path) -> Path:
    """Write ``bayesrank/`` at git ``ref`` of this repository under ``dest``; return ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "bayesrank"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return dest
