"""The Laplace approximations of the binomial Rasch and 2PL posteriors: the CPU route at
leaderboard scale (``fit(data, "rasch" or "2pl", sampler="laplace")``).  Approximations,
and named so.

The Rasch's prior in the paper's form (the same posterior of every contrast as
:func:`models.irt.rasch`, whose zero-sum abilities move their mean into the items:
module docstring of :mod:`models.irt`)::

    theta_l ~ N(0, s^2),  b_m ~ N(0, sigma_b^2),  sigma_b ~ HalfNormal(2.5)
    k_lm    ~ Binomial(n_lm, logistic(theta_l - b_m))

The 2PL's, as :func:`models.irt.two_pl` but for the discriminations' zero sum::

    theta   : N(0, s^2) i.i.d. given sum_{l informed} theta_l = 0
    log a_m ~ N(0, 0.5^2) i.i.d.,   mu ~ N(0, s^2 / L_I)
    beta_m  ~ N(mu, sigma_beta^2),  sigma_beta ~ HalfNormal(2.5)
    k_lm    ~ Binomial(n_lm, logistic(a_m theta_l + beta_m))

Each draw is then moved along the likelihood's scale symmetry (theta s, a / s) to the
NUTS model's convention, log a summing to zero over the informed questions: with
thousands of questions the i.i.d. prior leaves that mean within 0.5 / sqrt(M) of 0.  The
abilities' zero sum is kept exactly: with it free, the intercepts' prior (centred on mu,
or on 0) traded against the abilities' location through the slopes (a_m theta + beta_m
with theta shifted by c moves each beta_m by a_m c), and sigma_beta's EM (below) fell to
0.  The search and the draws run in z, theta = (I - 1 w^T) z with w the informed
models' weights 1 / L_I, and z's own mean given a unit normal: the abilities' block is
then a dense L x L matrix, as the Schur complement below is anyway.

sigma is the fixed point of EM with the Laplace approximation of the question parameters
in the E-step (the joint mode with sigma is at sigma = 0, the hierarchical funnel's
neck): given sigma the mode is found by L-BFGS (:func:`scipy.optimize.minimize`), and
the EM map sends sigma^2 to the maximiser of E[log p(intercepts, sigma)] with E[d_m^2] =
d_hat_m^2 + (B_m^-1)_dd for the intercept's deviation d_m from its mean (b_m; beta_m -
mu) and its variance given the abilities' block; its fixed point is found by Brent's
method (:func:`scipy.optimize.brentq`), EM's own steps being slow where the data say
little about each question.  At the mode, the negative log-density's Hessian has the
abilities' block H_theta (diagonal for the Rasch, h_theta = W 1 + 1 / s^2 with W_lm =
n_lm p_lm (1 - p_lm); for the 2PL (z, mu) as above), each question's own q x q block B_m
(the Rasch's h_b = W^T 1 + 1 / sigma_b^2; the 2PL's (log a_m, beta_m)) and their coupling
U_m (L x q; the Rasch's -W[:, m]); questions do not couple to each other.  So the
abilities' marginal precision is the L x L Schur complement P = H_theta - sum_m U_m
B_m^-1 U_m^T (one pass over the cells, no (L + M q)^2 matrix), theta ~ N(theta_hat,
P^-1), and question m's parameters given theta are N(x_m - B_m^-1 U_m^T (theta -
theta_hat), B_m^-1) (:class:`_Regression`).  A table with at most a third of its cells
observed (:data:`models.likelihoods.SPARSE_COVERAGE`) is searched over its observed
cells, as the NUTS likelihoods score it, and its couplings U_m are a sparse matrix over
them (:class:`_ObservedCells`): the route makes no (L, M) array of its own.  Draws are
i.i.d.; as in the NUTS fit, theta (and the Rasch's b) are reported with the informed
models' mean ability subtracted.  sigma is held at its estimate (every draw the same).

Where it is accurate: every ability is informed by many questions and every question by
many models, so the posterior of the abilities is close to Gaussian (a leaderboard's
1,000 models x 20,000 questions).  Where it is not: a model that solves nothing or every
question (its ability's posterior is the prior's tail), few questions per model, the
difficulties of questions nobody solves (one-sided: skewed, the mode at the wall), and,
for the 2PL, the slopes of questions few models separate.  docs/scale.md compares both
with NUTS on sets both can fit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pymc as pm
from scipy.linalg import cho_factor, solve_triangular
from scipy.optimize import brentq, minimize
from scipy.sparse import csc_array
from scipy.special import expit, log_expit

from bayesrank.data.reductions import ObservedCells
from bayesrank.errors import DataError
from bayesrank.models import likelihoods
from bayesrank.models.likelihoods import binomial_logit

__all__ = ["approximated_model", "laplace_draws", "rasch_laplace", "two_pl_laplace"]

SIGMA_B_PRIOR = 2.5  # sigma_b ~ HalfNormal(2.5), as models.item_effects.pooled
LOG_A_SD = 0.5  # log a_m ~ N(0, 0.5^2), as models.irt.log_discriminations


class _Table:
    """The (L, M) table of counts k and trials n as the search reads it: every cell.

    Values of the cells (``eta``, residuals) are (L, M) arrays, or (L, M, q) with one
    value per question parameter; :meth:`at` lays per-model and per-question values out
    over the cells, :meth:`by_model` and :meth:`by_question` sum cell values,
    :meth:`table` returns them as an (L, M, ...) table and :meth:`matrix` as the (L, M q)
    matrix of their rows (a dense array here)."""

    def __init__(self, k: np.ndarray, n: np.ndarray):
        self.k, self.n, self.shape = k, n, k.shape

    def at(self, per_model, *per_question):
        return (per_model[:, None], *map(self.of_question, per_question))

    @staticmethod
    def of_question(per_question):
        """Each cell's value of ``per_question`` (M, ...)."""
        return per_question[None, :]

    @staticmethod
    def by_model(values):
        return values.sum(axis=1)

    @staticmethod
    def by_question(values):
        return values.sum(axis=0)

    @staticmethod
    def table(values):
        return values

    @staticmethod
    def matrix(values):
        return values.reshape(values.shape[0], -1)


