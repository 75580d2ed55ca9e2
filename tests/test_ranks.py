"""Rank conventions and Kendall's tau-b."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from bayesrank import kendall_tau, scores_to_ranks


def test_tie_conventions():
    s = [95.0, 87.5, 87.5, 80.0]
    assert scores_to_ranks(s).tolist() == [1, 2, 2, 4]
    assert scores_to_ranks(s, "dense").tolist() == [1, 2, 2, 3]
    assert scores_to_ranks(s, "average").tolist() == [1, 2.5, 2.5, 4]
    assert scores_to_ranks(s, "ordinal").tolist() == [1, 2, 3, 4]


def test_float_noise_does_not_split_ties():
    assert scores_to_ranks([2 / 3, 0.1 + 0.2, 0.3]).tolist() == [1, 2, 2]
    assert scores_to_ranks([1.0, 1.0 + 1e-6]).tolist() == [2, 1]


def test_kendall_tau_b_matches_scipy_with_ties():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 4, 30), rng.integers(0, 4, 30)
    assert kendall_tau(a, b) == pytest.approx(stats.kendalltau(a, b).statistic)
    assert np.isnan(kendall_tau([1, 1, 1], [1, 2, 3]))


def test_bad_scores():
    with pytest.raises(ValueError, match="finite"):
        scores_to_ranks([1.0, np.nan])
    with pytest.raises(ValueError, match="tie convention"):
        scores_to_ranks([1.0, 2.0], "olympic")  # type: ignore[arg-type]
