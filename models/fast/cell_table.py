"""A sparse table's observed cells laid into its (L, M) table, and the sum that skips it.

A likelihood scored over the observed cells of a table with most cells missing
(:data:`models.likelihoods.SPARSE_COVERAGE`; the beta-binomial's) computes one value per
observed cell, listed row by row: row l's cells are (l, columns[c]) for c in
[starts[l], starts[l + 1]).  PyMC's pointwise log-likelihood needs those values as the
(L, M) table of the observed variable, 0 at the missing cells (whose log-pmf is 0);
a fit needs only their sum.  :class:`CellTable` lays them into the table, and the rewrite
:data:`sum_of_cell_table` replaces the table's sum by the values' sum, so a compiled
log-density and gradient never writes or reads an (L, M) table: writing and summing it
would cost a pass over every cell per gradient, which is what sparse coverage avoids.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ._backends import (
    observed_rows,
    observed_rows_jax,
    observed_rows_numpy,
    register_cells_backends,
)
from .slope_cells import broadcast_scalar, register_sum_of_cells

__all__ = ["CellTable", "cell_table"]


class CellTable(Op):
    """(values (C,), starts (L + 1,), columns (C,), like (L, M)) -> the (L, M) table with
    values[c] at (l, columns[c]) and 0 elsewhere (module docstring); ``like`` gives only the
    table's shape."""

    __props__ = ()

    def make_node(self, values, starts, columns, like):
        values = pt.as_tensor_variable(values).astype("float64")
        starts, columns, like = (pt.as_tensor_variable(v) for v in (starts, columns, like))
        if (values.ndim, starts.ndim, columns.ndim, like.ndim) != (1, 1, 1, 2) or not (
                starts.dtype.startswith("int") and columns.dtype.startswith("int")):
            raise ValueError("CellTable takes the observed cells' values and columns (C,), "
                             "where each row starts (L + 1, integers) and a table (L, M)")
        table = pt.matrix(dtype="float64", shape=like.type.shape)
        return Apply(self, [values, starts, columns, like], [table])

    def perform(self, node, inputs, output_storage):
        values, starts, columns, like = inputs
        table = np.zeros(np.shape(like))
        table[observed_rows_numpy(starts), columns] = values
        output_storage[0][0] = table

    def infer_shape(self, node, shapes):
        return [shapes[3]]

    def pullback(self, inputs, outputs, output_grads):
        values, starts, columns, like = inputs
        (g_table,) = output_grads
        weight = broadcast_scalar(g_table)
        if weight is not None:  # the gradient of the table's sum
            g_values = pt.ones_like(values) * weight
        else:
            g_values = g_table[observed_rows(starts), columns]
        return [g_values, grad_undefined(self, 1, starts), grad_undefined(self, 2, columns),
                grad_undefined(self, 3, like)]


def cell_table(values, starts, columns, like):
    """The (L, M) table of the observed cells' ``values`` (:class:`CellTable`)."""
    return CellTable()(values, starts, columns, like)


def _values_sum(op, values, starts, columns, like):
    return values.sum()


#: sum(CellTable(values, ...)) -> sum(values): the sum without the table.
sum_of_cell_table = register_sum_of_cells("sum_of_cell_table", CellTable, _values_sum)


def _table_loop(values, starts, columns, like):
    """The table (compiled by Numba for nutpie)."""
    table = np.zeros(like.shape)
    for i in range(starts.shape[0] - 1):
        for c in range(starts[i], starts[i + 1]):
            table[i, columns[c]] = values[c]
    return table


def _table_jax(values, starts, columns, like):
    import jax.numpy as jnp

    rows = observed_rows_jax(starts, columns.shape[0])
    return jnp.zeros(like.shape, values.dtype).at[rows, columns].set(values)


register_cells_backends(CellTable, _table_loop, _table_jax, __file__)