class _ObservedCells(_Table):
    """The same over the observed cells only (trials > 0,
    :class:`~bayesrank.data.reductions.ObservedCells`), for a table with most cells
    missing: cell values are (cells, ...) arrays, and :meth:`matrix` a sparse matrix, so
    the search and the Schur complement cost the observed cells (the draws, M q values
    each, are dense by nature: each block of them densifies its own rows for BLAS)."""

    def __init__(self, k: np.ndarray, n: np.ndarray):
        self.cells = ObservedCells.of(n)
        self.k, self.n = self.cells.gather(k).astype(float), self.cells.gather(n).astype(float)
        self.shape = k.shape

    def at(self, per_model, *per_question):
        return (self.cells.of_model(per_model), *map(self.of_question, per_question))

    def of_question(self, per_question):
        return per_question[self.cells.columns]

    def by_model(self, values):
        return self.cells.by_model(values)

    def by_question(self, values):
        return self.cells.by_question(values)

    def table(self, values):
        return self.cells.table(values)

    def matrix(self, values):
        """(cells, q) values as the sparse (L, M q) matrix of their rows."""
        q = values.shape[1]
        columns = (self.cells.columns[:, None] * q + np.arange(q)).ravel()
        return csc_array((values.ravel(), (np.repeat(self.cells.rows, q), columns)),
                         shape=(self.shape[0], self.shape[1] * q))


def _cells(k: np.ndarray, n: np.ndarray) -> _Table:
    """The table, or its observed cells where at most a share
    :data:`models.likelihoods.SPARSE_COVERAGE` of the cells is observed (as the NUTS
    models' likelihoods)."""
    k, n = np.asarray(k), np.asarray(n)
    if likelihoods.sparse_table(n):
        return _ObservedCells(k, n)
    return _Table(k.astype(float), n.astype(float))


def _binomial(eta, cells: _Table):
    """-log p^k (1 - p)^(n - k) summed over the cells (up to C(n, k)), p = logistic(eta), and
    the residuals k - n p, the derivative of the log-likelihood in each cell's eta."""
    k, n = cells.k, cells.n
    return -(k * eta + n * log_expit(-eta)).sum(), k - n * expit(eta)


