"""The beta-binomial log-pmf of the IRT models against scipy, from heavy over-dispersion to
the binomial limit (models.irt.log_rising_steps)."""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
import pytest
from bayesrank.models.irt import _beta_binomial_logp
from scipy import special, stats


def logpmf_without_binomial_coefficient(k, n, p, phi):
    log_steps = np.log(np.arange(1.0, n.max()))
    value = _beta_binomial_logp(
        pt.as_tensor(k), pt.as_tensor(n), pt.as_tensor(np.log(p)), pt.as_tensor(np.log1p(-p)),
        pt.as_tensor(-np.log(phi)), pt.as_tensor(0.0), log_steps=pt.as_tensor(log_steps),
    )
    return value.eval()


@pytest.fixture
def cells():
    rng = np.random.default_rng(0)
    n = rng.integers(0, 13, size=(7, 9)).astype(float)
    k = np.floor(rng.uniform(size=n.shape) * (n + 1))
    return k, n, rng.uniform(0.001, 0.999, size=n.shape)


# scipy's betabinom takes gammaln differences of arguments near phi, which lose about
# log10(phi) of their 16 digits; the tolerance follows that, not our result
@pytest.mark.parametrize(("phi", "atol"), [(0.05, 1e-12), (0.3, 1e-12), (2.0, 1e-12),
                                           (50.0, 1e-12), (1e4, 1e-9)])
def test_beta_binomial_logpmf_is_scipys(cells, phi, atol):
    k, n, p = cells
    expected = stats.betabinom.logpmf(k, n, p * phi, (1 - p) * phi) - np.log(special.comb(n, k))
    got = logpmf_without_binomial_coefficient(k, n, p, phi)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=atol)


def test_beta_binomial_tends_to_the_binomial(cells):
    # at phi = 1e12 scipy's gammaln differences have lost their digits; the exact
    # difference from the binomial is below sum_i i / (p phi) < 1e-7 here
    k, n, p = cells
    binomial = stats.binom.logpmf(k, n, p) - np.log(special.comb(n, k))
    got = logpmf_without_binomial_coefficient(k, n, p, 1e12)
    np.testing.assert_allclose(got, binomial, rtol=0, atol=1e-7)
    assert np.all(np.isfinite(got))
