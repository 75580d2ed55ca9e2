"""A compiled IRT model reused for other data of the same shapes computes that data's density.

bayesrank reuses a compiled model when the data shapes and variable names
match (bayesrank.inference.cache.structure_key) and swaps only the ``pm.Data``
values.  The positions of the informed questions (solved at least once and
missed at least once) shape the IRT graphs, so they must travel as data: before
issue 9's second round they were constants and a reused model kept the first
data's positions.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytest
from bayesrank.models import irt


def same_shapes_other_positions():
    rng = np.random.default_rng(0)
    first = (rng.uniform(size=(5, 8, 3)) < 0.5).astype(np.int8)
    first[:, 0], first[:, 1] = 0, 1  # never and always solved
    return first, first[:, ::-1].copy()  # the same counts, at other positions


@pytest.mark.parametrize("centered", [True, False])
@pytest.mark.parametrize("kind", irt.KINDS)
def test_swapped_data_give_the_density_of_a_fresh_build(kind, centered, numpy_graphs):
    first, second = same_shapes_other_positions()
    reused = irt.build(first, kind=kind, centered=centered)
    fresh = irt.build(second, kind=kind, centered=centered)
    rng = np.random.default_rng(1)
    start = fresh.initial_point()
    point = {k: v + 0.3 * rng.standard_normal(np.shape(v)) for k, v in start.items()}
    with reused:
        pm.set_data({v.name: v.get_value() for v in fresh.data_vars})
    assert reused.compile_logp()(point) == pytest.approx(fresh.compile_logp()(point), rel=1e-12)
