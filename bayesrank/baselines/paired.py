"""Paired-comparison models: Bradley–Terry, Davidson and Rao–Kupper ties, Bayesian BT (MCMC).

Paper appendix, "Paired-comparison Probabilistic Models" and "Bayesian Bradley--Terry via
MCMC".  Every model is first written as a pure function of pairwise counts (like ``choix``):

- ``W[i, j]``: comparisons that ``i`` won against ``j`` (float, may be fractional);
- ``T[i, j] = T[j, i]``: ties between ``i`` and ``j``.

so the same estimators run on real pairwise data without a response tensor (Chatbot Arena,
sports results).  The ranking rules read ``W`` and ``T`` from ``data.reductions``: on binary
data ``W_ij`` counts question-trials where ``i`` is correct and ``j`` wrong and ``T_ij`` those
where both agree (paper, Sec. 2.2).

With log-strengths ``theta_i = log pi_i`` and ``d = theta_i - theta_j``:

=================  ===================================  ===================================
model              P(i beats j)                         P(tie)
=================  ===================================  ===================================
Bradley–Terry      pi_i / (pi_i + pi_j) = sigma(d)      (ties ignored)
Davidson (1970)    pi_i / (pi_i + pi_j + nu sqrt(.))    nu sqrt(pi_i pi_j) / (same)
Rao–Kupper (1967)  pi_i / (pi_i + kappa pi_j)           (kappa^2-1) pi_i pi_j / (...)(...)
=================  ===================================  ===================================

Rao–Kupper with ``eta = log kappa`` is two shifted logistic terms: its log-likelihood per pair
is ``(W_ij + T_ij) log sigma(d - eta) + (W_ji + T_ij) log sigma(-d - eta)
+ T_ij log(kappa^2 - 1)``.  Davidson is a three-outcome logit with scores
``(d/2, -d/2, log nu)``.  Both give closed-form gradients and Hessians, so every fit is a
Newton solve that converges to machine precision in a handful of iterations (a damped
Newton method with one linear solve per iteration: cheaper than scipy's trust-region
methods, which factor the Hessian several times per step).

Identification.  Strengths are centred (``sum theta = 0``).  The maximum-likelihood estimate
exists iff the directed "beat" graph (an edge i -> j when ``W_ij > 0``; ties give edges both
ways in the tie models) is strongly connected (Zermelo 1929; Hunter 2004).  When it is not,
the ML rules raise :class:`~bayesrank.errors.DisconnectedGraphError` (no comparison links
two groups) or :class:`~bayesrank.errors.NotIdentifiedError` (a group never loses, or never
wins, against the rest), naming the models and suggesting the ``_map`` variant.  The MAP
rules (Gaussian prior ``theta_i ~ N(0, prior)`` on log-strengths) always have a unique
answer.  With no decisive comparison at all every model is tied (all scores equal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from bayesrank.baselines._optim import (
    check_identified,
    fit_options,
    prior_variance,
    strengths,
    warn_stalled,
)
from bayesrank.baselines.pairwise_batch import (
    PairBatch,
    average_exchangeable,
    bt_fit_batch,
    bt_terms,
    davidson_fit_batch,
    davidson_terms,
    pair_fit_batch,
    rao_kupper_fit_batch,
    rao_kupper_terms,
)
from bayesrank.checks import check_in_interval, check_int
from bayesrank.data import ResponseData
from bayesrank.errors import DataError
from bayesrank.ranking import exchangeable_pairs, ranking_method

__all__ = [
    "bt_loglik",
    "bt_log_strengths",
    "bt_posterior_draws",
    "bt_posterior_draws_batch",
    "bt_posterior_means_batch",
    "bt_posterior_mean",
    "davidson_loglik",
    "davidson_log_strengths",
    "rao_kupper_loglik",
    "rao_kupper_log_strengths",
    "bradley_terry",
    "bradley_terry_davidson",
    "rao_kupper",
    "bayesian_mcmc",
]


# -- input checks -----------------------------------------------------------------------
def _as_count_matrix(M: np.ndarray, name: str, L: int | None = None) -> np.ndarray:
    arr = np.asarray(M, dtype=float)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise DataError(f"{name} must be a square (L, L) count matrix, got shape {arr.shape}")
    if L is not None and arr.shape[0] != L:
        raise DataError(f"{name} has shape {arr.shape} but W is ({L}, {L})")
    if not np.all(np.isfinite(arr)) or (arr < 0).any():
        raise DataError(f"{name} must hold finite non-negative counts")
    if np.any(np.diag(arr) != 0):
        raise DataError(f"{name} has non-zero diagonal entries: a model cannot meet itself")
    return arr


@dataclass(frozen=True)
class _Pairs:
    """Unordered pairs i < j that met at least once, with their counts."""

    L: int
    i: np.ndarray
    j: np.ndarray
    a: np.ndarray  # W_ij
    b: np.ndarray  # W_ji
    t: np.ndarray  # T_ij

    @property
    def total(self) -> float:
        return float(self.a.sum() + self.b.sum() + self.t.sum())

    @property
    def decisive(self) -> float:
        return float(self.a.sum() + self.b.sum())

    def diff(self, theta: np.ndarray) -> np.ndarray:
        return theta[..., self.i] - theta[..., self.j]

    def to_nodes(self, per_pair: np.ndarray) -> np.ndarray:
        """B^T v: scatter a per-pair derivative w.r.t. d onto theta (d = theta_i - theta_j)."""
        return np.bincount(self.i, per_pair, self.L) - np.bincount(self.j, per_pair, self.L)


def _pairs(W: np.ndarray, T: np.ndarray | None = None) -> _Pairs:
    W = _as_count_matrix(W, "W")
    L = W.shape[0]
    if T is None:
        T = np.zeros_like(W)
    else:
        T = _as_count_matrix(T, "T", L)
        if not np.array_equal(T, T.T):
            raise DataError("T must be symmetric: T[i, j] = T[j, i] counts ties of the pair")
    i, j = np.triu_indices(L, 1)
    a, b, t = W[i, j], W[j, i], T[i, j]
    keep = (a + b + t) > 0
    return _Pairs(L, i[keep], j[keep], a[keep], b[keep], t[keep])


def bt_loglik(theta: np.ndarray, W: np.ndarray) -> float:
    """Bradley–Terry log-likelihood ``sum_{i != j} W_ij log(pi_i / (pi_i + pi_j))``.

    Paper eq. (BT log-likelihood); ``theta = log pi``.
    """
    p = _pairs(W)
    return float(bt_terms(p, p.diff(np.asarray(theta, float)))[0].sum())


def davidson_loglik(theta: np.ndarray, nu: float, W: np.ndarray, T: np.ndarray) -> float:
    """Davidson (1970) log-likelihood with tie parameter ``nu >= 0``.

    ``P(i > j) = pi_i / (pi_i + pi_j + nu sqrt(pi_i pi_j))``,
    ``P(i ~ j) = nu sqrt(pi_i pi_j) / (pi_i + pi_j + nu sqrt(pi_i pi_j))``.
    """
    p = _pairs(W, T)
    lam = np.log(nu) if nu > 0 else -np.inf
    if lam == -np.inf and p.t.any():
        return -np.inf
    return float(davidson_terms(p, p.diff(np.asarray(theta, float)), lam)[0].sum())


def rao_kupper_loglik(theta: np.ndarray, kappa: float, W: np.ndarray, T: np.ndarray) -> float:
    """Rao–Kupper (1967) log-likelihood with tie parameter ``kappa >= 1``.

    ``P(i > j) = pi_i / (pi_i + kappa pi_j)``,
    ``P(i ~ j) = (kappa^2 - 1) pi_i pi_j / ((pi_i + kappa pi_j)(kappa pi_i + pi_j))``.
    """
    p = _pairs(W, T)
    if kappa == 1 and p.t.any():
        return -np.inf
    return float(rao_kupper_terms(p, p.diff(np.asarray(theta, float)), np.log(kappa))[0].sum())


# -- public estimators on counts -----------------------------------------------------------
def bt_log_strengths(
    W: np.ndarray, *, prior: float | None = None, max_iter: int = 500
) -> np.ndarray:
    """Bradley–Terry log-strengths from a win-count matrix, centred to sum zero.

    Maximises ``sum_{i != j} W_ij [theta_i - log(e^theta_i + e^theta_j)]`` (paper, BT), minus
    ``sum theta^2 / (2 prior)`` when ``prior`` (a Gaussian variance) is given (MAP).

    Parameters
    ----------
    W : array_like, shape (L, L)
        ``W[i, j]`` = number of times ``i`` beat ``j`` (may be fractional, e.g. ties counted
        as half a win each way); zero diagonal.
    prior : float, optional
        Variance of the Gaussian prior on log-strengths (MAP); None for ML.
    max_iter : int
        Newton iterations.

    Returns
    -------
    numpy.ndarray, shape (L,)

    Raises
    ------
    DisconnectedGraphError, NotIdentifiedError
        ML only, when the directed win graph is not strongly connected.
    """
    p = _pairs(W)
    prior_var, max_iter = fit_options(prior, max_iter)
    if prior_var is None and p.decisive > 0:  # without one, every model ties (zeros)
        check_identified(np.asarray(W) > 0, method="Bradley-Terry ML")
    theta, stalled = bt_fit_batch(np.asarray(W, float)[None], prior_var=prior_var,
                                  max_iter=max_iter)
    warn_stalled(stalled, "bt fit", max_iter)
    return theta[0]


def davidson_log_strengths(
    W: np.ndarray, T: np.ndarray, *, prior: float | None = None, max_iter: int = 500
) -> tuple[np.ndarray, float]:
    """Davidson (1970) tie model: centred log-strengths and the tie parameter ``nu``.

    ``nu`` is always estimated by maximum likelihood (it carries no prior); ``prior`` is
    the Gaussian variance of the log-strengths (MAP) or None (ML).  Degenerate data: see
    :func:`davidson_fit_batch`.
    """
    p = _pairs(W, T)
    prior_var, max_iter = fit_options(prior, max_iter)
    if prior_var is None and p.decisive > 0:
        check_identified((np.asarray(W) > 0) | (np.asarray(T) > 0), method="Davidson ML")
    theta, nu, stalled = davidson_fit_batch(np.asarray(W, float)[None],
                                            np.asarray(T, float)[None],
                                            prior_var=prior_var, max_iter=max_iter)
    warn_stalled(stalled, "davidson fit", max_iter)
    return theta[0], float(nu[0])


def rao_kupper_log_strengths(
    W: np.ndarray,
    T: np.ndarray,
    *,
    tie_strength: float | None = 1.1,
    prior: float | None = None,
    max_iter: int = 500,
) -> tuple[np.ndarray, float]:
    """Rao–Kupper (1967) tie model: centred log-strengths and ``kappa``.

    ``tie_strength`` fixes ``kappa >= 1`` (the paper's identifiers use 1.1); None estimates
    it by maximum likelihood (``kappa = 1`` when there is no tie).  ``prior`` is the Gaussian
    variance of the log-strengths (MAP) or None (ML).
    """
    p = _pairs(W, T)
    prior_var, max_iter = fit_options(prior, max_iter)
    if tie_strength is not None:
        kappa = check_in_interval("tie_strength (kappa)", tie_strength, 1.0, np.inf,
                                  closed="left")
        if kappa == 1 and p.t.any():
            raise DataError("tie_strength=1 makes ties impossible, but the data contain ties")
    if prior_var is None:
        check_identified((np.asarray(W) > 0) | (np.asarray(T) > 0), method="Rao-Kupper ML")
    if tie_strength is not None and kappa > 1:
        theta, stalled = rao_kupper_fit_batch(np.asarray(W, float)[None],
                                              np.asarray(T, float)[None], kappa=kappa,
                                              prior_var=prior_var, max_iter=max_iter)
        warn_stalled(stalled, "rk fit", max_iter)
        return theta[0], kappa
    if p.t.sum() == 0:  # no tie (as kappa = 1 requires): Bradley-Terry
        return bt_log_strengths(W, prior=prior, max_iter=max_iter), 1.0
    if p.decisive == 0:
        return np.zeros(p.L), np.inf
    share = p.t.sum() / p.total  # at theta = 0, P(tie) = (kappa - 1) / (kappa + 1)
    eta0 = np.log((1 + share) / (1 - share))
    pairs = PairBatch.from_counts(np.asarray(W, float)[None], np.asarray(T, float)[None])
    theta, log_eta, stalled = pair_fit_batch(pairs, "rk_free", prior_var=prior_var,
                                             max_iter=max_iter, tie0=float(np.log(eta0)))
    warn_stalled(stalled, "rk_free fit", max_iter)
    return theta[0], float(np.exp(np.exp(log_eta[0])))


def bt_posterior_draws(
    W: np.ndarray,
    *,
    n_samples: int = 5000,
    burnin: int = 1000,
    prior_var: float = 1.0,
    seed: int | None = 42,
    df: float = 5.0,
) -> tuple[np.ndarray, float]:
    """Metropolis–Hastings draws from the Bayesian Bradley–Terry posterior.

    Target (paper, "Bayesian Bradley--Terry via MCMC"):
    ``p(theta | W) ∝ prod_{i != j} sigma(theta_i - theta_j)^W_ij  prod_i N(theta_i; 0, prior_var)``.

    The sampler is an independence Metropolis–Hastings chain (Hastings 1970) whose proposal
    is a multivariate Student-t (``df`` degrees of freedom) centred at the posterior mode with
    the inverse Hessian there as scale (the Laplace approximation).  Its heavier-than-target
    tails make the chain uniformly ergodic, and because the proposal does not depend on the
    chain state every proposal density and log-posterior is computed in one vectorised pass;
    only the accept/reject recursion is sequential.  The first ``burnin`` iterations are
    discarded.  Draws are returned centred (``theta - mean(theta)``): the likelihood does not
    see a common shift and the isotropic prior makes that shift independent with mean zero,
    so centring removes pure Monte Carlo noise without changing the posterior means' order.

    The sampling itself is :func:`bt_posterior_draws_batch` with a batch of one.

    Returns
    -------
    draws : numpy.ndarray, shape (n_samples, L)
    acceptance_rate : float
    """
    draws, rates = bt_posterior_draws_batch(
        np.asarray(W, dtype=float)[None], n_samples=n_samples, burnin=burnin,
        prior_var=prior_var, seed=seed, df=df,
    )
    return draws[0], float(rates[0])


@dataclass(frozen=True)
class _Chains:
    """What B chains of :func:`bt_posterior_draws_batch` share (the random numbers) and
    need (modes, Cholesky factors of the Laplace covariances (B, L, L))."""

    pairs: list[_Pairs]
    var: float
    burnin: int
    z: np.ndarray  # (T, L) standard normals of the proposals
    radius: np.ndarray  # (T,) Student-t radii
    log_q: np.ndarray  # (T,) proposal log-densities up to a constant (0 at the mode)
    log_u: np.ndarray  # (T,) log-uniforms of the accept steps
    modes: np.ndarray  # (B, L)
    chol: np.ndarray  # (B, L, L)

    def states(self, rows: slice) -> np.ndarray:
        """Start and proposals of the chains ``rows``, (b, T + 1, L): row 0 the mode,
        row ``k + 1`` proposal ``k = mode + (z_k @ chol^T) / radius_k``."""
        modes, chol = self.modes[rows], self.chol[rows]
        states = np.empty((len(modes), self.z.shape[0] + 1, self.z.shape[1]))
        states[:, 0] = modes
        proposals = states[:, 1:]  # without temporaries
        np.divide(np.matmul(self.z, np.swapaxes(chol, 1, 2)), self.radius[:, None],
                  out=proposals)
        proposals += modes[:, None]
        return states

    def log_posterior_args(self, b: int) -> tuple:
        """Pairs, decisive counts, ``B^T W_ji`` and prior of chain ``b``'s log-posterior."""
        p = self.pairs[b]
        return p.i, p.j, p.a + p.b, p.to_nodes(p.b), self.var


def _chains(Ws, *, n_samples=5000, burnin=1000, prior_var=1.0, seed=42, df=5.0) -> _Chains:
    """Check the sampler's options and prepare B chains (:func:`bt_posterior_draws_batch`)."""
    from bayesrank.baselines import _mcmc_kernels as kernels

    Ws = np.asarray(Ws, dtype=float)
    if Ws.ndim != 3:
        raise DataError(f"Ws must be a stack of (L, L) win matrices, got shape {Ws.shape}")
    pairs = [_pairs(W) for W in Ws]
    var = prior_variance(prior_var)
    if var is None:
        raise DataError("prior_var must be a positive variance: the posterior needs a prior")
    n_samples = check_int("n_samples", n_samples)
    burnin = check_int("burnin", burnin, minimum=0)
    L = Ws.shape[1]
    rng = np.random.default_rng(seed)
    total = burnin + n_samples
    z = rng.standard_normal((total, L))
    radius = np.sqrt(rng.chisquare(df, total) / df)
    # log q(x) up to a constant: -(df + L)/2 log(1 + |z|^2 / (df r^2))
    log_q = -(df + L) / 2 * np.log1p(np.einsum("sl,sl->s", z, z) / (df * radius**2))
    log_u = np.log(rng.random(total))
    # the modes in one lockstep Newton solve: each problem's iterates are those it has alone
    modes, stalled = bt_fit_batch(Ws, prior_var=var, max_iter=200)
    warn_stalled(stalled, "bt fit", 200)
    i, j = np.triu_indices(L, 1)
    n = Ws[:, i, j] + Ws[:, j, i]
    s = expit(modes[:, i] - modes[:, j])
    precision = kernels.laplace_precision(i, j, n * s * (1 - s), n > 0, var, L)
    chol = np.linalg.cholesky(np.linalg.inv(precision))
    return _Chains(pairs, var, burnin, z, radius, log_q, log_u, modes, chol)


def bt_posterior_draws_batch(Ws: np.ndarray, **options) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bt_posterior_draws` of B win matrices ``Ws`` (B, L, L) with one seed (its
    ``options``: ``n_samples``, ``burnin``, ``prior_var``, ``seed``, ``df``, same defaults).

    The sampler's random numbers do not depend on ``W``, so all B chains use the one
    stream that ``seed`` gives a single chain, drawn once; modes and Laplace scales come
    from one lockstep solve (:func:`_chains`), and every chain then runs the same code as
    alone, so chain ``b`` equals ``bt_posterior_draws(Ws[b])`` exactly.

    Returns
    -------
    draws : numpy.ndarray, shape (B, n_samples, L)
    acceptance_rate : numpy.ndarray, shape (B,)
    """
    from bayesrank.baselines import _mcmc_kernels as kernels

    ch = _chains(Ws, **options)
    B, L = ch.modes.shape
    out = np.empty((B, ch.z.shape[0] - ch.burnin, L))
    rates = np.empty(B)
    for b in range(B):
        states = ch.states(slice(b, b + 1))[0]
        log_w = kernels.bt_log_posterior(states, *ch.log_posterior_args(b))
        # the mode's own proposal log-density is 0
        index, accepted = kernels.independence_chain(ch.log_u, log_w[1:] - ch.log_q, log_w[0])
        # centre every state once; a draw is a copy of its (centred) state
        states -= states.mean(axis=1, keepdims=True)
        np.take(states, index[ch.burnin:] + 1, axis=0, out=out[b])
        rates[b] = accepted / ch.z.shape[0]
    return out, rates


def bt_posterior_means_batch(Ws: np.ndarray, **options) -> tuple[np.ndarray, np.ndarray]:
    """Mean of every chain's draws of :func:`bt_posterior_draws_batch`, without the draws.

    ``draws.mean(axis=1)`` of that function with the same ``options``, bit for bit: the
    same chains, but each chain's centred kept states are summed in step order by
    :func:`._mcmc_kernels.chain_mean` instead of being gathered into an array first (the
    kernel releases the GIL, so blocks of chains can run on threads).

    Returns
    -------
    means : numpy.ndarray, shape (B, L)
    acceptance_rate : numpy.ndarray, shape (B,)
    """
    from bayesrank.baselines import _mcmc_kernels as kernels

    ch = _chains(Ws, **options)
    B, L = ch.modes.shape
    means, rates = np.empty((B, L)), np.empty(B)
    for b in range(B):
        states = ch.states(slice(b, b + 1))[0]
        means[b], accepted = kernels.chain_mean(states, states.mean(axis=1),
                                                *ch.log_posterior_args(b), ch.log_u,
                                                ch.log_q, ch.burnin)
        rates[b] = accepted / ch.z.shape[0]
    return means, rates


# -- ranking rules ---------------------------------------------------------------------------
def exchangeable_average(theta: np.ndarray, *mats: np.ndarray) -> np.ndarray:
    """``theta`` averaged over groups of exchangeable models of the counts ``mats``."""
    same = exchangeable_pairs(*(np.asarray(M, float)[None] for M in mats))
    return average_exchangeable(np.asarray(theta, float)[None], same)[0]


def strength_scores(theta: np.ndarray, *mats: np.ndarray, **details) -> tuple[np.ndarray, dict]:
    """A strength rule's scores ``exp(theta)`` and ``details`` with ``log_strengths``,
    ``theta`` averaged over the models that the counts ``mats`` make exchangeable."""
    theta = exchangeable_average(theta, *mats)
    return strengths(theta), {"log_strengths": theta, **details}


@ranking_method
def bradley_terry(data: ResponseData, *, prior: float | None = None, max_iter: int = 500):
    """Bradley–Terry strengths ``pi = exp(theta)`` by ML (``prior=None``) or MAP.

    ``prior`` is the variance of the Gaussian prior ``theta_i ~ N(0, prior)`` on
    log-strengths (identifier ``bradley_terry_map`` uses 1.0).  Ties (both right or both
    wrong) are ignored; ``W`` is ``data.reductions.wins``.  Scores are the strengths with
    centred log-strengths (paper, Algorithm "Paired-comparison models").  ML raises when
    the win graph is not strongly connected (see module notes).
    """
    W = data.reductions.wins
    if prior is None and W.sum() > 0:
        check_identified(W > 0, method="bradley_terry", suggestion="bradley_terry_map",
                         labels=data.models)
    theta = bt_log_strengths(W, prior=prior, max_iter=max_iter)
    return strength_scores(theta, W)


@ranking_method
def bradley_terry_davidson(
    data: ResponseData, *, prior: float | None = None, max_iter: int = 500
):
    """Davidson (1970) tie model on wins ``W`` and ties ``T``; scores ``exp(theta)``.

    ML (``prior=None``) or MAP with ``theta_i ~ N(0, prior)`` (``bradley_terry_davidson_map``
    uses 1.0); ``nu`` carries no prior and ``details["tie_parameter"]`` is its ML
    estimate.  On complete binary data every pair meets equally often and the likelihood
    sees ``theta`` only through net wins ``sum_j (W_ij - W_ji)``, so the ranking equals the
    accuracy ranking (ties included).
    """
    red = data.reductions
    W, T = red.wins, red.ties
    if prior is None and W.sum() > 0:
        check_identified((W > 0) | (T > 0), method="bradley_terry_davidson",
                         suggestion="bradley_terry_davidson_map", labels=data.models)
    theta, nu = davidson_log_strengths(W, T, prior=prior, max_iter=max_iter)
    return strength_scores(theta, W, T, tie_parameter=nu)


@ranking_method
def rao_kupper(
    data: ResponseData,
    *,
    tie_strength: float | None = 1.1,
    prior: float | None = None,
    max_iter: int = 500,
):
    """Rao–Kupper (1967) tie model with fixed ``kappa = tie_strength``; scores ``exp(theta)``.

    ``tie_strength=None`` estimates ``kappa`` by ML instead.  ML (``prior=None``) raises when
    the win-or-tie graph is not strongly connected; MAP puts ``theta_i ~ N(0, prior)`` on
    log-strengths (``rao_kupper_map`` uses 1.0).
    """
    red = data.reductions
    W, T = red.wins, red.ties
    if prior is None:
        check_identified((W > 0) | (T > 0), method="rao_kupper",
                         suggestion="rao_kupper_map", labels=data.models)
    theta, kappa = rao_kupper_log_strengths(W, T, tie_strength=tie_strength, prior=prior,
                                            max_iter=max_iter)
    return strength_scores(theta, W, T, tie_parameter=kappa)


@ranking_method
def bayesian_mcmc(
    data: ResponseData,
    *,
    n_samples: int = 5000,
    burnin: int = 1000,
    prior_var: float = 1.0,
    seed: int | None = 42,
):
    """Posterior-mean log-strengths ``E[theta | W]`` of Bayesian Bradley–Terry (paper).

    Decisive wins only (ties ignored), prior ``theta_i ~ N(0, prior_var)``, Metropolis–
    Hastings sampling as in :func:`bt_posterior_draws` (seeded, reproducible).
    ``details``: ``posterior_sd`` and ``acceptance_rate``.
    """
    W = data.reductions.wins
    draws, rate = bt_posterior_draws(
        W, n_samples=n_samples, burnin=burnin, prior_var=prior_var, seed=seed
    )
    return bt_posterior_mean(draws, W), {
        "posterior_sd": draws.std(axis=0, ddof=1) if n_samples > 1 else np.zeros(data.L),
        "acceptance_rate": rate}


def bt_posterior_mean(draws: np.ndarray, W: np.ndarray) -> np.ndarray:
    """Posterior-mean log-strengths from ``draws`` (S, L), equal within exchangeable groups.

    The score of :func:`bayesian_mcmc`; models that swapping leaves ``W`` unchanged get
    the mean of their estimates (they are exactly tied, the difference is Monte Carlo noise).
    """
    return exchangeable_average(draws.mean(axis=0), W)
