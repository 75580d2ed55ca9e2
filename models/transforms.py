"""Named reparameterisations: the coordinates NUTS samples, as PyMC transforms.

A variable that is sampled in other coordinates than its own is declared here with its
own prior (a proper distribution with a random method, so ``pm.sample_prior_predictive``
draws the model's prior) and a transform: PyMC samples the free coordinate v, maps it
back with ``backward`` and adds ``log_jac_det``, so the posterior is the model's own and
no Potential is needed.  Every map is strictly increasing onto its variable's range.

The wall map.  A parameter that the data bound from one side only (a question no model
solved, a tie order no event has) has the prior's tail beyond a soft wall as its
posterior: about one logit wide at the wall, the prior's scale s wide on the open side.
With ``side`` +1 (bounded above) or -1 (below) and the wall's position w,

    x = w + side (v - s softplus(-v)),   dx / dv = 1 + s logistic(-v)

about one unit of v per logit past the wall and (1 + s) on the open side, so one step
size suits both (docs/samplers.md: Reasoning Gym hard's 2PL, step size 0.062 and 63
leapfrog steps per draw as plain non-centred intercepts, 0.127 and 31 with the map).
Where a second soft wall, a cap, bounds the open side at distance D from the wall, the
map is two-sided, s = 0 and

    x = w + side (v - D logistic(-v)),   dx / dv = 1 + D logistic(v) logistic(-v)

one unit of v per logit beyond either end and the D between them crossed in a few
units (:func:`models.item_effects.wall_positions` says where caps arise).

* :class:`ItemEffects` -- the IRT models' pooled difficulties / intercepts: informed
  questions centred (v = effect + shift), one-sided ones from their wall, the others
  non-centred (effect = mu + s v).
* :class:`TieSizes` -- Davidson-Luce's tie effects eta_t, sampled as the log-odds of a
  winner set's size, eta_t + h_t(theta), and from their wall for sizes no event has.

The fast path (``models.build(..., fast=True)``) computes the one-sided intercepts' map
and its log-Jacobian with one Op (:mod:`models.fast.wall_map`), and the 3PL's floors and
theirs with another (:mod:`models.fast.floors`); both paths give the same values and
gradients (``tests/test_fast_path.py``).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pymc.logprob.transforms import Transform

from .likelihoods import fast_enabled

__all__ = ["ItemEffects", "TieSizes", "floor_shares", "item_effects", "tie_sizes",
           "wall_map"]

#: Newton steps of the maps' inverses (initial points only): from the asymptote on the
#: value's side (the middle for a two-sided map), 15 steps reach the root to 5e-16 relative
#: for scales or cap widths up to 1e5, checked on v in [-700, 700].  Each step is part of
#: every model's graph.
_NEWTON_STEPS = 15


def wall_map(v, wall, side, scale, width=0.0):
    """x = wall + side (v - scale softplus(-v) - width logistic(-v)) and log dx/dv =
    log(1 + scale logistic(-v) + width logistic(v) logistic(-v)) (module docstring)."""
    low = pt.sigmoid(-v)
    return (wall + side * (v - scale * pt.softplus(-v) - width * low),
            pt.log1p(scale * low + width * low * pt.sigmoid(v)))


def _wall_inverse(x, wall, side, scale, width=0.0):
    """v with :func:`wall_map` (v) = x, by Newton from the map's asymptotes."""
    y = (x - wall) * side  # = v - scale softplus(-v) - width logistic(-v), increasing in v
    v = pt.where(y > 0, y, pt.where(y < -width, (y + width) / (1.0 + scale), 0.0))
    for _ in range(_NEWTON_STEPS):
        low = pt.sigmoid(-v)
        v = v - ((v - scale * pt.softplus(-v) - width * low - y)
                 / (1.0 + scale * low + width * low * pt.sigmoid(v)))
    return v


