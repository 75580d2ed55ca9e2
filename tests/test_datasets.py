"""The bundled simulated example: reproducible, calibrated, honestly labelled."""

from __future__ import annotations

import numpy as np
import pytest

import bayesrank
from bayesrank import DataError, datasets
from bayesrank.datasets import _generate


def test_committed_archives_equal_a_fresh_generation():
    topp, greedy, models = _generate.generate()
    for key in datasets.EXAMPLE_KEYS:
        d = datasets.example(key)
        np.testing.assert_array_equal(d.R, topp[key])
        np.testing.assert_array_equal(d.R0, greedy[key])
        assert list(d.models) == models


def test_shapes_and_layout():
    d = datasets.example("combined")
    assert d.shape == (20, 120, 80) and d.R0.shape == (20, 120, 1) and d.is_binary
    assert d.questions[0] == "aime24_q01" and d.questions[-1] == "brumo_2025_q30"
    with np.load(datasets.example_path()) as archive:  # the paper authors' layout
        assert set(archive.files) == set(datasets.EXAMPLE_KEYS)
    part = datasets.example("hmmt_feb_2025", greedy_prior=False)
    assert part.shape == (20, 30, 80) and part.R0 is None
    with pytest.raises(DataError, match="unknown example"):
        datasets.example("gsm8k")


def test_calibrated_to_published_accuracy_table():
    table = _generate.calibration_table()
    for name, key in _generate.BENCHMARKS.items():
        rows = table[table["benchmark"] == name]
        d = datasets.example(key)
        accuracy = d.R.mean(axis=(1, 2))
        # Mean of 2,400 Bernoulli draws around the target: within 4 standard errors.
        assert np.all(np.abs(accuracy - rows["top_p_mean"].to_numpy()) < 0.045)
        trial_sd = d.R.mean(axis=1).std(axis=1).mean()
        assert trial_sd == pytest.approx(rows["top_p_std"].mean(), rel=0.15)
        greedy = d.R0[..., 0].mean(axis=1)
        assert np.corrcoef(greedy, rows["greedy_acc"])[0, 1] > 0.8
        # greedy and sampling disagree, as in the paper (tau_G-S well below 1)
        assert bayesrank.kendall_tau(greedy, accuracy) < 0.95


def test_documented_as_simulated():
    assert "SIMULATED" in datasets.__doc__
    readme = (datasets.HERE / "README.md").read_text()
    assert "simulated" in readme.lower() and "not real" in readme.lower()
