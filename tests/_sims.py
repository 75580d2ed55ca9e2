"""Seeded simulators shared by the baseline tests."""

from __future__ import annotations

import numpy as np


def simulate(L: int, M: int, N: int, seed: int) -> np.ndarray:
    """Binary responses with model abilities and question difficulties (logistic)."""
    rng = np.random.default_rng(seed)
    ability = rng.normal(0, 1, L)
    difficulty = rng.normal(0, 1.5, M)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :])))
    return (rng.random((L, M, N)) < p[..., None]).astype(np.int8)