def _negative_log_posterior(x, cells: _Table, s2, sigma2):
    """-log p(theta, b | sigma_b, data) up to a constant, and its gradient."""
    L = cells.shape[0]
    theta, b = x[:L], x[L:]
    at_theta, at_b = cells.at(theta, b)
    value, residual = _binomial(at_theta - at_b, cells)
    value += theta @ theta / (2 * s2) + b @ b / (2 * sigma2)
    grad = np.concatenate([-cells.by_model(residual) + theta / s2,
                           cells.by_question(residual) + b / sigma2])
    return value, grad


def _scale_step(squares: float, M: int) -> float:
    """sigma^2 maximising E[log p(d, sigma)] = -M log sigma - S / (2 sigma^2) - sigma^2 /
    (2 * 2.5^2) for the intercepts' deviations d (the Rasch's b), S = sum_m E[d_m^2]: the
    root u > 0 of u^2 / 2.5^2 + M u - S = 0."""
    c = 1.0 / SIGMA_B_PRIOR**2
    return (-M + np.sqrt(M * M + 4.0 * c * squares)) / (2.0 * c)


#: L-BFGS stops by the gradient alone; a mode is accepted when every coordinate's gradient
#: is below _MODE_TOL times the square root of its posterior precision, i.e. it is off by
#: less than about _MODE_TOL posterior sd in each coordinate
_STOP, _MODE_TOL = {"maxiter": 5000, "ftol": 0.0, "gtol": 0.0}, 1e-4
#: sigma^2 is settled to this relative tolerance, bracketed between these bounds
_SCALE_TOL, _SCALE_RANGE = 1e-4, (1e-8, 1e4)
#: the questions' draws are made this many values at a time (8 MB in float64: blocks of
#: 2^25 values added about 1 GB of temporaries to the 2PL's peak at 1,000 x 20,000)
_BLOCK_VALUES = 2**20


@dataclass(frozen=True)
class _Curvature:
    """The negative log-density's Hessian at a point, by blocks: the abilities' block
    ``h_theta`` (its diagonal (L,), or the whole (L + e, L + e) where it is dense, with e
    global coordinates after the abilities), each question's own block ``B`` (M, q, q)
    (questions do not couple to each other), and the coupling of the two, U = Q [S; E]:
    ``S`` the abilities' coupling at each cell (the cells' layout, (..., q): zero at a
    missing cell, so a list of the observed cells holds it), ``E`` (e, M, q) the global
    coordinates', and ``Q`` (L + e, L + e) a map of the abilities' coordinates (None: the
    identity)."""

    h_theta: np.ndarray
    S: np.ndarray
    B: np.ndarray
    E: np.ndarray | None = None
    Q: np.ndarray | None = None

    def abilities_block(self) -> np.ndarray:
        return np.diag(self.h_theta) if self.h_theta.ndim == 1 else self.h_theta

    def coupling(self, cells: _Table) -> np.ndarray:
        """U as a dense (L + e, M, q) array (for checks: a fit never builds it)."""
        U = cells.table(self.S)
        if self.E is not None:
            U = np.concatenate([U, self.E])
        return U if self.Q is None else np.einsum("ij,jmq->imq", self.Q, U)

    def root(self) -> np.ndarray:
        """Square roots of the diagonal (the scale of a unit step in each coordinate)."""
        diagonal = np.diagonal(self.B, axis1=1, axis2=2).ravel()
        own = self.h_theta if self.h_theta.ndim == 1 else np.diagonal(self.h_theta)
        return np.sqrt(np.abs(np.concatenate([own, diagonal])))


