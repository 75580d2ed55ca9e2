"""bayesrank.fit / fit_many: samplers, reproducibility, InferenceData, diagnostics, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import bayesrank
from bayesrank import DataError, MissingDependencyError, ResponseData, UnknownMethodError
from bayesrank.inference.diagnostics import SamplingWarning, check, problems, summarize
from bayesrank.inference.fitting import fit, fit_many

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning:arviz")


def small_data(seed=0, L=4, M=6, N=5, **kwargs):
    rng = np.random.default_rng(seed)
    p = 1 / (1 + np.exp(-(rng.normal(0, 1, (L, 1)) - rng.normal(0, 1, (1, M)))))
    R = (rng.random((L, M, N)) < p[..., None]).astype(int)
    return ResponseData(R, models=[f"m{i}" for i in range(L)], **kwargs)


QUICK = dict(draws=300, tune=200, chains=2)


SAMPLERS = ("nutpie", "numpyro", "pymc")


@pytest.fixture(scope="module")
def by_sampler():
    """Per sampler: two fits with seed 7 and one with seed 8 of the same data."""
    data = small_data(seed=3)
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        for sampler in SAMPLERS:
            out[sampler] = [
                fit(data, "rasch", sampler=sampler, random_seed=seed, **QUICK)
                for seed in (7, 7, 8)
            ]
    return out


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_same_seed_same_draws(by_sampler, sampler):
    first, again, other = by_sampler[sampler]
    np.testing.assert_array_equal(first.theta_draws(), again.theta_draws())
    assert not np.allclose(first.theta_draws(), other.theta_draws())
    assert first.sampler == sampler
    assert first.theta.sizes == {"chain": 2, "draw": QUICK["draws"], "llm": 4}
    assert set(first.timings) >= {"compile", "sample"}


def test_samplers_agree_on_the_posterior(by_sampler):
    """NUTS in nutpie, NumPyro and PyMC target the same posterior (means within MC error)."""
    means, errors = [], []
    for sampler in SAMPLERS:
        theta = np.concatenate([p.theta_draws() for p in by_sampler[sampler][1:]])
        ess = sum(p.diagnostics.loc["theta", "ess_bulk"] for p in by_sampler[sampler][1:])
        means.append(theta.mean(0))
        errors.append(theta.std(0) / np.sqrt(ess))
    for a in range(3):
        for b in range(a):
            gap = np.abs(means[a] - means[b])
            np.testing.assert_array_less(gap, 5 * np.hypot(errors[a], errors[b]))


def test_inference_data_holds_every_group_with_coords():
    data = small_data(seed=3)
    post = fit(data, "rasch", draws=400, chains=2, random_seed=3, log_likelihood=True)
    idata = post.idata
    assert {"posterior", "sample_stats", "observed_data", "log_likelihood"} <= set(idata.children)
    assert list(idata.posterior["llm"].values) == list(data.models)
    assert list(idata.posterior["question"].values) == list(data.questions)
    assert idata.log_likelihood["k"].dims == ("chain", "draw", "llm", "question")
    np.testing.assert_array_equal(idata.observed_data["k"].values, data.reductions.successes)
    assert not any(name.endswith("__") for name in idata.posterior.data_vars)
    assert {"diverging", "energy", "lp"} <= set(idata.sample_stats.data_vars)
    assert idata.posterior.attrs["random_seed"] == 3
    assert post.model == "rasch" and post.observed_var == "k"
    frame = post.diagnostics
    assert list(frame.columns) == ["size", "r_hat", "ess_bulk", "ess_tail", "passed"]
    assert "theta" in frame.index and frame.loc["theta", "size"] == data.L
    assert len(frame.attrs["bfmi"]) == 2


def test_warning_names_the_failing_variables():
    data = small_data(seed=3)
    with pytest.warns(SamplingWarning, match=r"ESS < 400 for .*theta"):
        post = fit(data, "rasch", draws=30, tune=100, chains=2, random_seed=1)
    assert not post.diagnostics["passed"].all()


def test_check_reports_divergences_rhat_and_bfmi():
    frame = pd.DataFrame(
        {"size": [3], "r_hat": [1.05], "ess_bulk": [1000.0], "ess_tail": [900.0]},
        index=pd.Index(["theta"], name="variable"),
    )
    frame["passed"] = False
    frame.attrs.update(divergences=4, bfmi=[0.2, 0.8], draws=2000)
    found = problems(frame)
    assert any("R-hat > 1.01 for theta" in p for p in found)
    assert any("4 divergent" in p for p in found)
    assert any("E-BFMI" in p and "[0]" in p for p in found)
    with pytest.warns(SamplingWarning, match="divergent"):
        assert check(frame) is False
    clean = frame.copy()
    clean["r_hat"] = 1.0
    clean.attrs.update(divergences=0, bfmi=[0.9, 0.8], draws=2000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check(clean) is True


def test_summarize_reads_an_inference_data():
    import arviz as az

    rng = np.random.default_rng(0)
    idata = az.from_dict(
        {
            "posterior": {"theta": rng.normal(size=(4, 500, 3)), "stuck": np.ones((4, 500))},
            "sample_stats": {
                "diverging": np.zeros((4, 500), bool), "energy": rng.normal(size=(4, 500))
            },
        }
    )
    frame = summarize(idata)
    assert frame.loc["theta", "passed"] and frame.loc["theta", "r_hat"] < 1.01
    assert frame.attrs["divergences"] == 0 and frame.attrs["draws"] == 2000


@pytest.mark.filterwarnings("ignore::bayesrank.inference.diagnostics.SamplingWarning")
def test_fit_many_fits_each_dataset_in_one_batch():
    datasets = [small_data(seed=s) for s in range(3)]
    posts = fit_many(datasets, "rasch", sampler="numpyro", random_seed=5, log_likelihood=True,
                     **QUICK)
    assert len(posts) == 3
    assert all(p.sampler == "numpyro" and p.timings["batch_size"] == 3 for p in posts)
    means = [p.theta.mean(("chain", "draw")).values for p in posts]
    assert not np.allclose(means[0], means[1])  # each fit saw its own data
    for d, p in zip(datasets, posts, strict=True):
        np.testing.assert_array_equal(p.idata.observed_data["k"].values, d.reductions.successes)
        assert p.idata.log_likelihood["k"].dims == ("chain", "draw", "llm", "question")
        ranking = bayesrank.scores_to_ranks(p.theta.mean(("chain", "draw")).values)
        assert bayesrank.kendall_tau(ranking, bayesrank.scores_to_ranks(d.R.sum((1, 2)))) > 0
    with pytest.raises(DataError, match="equal shape"):
        fit_many([small_data(M=6), small_data(M=7)], "rasch", sampler="numpyro", **QUICK)
    with pytest.raises(ValueError, match="at least one"):
        fit_many([], "rasch")


def test_fit_many_on_a_cpu_fits_one_by_one_with_the_default_sampler(recwarn):
    """Without a GPU the vectorised batch is slower than nutpie per dataset (docs/samplers.md)."""
    import jax

    from bayesrank.inference.diagnostics import SamplingWarning

    if jax.default_backend() != "cpu":
        pytest.skip("JAX sees an accelerator: the default is the vectorised batch")
    datasets = [small_data(seed=s) for s in range(2)] + [small_data(M=7)]  # shapes may differ
    posts = fit_many(datasets, "rasch", random_seed=5, warn=False, **QUICK)
    assert [p.sampler for p in posts] == ["nutpie"] * 3
    assert not [w for w in recwarn if issubclass(w.category, SamplingWarning)]
    again = fit_many(datasets[:1], "rasch", random_seed=5, warn=False, **QUICK)
    np.testing.assert_array_equal(again[0].theta.values, posts[0].theta.values)
    # abilities sum to zero in every draw, so compare the draws, not their grand mean
    assert not np.allclose(posts[0].theta.values, posts[1].theta.values)
    assert posts[2].idata.posterior.sizes["question"] == 7


def test_arrays_and_model_options_pass_through():
    R = small_data().R
    post = fit(R, "bayes", draws=500, chains=2, random_seed=0)
    mu, _ = bayesrank.bayes_at_n(R)
    np.testing.assert_allclose(post.theta.mean(("chain", "draw")).values, mu, atol=0.02)
    assert post.sampler == "conjugate" and post.timings["compile"] == 0.0
    unseeded = fit(R, "bayes", draws=100, chains=2)
    seed = unseeded.idata.posterior.attrs["random_seed"]
    repeat = fit(R, "bayes", draws=100, chains=2, random_seed=seed)
    np.testing.assert_array_equal(unseeded.theta_draws(), repeat.theta_draws())


def test_bad_input_errors_name_the_fix(monkeypatch):
    data = small_data()
    with pytest.raises(ValueError, match="unknown sampler 'stan'"):
        fit(data, "rasch", sampler="stan")
    with pytest.raises(UnknownMethodError, match="unknown model 'rasch4'"):
        fit(data, "rasch4")
    with pytest.raises(ValueError, match="'bayes' model only"):
        fit(data, "rasch", sampler="conjugate")
    with pytest.raises(ValueError, match="draws"):
        fit(data, "rasch", draws=0)
    with pytest.raises(ValueError, match="target_accept"):
        fit(data, "rasch", target_accept=1.5)
    with pytest.raises(DataError, match="binary"):
        fit(np.random.default_rng(0).integers(0, 3, (3, 4, 2)), "rasch")
    with pytest.raises(DataError, match="R0"):
        fit(ResponseData(data.R, R0=np.ones((data.M + 2, 1), dtype=int)), "rasch", use_R0=True)
    with pytest.raises(DataError, match="R0"):
        fit(data, "bayes", R0=np.ones((data.L, data.M + 1, 1), dtype=int))

    import bayesrank.inference.backends as sampling

    real = sampling.find_spec
    missing = ("jax", "nutpie")
    monkeypatch.setattr(sampling, "find_spec", lambda n: None if n in missing else real(n))
    with pytest.raises(MissingDependencyError, match=r"pip install 'bayesrank\[jax\]'"):
        fit(data, "rasch", sampler="numpyro")
    with pytest.raises(MissingDependencyError, match=r"pip install 'bayesrank\[nutpie\]'"):
        fit(data, "rasch", sampler="nutpie")
    with pytest.raises(MissingDependencyError):
        fit_many([data], "rasch", sampler="numpyro")
    assert isinstance(MissingDependencyError("x"), ImportError)


def test_default_sampler_falls_back_when_nutpie_is_missing(monkeypatch):
    import bayesrank.inference.backends as sampling
    import bayesrank.inference.fitting as fitting

    real = sampling.find_spec
    monkeypatch.setattr(sampling, "find_spec", lambda n: None if n == "nutpie" else real(n))
    assert fitting._choose_sampler("rasch", None) == "numpyro"
    assert fitting._choose_sampler("bayes", None) == "conjugate"


def test_progress_bar_only_for_people(monkeypatch):
    import sys

    from bayesrank.inference.backends import default_progressbar

    class Stream:
        def __init__(self, tty):
            self.tty = tty

        def isatty(self):
            return self.tty

    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    monkeypatch.setattr(sys, "stderr", Stream(False))  # a log file, CI
    assert default_progressbar() is False
    monkeypatch.setattr(sys, "stderr", Stream(True))  # a terminal
    assert default_progressbar() is True


def test_nutpie_backend_by_run_length_and_size_and_every_backend_samples_one_posterior(
        monkeypatch):
    """Numba for default-length runs and large models (the 3PL too), JAX for short runs of
    small ones; PyTensor's own function when asked."""
    from bayesrank.models import get_model

    import bayesrank.inference.backends as sampling

    pytest.importorskip("jax")
    data = small_data(seed=5, L=4, M=6, N=5)
    rasch = get_model("rasch").build(data)
    assert sampling.observed_size(rasch) == data.L * data.M  # binomial counts, not trials
    pairs = get_model("bradley_terry").build(data)
    assert sampling.observed_size(pairs) == data.L * (data.L - 1) // 2
    monkeypatch.setenv("BAYESRANK_NUTPIE_BACKEND", "auto")
    monkeypatch.setattr(sampling, "SCALE_OBSERVED", data.L * data.M)
    long_run, short_run = sampling.NUMBA_MIN_ITERATIONS, sampling.NUMBA_MIN_ITERATIONS - 1
    assert sampling.nutpie_backend(rasch, short_run) == "numba"  # at scale
    assert sampling.nutpie_backend(get_model("3pl").build(data), short_run) == "numba"
    assert sampling.nutpie_backend(pairs, long_run) == "numba"  # small, long run
    assert sampling.nutpie_backend(pairs, short_run) == "jax"  # small, short run
    assert sampling.nutpie_backend(pairs) == "numba"  # a default fit's length
    for choice in ("jax", "numba", "pytensor"):
        monkeypatch.setenv("BAYESRANK_NUTPIE_BACKEND", choice)
        assert sampling.nutpie_backend(rasch, long_run) == choice
        assert sampling.nutpie_backend(pairs, short_run) == choice
    monkeypatch.setenv("BAYESRANK_NUTPIE_BACKEND", "cython")
    with pytest.raises(ValueError, match="'auto', 'pytensor', 'jax' or 'numba'"):
        sampling.nutpie_backend(rasch)

    # fit() picks by the run's length and the model's size, and every build samples the
    # same density: the same posterior from the same seed
    monkeypatch.setenv("BAYESRANK_NUTPIE_BACKEND", "auto")
    picked = []
    real = sampling.nutpie_backend

    def recording(*args):
        picked.append(real(*args))
        return picked[-1]

    monkeypatch.setattr(sampling, "nutpie_backend", recording)
    means = []
    for threshold, choice in ((data.L * data.M, "auto"), (data.L * data.M + 1, "auto"),
                              (data.L * data.M + 1, "pytensor")):
        monkeypatch.setattr(sampling, "SCALE_OBSERVED", threshold)
        monkeypatch.setenv("BAYESRANK_NUTPIE_BACKEND", choice)
        post = fit(data, "rasch", sampler="nutpie", random_seed=4, **QUICK)
        means.append(post.idata.posterior["theta"].mean(("chain", "draw")).to_numpy())
    assert picked == ["numba", "jax", "pytensor"]
    np.testing.assert_allclose(means[1], means[0], atol=0.05)
    np.testing.assert_allclose(means[2], means[0], atol=0.05)


def test_default_draws_follow_the_models_free_parameters():
    """fit()'s default draws: 1,500 for a 2PL of 10 x 4,550 (9,111 parameters), 1,000 for small."""
    from bayesrank.models import get_model

    from bayesrank.inference.fitting import _draws

    rng = np.random.default_rng(0)
    large = ResponseData((rng.random((10, 4550, 1)) < 0.5).astype(int))
    two_pl = get_model("2pl").build(large)
    assert _draws(None, two_pl, 4, "nutpie") == 1500
    assert _draws(700, two_pl, 4, "nutpie") == 700
    small = ResponseData((rng.random((5, 20, 2)) < 0.5).astype(int))
    assert _draws(None, get_model("rasch").build(small), 4, "nutpie") == 1000
    assert _draws(None, get_model("bayes").build(large), 4, "conjugate") == 1000
