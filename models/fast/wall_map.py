"""The one-sided 2PL/3PL intercepts' wall map (:func:`models.item_effects.wall_intercepts`)
as one PyTensor Op: the map, its log density and their partial derivatives in one pass.

For a question with ``side`` s = +1 (solved by no model) or -1 (by every model), free
coordinate v (``raw``), pooled location mu and scale sigma, slope a and wall ability
t (``reference``),

    z_w = (-a t - mu) / sigma,   h(v) = -softplus(-v) + v / sigma,   z = z_w + s h(v)
    log_density = (v^2 - z^2) / 2 + log(logistic(-v) + 1 / sigma)

and for every other question z = v, log_density = 0.  With u = e^(-|v|),
softplus(-v) = max(-v, 0) + log(1 + u) and logistic(-v) = u / (1 + u) or 1 / (1 + u):
two logarithms and one exponential per question.  The graph this replaces evaluated
softplus, the logistic and the logarithm in several passes and again in its gradient,
each a scalar library call: on Reasoning Gym hard (1,584 one-sided questions of 4,550)
that was about a third of the 2PL's gradient (docs/samplers.md).  The Numba loop
computes every question's values without a branch, with the functions of
:mod:`models._vector_math`, so LLVM vectorises it, and selects the one-sided ones.
On Reasoning Gym hard the 2PL's log-density and gradient took 513 us with the graph and
301 us with this Op (both with the vectorised cells of :mod:`models.slope_cells`), the
3PL's 2,441 against 1,800; the default 2PL fit 160.1 against 118.3 s (seed 0, same
session, 31 steps per draw both).

The Op also returns, per question, dz/dv, d(log_density)/dv, dz/dsigma and
d(log_density)/dsigma; the gradient in mu, a and t follows from z alone
(dz/dmu = -1/sigma, dz/da = -t/sigma, dz/dt = -a/sigma on one-sided questions, and
d(log_density) = -z dz for these three).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ._backends import register_cells_backends
from ._vector_math import exp_nonpositive, log1p_unit, log_positive

__all__ = ["WallMap", "wall_map"]

_N_OUT = 6  # z, log_density, dz/dv, dlog_density/dv, dz/dsigma, dlog_density/dsigma


def _wall_map_arrays(xp, raw, location, scale, slope, reference, side, softplus_neg,
                     logistic_neg):
    """The map as array code of the module ``xp`` (NumPy or jax.numpy), given
    softplus(-raw) and logistic(-raw) computed that module's way."""
    one_sided = side != 0
    slope_h = logistic_neg + 1.0 / scale  # h'(v) > 0
    z_wall = (-slope * reference - location) / scale
    z = xp.where(one_sided, z_wall + side * (raw / scale - softplus_neg), raw)
    dz_draw = xp.where(one_sided, side * slope_h, 1.0)
    dz_dscale = xp.where(one_sided, -z_wall / scale - side * raw / scale**2, 0.0)
    log_density = xp.where(one_sided, 0.5 * (raw**2 - z**2) + xp.log(slope_h), 0.0)
    dld_draw = xp.where(
        one_sided, raw - z * dz_draw - logistic_neg * (1.0 - logistic_neg) / slope_h, 0.0)
    dld_dscale = xp.where(one_sided, -z * dz_dscale - 1.0 / (scale**2 * slope_h), 0.0)
    return z, log_density, dz_draw, dld_draw, dz_dscale, dld_dscale


def _wall_map_numpy(raw, location, scale, slope, reference, side):
    u = np.exp(-np.abs(raw))
    softplus_neg = np.maximum(-raw, 0.0) + np.log(1.0 + u)
    logistic_neg = np.where(raw >= 0.0, u / (1.0 + u), 1.0 / (1.0 + u))
    return _wall_map_arrays(np, raw, location, scale, slope, reference, side, softplus_neg,
                            logistic_neg)


