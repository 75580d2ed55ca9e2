"""Simulated arena battles shared by the pairwise tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

THETA = np.array([-1.0, -0.4, 0.0, 0.5, 1.1])


def simulate_battles(n: int = 1500, theta: np.ndarray = THETA, tie: float = 0.2,
                     both_bad: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """LMArena-style battles: random pairs, a tie with probability ``tie`` (some of them
    both bad), else a Bradley-Terry win for model_a with logistic(theta_a - theta_b)."""
    rng = np.random.default_rng(seed)
    L = theta.size
    a = rng.integers(0, L, n)
    b = (a + rng.integers(1, L, n)) % L
    p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b])))
    u = rng.random(n)
    winner = np.where(rng.random(n) < p, "model_a", "model_b").astype(object)
    winner[u < tie] = "tie"
    winner[u < both_bad] = "tie (bothbad)"
    names = np.array([f"llm_{k}" for k in range(L)])
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": winner,
                         "tstamp": np.arange(n)})