class ItemEffects(Transform):
    """Free coordinates of pooled item effects e_m ~ Normal(mu, s_m) (:func:`item_effects`).

    Per question, by the masks ``centred`` and ``side`` (data):

    ====================  =================================  ==========================
    question              e_m from the free v_m               log |de / dv|
    ====================  =================================  ==========================
    centred (informed)    v - shift_m                         0
    one-sided (side +-1)  :func:`wall_map`, s or a cap's D   log dx/dv
    other (non-centred)   mu + s_m v                          log s_m
    ====================  =================================  ==========================

    (``walls=False``: every question that is not centred is non-centred.)  With ``shift``
    0 a centred question's v is its effect; the 2PL's shift a_m t_m makes v its logit where
    the question crosses (:func:`models.item_effects.crossing_ability`); the 3PL's floors
    move it by softplus(w) (:class:`FloorsAndIntercepts`).  One-sided questions share one
    scale s, the
    walls sit at wall_m = -a_m t (t the best model's ability for a question no model
    solves, the worst's for one every model solves: there the 2PL's logit a theta + beta
    is 0).
    """

    name = "items"
    ndim_supp = 0

    def __init__(self, walls: bool = True, fast: bool = True):
        self.walls, self.fast = bool(walls), bool(fast)  # fixed when the model is built

    @staticmethod
    def _parts(inputs):
        mu, sigma, scale, centred, shift, wall, side, width = inputs[2:10]
        return mu, sigma, centred > 0, shift, (wall, side, scale, width)

    def _walled(self, value, wall, side, scale, width):
        """The one-sided questions' effects and log-Jacobians: :func:`wall_map`, or on the
        fast path the same map in one Op (:mod:`models.fast.wall_map`)."""
        if self.fast:
            from .fast.wall_map import wall_map as fast_wall_map

            return fast_wall_map(value, wall, side, scale, width)
        return wall_map(value, wall, side, scale, width)

    def backward(self, value, *inputs):
        mu, sigma, centred, shift, walled = self._parts(inputs)
        other = mu + sigma * value
        if self.walls:
            other = pt.where(pt.neq(walled[1], 0), self._walled(value, *walled)[0], other)
        return pt.where(centred, value - shift, other)

    def forward(self, value, *inputs):
        mu, sigma, centred, shift, (wall, side, scale, width) = self._parts(inputs)
        other = (value - mu) / sigma
        if self.walls:
            walled = _wall_inverse(value, wall, pt.where(pt.eq(side, 0), 1.0, side), scale,
                                   width)
            other = pt.where(pt.neq(side, 0), walled, other)
        return pt.where(centred, value + shift, other)

    def log_jac_det(self, value, *inputs):
        mu, sigma, centred, shift, walled = self._parts(inputs)
        other = pt.log(sigma) * pt.ones_like(value)
        if self.walls:
            other = pt.where(pt.neq(walled[1], 0), self._walled(value, *walled)[1], other)
        return pt.where(centred, 0.0, other)


def _normal_logp(value, mu, sigma, *rest):
    return pm.logp(pm.Normal.dist(mu, sigma), value)


def _normal_random(mu, sigma, *rest, rng=None, size=None):
    return rng.normal(mu, sigma, size=size)


def item_effects(name, mu, sigma, scale, *, centred, shift, wall, side, width, walls=True,
                 dims="question"):
    """e_m ~ Normal(mu, sigma_m) i.i.d., sampled in the coordinates of :class:`ItemEffects`.

    ``scale``, ``wall``, ``side``, ``width``: the one-sided questions' wall maps
    (:func:`wall_map`; :func:`models.item_effects.pooled` sets them).  Sampling
    starts where the free coordinates are mu + shift (centred) and 0 (the rest), as the
    pooled effects' plain non-centred form would."""
    transform = ItemEffects(walls, fast_enabled())

    def support_point(rv, size, *params):
        start = pt.where(params[3] > 0, params[0] + params[4], 0.0)
        return transform.backward(start, None, None, *params)

    return pm.CustomDist(name, mu, sigma, scale, centred, shift, wall, side, width,
                         logp=_normal_logp,
                         random=_normal_random, support_point=support_point,
                         transform=transform, dims=dims)


