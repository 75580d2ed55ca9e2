"""Sparse coverage (issue 47, item 5): the item-response likelihoods (binomial and
beta-binomial) score a table with most cells missing over its observed cells only, with
the log-density, gradient and pointwise log-likelihood of the whole table
(``models.likelihoods.SPARSE_COVERAGE``)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from _cells_ops import MODES, assert_same_density, cells_and_gradient, count_ops
from bayesrank.models import irt
from bayesrank.models.fast.beta_binomial import ObservedBetaBinomialCells, ObservedBetaBinomialTotal
from bayesrank.models.fast.cell_table import CellTable, cell_table
from bayesrank.models.fast.slope_cells import (
    ObservedSlopeCells,
    ObservedSlopeCellsTotal,
    SlopeCells,
    SlopeCellsTotal,
    observed_slope_cells,
    slope_cells,
)
from bayesrank.models.likelihoods import SPARSE_COVERAGE, fast_kernels, log_binomial

from bayesrank import ResponseData, fit
from bayesrank.inference.cache import structure_key


def _sparse_table(rng, L=6, M=40, share=0.15, trials=5):
    """Counts with about ``share`` of the cells observed, one model with none; the dense
    log C(n, k), and the observed cells' log C(n, k), row starts and columns."""
    observed = rng.random((L, M)) < share
    observed[2] = False
    n = np.where(observed, rng.integers(1, trials + 1, (L, M)), 0)
    k = rng.binomial(n, 0.5)
    rows, columns = np.nonzero(n)
    starts = np.concatenate([[0], np.cumsum(np.count_nonzero(n, axis=1))])
    coef = log_binomial(k.astype(float), n.astype(float))
    return k, n, coef, coef[rows, columns], starts, columns


def _points(rng, L, M):
    yield rng.normal(0, 1.5, L), np.exp(rng.normal(0, 0.5, M)), rng.normal(0, 2.5, M)
    # far beyond floating point's e^x on some cells
    yield (np.linspace(-750.0, 750.0, L), np.full(M, 1.3), np.linspace(760.0, -760.0, M))


@pytest.mark.parametrize("mode", list(MODES))
def test_the_observed_cells_are_the_tables_cells_and_gradient(mode):
    """ObservedSlopeCells: the table of cells (0 where nothing was observed) and the
    gradient of any weighted sum equal SlopeCells' on the whole table."""
    rng = np.random.default_rng(0)
    k, n, coef, observed_coef, starts, columns = _sparse_table(rng)
    weight = rng.random(k.shape)
    got_fn = cells_and_gradient(lambda theta, a, beta: weight * observed_slope_cells(
        k, n, theta, a, beta, observed_coef, starts, columns), ("theta", "a", "beta"), mode)
    want_fn = cells_and_gradient(lambda theta, a, beta: weight * slope_cells(
        k, n, theta, a, beta, coef), ("theta", "a", "beta"), mode)
    for theta, a, beta in _points(rng, *k.shape):
        got, want = got_fn(theta, a, beta), want_fn(theta, a, beta)
        assert np.all(got[0][n == 0] == 0.0)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("mode", list(MODES))
def test_the_observed_sum_in_one_pass_equals_the_whole_tables(mode):
    """ObservedSlopeCellsTotal from integer counts, with more observed cells in a row than
    one block holds (several blocks per row), equals SlopeCellsTotal."""
    if mode == "jax":
        pytest.importorskip("jax")
    from bayesrank.models.fast._vector_math import OBSERVED_BLOCK

    rng = np.random.default_rng(1)
    k, n, coef, observed_coef, starts, columns = _sparse_table(
        rng, L=4, M=3 * OBSERVED_BLOCK, share=0.6)
    assert np.diff(starts).max() > OBSERVED_BLOCK
    vectors = [pt.vector(name) for name in ("theta", "a", "beta")]
    counts = (k.astype(np.int32), n.astype(np.int8))
    got_fn = pytensor.function(vectors, ObservedSlopeCellsTotal()(
        *counts, *vectors, observed_coef, starts, columns.astype(np.int32)), mode=MODES[mode])
    want_fn = pytensor.function(vectors, SlopeCellsTotal()(*counts, *vectors, coef),
                                mode=MODES[mode])
    for point in _points(rng, *k.shape):
        total, *got = got_fn(*point)
        want_total, *want = want_fn(*point)
        assert float(total) == pytest.approx(float(want_total), rel=1e-12)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-9)


def test_bad_inputs_get_a_one_line_error():
    k, n, _, observed_coef, starts, columns = _sparse_table(np.random.default_rng(2))
    theta, a, beta = pt.vector("theta"), pt.vector("a"), pt.vector("beta")
    with pytest.raises(ValueError, match="observed slope cells take"):
        ObservedSlopeCells()(k, n, theta, a, beta, observed_coef, starts, columns.astype(float))
    with pytest.raises(ValueError, match="observed slope cells take"):
        ObservedSlopeCellsTotal()(k[0], n, theta, a, beta, observed_coef, starts, columns)


