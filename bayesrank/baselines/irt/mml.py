"""Rasch marginal maximum likelihood by EM over Gauss–Hermite quadrature (Bock & Aitkin, 1981).

Paper Alg. "Rasch MML": abilities are integrated out under ``theta ~ N(0, sd^2)``, the
difficulties maximise the marginal likelihood (EM on the paper's ``n_quadrature``-node
grid), and models are scored by their posterior mean (EAP, ``E[theta_l | R]``, identifier
``rasch_mml``) or a posterior quantile (``rasch_mml_credible``).

Person scores
-------------
The scores are computed from each model's own posterior given the fitted item
parameters, not on the EM's grid (:mod:`._person_kernel`).  The Rasch log posterior
``K theta - sum_m n_m log(1 + exp(theta - b_m)) - theta^2 / (2 sd^2)`` is strictly concave,
so per model we find its mode and curvature (adaptive quadrature: the range and nodes are
placed where that model's mass is), bound the range where the density is within
``exp(-40)`` of the mode, and integrate over it by 64-node Gauss-Legendre quadrature; the
quantile solves ``F(t) = q`` by safeguarded Newton with the CDF integrated the same way.
Items of equal difficulty enter once with their trials added (exact).  On complete binary
data the log posterior depends on a model's counts only through its total successes
``K``, so the scores are strictly increasing in the total and equal, bit for bit, where
totals are equal.

The paper defines the EAP as the posterior mean; scorio 0.2.3 (the paper's
implementation) takes it on the 21-node grid, where models with many trials and different
totals tie.  The fitted difficulties and the grid posterior (:attr:`MmlFit.posterior`)
agree with scorio (``docs/baselines.md``: the difference and the scores' accuracy).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit, gammaln, log_expit, ndtri

from bayesrank.baselines.irt import _mml_kernel, _person_kernel
from bayesrank.baselines.irt._common import (
    binary_counts,
    binomial_counts,
    boundary_difficulty,
    logit,
    over_problems,
)
from bayesrank.checks import check_finite, check_int, check_probability
from bayesrank.data import ResponseData
from bayesrank.ranking import ranking_method
from bayesrank.threads import worker_threads

__all__ = [
    "MmlFit",
    "ability_posterior",
    "fit_rasch_mml",
    "fit_rasch_mml_batch",
    "normal_quadrature",
    "posterior_quantile",
    "rasch_mml",
]

# a thread for at least this many problems (one problem takes about 0.5 ms)
_PROBLEMS_PER_THREAD = 16
# Gauss-Legendre rules of the person scores, full and short (accuracy: docs/baselines.md)
_PERSON_RULES = (*np.polynomial.legendre.leggauss(64), *np.polynomial.legendre.leggauss(16))


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

    Returns the posterior (L, Q), weights summing to 1 per row, and the ability nodes (Q,):
    EAP = ``posterior @ nodes``.
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

    scorio 0.2.3 scores ``rasch_mml_credible`` by this discrete-CDF quantile on the EM's
    grid, so models whose posteriors cross ``q`` at the same node tie; bayesrank's rule
    uses the quantile of each model's posterior instead (:meth:`MmlBatch.person_scores`).
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
    nodes : (Q,) quadrature abilities; posterior : (L, Q) the last E-step's posterior
        weights on them (the EM's grid, as in scorio).
    eap : (L,) posterior means; posterior_sd : (L,) posterior standard deviations, both of
        each model's posterior (module docstring, "Person scores"), not of the grid.
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
    successes: np.ndarray  # (B, L) total successes on the informative items
    trials: np.ndarray  # (B, L, M) trials, 0 on uninformative items
    _scores: dict = field(default_factory=dict, repr=False)

    def person_scores(self, quantile: float | None = None) -> np.ndarray:
        """(B, L, 3): posterior mean, sd and ``quantile`` (NaN if None) of each ability.

        Each model's own posterior given the fitted item parameters (module docstring,
        "Person scores"); cached per quantile, so the EAP and the credible rules of one
        fit share the work (each call returns its own copy).
        """
        if quantile not in self._scores:
            q = np.nan if quantile is None else float(quantile)
            t0 = 0.0 if quantile is None else float(ndtri(q))
            b, n = _merge_items(self.difficulty, self.trials, self.keep)

            def run(rows):
                return _person_kernel.scores_many(self.successes[rows], n[rows], b[rows],
                                                  self.slope[rows], _PERSON_RULES, q, t0)

            self._scores[quantile] = np.concatenate(over_problems(
                run, self.slope.size, _PROBLEMS_PER_THREAD, worker_threads()))
        return self._scores[quantile].copy()


def _merge_items(difficulty, trials, keep):
    """Items of equal difficulty merged (their trials added): ``(b (B, U), n (B, L, U))``.

    The person log posterior needs the items only through ``sum_m n_lm softplus(theta -
    b_m)``, so this is exact; on complete data items with equal column totals have equal
    difficulties, which leaves at most ``L N + 1`` items.  Padding has no trials.
    """
    B, L, _ = trials.shape
    merged = [np.unique(difficulty[i][keep[i]], return_inverse=True) for i in range(B)]
    U = max(1, max(u.size for u, _ in merged))
    b, n = np.zeros((B, U)), np.zeros((B, L, U))
    for i, (u, inverse) in enumerate(merged):
        b[i, :u.size] = u
        np.add.at(n[i].T, inverse, trials[i][:, keep[i]].T)
    return b, n


def fit_rasch_mml_batch(k, n, *, n_quadrature, em_iter, max_iter, population_sd, tol=1e-8):
    """:func:`fit_rasch_mml`'s EM for B count matrices ``k``, ``n`` (B, L, M).

    Arguments are validated by the caller.  Each problem runs the compiled EM of
    :mod:`._mml_kernel` alone, its uninformative items held at zero counts (as
    :mod:`.xpl_batch` does): :func:`fit_rasch_mml` runs this with B = 1 and the stacked
    study rules with one problem per draw.  The person scores
    (:meth:`MmlBatch.person_scores`) come from the fitted ``(difficulty, slope)`` model by
    model, on demand.
    """
    B = k.shape[0]
    z, w = normal_quadrature(n_quadrature)
    keep = (k.sum(axis=1) > 0) & ((n - k).sum(axis=1) > 0)
    kk = np.ascontiguousarray(np.where(keep[:, None, :], k, 0.0))
    nn = np.ascontiguousarray(np.where(keep[:, None, :], n, 0.0))
    slope = np.full(B, 1.0 if population_sd is None else float(population_sd))
    # logistic-normal approximation E[sigmoid(theta - b)] ~ sigmoid(-b / sqrt(1 + 0.346 sd^2))
    b = -logit((kk.sum(axis=1) + 0.5) / (nn.sum(axis=1) + 1.0))
    b = np.where(keep, b * np.sqrt(1 + 0.346 * slope**2)[:, None], 0.0)
    args = (np.log(w), population_sd is None, int(em_iter), int(max_iter), float(tol))

    def run(rows: np.ndarray):  # b[rows] and slope[rows] are copies: returned updated
        b_rows, slope_rows = b[rows], slope[rows]
        out = _mml_kernel.em_many(kk[rows], nn[rows], z, args[0], slope_rows, b_rows, *args[1:])
        return (b_rows, slope_rows, *out)

    parts = over_problems(run, B, _PROBLEMS_PER_THREAD, worker_threads())
    b, slope, post, log_lik, n_iter, converged = (np.concatenate(x) for x in zip(*parts,
                                                                                strict=True))
    return MmlBatch(keep, b, slope, post, slope[:, None] * z, log_lik, n_iter, converged,
                    kk.sum(axis=2), nn)


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
    """Rasch marginal ML by EM over Gauss–Hermite quadrature (module docstring).

    The E-step forms each model's discrete posterior over the nodes, the M-step solves each
    item's expected-count score equation (safeguarded Newton, at most ``max_iter`` steps;
    compiled, :mod:`._mml_kernel`).  EM stops after ``em_iter`` iterations or when no
    difficulty moves by more than ``tol``.

    ``population_sd=None`` estimates the population sd as well (a Rasch model
    with free latent variance, equivalently a common slope on a standard-normal
    ability: mirt's ``itemtype='Rasch'``).  The population mean is 0, which
    fixes the location, so difficulties are *not* re-centred.

    Items solved by every model (or none) are set aside with difficulty ``-inf`` (``+inf``),
    with a fixed population the exact marginal-ML value.  The EM itself is
    :func:`fit_rasch_mml_batch` with one problem; ``eap`` and ``posterior_sd`` are those of
    each model's posterior given the fit (module docstring, "Person scores"), while
    ``posterior`` stays the EM's grid posterior.
    """
    k, n = binomial_counts(successes, trials)
    return _single_fit(k, n, _fit_one(k, n, n_quadrature, em_iter, max_iter, population_sd,
                                      tol))


def _fit_one(k, n, n_quadrature, em_iter, max_iter, population_sd, tol=1e-8) -> MmlBatch:
    """Options checked, :func:`fit_rasch_mml_batch` of the one problem ``(k, n)``."""
    em_iter, max_iter, population_sd = _mml_options(n_quadrature, em_iter, max_iter,
                                                    population_sd)
    return fit_rasch_mml_batch(k[None], n[None], n_quadrature=n_quadrature, em_iter=em_iter,
                               max_iter=max_iter, population_sd=population_sd, tol=tol)


def _single_fit(k, n, fit: MmlBatch) -> MmlFit:
    """The :class:`MmlFit` of a batch of one problem (its counts ``k``, ``n``)."""
    log_lik = float(fit.log_likelihood[0])
    log_lik += float(np.sum(gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)))
    person = fit.person_scores()[0]
    keep = fit.keep[0]
    difficulty = boundary_difficulty(k, n)
    difficulty[keep] = fit.difficulty[0][keep]
    return MmlFit(difficulty, float(fit.slope[0]), fit.nodes[0], fit.posterior[0],
                  person[:, 0], person[:, 1], log_lik, int(fit.n_iter[0]),
                  bool(fit.converged[0]))


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

    ``quantile=None`` scores by the EAP ability ``E[theta_l | R]`` (identifier
    ``rasch_mml``); ``quantile=q`` by the posterior quantile ``Q_q(theta_l | R)``
    (``rasch_mml_credible``, q = 0.05: a conservative lower bound) of each model's own
    posterior (module docstring, "Person scores").  See :func:`fit_rasch_mml`.
    ``return_item_params=True`` adds ``difficulty``, ``ability_sd`` (posterior sd) and
    ``population_sd`` to ``details``.
    """
    k, n = binary_counts(data, "Rasch MML")
    if quantile is not None:
        quantile = check_probability("quantile", quantile)
    fit = _fit_one(k, n, n_quadrature, em_iter, max_iter, population_sd)
    scores = fit.person_scores(quantile)[0, :, 0 if quantile is None else 2]
    details = {}
    if return_item_params:
        single = _single_fit(k, n, fit)
        details = {
            "difficulty": single.difficulty,
            "ability_sd": single.posterior_sd,
            "population_sd": single.population_sd,
        }
    return scores, details
