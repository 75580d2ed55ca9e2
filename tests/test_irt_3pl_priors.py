"""The 3PL's priors (issue 9, third round): the uninformed questions' intercepts have their
own scale (the 2PL's too, since the sixth round, with the walls); checked with the floors
and the likelihood against scipy at random points.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from bayesrank.models import irt
from scipy import stats
from scipy.special import expit

import bayesrank

# densities compared, nothing sampled: the graphs on their NumPy code (conftest)
pytestmark = pytest.mark.usefixtures("numpy_graphs")


@pytest.fixture(scope="module")
def binary():
    rng = np.random.default_rng(0)
    R = (rng.uniform(size=(5, 8, 3)) < 0.5).astype(np.int8)
    R[:, 0], R[:, 1] = 0, 1  # never and always solved
    return R


def random_point(model, seed=1):
    rng = np.random.default_rng(seed)
    start = model.initial_point()
    return {k: v + 0.5 * rng.standard_normal(np.shape(v)) for k, v in start.items()}


def intercept_name(model) -> str:
    """The intercepts' sampled coordinate: the 2PL's v (M,), the 3PL's (v, w) pairs (M, 2)."""
    return "beta_c_floorshare__" if "beta_c" in model.named_vars else (
        "beta_items__")


def coordinate(model, point):
    """The intercepts' free coordinate v at ``point`` (u for a centred 3PL question)."""
    value = point[intercept_name(model)]
    return value[:, 0] if value.ndim == 2 else value


def with_coordinate(model, point, v):
    """``point`` with the intercepts' free coordinate set to ``v`` (the 3PL's w kept)."""
    name = intercept_name(model)
    value = np.array(point[name], dtype=float)
    if value.ndim == 2:
        value[:, 0] = v
    else:
        value = np.broadcast_to(np.asarray(v, float), value.shape).copy()
    return {**point, name: value}


def evaluate(model, names, point):
    """The named variables as functions of the value variables, at ``point``."""
    outputs = model.replace_rvs_by_values([model[n] for n in names])
    values = model.compile_fn(outputs, inputs=model.value_vars, on_unused_input="ignore")(point)
    return dict(zip(names, values, strict=True))


def crossing_offset(model, point):
    """a_m t_m (M,), t_m the ability where question m crosses by the data's ``crossings``:
    an informed intercept's coordinate lies this far from the one without walls
    (``models.item_effects.crossing_ability``)."""
    got = evaluate(model, ["a", "theta"], point)
    low, high, weight = model["crossings"].get_value()
    theta = got["theta"]
    return got["a"] * ((1 - weight) * theta[low.astype(int)] + weight * theta[high.astype(int)])


def plain_3pl(binary, walls=False, kind="3pl", own_scale_min=1):
    """The 3PL (or 2PL) as :func:`irt.build` makes it, with the one-sided intercepts plainly
    non-centred (``walls=False``) or measured from their walls; by default with their own
    scale, which :func:`irt.build` gives them from 10 such questions on (``binary`` has 2)."""
    prepared = irt.IrtData.of(binary, kind, centered=True, own_scale_min=own_scale_min)
    options = irt.IrtOptions(likelihood=irt.DEFAULT_LIKELIHOOD[kind], walls=walls)
    return (irt.three_pl if kind == "3pl" else irt.two_pl)(prepared, options)


def test_3pl_uninformed_intercepts_use_their_own_scale(binary):
    model = plain_3pl(binary)
    point = random_point(model)
    got = evaluate(model, ["beta", "mu_beta", "sigma_beta_uninformed"], point)
    np.testing.assert_allclose(
        got["beta"][[0, 1]],
        got["mu_beta"] + got["sigma_beta_uninformed"] * coordinate(model, point)[[0, 1]],
        rtol=1e-12,
    )
    # and that scale's prior is HalfNormal(2.5), like the informed one's
    scale = model["sigma_beta_uninformed"]
    logp = model.compile_logp(vars=[scale], jacobian=False)(point)
    assert logp == pytest.approx(stats.halfnorm(scale=2.5).logpdf(got["sigma_beta_uninformed"]))


def test_rasch_keeps_one_scale(binary):
    names = {v.name for v in irt.build(binary, kind="rasch").free_RVs}
    assert not any(name.endswith("_uninformed") and name.startswith("sigma") for name in names)


