"""Every model is generative: ``pm.sample_prior_predictive`` draws its declared prior.

The issue's example (issue 46): a 6 x 30 x 4 tensor with three never-solved questions.
Before, the 3PL and Davidson-Luce failed ("Cannot sample from flat variable") and the
2PL's one-sided intercepts were drawn from N(0, 1) raw coordinates that a Potential
(ignored by ancestral sampling) was meant to correct.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest
from bayesrank.models import build
from scipy import stats

import bayesrank

VARIANTS = [("bayes", {}), ("rasch", {}), ("2pl", {}), ("2pl", {"likelihood": "beta_binomial"}),
            ("3pl", {}), ("3pl", {"likelihood": "binomial"}), ("bradley_terry", {}),
            ("davidson", {}), ("davidson_luce", {})]


@pytest.fixture(scope="module")
def data() -> bayesrank.ResponseData:
    rng = np.random.default_rng(0)
    theta, b = rng.normal(0.0, 1.0, 6), rng.normal(0.0, 1.5, 30)
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :])))
    R = (rng.random((6, 30, 4)) < p[..., None]).astype(np.int8)
    R[:, :3] = 0  # three never-solved questions
    return bayesrank.ResponseData(R)


@pytest.mark.parametrize(("name", "options"), VARIANTS,
                         ids=[n + "".join(f"-{v}" for v in o.values()) for n, o in VARIANTS])
def test_prior_predictive_runs_without_potentials(data, name, options, numpy_graphs):
    model = build(name, data, **options)
    assert not model.potentials, [p.name for p in model.potentials]
    with model, warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*Potential.*")
        drawn = pm.sample_prior_predictive(draws=30, random_seed=1)
    observed = model.observed_RVs[0].name
    assert drawn["prior_predictive"][observed].shape[:2] == (1, 30)


def test_the_2pl_one_sided_intercepts_are_drawn_from_their_prior(data, numpy_graphs):
    """The never-solved questions' intercepts: (beta - mu_beta) / sigma ~ N(0, 1) under the
    prior, sigma the scale they use (their own from ten such questions, else sigma_beta)."""
    model = build("2pl", data)
    assert model["side"].get_value()[:3].tolist() == [1.0, 1.0, 1.0]
    with model:
        prior = pm.sample_prior_predictive(draws=3000, random_seed=2).prior
    z = ((prior["beta"][..., :3] - prior["mu_beta"]) / prior["sigma_beta"]).values.ravel()
    assert stats.kstest(z, stats.norm.cdf).pvalue > 1e-3


def test_prior_accuracy_beside_the_observed(data, numpy_graphs):
    table = bayesrank.prior_accuracy(data, "rasch", draws=300, random_seed=0)
    observed = data.reductions.successes.sum(1) / data.reductions.trials.sum(1)
    np.testing.assert_allclose(table["observed"], observed)
    assert (table["prior_lo"] < table["prior_hi"]).all()
    assert table["inside"].all()  # the weakly informative prior covers these accuracies
    tree = bayesrank.prior_predictive(data, "davidson_luce", draws=20)
    assert {"prior", "prior_predictive"} <= set(tree.children)
    with pytest.raises(ValueError, match="IRT model"):
        bayesrank.prior_accuracy(data, "bradley_terry")
