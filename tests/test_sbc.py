"""Simulation-based calibration (Talts et al. 2018) of every Bayesian model and likelihood.

The harness is ``tests/_sbc.py`` (its docstring: ranks, the uniformity test, and why
conditioning on the IRT models' data-dependent structure keeps SBC exact).  Each case
draws parameters from the model's documented prior with NumPy (not from the PyMC
graph: an independent statement of the model), simulates data the model's generative
way, fits the model built by ``bayesrank.models.build`` (nutpie, one chain, every 5th
of 495 draws after 300 warm-up; the exact conjugate sampler for Bayes@N;
``bayesrank.fit`` for Davidson-Luce, whose graph is data-specific) and asserts that the
ranks of the truth among the posterior draws are uniform: Pearson chi-square on 10
bins, Bonferroni over the case's quantities at a family-wise false-alarm rate of
0.005 per case (so at most 5% over the ten cases, for a fixed seed once and for all).

Checked quantities: every theta_l (the ranking quantity; in each model's own
convention, centred on the informed models for the IRT ones, zero-sum for the pairwise
ones), the hyper-parameters (mu, sigma, the one-sided intercepts' scale, the
over-dispersion 1 / sqrt(phi), Davidson's log nu, Davidson-Luce's eta_t), one
question's item parameters, and the log-likelihood of the simulated data (sensitive to
errors in any parameter).

Slow (minutes per case on 2 cores): run them with ``make test-slow``
(``BAYESRANK_SLOW=1``); ``make test`` runs only the harness's own fast checks.
Measured results: docs/sbc.md.  ``test_sbc_fails_a_wrong_likelihood`` shows that a run of
this size has power on a real model.
"""

from __future__ import annotations

import json
import os

import _sbc
import numpy as np
import pytest
from scipy import stats

gated = pytest.mark.extended(
    "simulation-based calibration fits each model 100-200 times (minutes per model on 2 cores)")

REPLICATIONS = {"bayes": 200}  # exact draws are cheap; every other case 100


# --- the harness itself (fast; part of make test) ---------------------------------------


