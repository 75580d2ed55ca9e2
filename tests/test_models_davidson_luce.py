"""Bayesian Davidson-Luce: exact normaliser, likelihood vs enumeration, recovery, MAP agreement."""

from __future__ import annotations

import itertools

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from _model_sims import davidson_luce_probabilities, simulate_davidson_luce, zero_sum_normal
from bayesrank.models import davidson_luce as dl
from bayesrank.models.fast.tie_sizes import tie_size_sums
from bayesrank.models.likelihoods import elementary_symmetric
from conftest import numpy_graphs_mode
from pymc.model.transform.conditioning import remove_value_transforms
from scipy import stats
from scipy.special import comb

import bayesrank
from bayesrank import DataError, ResponseData, kendall_tau
from bayesrank.inference.fitting import fit, fit_many

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:arviz")


def esp_by_enumeration(x: np.ndarray, order: int) -> float:
    return sum(np.prod(c) for c in itertools.combinations(x, order)) if order else 1.0


@pytest.mark.parametrize("n, max_order", [(1, 1), (1, 3), (5, 4), (6, 6), (9, 5), (9, 11)])
def test_elementary_symmetric_polynomials_match_enumeration(n, max_order):
    rng = np.random.default_rng(n * 10 + max_order)
    x = rng.exponential(1.0, (3, n)) * (rng.random((3, n)) > 0.2)  # some zeros (non-members)
    got = elementary_symmetric(pt.as_tensor(x), max_order).eval()
    expected = [[esp_by_enumeration(row, r) for r in range(max_order + 1)] for row in x]
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("backend", ["py", "NUMBA", "JAX"])
def test_tie_size_sums_op_matches_enumeration_and_finite_differences(backend, monkeypatch):
    """The fast path's Op (:mod:`models.fast.tie_sizes`) on each backend: s = max theta and
    E[t-1, g] = e_t(exp((theta - s) / t) on S_g) by enumerating the subsets, with sets
    that leave members out; the gradient of sum(W * E) + w s against central differences
    of the enumeration away from ties, and at theta = 0 (every model the maximum, where
    the sampler starts) the gradient of the shift-free s + log(sum_t E[t-1, g]).  NumPy
    runs one set per block here, as it does when the sets hold more than 2^22 values."""
    if backend == "py":
        monkeypatch.setattr("bayesrank.models.fast.tie_sizes._BLOCK_VALUES", 1)
    rng = np.random.default_rng(7)
    L, D = 7, 6
    sets = np.array([np.ones(L), rng.random(L) < 0.6, np.eye(L)[2] + np.eye(L)[5]], dtype=float)
    weights, shift_weight = rng.normal(size=(D, sets.shape[0])), 0.7

    def enumerated(v):
        return np.array([[esp_by_enumeration(np.exp((v[s > 0] - v.max()) / t), t)
                          for s in sets] for t in range(1, D + 1)])

    def weighted(v):
        return np.sum(weights * enumerated(v)) + shift_weight * v.max()

    def shift_free(v):
        return np.sum(np.log(enumerated(v).sum(axis=0))) + sets.shape[0] * v.max()

    def central(objective, v, step=1e-6):
        return [(objective(v + step * e) - objective(v - step * e)) / (2 * step)
                for e in np.eye(L)]

    free = pt.vector("theta", shape=(L,))
    shift, sums = tie_size_sums(free, sets, D)
    targets = (pt.sum(weights * sums) + shift_weight * shift,
               pt.sum(pt.log(sums.sum(axis=0))) + sets.shape[0] * shift)
    mode = pytensor.compile.mode.Mode(linker="py") if backend == "py" else backend
    fn = pytensor.function([free], [sums, shift, *(pytensor.grad(t, free) for t in targets)],
                           mode=mode)
    theta = rng.normal(0.0, 1.5, L)
    got, got_shift, grad, _ = fn(theta)
    np.testing.assert_allclose(got, enumerated(theta), rtol=1e-12)
    assert got_shift == theta.max()
    np.testing.assert_allclose(grad, central(weighted, theta), rtol=1e-7, atol=1e-9)
    tied = np.zeros(L)
    got, _, _, grad = fn(tied)
    np.testing.assert_allclose(got, enumerated(tied), rtol=1e-12)
    np.testing.assert_allclose(grad, central(shift_free, tied), rtol=1e-7, atol=1e-9)