def test_3pl_likelihood_is_scipys_betabinomial(binary):
    """With the floors and the split intercepts, the cells' density is scipy's pmf."""
    model = irt.build(binary, kind="3pl")
    point = random_point(model, seed=3)
    got = evaluate(model, ["c", "a", "beta", "theta", "phi"], point)
    p = got["c"] + (1 - got["c"]) * expit(got["a"] * got["theta"][:, None] + got["beta"])
    k = binary.sum(-1)
    expected = stats.betabinom.logpmf(k, 3, p * got["phi"], (1 - p) * got["phi"]).sum()
    logp = model.compile_logp(vars=[model["k"]])(point)
    assert logp == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("guessing", [None, (2.0, 30.0)])
def test_floors_are_iid_beta_in_their_share_coordinates(binary, guessing):
    """The floors and intercepts are one variable ``beta_c`` with the declared prior, c_m ~
    Beta i.i.d. and beta_m ~ Normal(mu_beta, sigma_beta), independent (scipy's densities
    without the Jacobian), sampled as (u, w) = (beta + softplus(w), logit(c / p(0))) for a
    centred question (``models.transforms.FloorsAndIntercepts``).  The map to (logit c,
    beta) has |Jacobian| 1 (by finite differences here), so the Jacobian term is log c +
    log(1 - c) there, plus the wall map's log(1 + s logistic(-v)) on a one-sided one."""
    options = {} if guessing is None else {"guessing": guessing}
    model = irt.build(binary, kind="3pl", centered=True, **options)
    prior = stats.beta(*((1.0, 19.0) if guessing is None else guessing))
    centred = model["centred"].get_value() > 0
    assert centred.sum() == 6  # every question but the never and the always solved
    names = ["c", "beta", "mu_beta", "sigma_beta"]
    name = intercept_name(model)
    for seed in (4, 5):
        point = random_point(model, seed=seed)
        got = evaluate(model, names, point)
        c, beta = got["c"], got["beta"]
        declared = model.compile_logp(vars=[model["beta_c"]], jacobian=False)(point)
        normal = stats.norm(got["mu_beta"], got["sigma_beta"])
        assert declared == pytest.approx(prior.logpdf(c).sum() + normal.logpdf(beta).sum(),
                                         rel=1e-10)
        v = point[name][:, 0]
        jacobian = (np.log(c) + np.log1p(-c)).sum() + np.log1p(
            got["sigma_beta"] * expit(-v[~centred])).sum()
        assert model.compile_logp(vars=[model["beta_c"]])(point) - declared == pytest.approx(
            jacobian, rel=1e-10)
        # w = logit of the floor's share of the solve probability at the mean ability
        p0 = c + (1 - c) * expit(beta)
        np.testing.assert_allclose(c[centred] / p0[centred], expit(point[name][centred, 1]),
                                   rtol=1e-10)
        # and u its logit
        np.testing.assert_allclose(p0[centred], expit(v[centred]), rtol=1e-10)

    def mapped(u, w, m):
        value = point[name].copy()
        value[m] = u, w
        out = evaluate(model, ["c", "beta"], {**point, name: value})
        return np.array([np.log(out["c"][m] / (1 - out["c"][m])), out["beta"][m]])

    eps = 1e-6
    for m in np.flatnonzero(centred):
        u, w = point[name][m]
        jac = np.column_stack([(mapped(u + eps, w, m) - mapped(u - eps, w, m)) / (2 * eps),
                               (mapped(u, w + eps, m) - mapped(u, w - eps, m)) / (2 * eps)])
        assert abs(np.linalg.det(jac)) == pytest.approx(1.0, rel=1e-6)


def test_the_3pl_prior_predictive_draws_the_declared_priors(binary):
    """pm.sample_prior_predictive: the floors are Beta(1, 19) and the intercepts
    Normal(mu_beta, sigma_beta) draws (no Potential is lost)."""
    model = irt.build(binary, kind="3pl")
    with model:
        prior = pm.sample_prior_predictive(draws=4000, random_seed=3).prior
    c = prior["c"].values.ravel()
    assert stats.kstest(c, stats.beta(1.0, 19.0).cdf).pvalue > 1e-3
    z = ((prior["beta"] - prior["mu_beta"]) / prior["sigma_beta"]).values.ravel()
    assert stats.kstest(z, stats.norm.cdf).pvalue > 1e-3


