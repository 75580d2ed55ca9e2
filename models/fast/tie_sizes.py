"""The Davidson-Luce normaliser's sums over winner sets of each size, as one PyTensor Op.

For log-strengths theta (L,), their maximum s, comparison sets S_g (rows of ``sets``,
0/1) and orders t = 1..D,

    E[t, g]               = e_t(x^(t) on S_g),    x^(t)_i = exp((theta_i - s) / t)
    d E[t, g] / d theta_i = [i in S_g] e_{t-1}(x^(t) on S_g without i) x^(t)_i / t
                            - [i = i*] E[t, g]      (through s = theta_{i*}, i* the first maximum)

where e_t is the t-th elementary symmetric polynomial (:func:`models.davidson_luce`'s
module docstring).  The forward pass is the recurrence e_r <- e_r + x_i e_{r-1} over the
members, up to order t for row t: sum_t t |S_g| ~ L D^2 / 2 products per set.  The
gradient is its adjoint: the prefix polynomials of the forward pass are kept, and the
suffix polynomials e_{t-r}(x_{i+1}, ...) are streamed backwards, so e_{t-1}(x without i) =
sum_a prefix_i[a] suffix_{i+1}[t-1-a] is a sum of non-negative products and nothing
cancels.

PyTensor's graph of the same sums (:func:`models.likelihoods.elementary_symmetric`, the
``fast=False`` path) multiplies the polynomials of all D orders at full degree D in a
binary tree with dense 0/1 convolution matrices, ~D^3 products per level: at 100 models
its log-density and gradient took 13-26 ms, most of a Davidson-Luce gradient at 100 x
14,000, against 1.6 ms for this kernel (docs/scale.md, "Davidson-Luce at 100 models").
NumPy ``perform``, Numba (nutpie) and JAX (NumPyro: the same recurrence as a scan, which
JAX differentiates).
"""

from __future__ import annotations

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from numba import njit
from pytensor.gradient import DisconnectedType, grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.rewriting.basic import register_canonicalize

from bayesrank.baselines.luce import elementary_symmetric

from ._vector_math import KERNEL_OPTIONS

__all__ = ["TieSizeSums", "TieSizeSumsGrad", "one_tie_size_gradient", "tie_size_sums"]

_USAGE = "tie-size sums take log-strengths (L,) and comparison sets (G, L)"
_BLOCK_VALUES = 1 << 22  # NumPy: the polynomials held at once, per block of sets


def _inputs(theta, sets):
    theta, sets = (pt.as_tensor_variable(v).astype("float64") for v in (theta, sets))
    if (theta.ndim, sets.ndim) != (1, 2):
        raise ValueError(_USAGE)
    return theta, sets