def test_compiled_gradient_runs_the_tie_size_kernel_once():
    """PyMC builds log Z, the tie coordinates and their Jacobian from copies of one graph;
    compiled, the copies share one forward pass and, by the linearity rewrite
    (:func:`models.fast.tie_sizes.one_tie_size_gradient`), one gradient pass."""
    from bayesrank.models.fast.tie_sizes import TieSizeSums, TieSizeSumsGrad

    rng = np.random.default_rng(0)
    model = dl.build((rng.random((9, 60, 2)) < 0.5).astype(int))
    logp = model.logp()
    grads = pytensor.grad(logp, model.value_vars)
    fn = pytensor.function(model.value_vars, [logp, *grads],
                           mode=pytensor.compile.mode.Mode(linker="py", optimizer="fast_run"))
    kernels = sorted(type(node.op).__name__ for node in fn.maker.fgraph.apply_nodes
                     if isinstance(node.op, TieSizeSums | TieSizeSumsGrad))
    assert kernels == ["TieSizeSums", "TieSizeSumsGrad"]
    # a sum of one term twice that is no such gradient is left alone (it once raised)
    x = pt.vector("x")
    with pytensor.config.change_flags(on_opt_error="raise"):
        twice = pytensor.function([x], pt.expand_dims(x, 0) + pt.expand_dims(x, 0),
                                  mode=pytensor.compile.mode.Mode(linker="py",
                                                                  optimizer="fast_run"))
    np.testing.assert_array_equal(twice(np.array([1.0, 2.0])), [[2.0, 4.0]])


def values(model, theta, eta) -> dict:
    """Free-variable values of ``model`` without value transforms: eta is declared with its
    own prior (:class:`models.transforms.TieSizes` only changes the sampled coordinates)."""
    return {"theta": np.asarray(theta, dtype=float), "eta": np.asarray(eta, dtype=float)}


def test_tie_coordinates_are_the_winner_size_log_odds_and_keep_the_prior(numpy_graphs):
    """omega_t = log P(|U| = t | S) / P(|U| = 1 | S), by enumerating the subsets of S,
    and the model's density in (theta, omega) is the prior N(0, 1) x N(0, 3) on
    (theta, eta) plus the likelihood (the map is a translation for fixed theta)."""
    rng = np.random.default_rng(3)
    L = 5
    R = (rng.random((L, 9, 3)) < rng.random((L, 1, 1))).astype(int)
    model = remove_value_transforms(dl.build(ResponseData(R)))
    theta = zero_sum_normal(rng, 1.0, L)
    eta = rng.normal(0.0, 1.0, L - 2)
    log_delta = np.concatenate([[0.0], np.log(L) - np.log(comb(L, np.arange(2, L))) + eta])
    size_weight = [np.exp(log_delta[t - 1]) * sum(np.exp(theta[list(T)].mean())
                                                  for T in itertools.combinations(range(L), t))
                   for t in range(1, L)]
    point = values(model, theta, eta)
    omega = model.compile_fn(model["tie_size_log_odds"], inputs=[model["theta"], model["eta"]],
                             point_fn=False)(theta, eta)
    np.testing.assert_allclose(omega,
                               np.log(size_weight[1:]) - np.log(size_weight[0]), rtol=1e-10)
    joint = model.compile_logp(sum=True)(point)
    likelihood = model.compile_logp(vars=[model["events"]], sum=True)(point)
    theta_prior = pm.logp(pm.ZeroSumNormal.dist(sigma=1.0, shape=L), theta).eval()
    prior = stats.norm(0, 3).logpdf(eta).sum() + theta_prior
    assert joint - likelihood == pytest.approx(prior, rel=1e-10)


