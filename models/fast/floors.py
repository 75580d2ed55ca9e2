"""The 3PL's floors of :func:`models.transforms.floor_shares` as one PyTensor Op: the
floors, the informed intercepts' shift, the log-Jacobian and their partial derivatives in
one pass over the questions.

Per question, from the free coordinates u and w (:class:`models.transforms.
FloorsAndIntercepts`), with a = logistic(u), b = logistic(w) and, for an informed
(centred) question, beta = u - softplus(w):

    informed:  shift = softplus(w),  c = a b,
               J = log c + log(1 - c) = -softplus(-u) - softplus(-w) + softplus(beta)
                                        - softplus(u)
    other:     shift = 0,            c = b,   J = -softplus(-w) - softplus(w)

(1 - c = logistic(-u) (1 + e^beta): log(1 - c) without 1 - c's cancellation, finite for
any finite u and w), and the partial derivatives

    informed:  dshift/dw = b,  dc/du = c (1 - a),  dc/dw = c (1 - b),
               dJ/du = logistic(-beta) (1 - 2 c),  dJ/dw = (1 - b) - b logistic(beta)
    other:     dshift/dw = 0,  dc/du = 0,  dc/dw = b (1 - b),  dJ/du = 0,  dJ/dw = 1 - 2 b.

Three exponentials and three logarithms per question, where PyTensor's graph of the same
map evaluates softplus, exp, log1mexp and their gradients in separate passes, each a scalar
library call.  The Numba loop computes every question without a branch, with the
functions of :mod:`._vector_math`, so LLVM vectorises it.  Measurements: docs/samplers.md
("The 3PL's floors in one Op").
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType

from ._backends import QuestionMapOp, register_cells_backends
from ._vector_math import exp_nonpositive, log1p_unit

__all__ = ["FloorShares", "floor_shares"]

_N_OUT = 8  # shift, c, J, dshift/dw, dc/du, dc/dw, dJ/du, dJ/dw


def _floor_shares_arrays(u, w, centred, softplus, sigmoid, where):
    """The floors and their derivatives as array code, given softplus, the logistic and
    ``where`` of the array module."""
    a, not_a, b, not_b = sigmoid(u), sigmoid(-u), sigmoid(w), sigmoid(-w)
    beta = u - softplus(w)
    informed = centred > 0
    c = where(informed, a * b, b)
    zeros = 0.0 * u
    return (where(informed, softplus(w), zeros), c,
            where(informed, softplus(beta) - softplus(u) - softplus(-u), -softplus(w))
            - softplus(-w),
            where(informed, b, zeros), where(informed, c * not_a, zeros), c * not_b,
            where(informed, sigmoid(-beta) * (1.0 - 2.0 * c), zeros),
            not_b - b * where(informed, sigmoid(beta), 1.0))


def _floor_shares_numpy(u, w, centred):
    def softplus(x):
        return np.logaddexp(0.0, x)

    def sigmoid(x):
        e = np.exp(-np.abs(x))
        return np.where(x >= 0.0, 1.0, e) / (1.0 + e)

    return _floor_shares_arrays(u, w, centred, softplus, sigmoid, np.where)


def _floor_shares_loop(u, w, centred):
    """The floors for every question, without branches (compiled by Numba for nutpie and
    vectorised: :mod:`._vector_math`).  The eight outputs are the rows of one array: as
    eight arrays, LLVM has to check each pair for overlap, more pairs than it checks, and
    where it compiles the loop on its own (Numba, and a model's graph compiled afresh, not
    loaded from PyTensor's cache) it ran one question at a time: 63 against 17 us for
    759 questions, log-density and gradient of these outputs alone (docs/samplers.md)."""
    M = u.shape[0]
    out = np.empty((_N_OUT, M))
    for m in range(M):
        um, wm, informed = u[m], w[m], centred[m] > 0.0
        # softplus(x), softplus(-x), logistic(x) and logistic(-x) from one e^(-|x|)
        eu, ew = exp_nonpositive(-abs(um)), exp_nonpositive(-abs(wm))
        lu, lw = log1p_unit(eu), log1p_unit(ew)
        ru, rw = 1.0 / (1.0 + eu), 1.0 / (1.0 + ew)
        a, not_a = (1.0 if um >= 0.0 else eu) * ru, (eu if um >= 0.0 else 1.0) * ru
        b, not_b = (1.0 if wm >= 0.0 else ew) * rw, (ew if wm >= 0.0 else 1.0) * rw
        softplus_w = 0.5 * (abs(wm) + wm) + lw
        softplus_neg_w = 0.5 * (abs(wm) - wm) + lw
        beta = um - softplus_w
        eb = exp_nonpositive(-abs(beta))
        rb = 1.0 / (1.0 + eb)
        softplus_beta = 0.5 * (abs(beta) + beta) + log1p_unit(eb)
        s_beta, not_s_beta = (1.0 if beta >= 0.0 else eb) * rb, (eb if beta >= 0.0 else 1.0) * rb
        floor = a * b if informed else b
        # softplus(u) + softplus(-u) = |u| + 2 log1p(e^(-|u|))
        log_c_rest = softplus_beta - abs(um) - 2.0 * lu if informed else -softplus_w
        out[0, m] = softplus_w if informed else 0.0  # shift
        out[1, m] = floor  # c
        out[2, m] = log_c_rest - softplus_neg_w  # J
        out[3, m] = b if informed else 0.0  # dshift/dw
        out[4, m] = floor * not_a if informed else 0.0  # dc/du
        out[5, m] = floor * not_b  # dc/dw
        out[6, m] = not_s_beta * (1.0 - 2.0 * floor) if informed else 0.0  # dJ/du
        out[7, m] = not_b - b * (s_beta if informed else 1.0)  # dJ/dw
    return out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7]


def _floor_shares_jax(u, w, centred):
    import jax.numpy as jnp
    from jax.nn import sigmoid, softplus

    return _floor_shares_arrays(u, w, centred, softplus, sigmoid, jnp.where)


class FloorShares(QuestionMapOp):
    """(u, w, centred) -> shift, c, J and five partial derivatives, each (M,); module
    docstring.  Only shift, c and J are differentiable (in u and w)."""

    n_out = _N_OUT
    usage = "FloorShares takes u, w and centred of shape (M,)"
    map_numpy = staticmethod(_floor_shares_numpy)

    def pullback(self, inputs, outputs, output_grads):
        u, w, centred = inputs
        _, _, _, dshift_dw, dc_du, dc_dw, dj_du, dj_dw = outputs
        if any(not isinstance(g.type, DisconnectedType) for g in output_grads[3:]):
            raise NotImplementedError("FloorShares' derivative outputs are not differentiable")
        g_shift, g_c, g_j = (pt.zeros_like(u) if isinstance(g.type, DisconnectedType) else g
                             for g in output_grads[:3])
        return [g_c * dc_du + g_j * dj_du, g_shift * dshift_dw + g_c * dc_dw + g_j * dj_dw,
                pt.zeros_like(centred)]


def floor_shares(u, w, centred):
    """``(shift, c, log-Jacobian)`` of the 3PL's floors, each (M,):
    :func:`models.transforms.floor_shares` in one Op (module docstring)."""
    shift, c, log_jacobian, *_ = FloorShares()(u, w, centred)
    return shift, c, log_jacobian


register_cells_backends(FloorShares, _floor_shares_loop, _floor_shares_jax, __file__)
