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


def evaluate(model, names, point):
    """The named variables as functions of the value variables, at ``point``."""
    outputs = model.replace_rvs_by_values([model[n] for n in names])
    values = model.compile_fn(outputs, inputs=model.value_vars, on_unused_input="ignore")(point)
    return dict(zip(names, values, strict=True))


def plain_3pl(binary, walls=False, kind="3pl"):
    """The 3PL (or 2PL) as :func:`irt.build` makes it, with the one-sided intercepts plainly
    non-centred (``walls=False``) or measured from their walls."""
    k, n = binary.sum(-1), np.full(binary.shape[:2], binary.shape[2])
    coords = {"llm": [f"m{i}" for i in range(k.shape[0])],
              "question": [f"q{i}" for i in range(k.shape[1])]}
    return irt.item_response(k, n, kind=kind, coords=coords,
                             likelihood=irt.DEFAULT_LIKELIHOOD[kind], walls=walls)


def test_3pl_uninformed_intercepts_use_their_own_scale(binary):
    model = plain_3pl(binary)
    point = random_point(model)
    got = evaluate(model, ["beta", "mu_beta", "sigma_beta_uninformed", "beta_raw"], point)
    np.testing.assert_allclose(
        got["beta"][[0, 1]],
        got["mu_beta"] + got["sigma_beta_uninformed"] * got["beta_raw"][[0, 1]],
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
def test_floors_are_iid_beta(binary, guessing):
    """Compared as differences between two points: PyMC's log Beta function is off by a
    constant (2.4e-6 for (2, 30)), which cancels; the shape of the density does not."""
    options = {} if guessing is None else {"guessing": guessing}
    model = irt.build(binary, kind="3pl", **options)
    prior = stats.beta(*((1.0, 19.0) if guessing is None else guessing))
    logp = model.compile_logp(vars=[model["c"]], jacobian=False)
    first, second = random_point(model, seed=4), random_point(model, seed=5)
    c1, c2 = evaluate(model, ["c"], first)["c"], evaluate(model, ["c"], second)["c"]
    expected = prior.logpdf(c1).sum() - prior.logpdf(c2).sum()
    assert logp(first) - logp(second) == pytest.approx(expected, rel=1e-9)


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
    at z(v) times |dz/dv| = logistic(-v) + 1 / s, and beta the same function of z.
    """
    walled, plain = plain_3pl(binary, True, kind), plain_3pl(binary, False, kind)
    for seed in range(4):
        point = random_point(walled, seed=10 + seed)
        point["beta_raw"] = point["beta_raw"] * 3.0  # deep past and far from the walls
        got = evaluate(walled, ["beta", "mu_beta", "sigma_beta_uninformed"], point)
        scale = got["sigma_beta_uninformed"]
        z = (got["beta"][:2] - got["mu_beta"]) / scale
        v = point["beta_raw"][:2]
        old_point = dict(point)
        old_point["beta_raw"] = np.concatenate([z, point["beta_raw"][2:]])
        np.testing.assert_allclose(evaluate(plain, ["beta"], old_point)["beta"], got["beta"],
                                   rtol=1e-12, atol=1e-12)
        jacobian = np.log(expit(-v) + 1.0 / scale).sum()
        assert walled.compile_logp()(point) == pytest.approx(
            plain.compile_logp()(old_point) + jacobian, rel=1e-11)


@pytest.mark.parametrize("kind", ["2pl", "3pl"])
def test_wall_map_is_increasing_onto_the_line_and_puts_the_wall_at_the_reference(binary, kind):
    """z - z_w = side h(v), h(v) = -softplus(-v) + v / s: the best model's logit for a question
    nobody solves is s h(v) (the worst model's, for one everybody solves, -s h(v))."""
    model = irt.build(binary, kind=kind)
    point = random_point(model, seed=21)
    ks = binary.sum(-1).sum(-1)
    best, worst = int(np.argmax(ks)), int(np.argmin(ks))
    for v in (-40.0, -2.0, 0.0, 2.0, 40.0):
        point["beta_raw"] = np.full(8, v)
        got = evaluate(model, ["beta", "a", "theta", "sigma_beta_uninformed"], point)
        s = got["sigma_beta_uninformed"]
        h = -np.logaddexp(0.0, -v) + v / s
        never = got["a"][0] * got["theta"][best] + got["beta"][0]
        always = got["a"][1] * got["theta"][worst] + got["beta"][1]
        assert never == pytest.approx(s * h, rel=1e-10, abs=1e-10)
        assert always == pytest.approx(-s * h, rel=1e-10, abs=1e-10)
