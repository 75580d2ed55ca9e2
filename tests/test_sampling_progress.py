"""Progress bar of the NumPyro (JAX) sampling path: shown when asked, silent otherwise,
one bar per batch, and never a change to the draws.

Compiling a NUTS program takes ~10 s here, so the sampling tests are few and each
compiles what it needs once (pytest-xdist may send them to different workers).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("jax")
pytest.importorskip("numpyro")

from bayesrank.inference import fitting  # noqa: E402
from bayesrank.inference.fitting import fit, fit_many  # noqa: E402
from bayesrank.inference.jax_nuts import ProgressBar  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::bayesrank.inference.diagnostics.SamplingWarning")

# An unusual size/setting combination, so that no other test has compiled these programs.
TUNE, DRAWS, CHAINS = 150, 100, 3
TOTAL = TUNE + DRAWS
EVERY = TOTAL // 100  # a report every ~1% of the iterations, and on the last one
RUN = dict(draws=DRAWS, tune=TUNE, chains=CHAINS, random_seed=7)
BAR_TEXT = ("Compiling", f"/{TOTAL}", "divergences", "chains", "warm-up", "sampling")


def tensor(seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).random((4, 6, 5)) < 0.5).astype(np.int8)


def reported_iterations() -> list[int]:
    return sorted({*range(EVERY, TOTAL + 1, EVERY), TOTAL})


def assert_silent(out: str, err: str) -> None:
    for text in BAR_TEXT:
        assert text not in err and text not in out


@pytest.fixture
def reports(monkeypatch):
    """Every (iteration, divergences) the compiled program reports to a bar."""
    seen: list[tuple[int, int]] = []
    original = ProgressBar.update

    def record(self, iteration, divergences):
        seen.append((iteration, divergences))
        original(self, iteration, divergences)

    monkeypatch.setattr(ProgressBar, "update", record)
    return seen


def test_fit_bar_on_stderr_when_asked_silent_otherwise_same_draws(capfd, monkeypatch, reports):
    data = tensor(0)
    with_bar = fit(data, "rasch", sampler="numpyro", progressbar=True, **RUN)
    out, err = capfd.readouterr()
    assert f"{TOTAL}/{TOTAL}" in err and "sampling 3 chains" in err and "divergences" in err
    assert f"/{TOTAL}" not in out

    # reports come from inside the compiled program every ~1%, through warm-up and sampling
    assert EVERY > 1 and [i for i, _ in reports] == reported_iterations()
    divergences = [n for _, n in reports]
    assert divergences[: TUNE // EVERY] == [0] * (TUNE // EVERY)  # counted while sampling only
    assert divergences == sorted(divergences)
    assert divergences[-1] == int(with_bar.idata.sample_stats["diverging"].values.sum())

    reports.clear()
    without = fit(data, "rasch", sampler="numpyro", progressbar=False, **RUN)
    assert_silent(*capfd.readouterr())
    assert reports == []
    np.testing.assert_array_equal(with_bar.theta.values, without.theta.values)
    for name in ("lp", "step_size", "n_steps", "diverging"):
        np.testing.assert_array_equal(
            with_bar.idata.sample_stats[name].values, without.idata.sample_stats[name].values
        )

    # fit_many passes progressbar=False through (one dataset: the program above, reused)
    monkeypatch.setattr(fitting, "default_progressbar", lambda: True)
    fit_many([data], "rasch", sampler="numpyro", progressbar=False, **RUN)
    assert_silent(*capfd.readouterr())
    assert reports == []


def test_fit_many_shows_one_bar_for_the_whole_batch(capfd, monkeypatch, reports):
    monkeypatch.setattr(fitting, "default_progressbar", lambda: True)
    # progressbar=None: the default
    fit_many([tensor(3), tensor(4)], "rasch", sampler="numpyro", **RUN)
    err = capfd.readouterr().err
    # only this test samples 2 datasets with a bar, so its program is compiled here, first
    assert err.index("Compiling NUTS (2 datasets x 3 chains)") < err.index(f"{TOTAL}/{TOTAL}")
    # one report per reported iteration for all 6 chains, not one per chain
    assert [i for i, _ in reports] == reported_iterations()


def test_plain_line_when_rich_is_missing(capfd, monkeypatch):
    monkeypatch.setitem(sys.modules, "rich.console", None)  # the import fails
    bar = ProgressBar(tune=2, draws=3, label="4 chains")
    bar.message("Compiling NUTS (4 chains) ...")
    bar.start()
    for i in range(1, 6):
        bar.update(i, i // 4)
    bar.close()
    err = capfd.readouterr().err
    lines = err.split("\n")
    assert lines[0] == "Compiling NUTS (4 chains) ..."
    updates = lines[1].split("\r")[1:]
    assert len(updates) == 5 and lines[2:] == [""]
    assert updates[0].startswith("warm-up  4 chains 1/5 iterations, 0 divergences")
    assert updates[-1].startswith("sampling 4 chains 5/5 iterations, 1 divergences")