def test_uniformity_p_values_accept_uniform_and_reject_u_shaped_ranks():
    rng = np.random.default_rng(0)
    uniform = rng.integers(0, 100, size=(200, 3))
    u_shaped = np.where(rng.random((200, 1)) < 0.5, rng.integers(0, 15, (200, 1)),
                        rng.integers(85, 100, (200, 1)))
    p = _sbc.uniformity_p_values(np.hstack([uniform, u_shaped]), draws=99, bins=10)
    assert (p[:3] > 0.01).all()
    assert p[3] < 1e-20
    # the same statistic as scipy's chisquare on the bin counts, by hand
    counts = np.bincount(uniform[:, 0] // 10, minlength=10)
    chi2 = ((counts - 20.0) ** 2 / 20.0).sum()
    assert p[0] == pytest.approx(stats.chi2.sf(chi2, 9))
    with pytest.raises(ValueError, match="multiple of bins"):
        _sbc.uniformity_p_values(uniform, draws=100, bins=10)


def normal_case(shrink: float = 1.0, prior_sd=lambda y: 1.0, simulate=None) -> _sbc.Case:
    """mu ~ N(0, s(y)^2), y_1..3 ~ N(mu, 1): exact posterior draws (sd times ``shrink``)."""

    def posterior(y, seed, settings):
        precision = 1.0 / prior_sd(y) ** 2 + y.size
        mean, sd = y.sum() / precision, shrink / np.sqrt(precision)
        draws = np.random.default_rng(seed).normal(mean, sd, settings.draws)
        return {"mu": draws}, 0

    def simulate_plain(rng):
        mu = rng.normal(0.0, 1.0)
        return _sbc.Replicate(rng.normal(mu, 1.0, 3), {"mu": mu})

    return _sbc.Case("normal", simulate or simulate_plain, posterior,
                     lambda params, y: {"mu": params["mu"], "mean_y": params["mu"] - y.mean()})


def test_sbc_passes_the_exact_posterior_and_fails_a_too_narrow_one():
    settings = _sbc.Settings(replications=300, seed=3)
    exact = _sbc.run(normal_case(), settings)
    assert exact.passed, exact.p_values
    narrow = _sbc.run(normal_case(shrink=0.6), settings)
    assert not narrow.passed
    assert set(narrow.failing()) == {"mu", "mean_y"}


def data_dependent_prior(y):
    return 1.0 if y.sum() > 0 else 3.0


def test_conditioning_on_the_structure_calibrates_a_data_dependent_prior():
    """S(y) = sign of sum y picks the prior sd (1 or 3): drawing mu from one fixed prior
    miscalibrates; drawing it given a proposed S, kept when S(y) = S, calibrates."""

    def structure(y):
        return bool(y.sum() > 0)

    def draw(rng, s, size):
        mu = rng.normal(0.0, 1.0 if s else 3.0, size)
        return {"mu": mu}, rng.normal(mu[:, None], 1.0, (size, 3))

    def propose(rng):
        return structure(draw(rng, True, 1)[1][0])

    def conditioned(rng):
        s, params, y = _sbc.conditional(propose, draw, structure, rng, batch=16)
        assert structure(y) == s
        return _sbc.Replicate(y, params)

    def fixed_prior(rng):
        params, y = draw(rng, True, 1)
        return _sbc.Replicate(y[0], {"mu": params["mu"][0]})

    settings = _sbc.Settings(replications=1000, seed=5)
    good = _sbc.run(normal_case(prior_sd=data_dependent_prior, simulate=conditioned), settings)
    assert good.passed, good.p_values
    bad = _sbc.run(normal_case(prior_sd=data_dependent_prior, simulate=fixed_prior), settings)
    assert not bad.passed


# --- the simulators against PyMC's prior predictive of the built models -----------------


def _template(name: str):
    """A data set of the case's shape whose IRT structure is all-informed."""
    from bayesrank import ResponseData

    case = _sbc.cases()[name]()
    rng = np.random.default_rng(0)
    if name.split("-")[0] in ("rasch", "2pl", "3pl"):
        k = np.tile(np.array([[1, 2], [2, 1]]), (3, 6))  # 6 x 12, every cell 1 or 2 of 4
        return case, ResponseData(_sbc.binary_tensor(k, 4))
    return case, case.simulate(rng).data


@pytest.mark.slow
@gated
@pytest.mark.parametrize("name", list(_sbc.cases()))
@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_simulator_matches_pymc_prior_predictive(name):
    """The NumPy prior draws of each case have the distribution of
    ``pm.sample_prior_predictive`` on the built model (all-informed IRT structure): a
    two-sample Kolmogorov-Smirnov test per parameter entry, Bonferroni at 0.001.  Where
    the prior predictive cannot be drawn yet (a ``pm.Flat`` with a Potential: the 3PL's
    floors, Davidson-Luce's tie effects) the test skips, naming the error."""
    import pymc as pm

    from bayesrank import models

    case, data = _template(name)
    model_name, _, likelihood = name.partition("-")
    options = {"likelihood": likelihood} if likelihood else {}
    model = models.build(model_name, data, **options)
    try:
        prior = pm.sample_prior_predictive(draws=2000, model=model, random_seed=1).prior
    except Exception as error:  # noqa: BLE001 - the reason is reported
        pytest.skip(f"pm.sample_prior_predictive fails on {name}: {type(error).__name__}")
    rng = np.random.default_rng(2)
    if model_name in ("rasch", "2pl", "3pl"):
        L, M = data.L, data.M
        ours = _sbc.irt_prior(rng, model_name, likelihood, L, M,
                              _sbc.irt_structure(model_name, 4)(data.reductions.successes), 2000)
    else:
        ours = [case.simulate(rng).truth for _ in range(2000)]
        ours = {k: np.stack([t[k] for t in ours]) for k in ours[0]}
    tests = {}
    for key, values in ours.items():
        theirs = prior[key].values.reshape(2000, -1)
        values = values.reshape(2000, -1)
        for j in range(values.shape[1]):
            tests[f"{key}[{j}]"] = stats.ks_2samp(values[:, j], theirs[:, j]).pvalue
    threshold = 0.001 / len(tests)
    assert min(tests.values()) >= threshold, {k: p for k, p in tests.items() if p < threshold}


# --- simulation-based calibration of each model ------------------------------------------


@pytest.mark.slow
@gated
@pytest.mark.parametrize("name", list(_sbc.cases()))
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sbc(name):
    settings = _sbc.Settings(replications=REPLICATIONS.get(name, 100), seed=0)
    result = _sbc.run(_sbc.cases()[name](), settings, progress=lambda m: print(m, flush=True))
    log = os.environ.get("BAYESRANK_SBC_LOG")
    if log:
        with open(log, "a") as out:
            out.write(json.dumps({"case": name, "replications": settings.replications,
                                  "wall_s": round(result.wall_s, 1),
                                  "divergences": result.divergences,
                                  "threshold": result.threshold,
                                  "p_values": result.p_values}) + "\n")
    assert result.passed, f"{result.summary()}; failing: {result.failing()}"



@pytest.mark.slow
@gated
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sbc_fails_a_wrong_likelihood():
    """The same run has power on a real model: beta-binomial Rasch data fitted with the
    binomial Rasch (over-dispersion ignored, so the posterior is too narrow) fail."""
    over_dispersed = _sbc.irt_case("rasch", "beta_binomial")
    binomial = _sbc.irt_case("rasch", "binomial")
    case = _sbc.Case("rasch: beta-binomial data, binomial fit", over_dispersed.simulate,
                     binomial.posterior, binomial.quantities)
    result = _sbc.run(case, _sbc.Settings(replications=100, seed=0))
    assert not result.passed
    assert "log_lik" in result.failing()
