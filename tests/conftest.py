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


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests sharing a module-scoped fixture run on one xdist worker (``--dist loadgroup``).

    Otherwise each worker builds the fixture itself: the three samplers' fits of
    test_fitting.py took 85-95 s on both workers.
    """
    for item in items:
        fixture_info = getattr(item, "_fixtureinfo", None)
        if fixture_info is None:
            continue
        shared = sorted(
            name for name, defs in fixture_info.name2fixturedefs.items()
            if defs and defs[-1].scope == "module"
        )
        if shared:
            item.add_marker(pytest.mark.xdist_group(f"{item.module.__name__}::{shared[0]}"))
