"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[2] / "shared"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The project's read-only reference data (absent in a user's clone: tests skip)."""
    if not (SHARED / "data").is_dir():
        pytest.skip(f"reference data not available: {SHARED} is absent (only in the project's CI)")
    return SHARED