class TieSizes(Transform):
    """Free coordinates of Davidson-Luce's tie effects eta_t (:func:`tie_sizes`).

    eta_t = omega_t - h_t(theta), with omega_t the log-odds of a winner set of size t
    against size 1 in the reference comparison set:

        omega_t = v_t + sum_s k_s v_s   (t seen),   omega_t = wall map (v_t)
        (t unseen: an order the reference set holds but no event has, side +1, wall w).

    Every omega_t of a seen order carries the noise of the size-1 count n_1: with counts
    n_t their covariance is about diag(1 / n_t) + 11^T / n_1, correlated near 0.97 on
    GSM8K (41 models, 6 winner sets of size 1 against 209 of size 40), a direction no
    diagonal mass matrix follows.  ``coupling`` k_s = g n_s, g = (sqrt(1 + S / n_1) - 1) /
    S with S = sum_s n_s, factors that covariance as (I + 1 k^T) diag(1 / n_t) (I + k 1^T)
    (:meth:`models.davidson_luce.SetwiseEvents.size_coupling`), so the v_t are about
    independent.  For fixed theta the map is linear on the seen orders with determinant
    1 + sum_s k_s and the wall map on the unseen ones.
    """

    name = "sizeodds"
    ndim_supp = 0

    @staticmethod
    def _parts(inputs):
        scale, h, unseen, wall, coupling = inputs[3:8]
        return scale, h, unseen > 0, wall, coupling

    def backward(self, value, *inputs):
        scale, h, unseen, wall, k = self._parts(inputs)
        omega = pt.where(unseen, wall_map(value, wall, 1.0, scale)[0], value + pt.dot(k, value))
        return omega - h

    def forward(self, value, *inputs):
        scale, h, unseen, wall, k = self._parts(inputs)
        omega = value + h
        seen = omega - pt.dot(k, omega) / (1.0 + k.sum())  # Sherman-Morrison
        return pt.where(unseen, _wall_inverse(omega, wall, 1.0, scale), seen)

    def log_jac_det(self, value, *inputs):
        scale, h, unseen, wall, k = self._parts(inputs)
        total = k.sum()
        # log(1 + sum k) spread over the seen orders in proportion to k
        linear = pt.log1p(total) * k / pt.where(total > 0, total, 1.0)
        return pt.where(unseen, wall_map(value, wall, 1.0, scale)[1], linear)


def tie_sizes(name, scale, h, unseen, wall, coupling, dims="tie_order"):
    """eta_t ~ Normal(0, scale) i.i.d., sampled in the coordinates of :class:`TieSizes`
    (sampling starts at free coordinates 0)."""
    def support_point(rv, size, mu, scale, h, unseen, wall, coupling):
        return TieSizes().backward(pt.zeros_like(h), None, None, mu, scale, h, unseen, wall,
                                   coupling)

    # float64 arrays: PyTensor takes a Python float it can hold exactly as float32
    scale = np.asarray(scale, dtype=np.float64)
    return pm.CustomDist(name, np.zeros(()), scale, h, unseen, wall, coupling,
                         logp=_normal_logp,
                         random=_normal_random, support_point=support_point,
                         transform=TieSizes(), dims=dims)


def floor_shares(u, w, centred):
    """The 3PL's floors from their free coordinates (:class:`FloorsAndIntercepts`):
    ``(shift, c, log-Jacobian)``, each like u, with shift = softplus(w) the informed
    questions' intercept shift (0 for the others), c = logistic(u) logistic(w) (informed)
    or logistic(w), and log c + log(1 - c)."""
    informed = centred > 0
    log_c = -pt.softplus(-w) - pt.where(informed, pt.softplus(-u), 0.0)
    return pt.where(informed, pt.softplus(w), 0.0), pt.exp(log_c), log_c + pt.log1mexp(log_c)


