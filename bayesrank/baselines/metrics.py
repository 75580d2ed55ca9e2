"""Metric-based rules: mean accuracy and the test-time-scaling metrics."""

from __future__ import annotations

import numpy as np

from bayesrank.data import ResponseData
from bayesrank.ranking import ranking_method
from bayesrank.registry import register


@ranking_method
def avg(data: ResponseData) -> np.ndarray:
    """Mean utility over questions and trials, (1/M) sum_m mean_n w[R_lmn] (paper: avg@N)."""
    return np.nanmean(data.reductions.cell_utility, axis=1)


register("avg", avg, "metrics")