class TieSizeSums(Op):
    """(theta, sets) -> (E, s): s = max theta and E (D, G), E[t-1, g] = e_t(exp((theta -
    s) / t) on S_g), t = 1..``max_order``.

    The shift is an output, so that its derivative and E's are taken at the same maximum
    (the first, where several models share it): their sum is the derivative of anything
    that does not depend on the shift, such as s + log sum_t delta_t E[t-1, g].
    """

    __props__ = ("max_order",)

    def __init__(self, max_order: int):
        self.max_order = int(max_order)

    def make_node(self, theta, sets):
        theta, sets = _inputs(theta, sets)
        sums = pt.matrix(dtype="float64", shape=(self.max_order, sets.type.shape[0]))
        return Apply(self, [theta, sets], [sums, pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        sums, shift = _sums_numpy(*inputs, self.max_order)
        output_storage[0][0], output_storage[1][0] = sums, np.asarray(shift)

    def infer_shape(self, node, shapes):
        return [(self.max_order, shapes[1][0]), ()]

    def pullback(self, inputs, outputs, output_grads):
        theta, sets = inputs
        weights, shift_weight = (
            pt.zeros_like(out) if isinstance(g.type, DisconnectedType) else g
            for out, g in zip(outputs, output_grads, strict=True))
        d_theta = TieSizeSumsGrad(self.max_order)(theta, sets, outputs[0], weights,
                                                  shift_weight)
        return [d_theta, grad_undefined(self, 1, sets)]


class TieSizeSumsGrad(Op):
    """(theta, sets, E, W, w) -> sum_{t, g} W[t-1, g] dE[t-1, g] / d theta + w ds / d theta,
    (L,): the gradient of :class:`TieSizeSums` against output weights (W, w), linear in
    them (:func:`one_tie_size_gradient`); no second derivatives."""

    __props__ = ("max_order",)

    def __init__(self, max_order: int):
        self.max_order = int(max_order)

    def make_node(self, theta, sets, sums, weights, shift_weight):
        theta, sets = _inputs(theta, sets)
        rest = [pt.as_tensor_variable(v).astype("float64")
                for v in (sums, weights, shift_weight)]
        return Apply(self, [theta, sets, *rest], [theta.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = _gradient_numpy(*inputs, self.max_order)

    def infer_shape(self, node, shapes):
        return [shapes[0]]

    def pullback(self, inputs, outputs, output_grads):
        raise NotImplementedError("TieSizeSums' gradient has no gradient (no second "
                                  "derivatives)")


def tie_size_sums(theta, sets, max_order: int):
    """(s, E): s = max theta, E[t-1, g] = e_t(exp((theta_i - s) / t), i in S_g), t =
    1..max_order: (max_order, G)."""
    sums, shift = TieSizeSums(max_order)(theta, sets)
    return shift, sums


@register_canonicalize
@node_rewriter([Elemwise])
def one_tie_size_gradient(fgraph, node):
    """G(W_1, w_1) + G(W_2, w_2) + ... -> G(W_1 + W_2 + ..., w_1 + w_2 + ...) for the
    gradients G of one :class:`TieSizeSums` node, which are linear in the weights.

    PyMC builds each term of the log-density from its own copy of the graph (the events'
    log Z, the tie effects' coordinates and their Jacobian all read the sums), so the
    gradient holds one pass of the kernel per copy although the copies merge into one
    forward pass: three passes for one on the Davidson-Luce model.
    """
    if not isinstance(node.op.scalar_op, ps.Add):
        return None
    groups: dict = {}
    for position, term in enumerate(node.inputs):  # any other term stays as it is
        owner = term.owner
        key = (owner.op, *owner.inputs[:3]) if owner is not None and isinstance(
            owner.op, TieSizeSumsGrad) else position
        groups.setdefault(key, []).append(term)
    if len(groups) == len(node.inputs):
        return None
    terms = [terms[0] if len(terms) == 1 else terms[0].owner.op(
        *terms[0].owner.inputs[:3], pt.add(*(t.owner.inputs[3] for t in terms)),
        pt.add(*(t.owner.inputs[4] for t in terms))) for terms in groups.values()]
    merged = terms[0] if len(terms) == 1 else pt.add(*terms)
    return [pt.specify_shape(merged, node.outputs[0].type.shape).astype(node.outputs[0].dtype)]


# -- NumPy: the recurrence vectorised over orders and sets -------------------------------------
def _powers(u, sets, max_order):
    """x[t-1, g, i] = [i in S_g] exp(u_i / t), (D, G, L)."""
    order = np.arange(1, max_order + 1, dtype=float)
    return sets[None] * np.exp(u[None, None, :] / order[:, None, None])


def _prefixes(x, max_order):
    """P[i, t-1, g, r] = e_r(x^(t)_0..x^(t)_{i-1}), r = 0..D, i = 0..L."""
    L = x.shape[-1]
    out = np.zeros((L + 1, *x.shape[:-1], max_order + 1))
    out[0, ..., 0] = 1.0
    for i in range(L):
        out[i + 1] = out[i]
        out[i + 1, ..., 1:] += x[..., i, None] * out[i, ..., :-1]
    return out


def _set_blocks(n_sets, values_per_set):
    """Slices of the sets with at most :data:`_BLOCK_VALUES` polynomial values each."""
    rows = max(1, _BLOCK_VALUES // max(values_per_set, 1))
    return [slice(start, start + rows) for start in range(0, n_sets, rows)]


def _sums_numpy(theta, sets, max_order):
    shift = theta.max()
    out = np.empty((max_order, sets.shape[0]))
    for block in _set_blocks(sets.shape[0], max_order * (max_order + 1)):
        e = elementary_symmetric(_powers(theta - shift, sets[block], max_order), max_order)
        out[:, block] = np.diagonal(e[..., 1:], axis1=0, axis2=2).T  # e_t of row t
    return out, shift


def _gradient_numpy(theta, sets, sums, weights, shift_weight, max_order):
    D, L = max_order, theta.size
    u = theta - theta.max()
    order = np.arange(1, D + 1)
    out = np.zeros(L)
    for block in _set_blocks(sets.shape[0], (L + 1) * D * (D + 1)):
        x = _powers(u, sets[block], D)
        prefix = _prefixes(x, D)  # (L + 1, D, g, D + 1)
        # suffix[r] = e_r(x_{i+1}, ...); what row t needs: suffix[t - 1 - a] against prefix[a]
        suffix = np.zeros((*x.shape[:-1], D + 1))
        suffix[..., 0] = 1.0
        for i in range(L - 1, -1, -1):
            # e_{t-1}(x without i) = sum_a prefix_i[a] suffix_{i+1}[t-1-a], a = 0..t-1
            without = np.array([(prefix[i, t - 1, :, :t] * suffix[t - 1, :, t - 1::-1]).sum(-1)
                                for t in order])  # (D, g)
            out[i] += np.sum(weights[:, block] * without * x[..., i] / order[:, None])
            suffix[..., 1:] += x[..., i, None] * suffix[..., :-1].copy()
    out[np.argmax(theta)] += shift_weight - np.sum(weights * sums)  # through s = max theta
    return out


# -- Numba: set by set, order by order, without arrays of polynomials --------------------------
@njit(**KERNEL_OPTIONS)
def _members(sets, g):
    return np.flatnonzero(sets[g] != 0.0)


@njit(**KERNEL_OPTIONS)
def _sums_kernel(u, sets, max_order):
    G = sets.shape[0]
    out = np.zeros((max_order, G))
    e = np.empty(max_order + 1)
    for g in range(G):
        members = _members(sets, g)
        for t in range(1, max_order + 1):
            e[:] = 0.0
            e[0] = 1.0
            top = 0
            for i in members:
                x = np.exp(u[i] / t)
                top = min(top + 1, t)
                for r in range(top, 0, -1):
                    e[r] += x * e[r - 1]
            out[t - 1, g] = e[t]
    return out


@njit(**KERNEL_OPTIONS)
def _gradient_kernel(u, sets, weights, max_order):
    G, L = sets.shape
    out = np.zeros(L)
    prefix = np.empty((L + 1, max_order + 1))
    suffix = np.empty(max_order + 1)
    for g in range(G):
        members = _members(sets, g)
        n = members.size
        for t in range(1, max_order + 1):
            w = weights[t - 1, g]
            if w == 0.0 or t > n:
                continue
            prefix[0, :t] = 0.0
            prefix[0, 0] = 1.0
            for k in range(n):  # prefix[k, r] = e_r(x of the first k members), r < t
                x = np.exp(u[members[k]] / t)
                prefix[k + 1, 0] = 1.0
                for r in range(1, t):
                    prefix[k + 1, r] = prefix[k, r] + x * prefix[k, r - 1]
            suffix[:t] = 0.0
            suffix[0] = 1.0
            for k in range(n - 1, -1, -1):  # suffix[r] = e_r(x of the members after k)
                x = np.exp(u[members[k]] / t)
                without = 0.0
                for a in range(t):
                    without += prefix[k, a] * suffix[t - 1 - a]
                out[members[k]] += w * without * x / t
                for r in range(t - 1, 0, -1):
                    suffix[r] += x * suffix[r - 1]
    return out


def _register():
    from pytensor.link.jax.dispatch import jax_funcify
    from pytensor.link.numba.dispatch.basic import (
        numba_njit,
        register_funcify_default_op_cache_key,
    )

    from ._backends import source_version

    @register_funcify_default_op_cache_key(TieSizeSums)
    def numba_sums(op, node=None, **kwargs):
        D = op.max_order

        def sums(theta, sets):
            shift = theta.max()
            return _sums_kernel(theta - shift, sets, D), np.full((), shift)

        return numba_njit(sums), source_version(__file__)

    @register_funcify_default_op_cache_key(TieSizeSumsGrad)
    def numba_gradient(op, node=None, **kwargs):
        D = op.max_order

        def gradient(theta, sets, sums, weights, shift_weight):
            out = _gradient_kernel(theta - theta.max(), sets, weights, D)
            out[np.argmax(theta)] += shift_weight[()] - np.sum(weights * sums)  # via s
            return out

        return numba_njit(gradient), source_version(__file__)

    @jax_funcify.register(TieSizeSums)
    def jax_sums(op, **kwargs):
        return lambda theta, sets: _sums_jax(theta, sets, op.max_order)

    @jax_funcify.register(TieSizeSumsGrad)
    def jax_gradient(op, **kwargs):
        import jax

        def gradient(theta, sets, sums, weights, shift_weight):
            _, pull = jax.vjp(lambda v: _sums_jax(v, sets, op.max_order), theta)
            return pull((weights, shift_weight))[0]

        return gradient


def _sums_jax(theta, sets, max_order):
    """The recurrence over the members as a scan, all orders and sets at once (JAX), and
    the shift: JAX differentiates both."""
    import jax
    import jax.numpy as jnp

    shift = jnp.max(theta)
    u = theta - shift
    order = jnp.arange(1, max_order + 1, dtype=u.dtype)
    x = sets[None] * jnp.exp(u[None, None, :] / order[:, None, None])  # (D, G, L)
    start = jnp.zeros((*x.shape[:-1], max_order + 1), dtype=u.dtype).at[..., 0].set(1.0)

    def step(e, x_i):
        return e.at[..., 1:].add(x_i[..., None] * e[..., :-1]), None

    e, _ = jax.lax.scan(step, start, jnp.moveaxis(x, -1, 0))
    return jnp.diagonal(e[..., 1:], axis1=0, axis2=2).T, shift


_register()