def _masked(rng, missing: float, L=8, M=60):
    R = (rng.random((L, M, 2)) < np.linspace(0.2, 0.8, L)[:, None, None]).astype(int)
    mask = np.broadcast_to(rng.random((L, M, 1)) >= missing, R.shape).copy()
    return ResponseData(R, mask=mask)


@pytest.mark.parametrize("kind", ["rasch", "2pl"])
def test_a_sparse_table_is_scored_over_its_observed_cells(kind, numpy_graphs):
    """With 90% of the cells missing the binomial Rasch and 2PL take the observed cells'
    Op, with the log-density and gradient of PyMC's own Binomial on the whole table; with
    every cell observed they keep the whole table's Op."""
    rng = np.random.default_rng(3)
    sparse = _masked(rng, 0.9)
    assert (sparse.reductions.trials > 0).mean() <= SPARSE_COVERAGE
    model = irt.build(sparse, kind=kind)
    assert count_ops(model, ObservedSlopeCells) == 1 and count_ops(model, SlopeCells) == 0
    assert model["k_log_binomial"].get_value().size == (sparse.reductions.trials > 0).sum()
    with fast_kernels(False):
        plain = irt.build(sparse, kind=kind)
    assert_same_density(model, plain, rng, sd=1.5)
    # the pointwise log-likelihood (log_likelihood, loo) reads the table of cells
    cells = model.compile_fn(model.logp(vars=[model["k"]], sum=False)[0])
    want = plain.compile_fn(plain.logp(vars=[plain["k"]], sum=False)[0])
    point = model.initial_point()
    np.testing.assert_allclose(cells(point), want(point), rtol=1e-12, atol=1e-12)
    full = irt.build(_masked(rng, 0.0), kind=kind)
    assert count_ops(full, ObservedSlopeCells) == 0 and count_ops(full, SlopeCells) == 1


def test_the_number_of_observed_cells_is_data_not_the_graphs_shape(numpy_graphs):
    """Two masks of one shape with different numbers of observed cells build one structure
    (the cells lie along ``observed_cell``, a data-only dim), and the model built from the
    first, given the second's data, has the second's density."""
    rng = np.random.default_rng(4)
    first, second = _masked(rng, 0.9), _masked(rng, 0.85)
    reused, fresh = irt.build(first, kind="2pl"), irt.build(second, kind="2pl")
    sizes = [m["k_columns"].get_value().size for m in (reused, fresh)]
    assert sizes[0] != sizes[1]
    assert structure_key(reused, "2pl") == structure_key(fresh, "2pl")
    point = {k: v + 0.3 * rng.standard_normal(np.shape(v))
             for k, v in fresh.initial_point().items()}
    with reused:
        pm.set_data({v.name: v.get_value() for v in fresh.data_vars})
    assert reused.compile_logp()(point) == pytest.approx(fresh.compile_logp()(point), rel=1e-12)


def test_a_sparse_fit_samples_with_one_pass_over_the_observed_cells():
    """nutpie's compiled log-density and gradient of a sparse Rasch hold one
    ObservedSlopeCellsTotal node and no table of cells, and its default fit converges and
    recovers the order of well-separated models."""
    from bayesrank.inference.backends import model_var_names
    from bayesrank.inference.nutpie_models import _functions

    rng = np.random.default_rng(5)
    L, M = 6, 400
    theta = np.linspace(-2.0, 2.0, L)
    R = (rng.random((L, M, 1)) < 1 / (1 + np.exp(-(theta[:, None, None]
                                                     - rng.normal(0, 1, (1, M, 1)))))).astype(int)
    data = ResponseData(R, mask=rng.random((L, M, 1)) >= 0.8)
    model = irt.build(data, kind="rasch")
    _, _, logp_fn, *_ = _functions(model, model_var_names(model), "NUMBA", join_expanded=True)
    ops = [type(node.op) for node in logp_fn.maker.fgraph.apply_nodes]
    assert ops.count(ObservedSlopeCellsTotal) == 1 and ObservedSlopeCells not in ops
    post = fit(data, "rasch", random_seed=0, progressbar=False)
    assert post.diagnostics["passed"].all() and post.diagnostics.attrs["divergences"] == 0
    means = post.theta.mean(("chain", "draw")).values
    assert list(np.argsort(means)) == list(range(L))


