"""What every fast kernel shares: the node inputs of a cells Op, the logistic cells' Op
base, their JAX cells, and the registration of an Op's Numba (nutpie) and JAX (NumPyro)
implementations with an on-disk cache key that follows the kernel's source."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

__all__ = ["LogisticCellsOp", "QuestionMapOp", "cells_node_inputs", "logistic_cells_jax",
           "observed_rows", "observed_rows_jax", "observed_rows_numpy", "register_cells_backends",
           "source_version"]


def cells_node_inputs(values, ndims: tuple[int, ...], usage: str):
    """A cells Op's inputs as float64 tensors of the ranks ``ndims`` (else ValueError(usage)),
    and the (L, M) output type of the first, a table of cells."""
    import pytensor.tensor as pt

    inputs = [pt.as_tensor_variable(v).astype("float64") for v in values]
    if tuple(v.ndim for v in inputs) != ndims:
        raise ValueError(usage)
    return inputs, pt.matrix(dtype="float64", shape=inputs[0].type.shape)


class LogisticCellsOp(Op):
    """Count tables and parameters -> (cells, residual), both (L, M): the log-pmf of binomial
    logit cells and its derivative in the logit.  Subclasses set ``cells_numpy``, the NumPy
    implementation, and build the node and the gradient."""

    __props__ = ()
    cells_numpy: Callable

    def perform(self, node, inputs, output_storage):
        for storage, value in zip(output_storage, type(self).cells_numpy(*inputs), strict=True):
            storage[0] = value

    def infer_shape(self, node, shapes):
        return [shapes[0], shapes[0]]


class QuestionMapOp(Op):
    """(M,) inputs -> ``n_out`` (M,) outputs, a map of each question's coordinates with its
    partial derivatives (the wall map, the 3PL's floors).  Subclasses set ``n_out``,
    ``usage`` (the one-line error for inputs of another shape) and ``map_numpy``, the NumPy
    implementation, and build the gradient."""

    __props__ = ()
    n_out: int
    usage: str
    map_numpy: Callable

    def make_node(self, *values):
        import pytensor.tensor as pt

        inputs = [pt.as_tensor_variable(a).astype("float64") for a in values]
        if any(a.ndim != 1 for a in inputs):
            raise ValueError(self.usage)
        return Apply(self, inputs, [inputs[0].type() for _ in range(self.n_out)])

    def perform(self, node, inputs, output_storage):
        for storage, value in zip(output_storage, type(self).map_numpy(*inputs), strict=True):
            storage[0] = np.asarray(value, dtype=np.float64)

    def infer_shape(self, node, shapes):
        return [shapes[0]] * self.n_out


def logistic_cells_jax(k, n, x, log_coef):
    """JAX cells and residual of binomial logit cells at x, with PyTensor's own JAX softplus
    (the same branches), so JAX fits sample the log-density of the graph the cells Ops replace.
    """
    import jax.numpy as jnp
    from jax.nn import sigmoid

    softplus = jnp.where(x < -37.0, jnp.exp(x), jnp.where(
        x < 18.0, jnp.log1p(jnp.exp(x)), jnp.where(x < 33.3, x + jnp.exp(-x), x)))
    return (log_coef + k * x) - n * softplus, k - n * sigmoid(x)


def observed_rows_numpy(starts):
    """Each observed cell's row (C,), from where each row's cells start (L + 1,): a table's
    observed cells listed row by row (:mod:`models.fast.slope_cells`, :mod:`.cell_table`)."""
    return np.repeat(np.arange(len(starts) - 1), np.diff(starts))


def observed_rows(starts):
    """:func:`observed_rows_numpy` as a PyTensor graph."""
    import pytensor.tensor as pt

    return pt.repeat(pt.arange(starts.shape[0] - 1), pt.diff(starts), axis=0)


def observed_rows_jax(starts, count: int):
    """:func:`observed_rows_numpy` in JAX, for ``count`` observed cells (a static length)."""
    import jax.numpy as jnp

    return jnp.repeat(jnp.arange(starts.shape[0] - 1), jnp.diff(starts),
                      total_repeat_length=count)


def register_cells_backends(op_type, loop, jax_cells, module_file: str, *imports: str) -> None:
    """Numba (nutpie) and JAX (NumPyro) implementations of a cells Op with no parameters:
    ``loop`` is the plain-Python cell loop compiled by Numba, ``jax_cells`` the JAX
    function of the same inputs.

    The loop calls the vectorisable functions of :mod:`models._vector_math`, so it is
    compiled with their options (:data:`~models._vector_math.KERNEL_OPTIONS`) instead of
    PyTensor's fast-math defaults, and cached on disk under a key that follows the source
    of ``module_file``, of that module and of the kernel modules in ``imports`` (the files
    of other kernels the loop calls).
    """
    from pytensor.link.jax.dispatch import jax_funcify
    from pytensor.link.numba.dispatch.basic import (
        numba_njit,
        register_funcify_default_op_cache_key,
    )

    from ._vector_math import KERNEL_OPTIONS

    @register_funcify_default_op_cache_key(op_type)
    def numba_cells(op, node=None, **kwargs):
        version = source_version(str(Path(__file__).with_name("_vector_math.py")))
        for source in (module_file, *imports):
            version ^= source_version(source)
        return numba_njit(loop, **KERNEL_OPTIONS), version

    @jax_funcify.register(op_type)
    def jax_cells_of(op, **kwargs):
        return jax_cells


def source_version(module_file: str) -> int:
    """A number that changes with the source of ``module_file``: the version PyTensor adds
    to an Op's on-disk Numba cache key (type and props only), so an edited kernel is
    compiled again instead of loaded from the cache."""
    return int(hashlib.sha256(Path(module_file).read_bytes()).hexdigest()[:12], 16)