def test_tie_orders_no_event_has_are_measured_from_their_wall(numpy_graphs):
    """Winner sets of 3 of 6 models never occur: that order is bounded by the data from
    above only, and its free coordinate v is mapped (``_size_log_odds``) to omega = w + v -
    3 softplus(-v) with w = -log n_1: increasing, slope 1 past the wall and 1 + 3 on the
    open side.  The density in (theta, v) is the prior on (theta, eta), the likelihood,
    log d omega / dv (here by finite differences) and the seen orders' constant log(1 +
    sum k) (the next test), so the posterior is unchanged."""
    rng = np.random.default_rng(5)
    L, M, N = 6, 30, 2
    R = np.zeros((L, M, N), dtype=int)
    for m, n in itertools.product(range(M), range(N)):
        R[rng.choice(L, rng.choice([1, 2, 4, 5]), replace=False), m, n] = 1
    built = dl.build(ResponseData(R))
    model = remove_value_transforms(built, [built["theta"]])  # v: eta's sampled coordinate
    plain = remove_value_transforms(built)
    (v_name,) = [v.name for v in model.value_vars if v.name != "theta"]
    assert v_name == "eta_sizeodds__"
    v_var = model.rvs_to_values[model["eta"]]
    omega_of = model.compile_fn(model.replace_rvs_by_values([model["tie_size_log_odds"]])[0],
                                inputs=[model.rvs_to_values[model["theta"]], v_var],
                                point_fn=False)
    eta_of = model.compile_fn(model.replace_rvs_by_values([model["eta"]])[0],
                              inputs=[model.rvs_to_values[model["theta"]], v_var],
                              point_fn=False)
    wall = -np.log((R.sum(axis=0) == 1).sum())
    unseen = 1  # tie_order 2, 3, 4, 5
    theta = zero_sum_normal(rng, 1.0, L)

    def omega(v: float, raw: np.ndarray | None = None) -> np.ndarray:
        raw = np.zeros(L - 2) if raw is None else raw.copy()
        raw[unseen] = v
        return omega_of(theta, raw)

    grid = np.linspace(-20.0, 20.0, 401)
    mapped = np.array([omega(v)[unseen] for v in grid])
    assert np.all(np.diff(mapped) > 0)
    assert mapped[-1] - mapped[-2] == pytest.approx(0.1, rel=1e-6)  # past the wall
    assert mapped[1] - mapped[0] == pytest.approx(0.4, rel=1e-6)  # the open side
    assert omega(0.0)[unseen] == pytest.approx(wall - 3.0 * np.log(2.0))
    # the others: omega = v + k^T v (k 0 at the unseen order)
    k = built["size_coupling"].get_value()
    raw = np.arange(L - 2.0)
    assert k[unseen] == 0 and np.all(np.delete(k, unseen) > 0)
    np.testing.assert_allclose(np.delete(omega(2.5, raw), unseen),
                               np.delete(raw + k @ raw, unseen), rtol=1e-12)

    v = rng.normal(0.0, 1.0, L - 2)
    step = 1e-6
    slope = (omega(v[unseen] + step, v) - omega(v[unseen] - step, v))[unseen] / (2 * step)
    sampled = model.compile_logp(sum=True)({"theta": theta, v_name: v})
    declared = plain.compile_logp(sum=True)(values(plain, theta, eta_of(theta, v)))
    assert sampled - declared == pytest.approx(np.log(slope) + np.log1p(k.sum()), rel=1e-6)


