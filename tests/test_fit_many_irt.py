"""``fit_many`` batches IRT fits of datasets whose informed questions differ.

The paper's N = 1 protocol fits many single-trial subsamples of one benchmark:
every subsample has the same (L, M, N) but its own questions that no model (or
every model) solved.  The IRT models treat those questions apart (issue 9), so
the split must be data, not a shape: a batch of such subsamples is one
structure (one compiled program), and each fit sees its own split.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from bayesrank.models import get_model

from bayesrank import ResponseData, fit_many
from bayesrank.inference.cache import structure_key
from bayesrank.inference.diagnostics import SamplingWarning

pytest.importorskip("numpyro")


def subsamples(L: int = 5, M: int = 8, N: int = 3) -> list[ResponseData]:
    """Datasets of one shape: all questions informed, one never solved, two unsolved, and
    one model solving nothing (it stays out of the abilities' zero sum)."""
    rng = np.random.default_rng(11)
    eta = rng.normal(0, 1, (L, 1)) - rng.normal(0, 1, (1, M))
    R = (rng.random((L, M, N)) < 1 / (1 + np.exp(-eta))[..., None]).astype(int)
    R[0, :, 0], R[1, :, 0] = 1, 0  # every question solved at least once and failed once
    never_first, never_two = R.copy(), R.copy()
    never_first[:, 0] = 0
    never_two[:, [2, 5]] = 0
    zero_model = R.copy()
    zero_model[L - 1] = 0
    return [ResponseData(x) for x in (R, never_first, never_two, zero_model)]


@pytest.mark.parametrize("kind", ["rasch", "2pl", "3pl"])
def test_one_structure_whatever_questions_are_informed(kind):
    spec = get_model(kind)
    keys = {structure_key(spec.build(d), kind) for d in subsamples()}
    assert len(keys) == 1


@pytest.mark.parametrize("kind", ["rasch", "2pl"])
def test_fit_many_batches_datasets_with_different_unsolved_questions(kind):
    data = subsamples()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        posts = fit_many(data, kind, sampler="numpyro", random_seed=3, draws=200, tune=200,
                         chains=2, log_likelihood=False)
    assert [p.timings["batch_size"] for p in posts] == [4] * 4
    for d, p in zip(data, posts, strict=True):
        np.testing.assert_array_equal(p.idata.observed_data["k"].values, d.reductions.successes)
    # an unsolved question is harder than the solved ones in its own fit only
    b = [p.idata.posterior["b"].mean(("chain", "draw")).values for p in posts]
    assert b[1][0] > np.max(b[1][1:])
    assert b[2][2] > np.median(b[2]) and b[2][5] > np.median(b[2])
    assert b[0][0] < b[1][0]
    # each fit located on its own informed models: all of them, or all but the last
    theta = [p.idata.posterior["theta"].values for p in posts]
    np.testing.assert_allclose(theta[0].sum(axis=-1), 0.0, atol=1e-9)
    np.testing.assert_allclose(theta[3][..., :-1].sum(axis=-1), 0.0, atol=1e-9)
    assert theta[3][..., -1].mean() < theta[3][..., :-1].mean(axis=(0, 1)).min()