@pytest.mark.parametrize("guessing", [(0.0, 1.0), (1.0,)])
def test_bad_guessing_prior_is_rejected(binary, guessing):
    with pytest.raises(ValueError, match="guessing"):
        irt.build(binary, kind="3pl", guessing=guessing)


def test_a_fixed_floor_has_no_floor_parameters(binary):
    model = irt.build(binary, kind="3pl", fix_guessing=0.1)
    assert "c" not in model.named_vars
    with model:
        assert np.isfinite(model.compile_logp()(model.initial_point()))
    assert isinstance(model, pm.Model)


@pytest.mark.parametrize("kind", ["2pl", "3pl"])
def test_one_sided_intercepts_from_their_walls_are_a_change_of_variables(binary, kind):
    """The 2PL and 3PL sample a one-sided question's intercept by its distance from the wall, v.

    The density of (v, rest) must be the plainly non-centred model's density of (z, rest)
    at z(v) times |dz/dv| = logistic(-v) + 1 / s, and beta the same function of z.  The
    2PL's informed intercepts' coordinates lie a_m t_m from the plain ones (a translation).
    """
    walled, plain = plain_3pl(binary, True, kind), plain_3pl(binary, False, kind)
    for seed in range(4):
        point = random_point(walled, seed=10 + seed)
        # deep past and far from the walls
        point = with_coordinate(walled, point, coordinate(walled, point) * 3.0)
        got = evaluate(walled, ["beta", "mu_beta", "sigma_beta_uninformed"], point)
        scale = got["sigma_beta_uninformed"]
        z = (got["beta"][:2] - got["mu_beta"]) / scale
        v = coordinate(walled, point)[:2]
        informed = coordinate(walled, point)[2:]
        if kind == "2pl":  # the 2PL's informed coordinates lie a_m t_m from the plain ones
            informed = informed - crossing_offset(walled, point)[2:]
        old_point = with_coordinate(plain, point, np.concatenate([z, informed]))
        np.testing.assert_allclose(evaluate(plain, ["beta"], old_point)["beta"], got["beta"],
                                   rtol=1e-12, atol=1e-12)
        jacobian = np.log(expit(-v) + 1.0 / scale).sum()
        assert walled.compile_logp()(point) == pytest.approx(
            plain.compile_logp()(old_point) + jacobian, rel=1e-11)


def test_the_one_sided_share_the_informed_scale_when_few(binary):
    """With fewer than ``OWN_SCALE_MIN_QUESTIONS`` one-sided questions their intercepts use
    sigma_beta, and sigma_beta_uninformed enters the density through its own prior only (a
    scale learnt from two questions' one-sided tails funnelled: divergences on AlpacaEval's
    wins, docs/samplers.md)."""
    shared, own = irt.build(binary, kind="2pl"), plain_3pl(binary, True, "2pl")
    assert irt.OWN_SCALE_MIN_QUESTIONS > 2
    assert shared["own_scale"].get_value()[0] == 0 and own["own_scale"].get_value()[0] == 1
    point = random_point(shared, seed=7)
    moved = dict(point, sigma_beta_uninformed_log__=point["sigma_beta_uninformed_log__"] + 1.3)
    prior = stats.halfnorm(scale=2.5)

    def log_prior(p):  # HalfNormal(2.5) on the log scale, with its Jacobian
        u = p["sigma_beta_uninformed_log__"]
        return prior.logpdf(np.exp(u)) + u

    logp = shared.compile_logp()
    assert logp(moved) - logp(point) == pytest.approx(log_prior(moved) - log_prior(point),
                                                      rel=1e-10)
    np.testing.assert_array_equal(evaluate(shared, ["beta"], moved)["beta"],
                                  evaluate(shared, ["beta"], point)["beta"])
    # with their own scale, the same move changes the one-sided intercepts
    assert not np.allclose(evaluate(own, ["beta"], moved)["beta"][:2],
                           evaluate(own, ["beta"], point)["beta"][:2])


def test_own_scale_from_ten_one_sided_questions():
    k = np.tile([[0] * 10 + [1, 2]], (3, 1))
    k[0, 10] = 3
    n = np.full(k.shape, 3)
    assert irt.question_split(k, n).own_scale
    assert not irt.question_split(k[:, 1:], n[:, 1:]).own_scale