def test_seen_tie_orders_are_sampled_with_the_size_one_noise_factored_out(numpy_graphs):
    """With counts n_t of each winner-set size, the seen orders' coordinates are omega_t =
    v_t + sum_s k_s v_s, k_s = g n_s, g = (sqrt(1 + S / n_1) - 1) / S, so that (I + 1 k^T)
    diag(1 / n) (I + k 1^T) = diag(1 / n) + 11^T / n_1, the covariance of log-odds against
    size 1; the unseen order 3 keeps its wall map.  The density in (theta, v) is the prior
    on (theta, eta), the likelihood, log(1 + sum k) and the wall map's log-derivative.
    """
    from bayesrank.models.transforms import TieSizes

    rng = np.random.default_rng(6)
    L, M, N = 6, 30, 2
    R = np.zeros((L, M, N), dtype=int)
    for m, n in itertools.product(range(M), range(N)):
        R[rng.choice(L, rng.choice([1, 2, 4, 4, 4, 5]), replace=False), m, n] = 1
    built = dl.build(ResponseData(R))
    counts = np.bincount(R.sum(axis=0).ravel(), minlength=L)[1:L]  # sizes 1..5
    assert counts[2] == 0  # size 3 unseen
    total = counts[1:].sum()
    k = counts[1:] * (np.sqrt(1 + total / counts[0]) - 1) / total
    np.testing.assert_allclose(built["size_coupling"].get_value(), k, rtol=1e-12)
    n = counts[[1, 3, 4]]
    cov = np.diag(1 / n) + 1 / counts[0]
    factor = np.eye(3) + np.outer(np.ones(3), k[[0, 2, 3]])
    np.testing.assert_allclose(factor @ np.diag(1 / n) @ factor.T, cov, rtol=1e-12)

    model = remove_value_transforms(built, [built["theta"]])
    plain = remove_value_transforms(built)
    v_var = model.rvs_to_values[model["eta"]]
    inputs = [model.rvs_to_values[model["theta"]], v_var]
    omega_of = model.compile_fn(model.replace_rvs_by_values([model["tie_size_log_odds"]])[0],
                                inputs=inputs, point_fn=False)
    eta_of = model.compile_fn(model.replace_rvs_by_values([model["eta"]])[0], inputs=inputs,
                              point_fn=False)
    theta, v = zero_sum_normal(rng, 1.0, L), rng.normal(0.0, 1.0, L - 2)
    omega = omega_of(theta, v)
    seen = [0, 2, 3]
    np.testing.assert_allclose(omega[seen], v[seen] + k @ v, rtol=1e-12)
    other = v.copy()
    other[seen] += 1.0  # the unseen order depends on its own coordinate only
    assert omega_of(theta, other)[1] == pytest.approx(omega[1], rel=1e-12)
    wall, step = -np.log(counts[0]), 1e-6
    assert omega_of(theta, np.zeros(L - 2))[1] == pytest.approx(wall - 3.0 * np.log(2.0))
    e = step * np.eye(L - 2)[1]
    slope = (omega_of(theta, v + e)[1] - omega_of(theta, v - e)[1]) / (2 * step)
    sampled = model.compile_logp(sum=True)({"theta": theta, v_var.name: v})
    declared = plain.compile_logp(sum=True)(values(plain, theta, eta_of(theta, v)))
    assert sampled - declared == pytest.approx(np.log(slope) + np.log1p(k.sum()), rel=1e-6)
    # the inverse (initial points): back to v
    h, unseen = rng.normal(size=L - 2), np.array([0.0, 1.0, 0.0, 0.0])
    args = (None, None, 0.0, 3.0, h, unseen, wall, k)
    back = TieSizes().forward(TieSizes().backward(pt.as_tensor(v), *args), *args)
    np.testing.assert_allclose(back.eval(), v, rtol=1e-12, atol=1e-14)


def log_likelihood_by_enumeration(data, theta, log_delta, D):
    """sum_e c_e log P(U_e | S_e), Z over all proper subsets T of S with |T| <= D."""
    ev = data.reductions.setwise
    total = 0.0
    for U, V, c in zip(ev.winners, ev.losers, ev.counts, strict=True):
        S = np.flatnonzero(U | V)
        Z = sum(
            np.exp(log_delta[t - 1] + theta[list(T)].mean())
            for t in range(1, min(D, len(S) - 1) + 1)
            for T in itertools.combinations(S, t)
        )
        total += c * (log_delta[U.sum() - 1] + theta[U].mean() - np.log(Z))
    return total


@pytest.mark.parametrize("masked", [False, True])
def test_likelihood_equals_subset_enumeration(masked, numpy_graphs):
    rng = np.random.default_rng(1 + masked)
    L = 5
    R = (rng.random((L, 7, 4)) < rng.random((L, 1, 1))).astype(int)
    mask = None
    if masked:  # several comparison sets, some smaller than D + 1
        mask = rng.random(R.shape) < 0.7
        mask[:, 0, 0] = True
    data = ResponseData(R, mask=mask)
    model = remove_value_transforms(dl.build(data))
    theta = zero_sum_normal(rng, 1.0, L)
    eta = rng.normal(0.0, 1.0, L - 2)
    logp = model.compile_logp(vars=[model["events"]], sum=True)(values(model, theta, eta))
    log_delta = np.concatenate([[0.0], np.log(L) - np.log(comb(L, np.arange(2, L))) + eta])
    assert logp == pytest.approx(log_likelihood_by_enumeration(data, theta, log_delta, L - 1))


