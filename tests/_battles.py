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


#: Style coefficients of the simulated battles with covariates: per unit of the
#: difference of each side's response length (in hundreds of tokens) and markdown count.
BETA = np.array([0.3, -0.25])


def simulate_style_battles(n: int = 8000, theta: np.ndarray = THETA, beta: np.ndarray = BETA,
                           tie: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """Battles whose winner depends on style too: each side has a response length
    (``length_a``, ``length_b``, hundreds of tokens) and a markdown count (``markdown_a``,
    ``markdown_b``); model_a wins a decisive battle with probability
    logistic(theta_a - theta_b + beta . (x_a - x_b)), and a battle is a tie with
    probability ``tie``.  Stronger models write a little longer, so that ignoring style
    would misjudge them."""
    rng = np.random.default_rng(seed)
    L = theta.size
    a = rng.integers(0, L, n)
    b = (a + rng.integers(1, L, n)) % L
    length_a = rng.gamma(4.0, 1.0, n) + 0.5 * theta[a]
    length_b = rng.gamma(4.0, 1.0, n) + 0.5 * theta[b]
    markdown_a, markdown_b = rng.poisson(3.0, n), rng.poisson(3.0, n)
    x = np.c_[length_a - length_b, markdown_a - markdown_b]
    p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b] + x @ beta)))
    winner = np.where(rng.random(n) < p, "model_a", "model_b").astype(object)
    winner[rng.random(n) < tie] = "tie"
    names = np.array([f"llm_{k}" for k in range(L)])
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": winner,
                         "length_a": length_a, "length_b": length_b,
                         "markdown_a": markdown_a, "markdown_b": markdown_b})
