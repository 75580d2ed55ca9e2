"""Threads for work that releases the GIL (numpy ufuncs, compiled kernels)."""

from __future__ import annotations

import os

__all__ = ["worker_threads"]


def worker_threads(limit: int = 4) -> int:
    """The CPUs this process may use, at most ``limit`` (at least 1)."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    return max(1, min(limit, usable))
