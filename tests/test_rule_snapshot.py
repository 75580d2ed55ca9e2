"""Every paper identifier gives today's scores, per draw and stacked (issue 51, item 3).

The oracle is ``tests/rule_snapshot.npz``, written by ``tests/_rule_snapshot.py`` from the
code of main at commit 091c985 (before the per-draw and batched paths were merged into one
implementation per rule), on the bundled example and LiveCodeBench sets and the real sets
of ``/work/shared/data`` (cut to a few models and questions).  The comparison is exact:
scores bit for bit (NaN where a draw was not scored), ranks, and every one-line reason a
draw could not be ranked.
"""

from __future__ import annotations

import _rule_snapshot as snap
import numpy as np
import pytest

SNAPSHOT = np.load(snap.SNAPSHOT, allow_pickle=False)
CASES = sorted({key.split("/")[0] for key in SNAPSHOT.files})


def _absent(case: str) -> bool:
    return case not in snap.cases()


@pytest.mark.parametrize("case", CASES)
def test_every_identifier_reproduces_the_snapshot(case):
    if _absent(case):
        pytest.skip(f"the real set of case {case!r} is not in ../shared/data")
    got = snap.compute(case)
    want = {k: SNAPSHOT[k] for k in SNAPSHOT.files if k.startswith(f"{case}/")}
    assert sorted(got) == sorted(want)
    differ = []
    for key, ref in want.items():
        value = got[key]
        same = (np.array_equal(ref, value, equal_nan=True) if ref.dtype.kind == "f"
                else np.array_equal(ref, value))
        if not same:
            differ.append(key)
    assert differ == []


def test_the_snapshot_covers_all_72_identifiers_on_every_case():
    for case in CASES:
        names = {k.split("/")[1] for k in SNAPSHOT.files if k.startswith(f"{case}/")}
        assert names == set(snap.PAPER)
    assert len(snap.PAPER) == 72


def test_the_snapshot_exercises_both_paths():
    # most identifiers are scored on the stack and on each draw, so a change in either
    # path shows; a few fail on some draws (their reasons are compared too)
    stacked = [k for k in SNAPSHOT.files if k.endswith("/stacked")]
    scored = [k for k in stacked if np.isfinite(SNAPSHOT[k]).any()]
    assert len(scored) > 0.8 * len(stacked)
    reasons = [k for k in SNAPSHOT.files if k.endswith("/perdraw_reason")]
    assert any((SNAPSHOT[k] != "").any() for k in reasons)