class _Rasch:
    """The Rasch's pieces: one item parameter per question, its difficulty b_m (eta = theta_l
    - b_m)."""

    q, extra = 1, 0
    value = staticmethod(_negative_log_posterior)

    @staticmethod
    def deviations(x, L):
        """The difficulties (their prior's mean is 0)."""
        return x[L:]

    @staticmethod
    def start(cells: _Table, s2):
        """Abilities 0 and the questions' smoothed logits; scales from the smoothed cells."""
        k, n = cells.k, cells.n
        rate = (cells.by_question(k) + 0.5) / (cells.by_question(n) + 1.0)
        x = np.concatenate([np.zeros(cells.shape[0]), np.log((1 - rate) / rate)])
        q = (k + 0.5) / (n + 1.0)
        W = n * q * (1.0 - q)
        return x, np.sqrt(np.concatenate([cells.by_model(W), cells.by_question(W)]) + 1.0 / s2)

    @staticmethod
    def curvature(x, cells: _Table, s2, sigma2) -> _Curvature:
        L = cells.shape[0]
        at_theta, at_b = cells.at(x[:L], x[L:])
        p = expit(at_theta - at_b)
        W = cells.n * p * (1.0 - p)
        return _Curvature(cells.by_model(W) + 1.0 / s2, -W[..., None],
                          (cells.by_question(W) + 1.0 / sigma2)[:, None, None])


class _TwoPL:
    """The 2PL's pieces: per question (log a_m, beta_m), eta = a_m theta_l + beta_m, with
    log a_m ~ N(0, 0.5^2) i.i.d., beta_m ~ N(mu, sigma^2), mu ~ N(0, s^2 / L_I), and the
    abilities summing to zero over the informed models (module docstring).

    The abilities are searched and drawn as z, theta = P z with P = I - 1 w^T (w the
    informed models' weights 1 / L_I), and (w^T z)^2 / 2 added: z's mean has no other role.
    The abilities' block, (z, mu), is then dense: P^T diag(h) P + w w^T, and mu's."""

    q, extra = 2, 1

    def __init__(self, informed: np.ndarray):
        self.w = informed / informed.sum()

    def _split(self, x):
        L = self.w.size
        z, items = x[:L], x[L + 1:].reshape(-1, 2)
        return z - z @ self.w, z @ self.w, x[L], items[:, 0], items[:, 1]

    def value(self, x, cells: _Table, s2, sigma2):
        """-log p(z, mu, log a, beta | sigma_beta, data) up to a constant, and its
        gradient."""
        theta, mean, mu, log_a, beta = self._split(x)
        a = np.exp(log_a)
        at_theta, at_a, at_beta = cells.at(theta, a, beta)
        value, residual = _binomial(at_theta * at_a + at_beta, cells)
        tau2 = s2 * self.w @ self.w  # s^2 / L_I
        value += theta @ theta / (2 * s2)
        value += mean * mean / 2 + mu * mu / (2 * tau2) + log_a @ log_a / (2 * LOG_A_SD**2)
        value += (beta - mu) @ (beta - mu) / (2 * sigma2)
        grad_theta = -cells.by_model(residual * at_a) + theta / s2
        grad_z = grad_theta - grad_theta.sum() * self.w + mean * self.w  # P^T g + w (w^T z)
        grad_mu = mu / tau2 - (beta - mu).sum() / sigma2
        grad_items = np.stack([-a * cells.by_question(at_theta * residual) + log_a / LOG_A_SD**2,
                               -cells.by_question(residual) + (beta - mu) / sigma2], axis=1)
        return value, np.concatenate([grad_z, [grad_mu], grad_items.ravel()])

    def start(self, cells: _Table, s2):
        """The Rasch's mode at a unit scale (a = 1, beta = -b), its abilities moved to sum
        to zero over the informed models, scaled by the 2PL's curvatures there."""
        rasch = _Modes(_Rasch, cells, s2)
        x, _ = rasch.at(1.0)
        L = cells.shape[0]
        centre = x[:L] @ self.w
        beta = centre - x[L:]
        items = np.stack([np.zeros(beta.size), beta], axis=1)
        x = np.concatenate([x[:L] - centre, [beta.mean()], items.ravel()])
        return x, self.curvature(x, cells, s2, 1.0).root()

    def deviations(self, x, L):
        """The intercepts' deviations from their mean, beta_m - mu."""
        return self._split(x)[4] - x[L]

    def abilities(self, block):
        """theta = P z of the (draws of the) abilities' block (z, mu)."""
        z = block[..., :self.w.size]
        return z - (z @ self.w)[..., None]

    def curvature(self, x, cells: _Table, s2, sigma2) -> _Curvature:
        """Observed Hessian blocks: with W = n p (1 - p) and r = k - n p at eta = a theta +
        beta, (theta_l, log a_m): a_m (W a_m theta_l - r), (theta_l, beta_m): W a_m;
        (log a_m, log a_m): sum_l a_m theta_l (W a_m theta_l - r) + 1 / 0.5^2,
        (log a_m, beta_m): sum_l W a_m theta_l, (beta_m, beta_m): sum_l W + 1 / sigma^2;
        (mu, beta_m): -1 / sigma^2, (mu, mu): M / sigma^2 + L_I / s^2; theta's rows
        mapped to z's by P^T."""
        theta, _, _, log_a, beta = self._split(x)
        L, a = theta.size, np.exp(log_a)
        at_theta, at_a, at_beta = cells.at(theta, a, beta)
        p = expit(at_theta * at_a + at_beta)
        W, residual = cells.n * p * (1.0 - p), cells.k - cells.n * p
        slope = W * at_a * at_theta - residual  # d/d log a_m of the theta_l gradient / a_m
        S = np.stack([at_a * slope, at_a * W], axis=-1)
        E = np.zeros((1, a.size, 2))
        E[0, :, 1] = -1.0 / sigma2  # (mu, beta_m)
        B = np.empty((a.size, 2, 2))
        B[:, 0, 0] = a * cells.by_question(at_theta * slope) + 1.0 / LOG_A_SD**2
        B[:, 0, 1] = B[:, 1, 0] = a * cells.by_question(at_theta * W)
        B[:, 1, 1] = cells.by_question(W) + 1.0 / sigma2
        P = np.eye(L) - self.w  # P[i, j] = delta_ij - w_j
        block = np.zeros((L + 1, L + 1))
        h = cells.by_model(W * at_a * at_a) + 1.0 / s2
        block[:L, :L] = P.T @ (h[:, None] * P) + np.outer(self.w, self.w)
        block[L, L] = a.size / sigma2 + 1.0 / (s2 * self.w @ self.w)
        Q = np.eye(L + 1)
        Q[:L, :L] = P.T
        return _Curvature(block, S, B, E, Q)