@pytest.mark.parametrize("mode", list(MODES))
def test_the_cell_table_lays_out_the_values_and_its_sum_skips_the_table(mode):
    """CellTable: values at their cells, 0 elsewhere, and the gradient of a weighted sum of
    the table; the sum of the table compiles to the values' sum (no table)."""
    if mode == "jax":
        pytest.importorskip("jax")
    rng = np.random.default_rng(6)
    k, n, _, _, starts, columns = _sparse_table(rng)
    rows = np.repeat(np.arange(k.shape[0]), np.diff(starts))
    values, weight = pt.vector("values"), rng.random(k.shape)
    table = cell_table(values, starts, columns, n)
    fn = pytensor.function([values], [table, pytensor.grad((weight * table).sum(), values),
                                      pytensor.grad(table.sum(), values)], mode=MODES[mode])
    x = rng.normal(size=rows.size)
    got, weighted, plain = fn(x)
    want = np.zeros(k.shape)
    want[rows, columns] = x
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(weighted, weight[rows, columns], rtol=1e-15)
    np.testing.assert_array_equal(plain, np.ones(rows.size))
    total = pytensor.function([values], table.sum(), mode=MODES[mode])
    assert not any(isinstance(node.op, CellTable) for node in total.maker.fgraph.apply_nodes)
    assert float(total(x)) == pytest.approx(x.sum(), rel=1e-14)


@pytest.mark.parametrize(("kind", "likelihood"), [("3pl", "beta_binomial"),
                                                  ("rasch", "beta_binomial")])
def test_a_sparse_beta_binomial_is_the_whole_tables(kind, likelihood, monkeypatch, numpy_graphs):
    """The beta-binomial (the 3PL's default) over a sparse table's observed cells has the
    log-density, gradient and pointwise cells of the same fast kernel over the whole table,
    and the fit's log-density and gradient hold no table of cells."""
    from bayesrank.models import likelihoods

    rng = np.random.default_rng(7)
    sparse = _masked(rng, 0.9)
    model = irt.build(sparse, kind=kind, likelihood=likelihood)
    assert count_ops(model, ObservedBetaBinomialCells) == 1
    monkeypatch.setattr(likelihoods, "SPARSE_COVERAGE", 0.0)
    whole = irt.build(sparse, kind=kind, likelihood=likelihood)
    assert count_ops(whole, ObservedBetaBinomialCells) == 0
    assert_same_density(model, whole, rng, sd=1.0)
    cells = model.compile_fn(model.logp(vars=[model["k"]], sum=False)[0])
    want = whole.compile_fn(whole.logp(vars=[whole["k"]], sum=False)[0])
    point = model.initial_point()
    np.testing.assert_allclose(cells(point), want(point), rtol=1e-12, atol=1e-12)
    logp = model.logp()
    fn = model.compile_fn([logp, *pytensor.grad(logp, model.value_vars)])
    ops = [type(node.op) for node in fn.f.maker.fgraph.apply_nodes]
    assert ObservedBetaBinomialCells not in ops and ops.count(ObservedBetaBinomialTotal) == 1


@pytest.mark.parametrize("likelihood", ["binomial", "beta_binomial"])
def test_replicated_missing_cells_are_zero_without_variates(likelihood):
    """The likelihoods' random draws give a cell with no trial 0 and draw only the observed
    cells, whose replicates keep their distribution (mean n p, 5 standard errors); one-trial
    cells (a uniform against p) too."""
    from bayesrank.models._common import logistic_binomial_draws
    from bayesrank.models.likelihoods import _beta_binomial_random
    from scipy.special import expit

    rng = np.random.default_rng(20)
    n = rng.integers(1, 6, (5, 30)) * (rng.random((5, 30)) < 0.3)
    eta = rng.normal(0, 1.5, (5, 30))
    if likelihood == "binomial":
        def draws(n, generator, size=None):
            return logistic_binomial_draws(generator, n, eta, size)
    else:
        def draws(n, generator, size=None):
            return _beta_binomial_random(n, eta, np.zeros(30), np.log(0.2), rng=generator,
                                         size=size)
    k = draws(n, np.random.default_rng(21), size=(4000, 5, 30))
    assert (k[:, n == 0] == 0).all()
    mean, sd = n * expit(eta), n / 2  # a bound on the sd of any count in [0, n]
    assert (np.abs(k.mean(0) - mean) <= 5 * sd / np.sqrt(4000) + 1e-12).all()
    # the observed cells' variates only: as many as a table of those cells alone draws
    answered = np.random.default_rng(23)
    draws(n, answered)
    alone = np.random.default_rng(23)
    if likelihood == "binomial":
        alone.binomial(n[n > 0], expit(eta[n > 0]))
    else:
        _beta_binomial_random(n[n > 0], eta[n > 0], np.zeros(int((n > 0).sum())), np.log(0.2),
                              rng=alone)
    assert answered.random() == alone.random()
    one = np.minimum(n, 1)
    k = draws(one, np.random.default_rng(24), size=(4000, 5, 30))
    assert set(np.unique(k)) <= {0, 1} and (k[:, one == 0] == 0).all()
    assert (np.abs(k.mean(0) - one * expit(eta)) <= 5 * 0.5 / np.sqrt(4000)).all()
