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


# ------------------------------------------------------------ the real LiveCodeBench set
def test_livecodebench_shape_names_and_license_file():
    d = datasets.livecodebench()
    assert (d.L, d.M, d.N) == (15, 713, 10)
    assert d.models[0] == "Qwen2-Ins-72B" and "Claude-3.5-Sonnet-20241022" in d.models
    assert len(set(d.questions)) == 713
    # the site's full-window Pass@1 (SOURCE.md table), recomputed as mean(R) * 100
    means = dict(zip(d.models, d.R.mean(axis=(1, 2)) * 100, strict=True))
    assert means["Claude-3.5-Sonnet-20241022"] == pytest.approx(57.994, abs=5e-4)
    assert means["LLama3.1-8b-Ins"] == pytest.approx(20.701, abs=5e-4)
    attribution = datasets.livecodebench_path().with_name("LIVECODEBENCH_ATTRIBUTION.md")
    text = attribution.read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in text and "arXiv:2403.07974" in text
    assert "5c2f1ca09d4a4f0e87677dd2f36ff1cca915a88c" in text


def test_livecodebench_matches_the_shared_source(shared_dir):
    z = np.load(shared_dir / "data" / "real_lcb_repair_2024_10" / "R.npz")
    d = datasets.livecodebench()
    np.testing.assert_array_equal(d.R, z["repair"])
    assert list(d.models) == [str(m) for m in z["models"]]
    assert list(d.questions) == [str(q) for q in z["questions"]]


def test_livecodebench_is_read_by_the_cli_path_loader():
    d = bayesrank.load(datasets.livecodebench_path())
    np.testing.assert_array_equal(d.R, datasets.livecodebench().R)
