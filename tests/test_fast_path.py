"""The fast path is a tested substitution: ``fast=True`` and ``fast=False`` build one model.

``bayesrank.models.build(name, data, fast=False)`` builds every model with PyMC's own
distributions and PyTensor's operations (no Op of bayesrank's in the graph); the default
uses the kernels of ``models/fast``.  Both must give the same log-density and gradient at
random points of the same parameterisation, on the shapes of the real sets in
``../shared/data``: here on MathArena AIME 2025 I (16 x 15 x 4) and on LiveCodeBench
repair's every 20th question (15 x 36 x 10, ten trials, one-sided questions of both
kinds), every model and likelihood; on every real set at full size, and sampled to the
same posterior summaries, in the real-data suite (``make test-real``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytensor
import pytest
from bayesrank.models import build

import bayesrank

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_models_real import load_real_sets  # noqa: E402

#: every model and likelihood (the Rasch also with its one-sided difficulties integrated out)
VARIANTS = [
    ("bayes", {}),
    ("rasch", {}),
    ("rasch", {"likelihood": "beta_binomial"}),
    ("rasch", {"collapse_uninformed": True}),
    ("2pl", {}),
    ("2pl", {"likelihood": "beta_binomial"}),
    ("3pl", {}),
    ("3pl", {"likelihood": "binomial"}),
    ("bradley_terry", {}),
    ("davidson", {}),
    ("davidson_luce", {}),
]
IDS = [name + "".join(f"-{v}" for v in options.values()) for name, options in VARIANTS]

REAL_FITS = pytest.mark.skipif(
    not os.environ.get("BAYESRANK_REAL_FITS"),
    reason="full-size real sets and paired fits: `make test-real` (BAYESRANK_REAL_FITS=1)",
)


@pytest.fixture(scope="module")
def real(shared_dir: Path) -> dict[str, bayesrank.ResponseData]:
    return load_real_sets(shared_dir / "data")


def every_kth(data: bayesrank.ResponseData, k: int) -> bayesrank.ResponseData:
    keep = np.arange(0, data.M, k)
    return bayesrank.ResponseData(data.R[:, keep], models=list(data.models),
                                  questions=list(np.asarray(data.questions)[keep]))


def logp_and_gradient(model):
    """The joint log-density and its gradient, one function of a point (dict)."""
    logp = model.logp()
    grads = pytensor.grad(logp, model.value_vars)
    fn = model.compile_fn([logp, *grads], inputs=model.value_vars, point_fn=True)
    return lambda point: (float(fn(point)[0]), np.concatenate([np.ravel(g) for g in fn(point)[1:]]))


def bayesrank_ops(model) -> set[str]:
    """Names of the Ops of bayesrank's fast layer in the model's log-density graph."""
    graph = pytensor.graph.basic.ancestors([model.logp()])
    return {type(v.owner.op).__name__ for v in graph
            if v.owner is not None and type(v.owner.op).__module__.startswith("bayesrank.")}


def assert_same_model(data, name, options, seeds=(0, 1, 2)):
    fast, plain = build(name, data, **options), build(name, data, fast=False, **options)
    assert not bayesrank_ops(plain), bayesrank_ops(plain)
    assert [v.name for v in fast.value_vars] == [v.name for v in plain.value_vars]
    f, p = logp_and_gradient(fast), logp_and_gradient(plain)
    start = fast.initial_point()
    for seed in seeds:
        rng = np.random.default_rng(seed)
        point = {k: v + 0.5 * rng.standard_normal(np.shape(v)) for k, v in start.items()}
        (lf, gf), (lp, gp) = f(point), p(point)
        assert lf == pytest.approx(lp, rel=1e-10)
        np.testing.assert_allclose(gf, gp, rtol=1e-9, atol=1e-9 * np.max(np.abs(gp)))
    return fast


@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=IDS)
def test_fast_and_plain_builds_are_one_model_on_aime(real, name, options):
    fast = assert_same_model(real["matharena_aime2025_I"], name, options)
    if name in ("rasch", "2pl", "3pl") and "likelihood" not in options:
        assert bayesrank_ops(fast), "the default IRT build should use the fast kernels"


TEN_TRIALS = [(v, i) for v, i in zip(VARIANTS, IDS, strict=True)
              if v[0] in ("rasch", "2pl", "3pl")]


@pytest.mark.parametrize(("name", "options"), [v for v, _ in TEN_TRIALS],
                         ids=[i for _, i in TEN_TRIALS])
def test_fast_and_plain_builds_are_one_model_with_ten_trials(real, name, options):
    """LiveCodeBench repair's every 20th question: ten trials per cell (the beta-binomial
    Op's stepped sums), questions nobody and everybody solves (the walls)."""
    data = every_kth(real["lcb_repair"], 20)
    k = data.reductions.successes.sum(0)
    assert (k == 0).any() and (k == data.reductions.trials.sum(0)).any()
    assert_same_model(data, name, options, seeds=(3,))


def test_the_default_2pl_has_its_kernels_and_the_plain_one_none(real):
    data = every_kth(real["lcb_repair"], 20)
    assert {"SlopeCells", "WallMap"} <= bayesrank_ops(build("2pl", data))
    assert not bayesrank_ops(build("2pl", data, fast=False))


@REAL_FITS
@pytest.mark.slow
@pytest.mark.parametrize("set_name", ["lcb_repair", "zeroeval_math_l5", "reasoning_gym_hard",
                                      "matharena_aime2025_I", "alpaca_eval_wins"])
@pytest.mark.parametrize(("name", "options"), VARIANTS, ids=IDS)
def test_fast_and_plain_builds_are_one_model_at_full_size(real, set_name, name, options):
    assert_same_model(real[set_name], name, options, seeds=(5,))


@REAL_FITS
@pytest.mark.slow
@pytest.mark.parametrize(("name", "options"), VARIANTS[1:], ids=IDS[1:])
def test_fast_and_plain_builds_sample_the_same_posterior(real, name, options):
    """AIME 2025 I: the posterior means of theta from both builds agree within Monte Carlo
    error (4 standard errors of the difference, from each fit's smallest theta ESS)."""
    data = real["matharena_aime2025_I"]
    fits = [bayesrank.fit(data, name, fast=fast, random_seed=4, progressbar=False,
                          log_likelihood=False, **options) for fast in (True, False)]
    means = [f.idata.posterior["theta"].mean(("chain", "draw")).values for f in fits]
    se = [f.idata.posterior["theta"].std(("chain", "draw")).values
          / np.sqrt(f.diagnostics.loc["theta", "ess_bulk"]) for f in fits]
    np.testing.assert_array_less(np.abs(means[0] - means[1]), 4 * np.hypot(*se))
