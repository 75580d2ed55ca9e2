"""Shared pieces of the tests of the models' cells Ops (Rasch, 2PL): data, modes, checks."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode
from scipy import special, stats

MODES = {"numba": "NUMBA", "jax": "JAX", "numpy": Mode(linker="py", optimizer="fast_run")}


def binomial_cells_data(rng, L=5, M=9, n=7):
    """Counts k (L, M), trials n and log C(n, k)."""
    k = rng.integers(0, n + 1, (L, M)).astype(float)
    trials = np.full((L, M), float(n))
    return k, trials, special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def cells_and_gradient(cells_of, names, mode: str):
    """``cells_of(*vectors)`` and the gradient of its sum in each vector, compiled on ``mode``."""
    if mode == "jax":
        pytest.importorskip("jax")
    vectors = [pt.vector(name) for name in names]
    cells = cells_of(*vectors)
    return pytensor.function(vectors, [cells, *pytensor.grad(cells.sum(), vectors)],
                             mode=MODES[mode])


def stable_cells(k, n, x, log_coef):
    """log C(n, k) + k x - n log(1 + e^x) and its derivative in x, stable at any x."""
    return log_coef + k * x - n * np.logaddexp(0.0, x), k - n * special.expit(x)


def assert_cells_match_scipy(cells, k, n, x) -> None:
    """Where |x| < 30, the cells are scipy's binomial log-pmf at expit(x)."""
    moderate = np.abs(x) < 30
    np.testing.assert_allclose(cells[moderate], stats.binom.logpmf(k, n, special.expit(x))[
        moderate], rtol=1e-10, atol=1e-12)


def count_ops(model, op_type) -> int:
    """How many nodes of ``op_type`` the model's log-density graph has."""
    return [type(node.op) for node in pytensor.graph.traversal.applys_between(
        model.value_vars, [model.logp()])].count(op_type)


def assert_same_density(model, previous, rng, sd: float, points: int = 5) -> None:
    """Log-density and gradient of two builds of one model agree at random points.

    Run on the Ops' NumPy code after PyTensor's rewrites (``conftest.numpy_graphs_mode``), which
    the kernels' own tests hold equal to their Numba and JAX code: Numba's JIT of a whole
    model graph costs 20-45 s each on a cold cache (four per call here).
    """
    from conftest import numpy_graphs_mode

    fast = {"mode": numpy_graphs_mode()}
    logp, dlogp = model.compile_logp(**fast), model.compile_dlogp(**fast)
    logp_0, dlogp_0 = previous.compile_logp(**fast), previous.compile_dlogp(**fast)
    start = model.initial_point()
    for _ in range(points):
        point = {name: rng.normal(0, sd, np.shape(v)) for name, v in start.items()}
        assert logp(point) == pytest.approx(logp_0(point), rel=1e-12)
        np.testing.assert_allclose(dlogp(point), dlogp_0(point), rtol=1e-10, atol=1e-10)
