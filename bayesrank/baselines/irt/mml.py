"""Rasch marginal maximum likelihood by EM over Gauss–Hermite quadrature (Bock & Aitkin, 1981).

Paper Alg. "Rasch MML": abilities are integrated out under ``theta ~ N(0, sd^2)``, the
difficulties maximise the marginal likelihood, and models are scored by their posterior
mean (EAP, identifier ``rasch_mml``) or a discrete posterior quantile
(``rasch_mml_credible``) on the quadrature grid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, gammaln, log_expit

from bayesrank.baselines.irt._common import (
    binary_counts,
    binomial_counts,
    boundary_difficulty,
    logit,
)
from bayesrank.checks import check_finite, check_int, check_probability
from bayesrank.data import ResponseData
from bayesrank.ranking import ranking_method

__all__ = [
    "MmlFit",
    "ability_posterior",
    "fit_rasch_mml",
    "fit_rasch_mml_batch",
    "normal_quadrature",
    "posterior_quantile",
    "rasch_mml",
]


def normal_quadrature(n_points: int, sd: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Hermite nodes and weights for expectations under N(0, sd^2).

    ``E[f(theta)] ~= sum_q w_q f(theta_q)`` with ``theta_q = sd * sqrt(2) x_q`` and
    ``w_q = h_q / sqrt(pi)`` from the physicists' rule ``(x_q, h_q)``.
    """
    n_points = check_int("n_quadrature", n_points, minimum=2)
    x, h = np.polynomial.hermite.hermgauss(n_points)
    return sd * np.sqrt(2.0) * x, h / np.sqrt(np.pi)


def _log_lik_at_nodes(k, n, nodes, difficulty, discrimination=None, guessing=None):
    """log p(k_l | theta_q) up to the binomial constant, shape (L, Q)."""
    a = np.ones_like(difficulty) if discrimination is None else discrimination
    eta = a[None, :] * (nodes[:, None] - difficulty[None, :])  # (Q, M)
    if guessing is None:
        log_p, log_q = log_expit(eta), log_expit(-eta)
    else:
        c = guessing[None, :]
        p = c + (1.0 - c) * expit(eta)
        log_p, log_q = np.log(p), np.log1p(-p)
    return k @ log_p.T + (n - k) @ log_q.T