class _Modes:
    """Modes of (theta, items) given sigma^2 of the intercepts, each search starting from
    the last mode, in coordinates scaled by the square roots of the last mode's curvatures
    (a diagonal preconditioner: a model's ability is pinned by M cells, a question's
    parameters by L)."""

    def __init__(self, posterior, cells: _Table, s2):
        self.posterior, self.cells, self.s2 = posterior, cells, s2
        self.x, self.root = posterior.start(cells, s2)
        self.gaps: dict[float, float] = {}  # em_gap's values: Brent's method asks for the
        # bracket's ends again

    def _scaled(self, z, sigma2):
        value, grad = self.posterior.value(z / self.root, self.cells, self.s2, sigma2)
        return value, grad / self.root

    def at(self, sigma2: float) -> tuple[np.ndarray, _Curvature]:
        """The mode and the Hessian's blocks there, at sigma2."""
        # in the scaled coordinates a unit is a posterior sd: stop at a tenth of the bound
        found = minimize(self._scaled, self.x * self.root, args=(sigma2,), jac=True,
                         method="L-BFGS-B", options={**_STOP, "gtol": 0.1 * _MODE_TOL})
        x = found.x / self.root
        curvature = self.posterior.curvature(x, self.cells, self.s2, sigma2)
        gradient = found.jac * self.root  # the scaled search's gradient, unscaled
        root = curvature.root()
        if np.abs(gradient / root).max(initial=0.0) > _MODE_TOL:
            raise DataError(f"the Laplace approximation's mode search did not converge "
                            f"({found.message}); fit with NUTS instead (sampler='nutpie')")
        self.x, self.root = x, root
        return x, curvature

    def deviations(self, x: np.ndarray) -> np.ndarray:
        """The intercepts' deviations from their prior's mean at the point ``x``."""
        return self.posterior.deviations(x, self.cells.shape[0])

    def em_gap(self, log_sigma2: float) -> float:
        """log T(u) - log u for the EM map T (:func:`_scale_step`) at u = exp(log_sigma2)."""
        if log_sigma2 not in self.gaps:
            x, curvature = self.at(float(np.exp(log_sigma2)))
            variance = np.linalg.inv(curvature.B)[:, -1, -1]  # given theta
            deviations = self.deviations(x)
            squares = float(deviations @ deviations + variance.sum())
            self.gaps[log_sigma2] = float(np.log(_scale_step(squares, variance.size)))
            self.gaps[log_sigma2] -= log_sigma2
        return self.gaps[log_sigma2]