def test_complete_data_likelihood_is_the_papers_formula(numpy_graphs):
    """With no missing trial every comparison set is all L models and |U| <= L - 1 = D."""
    rng = np.random.default_rng(0)
    L = 4
    data = ResponseData((rng.random((L, 6, 3)) < 0.5).astype(int))
    model = remove_value_transforms(dl.build(data))
    theta = zero_sum_normal(rng, 1.0, L)
    eta = np.zeros(L - 2)
    logp = model.compile_logp(vars=[model["events"]], sum=True)(values(model, theta, eta))
    log_delta = np.concatenate([[0.0], np.log(L) - np.log(comb(L, np.arange(2, L)))])
    ev = data.reductions.setwise
    paper_Z = sum(  # sum_{t=1}^{min(D, |S|)} with D = L - 1 and S = all models
        np.exp(log_delta[t - 1] + theta[list(T)].mean())
        for t in range(1, L)
        for T in itertools.combinations(range(L), t)
    )
    expected = sum(
        c * (log_delta[U.sum() - 1] + theta[U].mean() - np.log(paper_Z))
        for U, c in zip(ev.winners, ev.counts, strict=True)
    )
    assert logp == pytest.approx(expected)


@pytest.fixture(scope="module")
def simulated():
    rng = np.random.default_rng(21)
    L = 5
    theta = np.array([-1.0, -0.4, 0.1, 0.5, 0.8])
    eta = np.array([0.5, -0.3, 0.8])
    log_delta = np.concatenate([[0.0], np.log(L) - np.log(comb(L, np.arange(2, L))) + eta])
    data = simulate_davidson_luce(rng, theta, log_delta, 3000)
    return data, theta, eta


@pytest.mark.extended("a default Davidson-Luce fit of 3,000 comparisons, 63 s on 2 busy cores; "
                      "its calibration is test_sbc's, its mode "
                      "test_posterior_mode_matches_davidson_luce_map's")
def test_posterior_recovers_strengths_and_tie_prevalences(simulated):
    data, theta, eta = simulated
    post = fit(data, "davidson_luce", random_seed=4, log_likelihood=True)
    assert post.diagnostics["passed"].all() and post.diagnostics.attrs["divergences"] == 0
    draws = np.column_stack([post.theta_draws(), post.idata.posterior["eta"].values.reshape(-1, 3)])
    lo, hi = np.quantile(draws, [0.0005, 0.9995], axis=0)  # 8 parameters: Bonferroni
    truth = np.concatenate([theta - theta.mean(), eta])
    assert np.all((lo <= truth) & (truth <= hi)), (lo, truth, hi)
    assert kendall_tau(post.theta.mean(("chain", "draw")).values, theta) == pytest.approx(1.0)

    loglik = post.idata.log_likelihood["events"]
    assert loglik.dims == ("chain", "draw", "event")
    assert loglik.sizes["event"] == data.reductions.setwise.n_unique
    # per-group log-likelihoods add up to the model's likelihood at that draw
    umodel = remove_value_transforms(post.pymc_model)
    total = umodel.compile_logp(vars=[umodel["events"]], sum=True, mode=numpy_graphs_mode())
    at = {v: post.idata.posterior[v].values[1, 17] for v in ("theta", "eta")}
    assert float(loglik.values[1, 17].sum()) == pytest.approx(total(values(umodel, **at)))


def test_posterior_mode_matches_davidson_luce_map(simulated, numpy_graphs):
    """Same N(0, 1) prior on log-strengths; delta by ML there, a wide N(0, 3) on eta here."""
    data = simulated[0]
    try:
        ranking = bayesrank.rank(data, "davidson_luce_map")
    except bayesrank.UnknownMethodError:
        pytest.skip("davidson_luce_map baseline not registered yet")
    with dl.build(data):
        mode = pm.find_MAP(progressbar=False, maxeval=5000)
    baseline = np.log(ranking.scores) - np.log(ranking.scores).mean()
    np.testing.assert_allclose(mode["theta"], baseline, atol=0.01)


def test_edge_cases_and_errors():
    two = ResponseData(np.array([[[1, 0, 1]], [[0, 1, 0]]]))
    model = dl.build(two)  # L = 2: only single winners, no tie parameters
    assert "eta" not in model.named_vars
    assert np.isfinite(model.compile_logp()(model.initial_point()))
    R = np.array([[[1, 1]], [[1, 0]], [[0, 0]]])
    with pytest.raises(ValueError, match="max_tie_order"):
        dl.build(R, max_tie_order=1)
    with pytest.raises(ValueError, match="no informative"):
        dl.build(np.ones((3, 2, 2), dtype=int))
    with pytest.raises(DataError, match="binary"):
        dl.build(np.random.default_rng(0).integers(0, 3, (3, 2, 2)))
    with pytest.raises(ValueError, match="batch"):
        fit_many([R, R], "davidson_luce", sampler="numpyro")


