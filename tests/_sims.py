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


def binary_with_spread(seed: int, L: int, M: int, N: int, spread: float = 0.35) -> np.ndarray:
    """Binary responses: success probability ability x ease, abilities within +-spread of 0.5."""
    rng = np.random.default_rng(seed)
    ability = rng.uniform(0.5 - spread, 0.5 + spread, size=(L, 1, 1))
    ease = rng.uniform(0.4, 1.0, size=(1, M, 1))
    return (rng.random((L, M, N)) < np.clip(ability * ease * 1.4, 0, 1)).astype(np.int8)