def _settled_scale(modes: _Modes) -> float:
    """sigma^2 where the EM map stands still: bracketed from the intercepts' spread by
    factors of 4, then Brent's method on log sigma^2."""
    low, high = np.log(_SCALE_RANGE)
    start = float(np.clip(np.log(max(np.var(modes.deviations(modes.x)), 1e-2)), low, high))
    a = b = start
    gap = modes.em_gap(start)
    step = np.log(4.0) if gap > 0 else -np.log(4.0)  # T(u) > u: the fixed point lies above
    while True:
        b = float(np.clip(a + step, low, high))
        if modes.em_gap(b) * gap <= 0:
            break
        if b in (low, high):  # no fixed point inside the range: the data hold sigma there
            return float(np.exp(b))
        a = b
    root = brentq(modes.em_gap, min(a, b), max(a, b), xtol=_SCALE_TOL, rtol=_SCALE_TOL)
    return float(np.exp(root))


class _Regression:
    """The abilities' marginal precision and each question's regression on them, from the
    Hessian's blocks (:class:`_Curvature`) with C_m = B_m^-1 (each question's covariance
    given the abilities):

    - the Schur complement P = H_theta - sum_m U_m C_m U_m^T, with U_m = Q [S_m; E_m]:
      Q (sum_m [S_m; E_m] C_m [S_m; E_m]^T) Q^T, the cells' part a product of (sparse,
      over the observed cells) matrices;
    - question m's mean shift given theta - theta_hat = d: C_m U_m^T d = ((d Q) [S_m; E_m]
      C_m)^T, read for a block of questions at a time (:meth:`shifts`)."""

    def __init__(self, curvature: _Curvature, cells: _Table, covariance: np.ndarray):
        M, q = curvature.B.shape[:2]
        E = np.zeros((0, M, q)) if curvature.E is None else curvature.E
        self.q, self.Q, self.n_abilities = q, curvature.Q, cells.shape[0]
        # [S_m; E_m] C_m: the cells' rows (a sparse matrix over the observed cells), and
        # the global coordinates' (dense)
        self.cell_rows = cells.matrix(np.einsum("...i,...ij->...j", curvature.S,
                                                cells.of_question(covariance)))
        self.global_rows = np.einsum("emi,mij->emj", E, covariance).reshape(-1, M * q)
        S, E = cells.matrix(curvature.S), E.reshape(-1, M * q)
        gram = self.cell_rows @ S.T
        cross = self.cell_rows @ E.T
        coupled = np.block([[gram if isinstance(gram, np.ndarray) else gram.toarray(), cross],
                            [cross.T, self.global_rows @ E.T]])
        if self.Q is not None:
            coupled = self.Q @ coupled @ self.Q.T
        self.precision = curvature.abilities_block() - coupled

    def shifts(self, dtheta: np.ndarray, width: int) -> Iterator[tuple[slice, np.ndarray]]:
        """C_m U_m^T d for rows d of ``dtheta`` (samples, L + e), ``width`` questions at a
        time: each block's questions and their shifts (samples, questions, q)."""
        mapped = dtheta if self.Q is None else dtheta @ self.Q
        M = self.global_rows.shape[1] // self.q
        for start in range(0, M, width):
            columns = slice(start * self.q, min(start + width, M) * self.q)
            rows = self.cell_rows[:, columns]  # a block's rows zero-filled: a dense product
            # beat scipy's sparse one at every share of observed cells measured (1-10%)
            rows = rows if isinstance(rows, np.ndarray) else rows.toarray()
            shift = mapped[:, :self.n_abilities] @ rows
            if self.global_rows.size:
                shift += mapped[:, self.n_abilities:] @ self.global_rows[:, columns]
            yield slice(start, start + width), shift.reshape(len(dtheta), -1, self.q)


