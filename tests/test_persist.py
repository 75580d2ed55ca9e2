"""A fitted posterior survives post.save(path) / bayesrank.load_posterior(path) whole."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

import bayesrank as br
from bayesrank.cli import main
from bayesrank.errors import LoadError


@pytest.fixture(scope="module")
def small():
    return br.datasets.example("combined").subset(models=list(range(4)),
                                                  questions=list(range(10)), trials=[0, 1, 2])


pytestmark = pytest.mark.filterwarnings("ignore::bayesrank.inference.diagnostics.SamplingWarning")


@pytest.fixture(scope="module")
def fitted(small):
    # Bayes@N with the data's own prior outcomes: a build option the reload must honour
    return br.fit(small, "bayes", R0="data", chains=2, draws=200, random_seed=3,
                  progressbar=False)


def _logp_at_start(model):
    return float(model.compile_logp()(model.initial_point()))


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_round_trip_keeps_draws_data_settings_and_analytics(fitted, tmp_path, suffix):
    path = fitted.save(tmp_path / f"fit{suffix}")
    back = br.load_posterior(path)
    assert isinstance(back, br.Posterior)
    assert (back.model, back.sampler, back.observed_var) == ("bayes", "conjugate",
                                                             fitted.observed_var)
    assert back.data == fitted.data and back.data.R0 is not None
    xr.testing.assert_identical(back.idata["posterior"].to_dataset(),
                                fitted.idata["posterior"].to_dataset())
    assert back.idata["posterior"].attrs["random_seed"] == 3
    assert set(back.idata.children) == set(fitted.idata.children)
    np.testing.assert_array_equal(back.rank("lcb").ranks, fitted.rank("lcb").ranks)
    xr.testing.assert_identical(back.superiority(), fitted.superiority())
    assert back.diagnostics.equals(fitted.diagnostics)
    assert back.diagnostics.attrs == fitted.diagnostics.attrs
    assert back.timings == fitted.timings


def test_reload_rebuilds_the_model_with_its_options(fitted, small, tmp_path, numpy_graphs):
    from bayesrank.models import get_model

    back = br.load_posterior(fitted.save(tmp_path / "fit.nc"))
    assert _logp_at_start(back.pymc_model) == pytest.approx(_logp_at_start(fitted.pymc_model))
    # the option matters: without R0="data" the model's density differs
    assert _logp_at_start(get_model("bayes").build(small)) != pytest.approx(
        _logp_at_start(fitted.pymc_model))
    checked = back.ppc(num_draws=30, random_seed=1)
    assert "posterior_predictive" in checked.idata.children
    original = fitted.ppc(num_draws=30, random_seed=1)
    assert np.array_equal(checked.idata["posterior_predictive"].to_dataset()[back.observed_var],
                          original.idata["posterior_predictive"].to_dataset()[back.observed_var])


@pytest.mark.filterwarnings("ignore:PSIS-LOO is unreliable")
def test_compare_works_on_reloaded_posteriors(fitted, small, tmp_path):
    other = br.fit(small, "bayes", chains=2, draws=200, random_seed=4, progressbar=False)
    a = br.load_posterior(fitted.save(tmp_path / "a.nc"))
    b = br.load_posterior(other.save(tmp_path / "b.nc"))
    reloaded = br.compare({"a": a, "b": b})
    original = br.compare({"a": fitted, "b": other})
    np.testing.assert_allclose(reloaded["elpd_loo"].sort_index(),
                               original["elpd_loo"].sort_index())


def test_normal_posterior_round_trip(small, tmp_path):
    post = br.closed_form(small)
    back = br.load_posterior(post.save(tmp_path / "cf.nc"))
    assert isinstance(back, br.NormalPosterior) and back.model == post.model
    np.testing.assert_array_equal(back.mu, post.mu)
    np.testing.assert_array_equal(back.sigma, post.sigma)
    assert back.data == post.data and back.models == post.models


def test_writes_are_atomic_and_bad_files_are_named(fitted, tmp_path, monkeypatch):
    target = tmp_path / "fit.nc"
    target.write_text("old")

    def broken(self, *args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(xr.DataTree, "to_netcdf", broken)
    with pytest.raises(OSError, match="disk full"):
        fitted.save(target)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["fit.nc"]
    monkeypatch.undo()
    with pytest.raises(LoadError, match=r"\.nc \(NetCDF\) or \.zarr"):
        fitted.save(tmp_path / "fit.pkl")
    with pytest.raises(LoadError, match="cannot read"):
        br.load_posterior(target)
    data_only = br.save(fitted.data, tmp_path / "data.nc")
    with pytest.raises(LoadError, match="not a posterior saved by bayesrank"):
        br.load_posterior(data_only)


def test_report_from_a_saved_posterior_without_refitting(small, tmp_path, capsys, monkeypatch):
    import bayesrank.inference

    data = br.save(small, tmp_path / "d.npz")
    saved, first = tmp_path / "fit.nc", tmp_path / "first.html"
    assert main(["report", str(data), "--model", "bayes", "--draws", "100", "--chains", "2",
                 "--baselines", "avg", "--save-posterior", str(saved), "-o", str(first)]) == 0
    assert saved.exists() and first.exists()

    def no_fit(*args, **kwargs):
        raise AssertionError("report --posterior must not fit")

    monkeypatch.setattr(bayesrank.inference, "fit", no_fit)
    second = tmp_path / "second.html"
    capsys.readouterr()
    assert main(["report", "--posterior", str(saved), "--baselines", "avg",
                 "-o", str(second)]) == 0
    assert f"wrote {second}" in capsys.readouterr().out
    text = second.read_text()
    assert "bayesrank report: bayes" in text and "Posterior-predictive checks" in text
    zarr_store = br.load_posterior(saved).save(tmp_path / "fit.zarr")
    third = tmp_path / "third.html"
    assert main(["report", "--posterior", str(zarr_store), "--baselines", "avg",
                 "-o", str(third)]) == 0
    assert third.exists()
    code = main(["report", str(data), "--posterior", str(saved), "-o", str(second)])
    assert code == 2 and "--posterior renders a saved fit as it is; drop DATA" in (
        capsys.readouterr().err)


def test_public_api_is_listed():
    names = dir(br)
    for name in ("fit", "load", "run_study", "load_posterior", "rank", "ResponseData"):
        assert name in names
    assert br.load_posterior.__module__ == "bayesrank.analysis.persist"