def test_a_question_few_models_answered_is_not_one_sided():
    """One-sided among fewer than half of the models: by chance as often as by difficulty,
    so no wall and no own scale (question_split); among half or more: one-sided."""
    k = np.zeros((4, 5), int)
    n = np.ones((4, 5), int)
    k[:, 1] = 1  # solved by all four
    n[2:, 2] = 0  # failed by the two of four that answered: half, one-sided
    n[1:, 3], k[0, 3] = 0, 1  # solved by its one answer of four: side 0
    n[:, 4] = 0  # answered by nobody
    k[0, 0] = 1  # informed
    split = irt.question_split(k, n, own_scale_min=3)
    np.testing.assert_array_equal(split.side, [0, -1, 1, 0, 0])
    # the own scale counts the two one-sided questions, not the four uninformed ones
    assert not split.own_scale and irt.question_split(k, n, own_scale_min=2).own_scale


@pytest.mark.parametrize("kind", ["2pl", "3pl"])
def test_questions_answered_by_few_share_the_informed_scale(kind):
    """A 2PL/3PL question answered by fewer than half of the models, and one answered by
    nobody, are sampled non-centred with the informed questions' scale sigma_beta; the
    one-sided ones with their own (90% missing at 50 x 1,400: docs/scale.md)."""
    rng = np.random.default_rng(3)
    R = (rng.uniform(size=(6, 14, 1)) < 0.5).astype(np.int8)
    mask = np.ones(R.shape, bool)
    R[:, :10] = 0  # ten questions no model solves: one-sided, their own scale
    R[:, 10], mask[2:, 10] = 1, False  # solved by its two answers of six
    mask[:, 11] = False  # answered by nobody
    R[:, 12], R[:, 13], R[0, 12], R[0, 13] = 1, 0, 0, 1  # informed; every model is too
    data = irt.IrtData.of(bayesrank.ResponseData(R, mask=mask), kind, centered=False)
    np.testing.assert_array_equal(data.split.side[9:12], [1, 0, 0])
    model = (irt.three_pl if kind == "3pl" else irt.two_pl)(
        data, irt.IrtOptions(likelihood=irt.DEFAULT_LIKELIHOOD[kind]))
    point = random_point(model, seed=4)
    got = evaluate(model, ["beta", "mu_beta", "sigma_beta", "sigma_beta_uninformed"], point)
    assert got["sigma_beta"] != pytest.approx(got["sigma_beta_uninformed"])
    np.testing.assert_allclose(
        got["beta"][10:12],
        got["mu_beta"] + got["sigma_beta"] * coordinate(model, point)[10:12], rtol=1e-12)


@pytest.mark.parametrize("own_scale_min", [1, irt.OWN_SCALE_MIN_QUESTIONS],
                         ids=["own scale", "shared scale"])
@pytest.mark.parametrize("kind", ["2pl", "3pl"])
def test_wall_map_is_increasing_onto_the_line_and_puts_the_wall_at_the_reference(
        binary, kind, own_scale_min):
    """z - z_w = side h(v), h(v) = -softplus(-v) + v / s: the best model's logit for a question
    nobody solves is s h(v) (the worst model's, for one everybody solves, -s h(v))."""
    model = plain_3pl(binary, True, kind, own_scale_min)
    scale_name = "sigma_beta_uninformed" if own_scale_min == 1 else "sigma_beta"
    point = random_point(model, seed=21)
    ks = binary.sum(-1).sum(-1)
    best, worst = int(np.argmax(ks)), int(np.argmin(ks))
    for v in (-40.0, -2.0, 0.0, 2.0, 40.0):
        point = with_coordinate(model, point, np.full(8, v))
        got = evaluate(model, ["beta", "a", "theta", scale_name], point)
        s = got[scale_name]
        h = -np.logaddexp(0.0, -v) + v / s
        never = got["a"][0] * got["theta"][best] + got["beta"][0]
        always = got["a"][1] * got["theta"][worst] + got["beta"][1]
        assert never == pytest.approx(s * h, rel=1e-10, abs=1e-10)
        assert always == pytest.approx(-s * h, rel=1e-10, abs=1e-10)
