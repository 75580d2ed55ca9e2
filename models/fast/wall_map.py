"""The wall map of :func:`models.transforms.wall_map` as one PyTensor Op: the map, its
log-Jacobian and their partial derivatives in one pass over the questions.

For a free coordinate v, the wall w, the side s (+1 bounded above, -1 below), the
scale sigma and the cap's width D (each per question), with l = logistic(-v),

    x = w + s (v - sigma softplus(-v) - D l),    J = log g,  g = 1 + sigma l + D l (1 - l)
    dx/dv = s g,                                 dJ/dv = -l (1 - l) (sigma + D (1 - 2 l)) / g
    dx/dsigma = -s softplus(-v),                 dJ/dsigma = l / g
    dx/dD = -s l,                                dJ/dD = l (1 - l) / g

and dx/dw = 1.  With u = e^(-|v|), softplus(-v) = max(-v, 0) + log(1 + u) and l = u / (1 +
u) for v >= 0, 1 / (1 + u) below: one exponential and two logarithms per question, where
PyTensor's graph of the same map evaluates softplus, the logistic and log1p in separate
passes and again in the gradient, each a scalar library call.  The Numba loop computes
every question without a branch, with the functions of :mod:`._vector_math`, so LLVM
vectorises it.  Measurements: docs/samplers.md ("The walls' log-Jacobian in the Op").
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType

from ._backends import QuestionMapOp, register_cells_backends
from ._vector_math import exp_nonpositive, log1p_unit, log_positive

__all__ = ["WallMap", "wall_map"]

_N_OUT = 8  # x, J, dx/dv, dJ/dv, dx/dsigma, dJ/dsigma, dx/dD, dJ/dD


def _wall_map_arrays(v, wall, side, scale, width, softplus_neg, logistic_neg, bump, log1p):
    """The map and its derivatives as array code, given softplus(-v), logistic(-v), the
    cap's bump l (1 - l) and log1p computed the array module's way."""
    slope = 1.0 + scale * logistic_neg + width * bump  # dx/dv / side > 0
    return (wall + side * (v - scale * softplus_neg - width * logistic_neg),
            log1p(scale * logistic_neg + width * bump),
            side * slope, -bump * (scale + width * (1.0 - 2.0 * logistic_neg)) / slope,
            -side * softplus_neg, logistic_neg / slope, -side * logistic_neg, bump / slope)


def _wall_map_numpy(v, wall, side, scale, width):
    u = np.exp(-np.abs(v))
    softplus_neg = np.maximum(-v, 0.0) + np.log1p(u)
    logistic_neg = np.where(v >= 0.0, u / (1.0 + u), 1.0 / (1.0 + u))
    bump = u / (1.0 + u) ** 2  # l (1 - l), without 1 - l's cancellation
    return _wall_map_arrays(v, wall, side, scale, width, softplus_neg, logistic_neg, bump,
                            np.log1p)


def _wall_map_loop(v, wall, side, scale, width):
    """The map for every question, without branches (compiled by Numba for nutpie and
    vectorised: :mod:`._vector_math`).  The eight outputs are the rows of one array
    (:func:`models.fast.floors._floor_shares_loop` says why)."""
    M = v.shape[0]
    out = np.empty((_N_OUT, M))
    for m in range(M):
        vm, s, sigma, d = v[m], side[m], scale[m], width[m]
        u = exp_nonpositive(-abs(vm))
        softplus_neg = 0.5 * (abs(vm) - vm) + log1p_unit(u)
        logistic_neg = (u if vm >= 0.0 else 1.0) / (1.0 + u)
        bump = u / ((1.0 + u) * (1.0 + u))
        slope = 1.0 + sigma * logistic_neg + d * bump
        out[0, m] = wall[m] + s * (vm - sigma * softplus_neg - d * logistic_neg)  # x
        out[1, m] = log_positive(slope)  # J
        out[2, m] = s * slope  # dx/dv
        out[3, m] = -bump * (sigma + d * (1.0 - 2.0 * logistic_neg)) / slope  # dJ/dv
        out[4, m] = -s * softplus_neg  # dx/dsigma
        out[5, m] = logistic_neg / slope  # dJ/dsigma
        out[6, m] = -s * logistic_neg  # dx/dD
        out[7, m] = bump / slope  # dJ/dD
    return out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7]


def _wall_map_jax(v, wall, side, scale, width):
    import jax.numpy as jnp
    from jax.nn import sigmoid, softplus

    return _wall_map_arrays(v, wall, side, scale, width, softplus(-v), sigmoid(-v),
                            sigmoid(-v) * sigmoid(v), jnp.log1p)


class WallMap(QuestionMapOp):
    """(v, wall, side, scale, width) -> x, J and six partial derivatives, each (M,);
    module docstring.  Only x and J are differentiable."""

    n_out = _N_OUT
    usage = "WallMap takes v, wall, side, scale and width of shape (M,)"
    map_numpy = staticmethod(_wall_map_numpy)

    def pullback(self, inputs, outputs, output_grads):
        v, wall, side, scale, width = inputs
        _, _, dx_dv, dj_dv, dx_dscale, dj_dscale, dx_dwidth, dj_dwidth = outputs
        if any(not isinstance(g.type, DisconnectedType) for g in output_grads[2:]):
            raise NotImplementedError("WallMap's derivative outputs are not differentiable")
        g_x, g_j = (pt.zeros_like(v) if isinstance(g.type, DisconnectedType) else g
                    for g in output_grads[:2])
        return [g_x * dx_dv + g_j * dj_dv, g_x, pt.zeros_like(side),
                g_x * dx_dscale + g_j * dj_dscale, g_x * dx_dwidth + g_j * dj_dwidth]


def wall_map(v, wall, side, scale, width):
    """``(x, log dx/dv)`` of the wall map, each (M,): :func:`models.transforms.wall_map`
    in one Op (module docstring)."""
    x, log_jacobian, *_ = WallMap()(v, wall, side, scale, width)
    return x, log_jacobian


register_cells_backends(WallMap, _wall_map_loop, _wall_map_jax, __file__)