# -- posterior predictive ------------------------------------------------------------------

def test_winner_set_sampler_matches_enumerated_probabilities():
    """sample_winner_sets draws each proper subset with P(U | S) (chi-square vs enumeration)."""
    rng = np.random.default_rng(5)
    L = 5
    theta = np.array([-1.0, -0.4, 0.1, 0.5, 0.8])
    log_delta = np.concatenate([[0.0], np.log(L) - np.log(comb(L, np.arange(2, L)))])
    log_delta[1:] += np.array([0.5, -0.3, 0.8])
    subsets, probs = davidson_luce_probabilities(theta, log_delta)
    draws = dl.sample_winner_sets(rng, theta, log_delta, np.ones((100_000, L), dtype=bool))
    index = {tuple(U): i for i, U in enumerate(subsets)}
    counts = np.bincount([index[tuple(np.flatnonzero(w))] for w in draws], minlength=len(subsets))
    assert stats.chisquare(counts, probs * len(draws)).pvalue > 1e-3

    # a smaller comparison set {0, 2, 4}: winners stay inside it, never all of it
    sub = np.zeros((20_000, L), dtype=bool)
    sub[:, [0, 2, 4]] = True
    got = dl.sample_winner_sets(rng, theta, log_delta, sub)
    assert not got[:, [1, 3]].any() and np.all((got.sum(1) >= 1) & (got.sum(1) <= 2))
    members = np.array([0, 2, 4])
    small = [np.array(U) for t in (1, 2) for U in itertools.combinations(members, t)]
    logits = np.array([log_delta[len(U) - 1] + theta[U].mean() for U in small])
    expected = np.exp(logits - logits.max())
    index = {tuple(U): i for i, U in enumerate(small)}
    counts = np.bincount([index[tuple(np.flatnonzero(w))] for w in got], minlength=len(small))
    assert stats.chisquare(counts, expected / expected.sum() * len(got)).pvalue > 1e-3


@pytest.mark.extended("a Davidson-Luce fit and its posterior predictive draws, 53 s on 2 busy "
                      "cores; the winner sets' sampler runs in make test in the prior "
                      "predictive check (test_prior_check)")
def test_posterior_predictive_sampling_works_and_matches_observed_totals(simulated):
    """pm.sample_posterior_predictive draws winner sets; their totals cover the observed ones."""
    import nutpie

    data = simulated[0]
    model = dl.build(data)
    idata = nutpie.sample(
        nutpie.compile_pymc_model(model), draws=250, tune=400, chains=2, seed=3,
        progress_bar=False,
    )
    with model:
        pred = pm.sample_posterior_predictive(idata, random_seed=4, progressbar=False)
    events = pred.posterior_predictive["events"]
    ev = data.reductions.setwise
    assert events.dims == ("chain", "draw", "event", "llm")
    assert events.shape == (2, 250, ev.n_unique, data.L)
    winners = events.values.astype(bool)
    present = ev.winners | ev.losers
    assert not (winners & ~present).any()  # winners come from the comparison set
    sizes = winners.sum(-1)
    assert sizes.min() >= 1 and np.all(sizes < present.sum(-1))  # informative events only
    totals = (winners * ev.counts[:, None]).sum(axis=2).reshape(-1, data.L)  # (draws, L)
    observed = (ev.winners * ev.counts[:, None]).sum(axis=0)
    lo, hi = np.quantile(totals, [0.0005, 0.9995], axis=0)
    assert np.all((lo <= observed) & (observed <= hi)), (lo, observed, hi)
    z = (totals.mean(0) - observed) / totals.std(0)
    assert np.abs(z).mean() < 1.5


def test_no_constant_array_keeps_the_compiled_model_out_of_the_disk_cache():
    """Numba does not cache a function holding a constant array above 1 MB (a "dynamic
    global"), and then compiled Davidson-Luce anew on every fit (17 s on 43 x 400 x 10).
    The events enter through ``pm.Data`` and per-event indices instead."""
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import ancestors

    rng = np.random.default_rng(0)
    p = 1 / (1 + np.exp(-(rng.normal(0, 1, 43)[:, None] - rng.normal(0, 2, 400))))
    data = ResponseData((rng.random((43, 400, 10)) < p[..., None]).astype(np.int8))
    model = dl.build(data)
    assert model["event_winners"].get_value().nbytes > 1e6  # the data that would be too large
    logp = model.logp()
    graph = pt.add(logp, *(g.sum() for g in pytensor.grad(logp, model.value_vars)))
    sizes = [np.asarray(c.data).nbytes for c in ancestors([graph]) if isinstance(c, Constant)]
    assert max(sizes) < 1e6