def _laplace(posterior, cells: _Table, ability_scale: float, samples: int,
             rng: np.random.Generator):
    """``samples`` i.i.d. draws of theta (samples, L) and of the items' parameters (q,
    samples, M: each parameter's draws contiguous, for the caller to transform in place)
    from the Laplace approximation, and the intercepts' sigma at its EM fixed point.

    With the Hessian's blocks (:class:`_Curvature`), theta's precision is the Schur
    complement P = H_theta - sum_m U_m B_m^-1 U_m^T, and a question's parameters given
    theta are N(x_m - B_m^-1 U_m^T (theta - theta_hat), B_m^-1) (:class:`_Regression`)."""
    L = cells.shape[0] + posterior.extra  # the abilities and the block's global coordinates
    modes = _Modes(posterior, cells, float(ability_scale) ** 2)
    sigma2 = _settled_scale(modes)
    x, curvature = modes.at(sigma2)
    theta_hat, items_hat = x[:L], x[L:].reshape(-1, posterior.q)
    M, q = items_hat.shape
    covariance = np.linalg.inv(curvature.B)  # each question's, given theta
    regression = _Regression(curvature, cells, covariance)
    del curvature  # the cells' coupling: 320 MB at 1,000 x 20,000 in a table
    try:
        factor, _ = cho_factor(regression.precision, lower=True)
        spread = np.linalg.cholesky(covariance)
    except np.linalg.LinAlgError:
        raise DataError("the Laplace approximation's Hessian is not positive definite at the "
                        "mode found (a saddle of the posterior); fit with NUTS instead "
                        "(sampler='nutpie')") from None
    # theta - theta_hat = C^-T z has covariance (C C^T)^-1 = P^-1
    dtheta = solve_triangular(factor, rng.standard_normal((L, samples)), lower=True,
                              trans="T").T
    items = np.empty((q, samples, M))
    width = max(1, _BLOCK_VALUES // (samples * q))  # questions per block of draws
    for at, shift in regression.shifts(dtheta, width):
        # parameter j: x_mj - shift_mj + sum_{i <= j} chol(C_m)_ji z_i, z_i ~ N(0, 1)
        z = rng.standard_normal((q, samples, shift.shape[1]))
        for j in range(q):
            out = items[j, :, at]
            np.subtract(items_hat[at, j], shift[..., j], out=out)
            for i in range(j + 1):
                out += spread[at, j, i] * z[i]
    return theta_hat + dtheta, items, float(np.sqrt(sigma2))


def rasch_laplace(k: np.ndarray, n: np.ndarray, informed: np.ndarray, ability_scale: float,
                  samples: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``samples`` i.i.d. draws of theta (samples, L) and b (samples, M) from the Rasch's
    Laplace approximation (module docstring), centred on the informed models' mean, and
    sigma_b's estimate."""
    theta, items, sigma = _laplace(_Rasch, _cells(k, n), ability_scale, samples, rng)
    centre = theta[:, informed].mean(axis=1, keepdims=True)
    theta -= centre
    b = items[0]
    b -= centre  # in place: at 1,000 x 20,000 a copy of b is 640 MB
    return {"theta": theta, "b": b, "sigma_b": sigma}


def two_pl_laplace(k: np.ndarray, n: np.ndarray, informed: np.ndarray,
                   informed_questions: np.ndarray, ability_scale: float, samples: int,
                   rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``samples`` i.i.d. draws of the 2PL's theta, a and b (= -beta / a) from its Laplace
    approximation, each draw's scale moved to the NUTS model's (log a summing to zero over
    the informed questions: a / s, s theta), and sigma_beta's estimate.  (log a and beta,
    which the NUTS fit also keeps, are not kept: at 1,000 x 20,000 each is 640 MB; a and
    b are computed in their place.)"""
    posterior = _TwoPL(np.asarray(informed, dtype=float))
    block, items, sigma = _laplace(posterior, _cells(k, n), ability_scale, samples, rng)
    theta, log_a, b = posterior.abilities(block), items[0], items[1]
    shift = log_a[:, informed_questions].mean(axis=1, keepdims=True)
    log_a -= shift
    a = np.exp(log_a, out=log_a)  # in place, as b: at 1,000 x 20,000 each is 640 MB
    b /= a
    np.negative(b, out=b)
    return {"theta": theta * np.exp(shift), "a": a, "b": b, "sigma_beta": sigma}


def laplace_draws(model: pm.Model, *, draws: int, chains: int, seed: int,
                  log_likelihood: bool = False) -> dict[str, dict[str, np.ndarray]]:
    """The ``posterior`` group's arrays (chain, draw, ...) of :func:`rasch_laplace` or
    :func:`two_pl_laplace` for a Rasch or 2PL built by :func:`models.irt.build`, read from
    the model's data."""
    names = model.named_vars
    if "theta_direction" not in names or "b" not in names or "c" in names:
        raise DataError("sampler 'laplace' approximates the Rasch and 2PL posteriors only; fit "
                        "other models with NUTS (sampler='nutpie')")
    if "inv_sqrt_phi" in names or "prior_successes" in names:
        raise DataError("sampler 'laplace' approximates the binomial Rasch and 2PL without "
                        "prior runs; fit the beta-binomial or R0 models with NUTS "
                        "(sampler='nutpie')")
    value = _data_values(model)
    informed, ability_scale = _abilities_prior(value)
    rng = np.random.default_rng(seed)
    k, n = value["successes"], value["trials"]
    if "a" in names:
        found = two_pl_laplace(k, n, informed, value["log_a_direction"] > 0, ability_scale,
                               draws * chains, rng)
        scale = "sigma_beta"
    else:
        found = rasch_laplace(k, n, informed, ability_scale, draws * chains, rng)
        scale = "sigma_b"
    shaped = {name: array.reshape(chains, draws, -1) for name, array in found.items()
              if name != scale}
    shaped[scale] = np.full((chains, draws), found[scale])  # held at its estimate
    return {"posterior": shaped}


def approximated_model(model: pm.Model) -> pm.Model:
    """The Rasch or 2PL in the approximation's form (module docstring; the paper's, as the
    Rasch's, without the intercepts' mean) over ``model``'s data, whose free variables are
    the draws' theta and b, and the 2PL's a: the model a Laplace fit's
    posterior-predictive check and PSIS-LOO score
    (``model``'s own free variables, its zero-sum coordinates, are not among the draws)."""
    value = _data_values(model)
    _, ability_scale = _abilities_prior(value)
    # the cells' dims only: a sparse table's observed-cells dim has no values to carry
    with pm.Model(coords={dim: model.coords[dim] for dim in ("llm", "question")}) as paper:
        theta = pm.Normal("theta", 0.0, ability_scale, dims="llm")
        if "a" in model.named_vars:  # beta_m ~ N(0, sigma_beta^2): b_m = -beta_m / a_m
            a = pm.LogNormal("a", 0.0, LOG_A_SD, dims="question")
            sigma_beta = pm.HalfNormal("sigma_beta", SIGMA_B_PRIOR)
            b = pm.Normal("b", 0.0, sigma_beta / a, dims="question")
            logit = a * (theta[:, None] - b)
        else:
            sigma_b = pm.HalfNormal("sigma_b", SIGMA_B_PRIOR)
            b = pm.Normal("b", 0.0, sigma_b, dims="question")
            logit = theta[:, None] - b
        cells = ("llm", "question")
        trials = pm.Data("trials", value["trials"], dims=cells)
        binomial_logit("k", trials, logit, pm.Data("successes", value["successes"], dims=cells),
                       cells)
    return paper


def _data_values(model: pm.Model) -> dict[str, Any]:
    return {v.name: np.asarray(v.get_value()) for v in model.data_vars}


def _abilities_prior(value: dict[str, Any]) -> tuple[np.ndarray, float]:
    """The informed models and the abilities' prior sd s, read from the Rasch's data (its
    items' location sd is s / sqrt(L_I), :meth:`models.irt.IrtData.location_sd`)."""
    informed = value["theta_direction"] > 0
    return informed, float(value["location_sd"][0]) * np.sqrt(informed.sum())
