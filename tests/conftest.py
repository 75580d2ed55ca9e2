"""Shared test fixtures."""

from __future__ import annotations

import functools
import os
import time
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
    test_fitting.py took 85-95 s on both workers.  Tests marked ``extended(why)`` are
    skipped, saying why, unless ``BAYESRANK_SLOW`` is set (``make test-slow``).
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
    if not os.environ.get("BAYESRANK_SLOW"):
        for item in items:
            mark = item.get_closest_marker("extended")
            if mark is not None:
                item.add_marker(pytest.mark.skip(
                    reason=f"{mark.args[0]}: run it with `make test-slow` (BAYESRANK_SLOW=1)"))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that would start after ``BAYESRANK_TEST_DEADLINE`` (Unix seconds) is skipped,
    visibly, instead of being cut off by CI's time limit with nothing reported.

    ``.ci/run`` sets it for the slow targets it runs after ``make test``; unset, every test
    runs.
    """
    deadline = os.environ.get("BAYESRANK_TEST_DEADLINE")
    if deadline and time.time() > float(deadline):
        pytest.skip("CI's time budget was spent before this test started; run its make target")


@functools.cache
def numpy_graphs_mode():
    """PyTensor's full rewrites (stabilisations included), then each Op's NumPy ``perform``:
    no compilation.  FAST_COMPILE also skips the rewrites, and PyMC's plain
    Binomial(sigmoid) graph lost 4e-8 of its log-density near p = 1 without them.  Without
    elementwise fusion, whose fused loops NumPy cannot run beyond 32 operands."""
    from pytensor.compile.mode import Mode

    return Mode(linker="py", optimizer="fast_run").excluding("fusion")


@pytest.fixture
def numpy_graphs():
    """PyTensor graphs run without compiling them within the test (:func:`numpy_graphs_mode`).

    For tests that compare densities and gradients of the models' graphs, not of the Numba
    or JAX kernels, whose own tests hold them equal to the NumPy code: Numba's JIT of a
    whole model graph costs 20-45 s on a cold cache, which made these tests the slowest of
    ``make test`` on a fresh clone.
    """
    import pytensor

    with pytensor.config.change_flags(mode=numpy_graphs_mode()):
        yield
