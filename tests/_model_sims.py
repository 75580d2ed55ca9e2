"""Numpy simulators of each Bayesian model's generative process (independent of bayesrank.models).

They draw parameters the way the model docstrings say and return
:class:`~bayesrank.ResponseData` whose reductions are exactly the simulated
sufficient statistics, plus the true parameters.
"""

from __future__ import annotations

import itertools

import numpy as np

from bayesrank import ResponseData


def logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def zero_sum_normal(rng, sigma, size):
    """Centred i.i.d. normals: PyMC's ZeroSumNormal(sigma)."""
    x = rng.normal(0.0, sigma, size)
    return x - x.mean(axis=-1, keepdims=True)


def counts_to_binary(k: np.ndarray, n_trials: int) -> np.ndarray:
    """R (L, M, N) with the first k_lm trials solved: successes k, in trial order."""
    return (np.arange(n_trials) < k[..., None]).astype(np.int8)


def rasch_prior_draw(rng, L, M, *, ability_scale=3.0):
    """(theta, b) from the Rasch prior.

    theta ~ ZSN(3) (mean ability 0), mu_b ~ N(0, 3 / sqrt(L)), sigma_b ~ HN(2.5),
    b_m ~ N(mu_b, sigma_b) i.i.d.
    """
    theta = zero_sum_normal(rng, ability_scale, L)
    mu_b = rng.normal(0.0, ability_scale / np.sqrt(L))
    sigma_b = abs(rng.normal(0.0, 2.5))
    b = rng.normal(mu_b, sigma_b, M)
    return theta, b


def located_on_informed_models(theta, b, R):
    """(theta, b) shifted so that the models R bounds from both sides have mean ability 0.

    The IRT models report theta with mean 0 over the informed models (some success and
    some failure); every logit theta_l - b_m is unchanged by the shift.
    """
    total = R.sum(axis=(1, 2))
    informed = (total > 0) & (total < R.shape[1] * R.shape[2])
    shift = theta[informed].mean() if informed.any() else theta.mean()
    return theta - shift, b - shift


def simulate_irt(rng, theta, b, N, *, a=None, c=None, phi=None):
    """Binary R from p_lm = c_m + (1 - c_m) logistic(a_m (theta_l - b_m)), shuffled trials.

    With ``phi``, each cell's trials share a rate drawn from Beta(p phi, (1 - p) phi)
    (beta-binomial counts); the returned p is the curve's, not the cell's.
    """
    a = np.ones_like(b) if a is None else a
    c = np.zeros_like(b) if c is None else c
    p = c + (1 - c) * logistic(a * (theta[:, None] - b[None, :]))
    rate = p if phi is None else rng.beta(p * phi, (1 - p) * phi)
    return (rng.random((*p.shape, N)) < rate[..., None]).astype(np.int8), p


def pairwise_data(rng, theta, n_per_pair, *, tie_log_nu=None):
    """Masked R whose only co-observed comparisons are the simulated pair outcomes.

    Each question holds one comparison of one pair (only those two models are
    observed), so ``reductions.wins`` / ``ties`` equal the simulated counts.
    Without ``tie_log_nu``: Bradley-Terry (decisive outcomes only); with it:
    Davidson (i wins : j wins : tie = pi_i : pi_j : nu sqrt(pi_i pi_j)).
    """
    L = theta.size
    pairs = list(itertools.combinations(range(L), 2))
    M = len(pairs) * n_per_pair
    R = np.zeros((L, M, 1), dtype=np.int8)
    mask = np.zeros((L, M, 1), dtype=bool)
    wins = np.zeros((L, L))
    ties = np.zeros((L, L))
    col = 0
    for i, j in pairs:
        if tie_log_nu is None:
            logits = np.array([theta[i], theta[j]])
        else:
            logits = np.array([theta[i], theta[j], tie_log_nu + 0.5 * (theta[i] + theta[j])])
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        outcomes = rng.choice(probs.size, size=n_per_pair, p=probs)
        for o in outcomes:
            mask[[i, j], col, 0] = True
            if o == 0:
                R[i, col, 0] = 1
                wins[i, j] += 1
            elif o == 1:
                R[j, col, 0] = 1
                wins[j, i] += 1
            else:
                R[[i, j], col, 0] = rng.integers(0, 2)  # both solve or both fail
                ties[i, j] += 1
                ties[j, i] += 1
            col += 1
    return ResponseData(R, mask=mask), wins, ties


def davidson_luce_probabilities(theta, log_delta):
    """All non-empty proper winner sets U of {0..L-1} and P(U | full set), by enumeration."""
    L = theta.size
    subsets = [np.array(U) for t in range(1, L) for U in itertools.combinations(range(L), t)]
    logits = np.array([log_delta[len(U) - 1] + theta[U].mean() for U in subsets])
    probs = np.exp(logits - logits.max())
    return subsets, probs / probs.sum()


def simulate_davidson_luce(rng, theta, log_delta, n_events):
    """Binary R (L, n_events, 1): one Davidson-Luce winner set per question-trial."""
    subsets, probs = davidson_luce_probabilities(theta, log_delta)
    R = np.zeros((theta.size, n_events, 1), dtype=np.int8)
    for e, s in enumerate(rng.choice(len(subsets), size=n_events, p=probs)):
        R[subsets[s], e, 0] = 1
    return ResponseData(R)
