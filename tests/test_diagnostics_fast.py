"""Vectorised R-hat / bulk ESS / tail ESS against ArviZ's element-by-element oracle."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from bayesrank.errors import DataError
from bayesrank.inference.diagnostics import (
    convergence,
    ess_bulk,
    ess_tail,
    rhat_rank,
    summarize,
)

RTOL = 1e-10


def arviz_reference(draws: np.ndarray) -> dict[str, np.ndarray]:
    """az.rhat (rank), az.ess bulk and tail of an array (chain, draw, *shape)."""
    dims = ("chain", "draw", *(f"dim_{i}" for i in range(draws.ndim - 2)))
    data = xr.Dataset({"x": (dims, draws)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return {
            "rhat": az.rhat(data)["x"].values,
            "bulk": az.ess(data, method="bulk")["x"].values,
            "tail": az.ess(data, method="tail")["x"].values,
        }


def tail_readings(draws: np.ndarray) -> list[np.ndarray]:
    """ArviZ's tail ESS of ``draws`` (chain, draw, *shape) read from its indicators I and
    from their rank-normal z-scores (ArviZ's bulk ESS of I): equal in exact arithmetic, a
    two-valued array's z-scores being an affine copy of it.  Where a pair sum of Geyer's
    sequence is exactly 0 in exact arithmetic, rounding decides where the sum stops, and
    ArviZ itself gives different values for the two (found by this test's examples: a
    (3, 23) draw of 0s and -1s, 55.53 from I, 52.22 from its z-scores)."""
    flat = draws.reshape(draws.shape[0], draws.shape[1], -1)
    probs = sorted((az.rcParams["stats.ci_prob"], 1 - az.rcParams["stats.ci_prob"]))
    readings = []
    for method in ("mean", "bulk"):
        out = np.empty(flat.shape[-1])
        for e in range(flat.shape[-1]):
            x = flat[..., e]
            sides = []
            for q in np.quantile(x.reshape(-1), probs):
                ds = xr.Dataset({"x": (("chain", "draw"), (x <= q).astype(float))})
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    sides.append(float(az.ess(ds, method=method)["x"]))
            out[e] = min(sides) if not np.isnan(sides).any() else np.nan
        readings.append(out.reshape(draws.shape[2:]))
    return readings


def ours(draws: np.ndarray) -> dict[str, np.ndarray]:
    return {"rhat": rhat_rank(draws), "bulk": ess_bulk(draws), "tail": ess_tail(draws)}


def assert_matches_arviz(draws: np.ndarray) -> dict[str, np.ndarray]:
    """The three separate functions and the one-pass convergence() all equal ArviZ."""
    expected = arviz_reference(draws)
    one_pass = dict(zip(("rhat", "bulk", "tail"), convergence(draws), strict=True))
    for got in (ours(draws), one_pass):
        for key in expected:
            assert got[key].shape == expected[key].shape, key
            if key == "tail" and not np.allclose(got[key], expected[key], rtol=RTOL,
                                                 atol=0, equal_nan=True):
                # only where ArviZ's own reading is decided by rounding: one of them
                readings = tail_readings(draws)
                assert any(not np.allclose(r, expected[key], rtol=RTOL, atol=0,
                                           equal_nan=True) for r in readings), key
                assert any(np.allclose(got[key], r, rtol=RTOL, atol=0, equal_nan=True)
                           for r in readings), key
                continue
            np.testing.assert_allclose(
                got[key], expected[key], rtol=RTOL, atol=0, equal_nan=True, err_msg=key
            )
    return expected


def ar1(rng, phi, shape):
    noise = rng.standard_normal(shape)
    out = np.empty(shape)
    out[:, 0] = noise[:, 0]
    for t in range(1, shape[1]):
        out[:, t] = phi * out[:, t - 1] + noise[:, t]
    return out


RNG_CASES = {
    "normal": lambda rng: rng.standard_normal((4, 200, 6)),
    "ar1_strong": lambda rng: ar1(rng, 0.95, (4, 300, 5)),
    "ar1_negative": lambda rng: ar1(rng, -0.6, (4, 150, 5)),
    "random_walk": lambda rng: rng.standard_normal((4, 100, 3, 2)).cumsum(axis=1),
    "cauchy": lambda rng: rng.standard_cauchy((4, 200, 6)),
    "shifted_chains": lambda rng: rng.standard_normal((4, 100, 5)) + np.arange(4)[:, None, None],
    "integers": lambda rng: rng.integers(0, 4, (4, 80, 8)).astype(float),
    "binary": lambda rng: rng.integers(0, 2, (4, 60, 8)).astype(float),
    "odd_draws": lambda rng: ar1(rng, 0.5, (3, 101, 4)),
    "one_chain": lambda rng: ar1(rng, 0.3, (1, 120, 4)),
    "two_draws": lambda rng: rng.standard_normal((4, 2, 3)),
    "scalar": lambda rng: rng.standard_normal((4, 50)),
}


@pytest.mark.parametrize("case", sorted(RNG_CASES))
def test_matches_arviz_on_typical_and_awkward_posteriors(case):
    assert_matches_arviz(RNG_CASES[case](np.random.default_rng(11)))


def test_shifted_chains_give_large_rhat():
    rng = np.random.default_rng(2)
    expected = assert_matches_arviz(
        rng.standard_normal((4, 100, 3)) + 3 * np.arange(4)[:, None, None]
    )
    assert np.all(expected["rhat"] > 1.5)


def test_constant_elements_follow_arviz():
    rng = np.random.default_rng(3)
    draws = rng.standard_normal((4, 60, 3))
    draws[:, :, 1] = 2.5  # constant everywhere
    draws[:, :, 2] = np.arange(4)[:, None]  # constant within each chain
    expected = assert_matches_arviz(draws)
    assert np.isnan(expected["rhat"][1])  # the case the summarize() frame must keep NaN
    assert expected["bulk"][1] == 4 * 60


def test_symmetric_binary_element_keeps_bulk_rhat():
    """Folded draws all equal (tail R-hat NaN): ArviZ then reports the bulk R-hat."""
    draws = np.tile(np.array([0.0, 1.0]), (2, 20))[:, :, None]
    draws[1] = 1 - draws[1]
    expected = assert_matches_arviz(draws)
    assert np.isfinite(expected["rhat"]).all()


def test_nan_draw_gives_nan_for_that_element_only():
    draws = np.random.default_rng(4).standard_normal((4, 50, 3))
    draws[2, 7, 1] = np.nan
    expected = assert_matches_arviz(draws)
    assert np.isnan(expected["bulk"][1]) and np.isfinite(expected["bulk"][[0, 2]]).all()


@pytest.mark.parametrize("n_draw", range(3, 14))
def test_short_chains_every_length(n_draw):
    rng = np.random.default_rng(n_draw)
    assert_matches_arviz(rng.standard_normal((2, n_draw, 20)))
    assert_matches_arviz(rng.integers(0, 2, (1, n_draw, 20)).astype(float))


def test_explicit_tail_probability_matches_arviz():
    draws = ar1(np.random.default_rng(5), 0.7, (4, 120, 4))
    data = xr.Dataset({"x": (("chain", "draw", "k"), draws)})
    expected = az.ess(data, method="tail", prob=(0.05, 0.95))["x"].values
    np.testing.assert_allclose(ess_tail(draws, prob=0.95), expected, rtol=RTOL, atol=0)


def test_does_not_write_into_the_callers_array():
    draws = np.random.default_rng(6).standard_normal((2, 40, 1))
    draws[0, 3, 0] = np.nan
    before = draws.copy()
    ess_bulk(draws)
    np.testing.assert_array_equal(draws, before)


def test_bad_input_is_named():
    with pytest.raises(DataError, match="shape"):
        ess_bulk(np.zeros(10))
    with pytest.raises(DataError, match="prob"):
        ess_tail(np.zeros((2, 10)), prob=1.5)


draw_values = st.one_of(
    st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
    st.integers(-3, 3).map(float),  # ties, as in discrete parameters
)


@settings(max_examples=80, deadline=None)
@given(
    draws=st.tuples(st.integers(1, 4), st.integers(2, 30), st.integers(1, 3)).flatmap(
        lambda shape: arrays(np.float64, shape, elements=draw_values)
    )
)
def test_matches_arviz_on_arbitrary_draws(draws):
    assert_matches_arviz(draws)


def test_a_tail_ess_at_a_geyer_pair_sum_of_zero_is_one_of_arvizs_readings():
    """An example this test's search found (2026-12-07): 8 of 69 draws -1, the rest 0, in
    3 chains of 23.  The tail indicator's pair sum is 0 in exact arithmetic; ArviZ reads
    55.53 from the indicator and 52.22 from its z-scores, and ours is 52.22."""
    draws = np.zeros((3, 23, 1))
    draws[0, [3, 18], 0] = -1.0
    draws[1, [3, 6], 0] = -1.0
    draws[2, [3, 6, 7, 9], 0] = -1.0
    assert ess_tail(draws)[0] != pytest.approx(arviz_reference(draws)["tail"][0], rel=RTOL)
    assert_matches_arviz(draws)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    phi=st.floats(-0.95, 0.99),
    n_chain=st.integers(1, 4),
    n_draw=st.integers(4, 120),
)
def test_matches_arviz_on_autocorrelated_chains(seed, phi, n_chain, n_draw):
    assert_matches_arviz(ar1(np.random.default_rng(seed), phi, (n_chain, n_draw, 3)))


def arviz_summary_frame(idata) -> pd.DataFrame:
    """The ArviZ-based worst-element columns, shared with the benchmark's peer."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_diagnostics import summarize_arviz

    return summarize_arviz(idata)


def test_summarize_frame_equals_the_arviz_based_one():
    rng = np.random.default_rng(7)
    stuck = rng.standard_normal((4, 300, 5))
    stuck[:, :, 0] = 1.0  # one constant element: its NaN R-hat is skipped, not propagated
    idata = az.from_dict(
        {
            "posterior": {
                "theta": ar1(rng, 0.8, (4, 300, 7)),
                "b": rng.standard_cauchy((4, 300, 3, 2)),
                "stuck": stuck,
                "all_constant": np.ones((4, 300)),
                "k": rng.integers(0, 3, (4, 300, 4)),
            },
            "sample_stats": {
                "diverging": np.zeros((4, 300), bool),
                "energy": rng.normal(size=(4, 300)),
            },
        }
    )
    frame = summarize(idata)
    expected = arviz_summary_frame(idata)
    assert list(frame.columns) == ["size", "r_hat", "ess_bulk", "ess_tail", "passed"]
    assert frame["size"].tolist() == [7, 6, 5, 1, 4]
    np.testing.assert_allclose(
        frame[expected.columns].to_numpy(), expected.to_numpy(), rtol=RTOL, atol=0, equal_nan=True
    )
    assert np.isnan(frame.loc["all_constant", "r_hat"])
    bfmi = az.bfmi(idata["sample_stats"].to_dataset()[["energy"]])["energy"].values
    np.testing.assert_allclose(frame.attrs["bfmi"], bfmi, rtol=RTOL)
    assert frame.attrs["draws"] == 1200 and frame.attrs["divergences"] == 0


def test_elements_split_over_several_blocks_match_arviz(monkeypatch):
    import bayesrank.inference.diagnostics as diagnostics

    monkeypatch.setattr(diagnostics, "_DRAWS_PER_BLOCK", 4 * 40 * 3)  # three elements a block
    draws = ar1(np.random.default_rng(8), 0.6, (4, 40, 4, 5))
    draws[1, 5, 3, 2] = np.nan  # in a later block
    draws[:, :, 2, 4] = -1.0
    expected = assert_matches_arviz(draws)
    assert np.isnan(expected["bulk"][3, 2]) and np.isnan(expected["rhat"][2, 4])


def test_default_draws_keep_chance_from_failing_rhat_on_many_parameters():
    """The largest of P R-hats of well-mixing chains: over 1.01 at 1,000 draws, not at the default.

    AR(1) chains with the bulk ESS per draw default_draws assumes (0.35); the
    formula's prediction 1 + (x_P / e - 1) / D matches the simulated largest
    R-hat to 0.0015.
    """
    from scipy import stats
    from scipy.signal import lfilter

    from bayesrank.inference.diagnostics import default_draws

    n_params, ess_per_draw = 2000, 0.35
    rho = (1 - ess_per_draw) / (1 + ess_per_draw)
    assert default_draws(n_params) > 1000
    largest = {}
    for n_draw in (1000, default_draws(n_params)):
        largest[n_draw] = []
        for seed in range(3):
            noise = np.random.default_rng(seed).standard_normal((4, n_draw + 100, n_params))
            chains = lfilter([1.0], [1.0, -rho], noise, axis=1)[:, 100:]
            largest[n_draw].append(rhat_rank(chains).max())
        predicted = 1 + (stats.chi2.ppf(1 - 1 / n_params, 7) / 7 / ess_per_draw - 1) / n_draw
        assert np.mean(largest[n_draw]) == pytest.approx(predicted, abs=0.0015)
    assert max(largest[1000]) > 1.01
    assert max(largest[default_draws(n_params)]) <= 1.01


@pytest.mark.slow
@pytest.mark.extended("300 simulated fits' R-hats take about a minute on 2 cores")
def test_default_draws_keep_the_chance_of_a_false_alarm_below_five_percent():
    """Well-mixing chains of 300 parameters: 1,000 draws fail R-hat <= 1.01 in about 1 fit
    of 10 (the LiveCodeBench 2PL's rate), the default draws (1,250) in under 1 of 20.

    AR(1) chains with the ESS per draw default_draws assumes (0.35), 150 simulated fits
    at each length; the union bound P x chi2.sf gives 9.7% and 0.8%.
    """
    from scipy.signal import lfilter

    from bayesrank.inference.diagnostics import default_draws

    n_params, ess_per_draw, fits = 300, 0.35, 150
    rho = (1 - ess_per_draw) / (1 + ess_per_draw)
    rng = np.random.default_rng(0)
    failed = {}
    for n_draw in (1000, default_draws(n_params)):
        largest = []
        for _ in range(fits):
            noise = rng.standard_normal((4, n_draw + 100, n_params))
            largest.append(rhat_rank(lfilter([1.0], [1.0, -rho], noise, axis=1)[:, 100:]).max())
        failed[n_draw] = np.mean(np.array(largest) > 1.01)
    assert failed[1000] > 0.05
    assert failed[default_draws(n_params)] < 0.05


def test_default_draws_grow_with_parameters_and_fewer_chains():
    from bayesrank.inference.diagnostics import default_draws

    assert default_draws(10) == default_draws(146) == 1000
    assert default_draws(300) == 1250
    sizes = [10, 300, 1000, 3000, 10_000, 100_000]
    assert np.all(np.diff([default_draws(p) for p in sizes]) >= 0)
    assert default_draws(9111) == 1500  # the 2PL on Reasoning Gym hard (10 x 4,550)
    assert default_draws(9111, ess_per_draw=0.7) == 1000
    assert default_draws(1000, chains=2) > default_draws(1000, chains=4)
    assert all(default_draws(p) % 250 == 0 for p in sizes)
