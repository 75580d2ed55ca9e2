"""The suite's skills and per-benchmark abilities, sampled as the data inform them.

The prior (:mod:`models.suite`): with ran[l, b] whether model l ran benchmark b,

    skill    ~ ZeroSumNormal(A) over the L models
    d_.b     ~ ZeroSumNormal(sigma_b) over the models that ran b, Normal(0, sigma_b) else
    theta_lb = skill_l + d_lb

is a Gaussian given the spreads: with u = (g, h) i.i.d., g_l ~ Normal(0, A^2), h_lb ~
Normal(0, sigma_b^2), skill = g - mean(g) and d_.b = h_.b minus its mean over the models
that ran b (on those models only), every output is a fixed linear map of u:
skill = S u, theta = T u.

:func:`pooled_abilities` samples the abilities the data see, theta_r = R u (R: the rows of
T of the cells a model ran), from their exact marginal Normal(0, R D R^T), D = diag(var u):
their contrasts centred, each benchmark's level (which the likelihood leaves to the prior)
from its conditional given them, non-centred; and draws every other output from its exact
conditional given theta_r by pathwise conditioning (Matheron's rule):

    u* = D^(1/2) z,  z ~ Normal(0, I)
    u  = u* + D R^T (R D R^T)^(-1) (theta_r - R u*)      ~ u | theta_r, exactly
    skill = S u,  theta = T u  (= theta_r on the cells run)

so the joint of (skill, theta) given the spreads is the prior's, and z is standard normal
a posteriori too (its density is a factor of its own).  Why: the data pin theta_r down
(hundreds of questions a cell), while the split of the spread between benchmarks is only
weakly identified; sampled as skill and deviations, every skill moved with that split,
sampled as theta_r only the spreads move and the skills follow in the same draw.

The zero sums make R D R^T singular when some combination of benchmarks covers every
model equally (a benchmark run by all models: its abilities sum to the skills' sum, 0).
Those linear constraints c^T theta_r = 0 (the left null space of R) are kept exactly: K
pivot cells (pivoted QR of the constraints) follow from the others, the free cells are
sampled from their marginal, which is then full rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import scipy.linalg
from pytensor.tensor.linalg import cholesky, solve_triangular

__all__ = ["Pooling", "pooled_abilities"]


def _contrasts(size: int) -> np.ndarray:
    """(size, size - 1): an orthonormal basis of the vectors summing to 0, the reflection
    H = I - 2 w w^T / w^T w (w = e_0 - 1 / sqrt(size)) without its first column: column j
    is mostly e_j (:func:`models.irt._reflected_zero_sum`)."""
    w = np.eye(size)[0] - 1.0 / np.sqrt(size)
    norm = w @ w
    H = np.eye(size) - (2.0 * np.outer(w, w) / norm if norm > 0 else 0.0)
    return H[:, 1:]


@dataclass(frozen=True, eq=False)
class Pooling:
    """The linear maps of the prior (module docstring) for one coverage ``ran`` (L, B).

    The abilities of the cells run are sampled in the basis theta_r = E x: x holds each
    benchmark's level (the mean ability of the models that ran it) and, per benchmark, its
    abilities' contrasts (an orthonormal zero-sum basis), so the level, the direction the
    likelihood leaves to the priors, is one coordinate.  The zero sums' constraints bind
    levels only (c^T theta_r = 0 with c constant on each benchmark's cells): K pivot levels
    follow from the free ones."""

    ran: np.ndarray  # (L, B) bool
    skill_map: np.ndarray  # S: (L, L + L B)
    theta_map: np.ndarray  # T: (L B, L + L B), cells (l, b) row-major
    cells: np.ndarray  # flat indices of the cells run (n,)
    basis: np.ndarray  # E: theta_r = E x, levels first (n, n)
    free: np.ndarray  # positions in x sampled (n - K,)
    pivots: np.ndarray  # levels fixed by the zero sums (K,)
    from_free: np.ndarray  # x[pivots] = from_free @ x[free]  (K, n - K)

    @classmethod
    def of(cls, ran: np.ndarray) -> Pooling:
        ran = np.asarray(ran, bool)
        L, B = ran.shape
        S = np.zeros((L, L + L * B))
        S[:, :L] = np.eye(L) - 1.0 / L
        T = np.repeat(S, B, axis=0).reshape(L, B, -1)
        for b in range(B):
            centre = np.eye(L)
            centre[np.ix_(ran[:, b], ran[:, b])] -= 1.0 / ran[:, b].sum()
            T[:, b, L + b::B] += centre
        T = T.reshape(L * B, -1)
        cells = np.flatnonzero(ran.ravel())
        column = cells % B
        E = np.zeros((cells.size, cells.size))
        start = B
        for b in range(B):
            own = np.flatnonzero(column == b)
            E[own, b] = 1.0
            E[np.ix_(own, np.arange(start, start + own.size - 1))] = _contrasts(own.size)
            start += own.size - 1
        # c^T theta_r = 0 for c in the left null space of R = T[cells]: in x, c^T E
        constraints = E.T @ scipy.linalg.null_space(T[cells].T)  # (n, K), levels only
        K = constraints.shape[1]
        assert np.allclose(constraints[B:], 0.0), "zero-sum constraints beyond the levels"
        order = (scipy.linalg.qr(constraints[:B].T, pivoting=True)[2] if K
                 else np.arange(B))
        pivots = np.sort(order[:K])
        free = np.setdiff1d(np.arange(cells.size), pivots)
        from_free = -np.linalg.solve(constraints[pivots].T, constraints[free].T)
        return cls(ran, S, T, cells, E, free, pivots, from_free)

    @cached_property
    def sampled_map(self) -> np.ndarray:
        """(n - K, L + L B): the sampled coordinates x[free] as a map of u."""
        return np.linalg.solve(self.basis, self.theta_map[self.cells])[self.free]

    def variance(self, scale, spread):
        """var u: A^2 for g, sigma_b^2 for h_.b."""
        L = self.ran.shape[0]
        return pt.concatenate([pt.fill(pt.zeros(L), scale**2), pt.tile(spread**2, L)])

    def contrasts_then_levels(self) -> tuple[np.ndarray, int]:
        """The positions in x[free] of the contrasts, then of the free levels; and how many
        contrasts (:func:`pooled_abilities`)."""
        levels = self.free < self.ran.shape[1]
        return np.concatenate([np.flatnonzero(~levels), np.flatnonzero(levels)]), int(
            (~levels).sum())

    def covariance_parts(self) -> np.ndarray:
        """Cov x[free] = sum_k var_k parts[k]: one (n - K)^2 matrix per variance (g, then b)."""
        L, B = self.ran.shape
        R = self.sampled_map
        blocks = [R[:, :L]] + [R[:, L + b::B] for b in range(B)]
        return np.stack([block @ block.T for block in blocks])


def pooled_abilities(ran: np.ndarray, scale: float, spread, *, name: str = "theta"):
    """(skill, theta) of the suite's prior given the spreads, sampled as x[free] (theta_r
    in levels and contrasts, :class:`Pooling`) and z (module docstring), and each
    benchmark's level, the mean ability of the models that ran it (B,).  ``ran``: (L, B)
    bool; ``spread``: sigma_b (B,).

    The contrasts ``{name}_run`` are centred (the data pin them down); the free levels,
    which the likelihood leaves to the prior, are drawn from their conditional given the
    contrasts, non-centred: levels = C_lc C_cc^-1 contrasts + chol(C_l|c) ``{name}_level_z``.
    That conditional is narrow and scales with the spreads (sd 0.03 at spreads 0.6 / 0.5 on
    the ZeroEval suite, 0.003 at 0.6 / 0.05), a funnel when the levels were centred: default
    2PL fits diverged there and mixed the levels slowest (docs/suite.md)."""
    pool = Pooling.of(ran)
    L, B = pool.ran.shape
    weights = pt.concatenate([pt.stack([pt.as_tensor(scale, dtype="float64")**2]), spread**2])
    cov = pt.tensordot(weights, pool.covariance_parts(), axes=1)
    order, n_c = pool.contrasts_then_levels()
    cov = cov[order][:, order]
    chol_c = cholesky(cov[:n_c, :n_c], lower=True)
    contrasts = pm.MvNormal(f"{name}_run", mu=np.zeros(n_c), chol=chol_c)
    chol, x_sorted = chol_c, contrasts
    if n_c < order.size:
        cross = solve_triangular(chol_c, cov[:n_c, n_c:], lower=True)
        chol_l = cholesky(cov[n_c:, n_c:] - pt.dot(cross.T, cross), lower=True)
        level_z = pm.Normal(f"{name}_level_z", 0.0, 1.0, shape=order.size - n_c)
        levels = pt.dot(cross.T, solve_triangular(chol_c, contrasts, lower=True))
        x_sorted = pt.concatenate([contrasts, levels + pt.dot(chol_l, level_z)])
        chol = pt.concatenate([pt.concatenate([chol_c, pt.zeros((n_c, order.size - n_c))], 1),
                               pt.concatenate([cross.T, chol_l], 1)])
    z = pm.Normal(f"{name}_z", 0.0, 1.0, shape=L + L * B)
    var = pool.variance(scale, spread)
    u_star = pt.sqrt(var) * z
    R = pool.sampled_map[order]
    gap = solve_triangular(chol, x_sorted - pt.dot(R, u_star), lower=True)
    u = u_star + var * pt.dot(R.T, solve_triangular(chol.T, gap, lower=False))
    x_free = pt.set_subtensor(pt.zeros(order.size)[order], x_sorted)
    x = pt.zeros(pool.cells.size)
    x = pt.set_subtensor(x[pool.free], x_free)
    x = pt.set_subtensor(x[pool.pivots], pt.dot(pool.from_free, x_free))
    theta = pt.set_subtensor(pt.dot(pool.theta_map, u)[pool.cells], pt.dot(pool.basis, x))
    return pt.dot(pool.skill_map, u), theta.reshape((L, B)), x[:B]
