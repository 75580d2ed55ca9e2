"""Small helpers shared by the model builders (coords, data checks)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from pytensor.graph.op import Op

from bayesrank.data import ResponseData, as_response_data
from bayesrank.errors import DataError

__all__ = ["coords_of", "response_data", "check_option", "scoring_model"]


def scoring_model(model):
    """The model to score observations with: pointwise log-likelihoods, predictive draws.

    ``model`` itself, unless its sampled density integrates parameters out and
    leaves their observations out of the likelihood (the Rasch's one-sided
    difficulties, :func:`models.one_sided.collapsed_difficulties`): then a twin with
    the same free variables and deterministics whose likelihood scores every
    observation at the parameters' reported draws.
    """
    twin = getattr(model, "scoring_twin", None)
    return model if twin is None else twin()


def logistic_binomial_draws(rng, n, eta, size=None):
    """Binomial(n, logistic(eta)) draws: the random method of the binomial logit cells."""
    return rng.binomial(n, 1.0 / (1.0 + np.exp(-eta)), size=size)


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


def logistic_cells_jax(k, n, x, log_coef):
    """JAX cells and residual of binomial logit cells at x, with PyTensor's own JAX softplus
    (the same branches), so JAX fits sample the log-density of the graph the cells Ops replace.
    """
    import jax.numpy as jnp
    from jax.nn import sigmoid

    softplus = jnp.where(x < -37.0, jnp.exp(x), jnp.where(
        x < 18.0, jnp.log1p(jnp.exp(x)), jnp.where(x < 33.3, x + jnp.exp(-x), x)))
    return (log_coef + k * x) - n * softplus, k - n * sigmoid(x)


def register_cells_backends(op_type, loop, jax_cells, module_file: str) -> None:
    """Numba (nutpie) and JAX (NumPyro) implementations of a cells Op with no parameters:
    ``loop`` is the plain-Python cell loop compiled by Numba, ``jax_cells`` the JAX
    function of the same inputs.

    The loop calls the vectorisable functions of :mod:`models._vector_math`, so it is
    compiled with their options (:data:`~models._vector_math.KERNEL_OPTIONS`) instead of
    PyTensor's fast-math defaults, and cached on disk under a key that follows the source
    of ``module_file`` and of that module.
    """
    from pytensor.link.jax.dispatch import jax_funcify
    from pytensor.link.numba.dispatch.basic import (
        numba_njit,
        register_funcify_default_op_cache_key,
    )

    from ._vector_math import KERNEL_OPTIONS

    @register_funcify_default_op_cache_key(op_type)
    def numba_cells(op, node=None, **kwargs):
        version = source_version(module_file) ^ source_version(
            str(Path(__file__).with_name("_vector_math.py")))
        return numba_njit(loop, **KERNEL_OPTIONS), version

    @jax_funcify.register(op_type)
    def jax_cells_of(op, **kwargs):
        return jax_cells


def source_version(module_file: str) -> int:
    """A number that changes with the source of ``module_file``: the version PyTensor adds
    to an Op's on-disk Numba cache key (type and props only), so an edited kernel is
    compiled again instead of loaded from the cache."""
    return int(hashlib.sha256(Path(module_file).read_bytes()).hexdigest()[:12], 16)


def response_data(data: Any) -> ResponseData:
    """``data`` as a validated :class:`~bayesrank.ResponseData` (arrays are wrapped)."""
    return as_response_data(data)


def coords_of(data: ResponseData, **extra: Any) -> dict[str, list]:
    """Named coordinates ``llm``, ``question`` and ``category`` of ``data`` plus ``extra``."""
    coords: dict[str, list] = {
        "llm": list(data.models),
        "question": list(data.questions),
        "category": list(range(data.n_categories)),
    }
    coords.update({k: list(v) for k, v in extra.items()})
    return coords


def check_option(name: str, value: Any, allowed: tuple) -> None:
    """Raise a ValueError naming the allowed values when ``value`` is not one of them."""
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def positive_scale(name: str, value: Any) -> float:
    """A finite positive float, or a clear ValueError."""
    x = float(value)
    if not np.isfinite(x) or x <= 0:
        raise ValueError(f"{name} must be a finite positive number, got {value!r}")
    return x


def binary_only(data: ResponseData, model: str) -> None:
    """Binary-outcome models refuse categorical data with a message naming the way out."""
    if not data.is_binary:
        raise DataError(
            f"model {model!r} needs binary outcomes but the data have {data.n_categories} "
            "categories; reduce them first (e.g. R == C) or fit the 'bayes' model, which "
            "handles categories"
        )