def _wall_map_loop(raw, location, scale, slope, reference, side):
    """The map for every question, without branches (compiled by Numba for nutpie and
    vectorised: :mod:`models._vector_math`); the one-sided questions' values are selected."""
    M = raw.shape[0]
    mu, sigma = location[()], scale[()]
    z_out, log_density, dz_draw = np.empty(M), np.empty(M), np.empty(M)
    dld_draw, dz_dscale, dld_dscale = np.empty(M), np.empty(M), np.empty(M)
    for m in range(M):
        v, s = raw[m], side[m]
        one_sided = s != 0.0
        u = exp_nonpositive(-abs(v))
        softplus_neg = 0.5 * (abs(v) - v) + log1p_unit(u)
        logistic_neg = (u if v >= 0.0 else 1.0) / (1.0 + u)
        slope_h = logistic_neg + 1.0 / sigma
        z_wall = (-slope[m] * reference[m] - mu) / sigma
        z = z_wall + s * (v / sigma - softplus_neg)
        dz = s * slope_h
        dz_sigma = -z_wall / sigma - s * v / (sigma * sigma)
        ld = 0.5 * (v * v - z * z) + log_positive(slope_h)
        dld = v - z * dz - logistic_neg * (1.0 - logistic_neg) / slope_h
        dld_sigma = -z * dz_sigma - 1.0 / (sigma * sigma * slope_h)
        # selects, not branches: a branch around a call stops the vectorisation
        z_out[m] = z if one_sided else v
        log_density[m] = ld if one_sided else 0.0
        dz_draw[m] = dz if one_sided else 1.0
        dld_draw[m] = dld if one_sided else 0.0
        dz_dscale[m] = dz_sigma if one_sided else 0.0
        dld_dscale[m] = dld_sigma if one_sided else 0.0
    return z_out, log_density, dz_draw, dld_draw, dz_dscale, dld_dscale


def _wall_map_jax(raw, location, scale, slope, reference, side):
    import jax.numpy as jnp
    from jax.nn import sigmoid, softplus

    return _wall_map_arrays(jnp, raw, location, scale, slope, reference, side, softplus(-raw),
                            sigmoid(-raw))


class WallMap(Op):
    """(raw, location, scale, slope, reference, side) -> z, log_density and four partial
    derivatives, each (M,); module docstring.  Only z and log_density are differentiable."""

    __props__ = ()

    def make_node(self, raw, location, scale, slope, reference, side):
        inputs = [pt.as_tensor_variable(v).astype("float64")
                  for v in (raw, location, scale, slope, reference, side)]
        if tuple(v.ndim for v in inputs) != (1, 0, 0, 1, 1, 1):
            raise ValueError("WallMap takes raw, slope, reference, side of shape (M,) and "
                             "scalar location and scale")
        return Apply(self, inputs, [inputs[0].type() for _ in range(_N_OUT)])

    def perform(self, node, inputs, output_storage):
        for storage, value in zip(output_storage, _wall_map_numpy(*inputs), strict=True):
            storage[0] = np.asarray(value, dtype=np.float64)

    def infer_shape(self, node, shapes):
        return [shapes[0]] * _N_OUT

    def pullback(self, inputs, outputs, output_grads):
        raw, location, scale, slope, reference, side = inputs
        z, _, dz_draw, dld_draw, dz_dscale, dld_dscale = outputs
        if any(not isinstance(g.type, DisconnectedType) for g in output_grads[2:]):
            raise NotImplementedError("WallMap's derivative outputs are not differentiable")
        g_z, g_ld = (pt.zeros_like(raw) if isinstance(g.type, DisconnectedType) else g
                     for g in output_grads[:2])
        # mu, a and t enter through z_w only: d/dx (g_z z + g_ld log_density) = (g_z - g_ld z) dz
        through_wall = pt.neq(side, 0) * (g_z - g_ld * z) / scale
        return [g_z * dz_draw + g_ld * dld_draw,
                -through_wall.sum(),
                (g_z * dz_dscale + g_ld * dld_dscale).sum(),
                -through_wall * reference,
                -through_wall * slope,
                pt.zeros_like(side)]


def wall_map(raw, location, scale, slope, reference, side):
    """``(z, log_density)`` of the wall map (module docstring), each (M,)."""
    z, log_density, *_ = WallMap()(raw, location, scale, slope, reference, side)
    return z, log_density


register_cells_backends(WallMap, _wall_map_loop, _wall_map_jax, __file__)