def ability_posterior(
    successes: np.ndarray,
    trials: np.ndarray | int,
    difficulty: np.ndarray,
    *,
    discrimination: np.ndarray | None = None,
    guessing: np.ndarray | None = None,
    n_quadrature: int = 61,
    population_sd: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Discrete posterior of each ability given item parameters (the E-step).

    ``w_lq ∝ w_q prod_m p_m(theta_q)^{k_lm} (1 - p_m(theta_q))^{n_lm - k_lm}`` over
    Gauss–Hermite nodes of ``N(0, population_sd^2)``; items with infinite
    difficulty are skipped (they contribute a constant).

    Returns
    -------
    posterior : (L, Q) weights summing to 1 per row.
    nodes : (Q,) ability nodes.  EAP = ``posterior @ nodes``.
    """
    k, n = binomial_counts(successes, trials)
    difficulty = np.asarray(difficulty, dtype=float)
    finite = np.isfinite(difficulty)
    nodes, weights = normal_quadrature(n_quadrature, population_sd)

    def sub(v):
        return None if v is None else np.asarray(v, dtype=float)[finite]

    log_post = _log_lik_at_nodes(
        k[:, finite],
        n[:, finite],
        nodes,
        difficulty[finite],
        sub(discrimination),
        sub(guessing),
    ) + np.log(weights)
    log_post -= log_post.max(axis=1, keepdims=True)
    post = np.exp(log_post)
    return post / post.sum(axis=1, keepdims=True), nodes


def posterior_quantile(posterior: np.ndarray, nodes: np.ndarray, q: float) -> np.ndarray:
    """Quantile of discrete posteriors: the smallest node whose CDF reaches ``q``.

    The paper scores ``rasch_mml_credible`` by this discrete-CDF quantile, so
    models whose posteriors cross ``q`` at the same node tie.
    """
    q = check_probability("quantile", q)
    order = np.argsort(nodes)
    cdf = np.cumsum(posterior[:, order], axis=1)
    idx = np.minimum(np.argmax(cdf >= q * (1 - 1e-12), axis=1), nodes.size - 1)
    return nodes[order][idx]


@dataclass(frozen=True)
class MmlFit:
    """Rasch marginal-ML fit.

    Attributes
    ----------
    difficulty : (M,) item difficulties (``±inf`` for items all models solved / failed).
    population_sd : standard deviation of the N(0, sd^2) ability population.
    nodes : (Q,) quadrature abilities; posterior : (L, Q) posterior weights.
    eap : (L,) posterior means; posterior_sd : (L,) posterior standard deviations.
    log_likelihood : marginal log-likelihood (with binomial coefficients).
    n_iter : EM iterations run; converged : whether the EM tolerance was met.
    """

    difficulty: np.ndarray
    population_sd: float
    nodes: np.ndarray
    posterior: np.ndarray
    eap: np.ndarray
    posterior_sd: np.ndarray
    log_likelihood: float
    n_iter: int
    converged: bool


def _solve_difficulties(r, s, nodes, b, slope, max_iter):
    """M-step: for each item solve sum_q [r_qm - s_qm sigmoid(slope*z_q - b_m)] = 0 (Newton).

    ``r`` and ``s`` are expected successes and trials per node (B, Q, M) of B problems
    with slopes (B,); the left side is strictly increasing in b_m, so safeguarded Newton
    converges.  Each problem stops when none of its difficulties moves by 1e-12 any more.
    """
    active = np.ones(b.shape[0], dtype=bool)
    for _ in range(int(max_iter)):
        a = np.flatnonzero(active)
        if a.size == 0:
            break
        p = expit(slope[a, None, None] * nodes[None, :, None] - b[a, None, :])
        g = (s[a] * p).sum(axis=1) - r[a].sum(axis=1)  # increasing in b_m
        h = (s[a] * p * (1.0 - p)).sum(axis=1)
        step = np.clip(g / np.maximum(h, 1e-300), -2.0, 2.0)
        b[a] = b[a] + step
        active[a[np.max(np.abs(step), axis=1, initial=0.0) < 1e-12]] = False
    return b


def _solve_slope(r, s, nodes, b, slope, max_iter):
    """M-step for the common slope (= population sd) of the free-variance Rasch model."""
    slope = slope.copy()
    active = np.ones(slope.size, dtype=bool)
    z = nodes[None, :, None]
    for _ in range(int(max_iter)):
        a = np.flatnonzero(active)
        if a.size == 0:
            break
        p = expit(slope[a, None, None] * z - b[a, None, :])
        g = ((r[a] - s[a] * p) * z).sum(axis=(1, 2))
        h = (s[a] * p * (1.0 - p) * z**2).sum(axis=(1, 2))
        step = np.clip(g / np.maximum(h, 1e-300), -0.5, 0.5)
        slope[a] = np.maximum(slope[a] + step, 1e-3)
        active[a[np.abs(step) < 1e-12]] = False
    return slope


@dataclass
class MmlBatch:
    """EM results of B problems (full item axis; 0 difficulty on uninformative items)."""

    keep: np.ndarray  # (B, M)
    difficulty: np.ndarray  # (B, M)
    slope: np.ndarray  # (B,)
    posterior: np.ndarray  # (B, L, Q)
    nodes: np.ndarray  # (B, Q)
    log_likelihood: np.ndarray  # (B,) without the binomial constants
    n_iter: np.ndarray  # (B,)
    converged: np.ndarray  # (B,)

    @property
    def eap(self) -> np.ndarray:
        return (self.posterior * self.nodes[:, None, :]).sum(axis=2)


def fit_rasch_mml_batch(k, n, *, n_quadrature, em_iter, max_iter, population_sd, tol=1e-8):
    """:func:`fit_rasch_mml`'s EM for B count matrices ``k``, ``n`` (B, L, M) in lockstep.

    Arguments are validated by the caller.  Uninformative items stay in the arrays with
    zero counts (they add exactly nothing to the likelihood or the score equations), so
    a problem's arithmetic does not depend on the rest of the batch: :func:`fit_rasch_mml`
    runs this with B = 1 and the stacked study rules with one problem per draw.
    """
    B = k.shape[0]
    z, w = normal_quadrature(n_quadrature)
    keep = (k.sum(axis=1) > 0) & ((n - k).sum(axis=1) > 0)
    kk = np.where(keep[:, None, :], k, 0.0)
    nn = np.where(keep[:, None, :], n, 0.0)
    slope = np.full(B, 1.0 if population_sd is None else float(population_sd))
    # logistic-normal approximation E[sigmoid(theta - b)] ~ sigmoid(-b / sqrt(1 + 0.346 sd^2))
    b = -logit((kk.sum(axis=1) + 0.5) / (nn.sum(axis=1) + 1.0))
    b = np.where(keep, b * np.sqrt(1 + 0.346 * slope**2)[:, None], 0.0)
    log_w = np.log(w)

    def e_step(idx):
        eta = slope[idx, None, None] * z[None, :, None] - b[idx, None, :]  # (B, Q, M)
        log_post = (kk[idx] @ np.swapaxes(log_expit(eta), 1, 2)
                    + (nn[idx] - kk[idx]) @ np.swapaxes(log_expit(-eta), 1, 2) + log_w)
        top = log_post.max(axis=2, keepdims=True)
        post = np.exp(log_post - top)
        norm = post.sum(axis=2, keepdims=True)
        return post / norm, (np.log(norm) + top).sum(axis=(1, 2))

    n_iter = np.zeros(B, dtype=int)
    converged = np.zeros(B, dtype=bool)
    for it in range(1, int(em_iter) + 1):
        a = np.flatnonzero(~converged)
        if a.size == 0:
            break
        post, _ = e_step(a)
        post_t = np.swapaxes(post, 1, 2)
        r, s = post_t @ kk[a], post_t @ nn[a]  # expected successes / trials per node (Q, M)
        new_b = _solve_difficulties(r, s, z, b[a].copy(), slope[a], max_iter)
        new_slope = slope[a]
        if population_sd is None:
            new_slope = _solve_slope(r, s, z, new_b, slope[a], max_iter)
        change = np.maximum(np.max(np.abs(new_b - b[a]), axis=1, initial=0.0),
                            np.abs(new_slope - slope[a]))
        b[a], slope[a], n_iter[a] = new_b, new_slope, it
        converged[a[change < tol]] = True
    post, log_lik = e_step(np.arange(B))
    return MmlBatch(keep, b, slope, post, slope[:, None] * z, log_lik, n_iter, converged)


def fit_rasch_mml(
    successes: np.ndarray,
    trials: np.ndarray | int,
    *,
    n_quadrature: int = 21,
    em_iter: int = 20,
    max_iter: int = 100,
    population_sd: float | None = 1.0,
    tol: float = 1e-8,
) -> MmlFit:
    """Rasch marginal ML by EM over Gauss–Hermite quadrature (Bock & Aitkin, 1981).

    Abilities are integrated out under ``theta ~ N(0, sd^2)``; the marginal
    likelihood is maximised over the difficulties by EM (paper, Alg. "Rasch
    MML"): the E-step forms each model's discrete posterior over the nodes,
    the M-step solves each item's expected-count score equation (vectorised
    Newton, at most ``max_iter`` steps).  EM stops after ``em_iter`` iterations
    or when no difficulty moves by more than ``tol``.

    ``population_sd=None`` estimates the population sd as well (a Rasch model
    with free latent variance, equivalently a common slope on a standard-normal
    ability: mirt's ``itemtype='Rasch'``).  The population mean is 0, which
    fixes the location, so difficulties are *not* re-centred.

    Items solved by every model (or none) have difficulty ``-inf`` (``+inf``):
    with a fixed population that is the exact marginal-ML value, and the items
    carry no information about abilities, so they are set aside.  The EM itself is
    :func:`fit_rasch_mml_batch` with one problem.
    """
    k, n = binomial_counts(successes, trials)
    em_iter, max_iter, population_sd = _mml_options(n_quadrature, em_iter, max_iter,
                                                    population_sd)
    fit = fit_rasch_mml_batch(k[None], n[None], n_quadrature=n_quadrature, em_iter=em_iter,
                              max_iter=max_iter, population_sd=population_sd, tol=tol)
    post, nodes, eap = fit.posterior[0], fit.nodes[0], fit.eap[0]
    log_lik = float(fit.log_likelihood[0])
    log_lik += float(np.sum(gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)))
    sd = np.sqrt(np.maximum(post @ nodes**2 - eap**2, 0.0))
    keep = fit.keep[0]
    difficulty = boundary_difficulty(k, n)
    difficulty[keep] = fit.difficulty[0][keep]
    return MmlFit(difficulty, float(fit.slope[0]), nodes, post, eap, sd, log_lik,
                  int(fit.n_iter[0]), bool(fit.converged[0]))


def _mml_options(n_quadrature, em_iter, max_iter, population_sd):
    """Checked ``(em_iter, max_iter, population_sd)`` (DataError / ValueError otherwise)."""
    check_int("n_quadrature", n_quadrature, minimum=2)
    em_iter = check_int("em_iter", em_iter)
    max_iter = check_int("max_iter", max_iter)
    if population_sd is not None:
        population_sd = check_finite("population_sd", population_sd, positive=True)
    return em_iter, max_iter, population_sd


@ranking_method
def rasch_mml(
    data: ResponseData,
    *,
    quantile: float | None = None,
    max_iter: int = 100,
    em_iter: int = 20,
    n_quadrature: int = 21,
    population_sd: float | None = 1.0,
    return_item_params: bool = False,
) -> tuple[np.ndarray, dict]:
    """Rasch marginal ML (EM + quadrature) with EAP or posterior-quantile scores.

    ``quantile=None`` scores by the EAP ability (identifier ``rasch_mml``);
    ``quantile=q`` by the discrete posterior quantile ``Q_q(theta_l | k)``
    (``rasch_mml_credible``, q = 0.05: a conservative lower bound).  See
    :func:`fit_rasch_mml`.

    Both are computed on the fixed quadrature grid, as in the paper: with many
    trials per model a posterior is narrower than the node spacing (about 0.3
    for 21 nodes), collapses onto one node and models tie there.  Raise
    ``n_quadrature`` for a finer resolution.  ``return_item_params=True`` adds ``difficulty``,
    ``ability_sd`` (posterior sd) and ``population_sd`` to ``details``.
    """
    k, n = binary_counts(data, "Rasch MML")
    fit = fit_rasch_mml(
        k,
        n,
        n_quadrature=n_quadrature,
        em_iter=em_iter,
        max_iter=max_iter,
        population_sd=population_sd,
    )
    scores = fit.eap if quantile is None else posterior_quantile(fit.posterior, fit.nodes,
                                                                 quantile)
    details = {}
    if return_item_params:
        details = {
            "difficulty": fit.difficulty,
            "ability_sd": fit.posterior_sd,
            "population_sd": fit.population_sd,
        }
    return scores, details
