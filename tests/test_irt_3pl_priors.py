"""The 3PL's priors (issue 9, third round): the uninformed questions' intercepts have their
own scale; checked with the floors and the likelihood against scipy at random points.
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


def test_3pl_uninformed_intercepts_use_their_own_scale(binary):
    model = irt.build(binary, kind="3pl")
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


@pytest.mark.parametrize("kind", ["rasch", "2pl"])
def test_rasch_and_2pl_keep_one_scale(binary, kind):
    names = {v.name for v in irt.build(binary, kind=kind).free_RVs}
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
