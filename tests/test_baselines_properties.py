"""Invariances every deterministic rule must respect (all registered identifiers)."""

from __future__ import annotations

import numpy as np
import pytest

import bayesrank
from bayesrank import DisconnectedGraphError, NotIdentifiedError, ResponseData

ALL = bayesrank.methods()
IDENTIFIERS = ALL["identifier"].tolist()
MODULE = {i: bayesrank.registry.get_method(i).function.__module__.rsplit(".", 1)[-1]
          for i in IDENTIFIERS}
# Rules that consume question-trial events in sequence (their order matters by design).
SEQUENTIAL = {i for i in IDENTIFIERS if i.split("_")[0] in {"elo", "glicko", "trueskill"}}
# Longitudinal IRT reads the trial axis as time.
TRIAL_ORDERED = {i for i in IDENTIFIERS if i.startswith("dynamic_irt")}


def _simulated(seed: int, L: int = 6, M: int = 24, N: int = 6) -> ResponseData:
    """Binary data from a logistic model with well-separated abilities (no exact ties)."""
    rng = np.random.default_rng(seed)
    ability = np.linspace(-1.5, 1.5, L)[rng.permutation(L)]
    difficulty = rng.normal(0, 1.2, M)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :])))
    R = (rng.random((L, M, N)) < p[..., None]).astype(np.int8)
    R0 = (rng.random((L, M, 1)) < p[..., None]).astype(np.int8)
    return ResponseData(R, R0=R0)


DATA = _simulated(11)


def _outcome(data: ResponseData, identifier: str):
    """The Ranking, or the identification error a rule may legitimately raise."""
    try:
        return bayesrank.rank(data, identifier)
    except (NotIdentifiedError, DisconnectedGraphError) as exc:
        return exc


class _Baseline(dict):
    def __missing__(self, identifier):
        self[identifier] = _outcome(DATA, identifier)
        return self[identifier]


@pytest.fixture(scope="module")
def baseline_scores():
    return _Baseline()


def _same_outcome(result, expected, order=None):
    if isinstance(expected, Exception):
        assert type(result) is type(expected), f"expected {expected!r}, got {result!r}"
        return
    assert not isinstance(result, Exception), result
    ranks = expected.ranks if order is None else expected.ranks[order]
    np.testing.assert_array_equal(result.ranks, ranks)


@pytest.mark.parametrize("identifier", IDENTIFIERS)
def test_scores_finite_and_ranks_valid(identifier, baseline_scores):
    result = baseline_scores[identifier]
    if isinstance(result, Exception):
        assert "MAP" in str(result) or "connected" in str(result), result
        return
    assert result.scores.shape == (DATA.L,)
    assert np.all(np.isfinite(result.scores)), result.scores
    assert result.ranks.min() == 1 and result.ranks.max() <= DATA.L
    assert result.models == DATA.models


@pytest.mark.parametrize("identifier", IDENTIFIERS)
def test_permuting_models_permutes_ranks(identifier, baseline_scores):
    perm = np.random.default_rng(5).permutation(DATA.L)
    permuted = DATA.subset(models=perm.tolist())
    result = _outcome(permuted, identifier)
    _same_outcome(result, baseline_scores[identifier], order=perm)
    if not isinstance(result, Exception):
        assert result.models == tuple(DATA.models[i] for i in perm)


@pytest.mark.parametrize("identifier", sorted(set(IDENTIFIERS) - SEQUENTIAL))
def test_permuting_questions_changes_nothing(identifier, baseline_scores):
    perm = np.random.default_rng(6).permutation(DATA.M)
    result = _outcome(DATA.subset(questions=perm.tolist()), identifier)
    _same_outcome(result, baseline_scores[identifier])


REPLICATION_INVARIANT = [
    i
    for i in IDENTIFIERS
    if i in {"avg", "bayes", "bradley_terry", "bradley_terry_davidson", "rao_kupper",
             "plackett_luce"}
    or MODULE[i] == "voting"
]


@pytest.mark.parametrize("identifier", REPLICATION_INVARIANT)
def test_replicating_trials_changes_nothing(identifier, baseline_scores):
    doubled = ResponseData(np.concatenate([DATA.R, DATA.R], axis=2), models=DATA.models)
    _same_outcome(_outcome(doubled, identifier), baseline_scores[identifier])


def test_every_paper_identifier_is_registered():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from scorio_calls import PAPER_METHODS

    paper = set(ALL.loc[ALL["in_paper"], "identifier"])
    assert paper == set(PAPER_METHODS)
    assert len(paper) == 72
    assert "davidson_luce" in IDENTIFIERS and "davidson_luce_map" in IDENTIFIERS