def test_one_graph_serves_data_of_other_events_and_sets(numpy_graphs):
    """The events, their comparison sets and the tie effects' reference set are data of
    the graph, never its constants, and the events' number not its shape: a model built
    from one data set, given another's data (other and more events, other comparison
    sets of the same number), has the density of a fresh build of that one."""
    rng = np.random.default_rng(5)
    first = (rng.random((5, 12, 2)) < np.array([0.2, 0.4, 0.5, 0.6, 0.8])[:, None, None])
    second = (rng.random((5, 30, 3)) < np.array([0.7, 0.3, 0.5, 0.6, 0.4])[:, None, None])
    # one model missing from each trial: two comparison sets in each, not the same ones
    first = ResponseData(first.astype(int), mask=np.broadcast_to(
        np.arange(5)[:, None, None] != np.array([0, 1]), first.shape).copy())
    second = ResponseData(second.astype(int), mask=np.broadcast_to(
        np.arange(5)[:, None, None] != np.arange(3) % 2 * 3, second.shape).copy())
    reused, fresh = dl.build(first), dl.build(second)
    assert fresh["event_winners"].get_value().shape != reused["event_winners"].get_value().shape
    sets = [m["comparison_sets"].get_value() for m in (reused, fresh)]
    assert sets[0].shape == sets[1].shape == (2, 5) and not np.array_equal(*sets)
    start = fresh.initial_point()
    point = {k: v + 0.3 * rng.standard_normal(np.shape(v)) for k, v in start.items()}
    with reused:
        pm.set_data({v.name: v.get_value() for v in fresh.data_vars},
                    coords={"event": fresh.coords["event"]})
    assert reused.compile_logp()(point) == pytest.approx(fresh.compile_logp()(point), rel=1e-12)


@pytest.mark.extended("three Davidson-Luce compilations for nutpie, 70-80 s in make test on a "
                      "cold cache; the reused graph's density with other events and sets is "
                      "test_one_graph_serves_data_of_other_events_and_sets', the reused draws' "
                      "equality test_function_store's")
@pytest.mark.parametrize("other", ["flipped", "fewer events"])
def test_a_second_fit_reuses_the_compiled_model(simulated, monkeypatch, tmp_path, other):
    """Davidson-Luce fits of the same L, D and number of comparison sets reuse one
    compiled Numba model, whatever their events (data along ``DATA_ONLY_DIMS``): here
    the same data with the models' order reversed, or its first 20 question-trials
    (12 distinct events instead of 30).  The reused model's draws are those of a fresh
    compile without the function store."""
    from bayesrank.inference import cache

    monkeypatch.setenv("BAYESRANK_NUTPIE_BACKEND", "numba")  # short runs would take JAX
    monkeypatch.setenv("BAYESRANK_FUNCTION_CACHE_DIR", str(tmp_path))
    data = simulated[0]
    if other == "flipped":
        second = ResponseData(data.R[::-1].copy())
    else:
        second = ResponseData(data.R[:, :20].copy())
    options = dict(draws=200, tune=200, chains=2, random_seed=1, progressbar=False,
                   log_likelihood=False)
    cache.clear_cache()
    first = fit(data, "davidson_luce", **options)
    kept = [key for key in cache._CACHE if "davidson_luce" in repr(key)]
    assert kept  # the compiled model, kept for reuse
    reused = fit(second, "davidson_luce", **options)
    if other != "flipped":
        assert reused.pymc_model["event_weights"].get_value().shape != first.pymc_model[
            "event_weights"].get_value().shape
    assert {key for key in cache._CACHE if "davidson_luce" in repr(key)} == set(kept)
    cache.clear_cache()
    monkeypatch.setenv("BAYESRANK_FUNCTION_CACHE", "0")
    fresh = fit(second, "davidson_luce", **options)
    np.testing.assert_array_equal(reused.theta.values, fresh.theta.values)