class FloorsAndIntercepts(Transform):
    """Free coordinates of the 3PL's intercepts beta_m and guessing floors c_m, jointly.

    For an informed (centred) question the free coordinates are u_m and w_m with

        c_m = logistic(u_m) logistic(w_m),   beta_m = u_m - softplus(w_m),

    i.e. u_m = logit p_m(0), p_m(0) = c_m + (1 - c_m) logistic(beta_m) the solve
    probability at the mean ability, and w_m the log-odds of the floor's share c_m /
    p_m(0).  A question that does not separate the models (AlpacaEval's wins: one won by
    25 of 52 models, half of the weaker and half of the stronger) is explained by a floor
    near its win rate with the curve pushed away (beta_m -> -infinity) as well as by a
    flat curve and no floor: in (logit c, beta) that ridge bends, in (u, w) it runs along
    w at the p_m(0) the data fix, which a diagonal mass matrix follows.  The map (u, w)
    -> (logit c, beta) has |Jacobian| 1, so log |d(beta, c) / d(u, w)| = log c + log(1 -
    c).  Every other question has c_m = logistic(w_m) and its intercept from v_m as in
    :class:`ItemEffects` (one-sided from the wall, else non-centred).  Values are (M, 2):
    (beta_m, c_m) per question.  The floors, the shift softplus(w_m) and their
    log-Jacobian: :func:`floor_shares`.
    """

    name = "floorshare"
    ndim_supp = 1

    def __init__(self, walls: bool = True, fast: bool = True):
        self.intercepts = ItemEffects(walls, fast)

    def _floors(self, u, w, centred):
        """:func:`floor_shares`, or on the fast path the same map in one Op
        (:mod:`models.fast.floors`)."""
        if self.intercepts.fast:
            from .fast.floors import floor_shares as fast_floor_shares

            return fast_floor_shares(u, w, centred)
        return floor_shares(u, w, centred)

    def _parts(self, value, inputs):
        rng, size, mu, sigma, scale, centred, wall, side, width = inputs[:9]
        shift, c, log_jacobian = self._floors(value[..., 0], value[..., 1], centred)
        params = (rng, size, mu, sigma, scale, centred, shift, wall, side, width)
        return params, c, log_jacobian

    def backward(self, value, *inputs):
        params, c, _ = self._parts(value, inputs)
        beta = self.intercepts.backward(value[..., 0], *params)
        return pt.stack([beta, c], axis=-1)

    def forward(self, value, *inputs):
        centred = inputs[5]
        beta, c = value[..., 0], value[..., 1]
        p0 = c + (1.0 - c) * pt.sigmoid(beta)  # the solve probability at the mean ability
        w = pt.where(centred > 0, pt.log(c) - pt.log1p(-c / p0) - pt.log(p0),
                     pt.log(c) - pt.log1p(-c))
        params = self._parts(pt.stack([beta, w], axis=-1), inputs)[0]
        v = pt.where(centred > 0, pt.log(p0) - pt.log1p(-p0),
                     self.intercepts.forward(beta, *params))
        return pt.stack([v, w], axis=-1)

    def log_jac_det(self, value, *inputs):
        params, _, log_jacobian = self._parts(value, inputs)
        return self.intercepts.log_jac_det(value[..., 0], *params) + log_jacobian


def _floors_and_intercepts_logp(value, mu, sigma, scale, centred, wall, side, width, alpha,
                                beta, pair):
    return (pm.logp(pm.Normal.dist(mu, sigma), value[..., 0])
            + pm.logp(pm.Beta.dist(alpha, beta), value[..., 1]))


def _floors_and_intercepts_random(mu, sigma, scale, centred, wall, side, width, alpha, beta,
                                  pair, rng=None, size=None):
    shape = np.broadcast_shapes(np.shape(mu), np.shape(sigma), np.shape(centred), size or ())
    return np.stack([rng.normal(mu, sigma, size=shape), rng.beta(alpha, beta, size=shape)], -1)


#: 3PL: sampling starts at a floor share of 0.05 (the Beta(1, 19) prior's mean): floors of
#: 0.05 on one-sided questions, of 0.05 p(0) on informed ones.
INITIAL_SHARE = float(np.log(0.05 / 0.95))


def floors_and_intercepts(name, mu, sigma, scale, *, centred, wall, side, width, guessing,
                          walls=True, dims=("question", "item_parameter")):
    """(beta_m, c_m) with beta_m ~ Normal(mu, sigma_m), c_m ~ Beta(*guessing), independent,
    sampled in the coordinates of :class:`FloorsAndIntercepts` (a (M, 2) variable)."""
    transform = FloorsAndIntercepts(walls, fast_enabled())
    alpha, beta = guessing

    def support_point(rv, size, mu, sigma, scale, centred, wall, side, width, alpha, beta,
                      pair):
        w = pt.ones_like(sigma * centred) * INITIAL_SHARE
        start = pt.where(centred > 0, mu + pt.softplus(w), 0.0)
        return transform.backward(pt.stack([start, w], axis=-1), None, None, mu, sigma, scale,
                                  centred, wall, side, width)

    # float64 arrays: PyTensor takes a Python float it can hold exactly as float32
    alpha, beta = np.asarray(alpha, dtype=np.float64), np.asarray(beta, dtype=np.float64)
    return pm.CustomDist(name, mu, sigma, scale, centred, wall, side, width, alpha, beta,
                         np.zeros(2),
                         logp=_floors_and_intercepts_logp,
                         random=_floors_and_intercepts_random, support_point=support_point,
                         signature="(),(),(),(),(),(),(),(),(),(k)->(k)", transform=transform,
                         dims=dims)
