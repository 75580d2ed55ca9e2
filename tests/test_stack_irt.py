"""IRT rules over a DrawStack: the same abilities, ranks and failures as each draw alone.

The oracle is the per-draw path: :func:`bayesrank.study._core.safe_ranks` (ranks, or the
reason the rule cannot rank) and the registered rule function on
``ResponseData.subset`` of each draw, run without any stack machinery.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bayesrank as br
from bayesrank import ResponseData
from bayesrank.baselines._optim import check_ford_condition
from bayesrank.baselines.irt.xpl_batch import ford_condition_batch
from bayesrank.registry import get_method
from bayesrank.study._core import safe_ranks
from bayesrank.study.batched import (
    DrawStack,
    batched_scores,
    competition_ranks,
    rank_stack,
    stacked_scores,
)
from bayesrank.study.stack_irt import RULES

IRT = ["rasch", "rasch_map", "rasch_2pl", "rasch_2pl_map", "rasch_3pl", "rasch_3pl_map",
       "rasch_mml", "rasch_mml_credible", "dynamic_irt_linear", "dynamic_irt_growth"]
#: Identifiers that keep the per-draw path on draws of several trials (their rule returns
#: None on such a stack; on single-trial draws the growth model is the Rasch JML fit).
PER_DRAW = {"dynamic_irt_growth"}


def _rule_scores(sub: ResponseData, method: str) -> np.ndarray | None:
    """The registered rule's scores on one draw (None where it cannot rank)."""
    spec = get_method(method)
    try:
        out = spec.function.__wrapped_rule__(sub, **dict(spec.defaults))
    except (br.errors.DataError, br.errors.NotIdentifiedError):
        return None
    return np.asarray(out[0] if isinstance(out, tuple) else out, dtype=float)


def _check(data: ResponseData, draws, models=None, methods=IRT) -> None:
    """Batched scores, ranks and failures equal the per-draw ones for every method."""
    stack = DrawStack.from_data(data, draws)
    if models is not None:
        stack = stack.pool(np.asarray(models))
    for m in methods:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            scores = batched_scores(stack, m)
            if scores is None:
                assert m in PER_DRAW and stack.n_trials > 1, f"{m} fell back to the per-draw path"
                continue
            assert m not in PER_DRAW or stack.n_trials == 1
            scores, reasons = scores if isinstance(scores, tuple) else (scores, None)
            for d, idx in enumerate(draws):
                sub = data.subset(models=models, trials=idx)
                ref_ranks, reason, _ = safe_ranks(sub, m)
                ref_scores = _rule_scores(sub, m)
                if reasons is not None:
                    assert reasons[d] == reason, (m, d)
                if ref_ranks is None:
                    assert reason is not None
                    assert np.all(np.isnan(scores[d])), (m, d, reason)
                    continue
                np.testing.assert_array_equal(scores[d], ref_scores, err_msg=f"{m} draw {d}")
                np.testing.assert_array_equal(competition_ranks(scores[d]), ref_ranks,
                                              err_msg=f"{m} draw {d}")


def test_the_family_is_registered_under_its_base_rules():
    bases = {get_method(m).base for m in IRT}
    assert set(RULES) <= bases
    assert {get_method(m).base for m in IRT if m not in PER_DRAW} <= set(RULES)


@pytest.fixture(scope="module")
def aime() -> ResponseData:
    return br.datasets.example("aime24")


@pytest.mark.parametrize("size", [5, 10, 15])
def test_model_pools_of_the_example_match_the_per_draw_path(aime, size):
    rng = np.random.default_rng(size)
    draws = [np.array([t]) for t in rng.choice(aime.N, 8, replace=False)]
    models = np.sort(rng.choice(aime.L, size, replace=False))
    _check(aime, draws, models)


def test_rank_stack_reports_the_per_draw_failures(aime):
    """A stack with failing JML draws gives the per-draw ranks and reasons (no silent skip)."""
    models = np.arange(5)
    draws = [np.array([t]) for t in range(6)]
    stack = DrawStack.from_data(aime, draws).pool(models)
    out = rank_stack(stack, ["rasch_3pl", "rasch_2pl"])
    for m in ("rasch_3pl", "rasch_2pl"):
        for d, idx in enumerate(draws):
            ref, reason, _ = safe_ranks(aime.subset(models=models, trials=idx), m)
            assert out[m].reasons[d] == reason
            if ref is None:
                assert out[m].ranks[d] is None
            else:
                np.testing.assert_array_equal(out[m].ranks[d], ref)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(2, 5).flatmap(lambda L: st.integers(2, 7).flatmap(lambda M: st.tuples(
        st.lists(st.lists(st.lists(st.integers(0, 1), min_size=3, max_size=3),
                          min_size=M, max_size=M), min_size=L, max_size=L),
        st.sampled_from([1, 2]),
    )))
)
def test_small_binary_tensors_match_the_per_draw_path(case):
    R, width = case
    R = np.asarray(R)
    draws = [np.arange(t, t + width) for t in range(0, 3 - width + 1)]
    _check(ResponseData(R), draws)


def _degenerate() -> tuple[ResponseData, list[np.ndarray]]:
    """Draws with a perfect model, a hopeless one, ties, separation and no information."""
    R = np.zeros((4, 5, 6), dtype=int)
    base = np.array([[1, 1, 0, 1, 0], [0, 1, 1, 0, 0], [1, 0, 1, 0, 1], [0, 1, 0, 1, 1]])
    R[:, :, 0] = base                          # an ordinary draw
    R[:, :, 1] = base
    R[0, :, 1], R[3, :, 1] = 1, 0              # model 0 solves everything, model 3 nothing
    R[:, :, 2] = [[1, 1, 0, 0, 0]] * 2 + [[0, 0, 1, 1, 0]] * 2  # two tied pairs
    R[:, :, 3] = [[1, 1, 1, 0, 0], [1, 1, 1, 0, 0], [0, 0, 0, 1, 1], [0, 0, 0, 1, 1]]
    R[:, :, 4] = 1                             # no informative item: every item solved
    R[:, :, 5] = [[1, 0, 1, 0, 1], [1, 1, 0, 0, 1], [1, 0, 0, 1, 1], [1, 1, 1, 0, 1]]
    return ResponseData(R), [np.array([t]) for t in range(6)]


def test_degenerate_draws_fail_or_tie_as_in_the_per_draw_path():
    data, draws = _degenerate()
    _check(data, draws)
    stack = DrawStack.from_data(data, draws)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        (ml, _), (map_, _) = batched_scores(stack, "rasch"), batched_scores(stack, "rasch_map")
    # JML has no finite abilities for a perfect / hopeless model or without information;
    # the MAP prior keeps them finite (and all 0 when no item is informative).
    assert np.isnan(ml[[1, 4]]).all() and np.isfinite(ml[[0, 2]]).all()
    assert np.isfinite(map_).all()
    np.testing.assert_array_equal(map_[4], 0.0)
    assert map_[1, 0] == map_[1].max() and map_[1, 3] == map_[1].min()


def test_unsupported_options_fall_back_to_the_per_draw_path():
    data, draws = _degenerate()
    stack = DrawStack.from_data(data, draws)
    assert stacked_scores(stack, "rasch", prior=-1.0) is None
    assert stacked_scores(stack, "rasch_3pl", guessing_upper=2.0) is None
    # the rule says why
    assert stacked_scores(stack, "dynamic_irt", variant="growth", slope_reg=0.0) is None
    two = DrawStack.from_data(data, [np.array([0, 1]), np.array([2, 3])])
    assert stacked_scores(two, "dynamic_irt", variant="growth") is None  # trial order matters there
    graded = ResponseData(np.minimum(np.arange(24).reshape(2, 3, 4) % 3, 2), n_categories=3)
    assert stacked_scores(DrawStack.from_data(graded, [np.array([0])]), "rasch_2pl") is None


def test_rules_fitting_the_same_model_share_one_fit_per_stack(aime):
    """rasch, dynamic_irt_linear and (single trials) dynamic_irt_growth are one JML fit;
    rasch_mml and rasch_mml_credible one EM fit; each rule still gets its own arrays."""
    stack = DrawStack.from_data(aime, [np.array([t]) for t in range(4)]).pool(np.arange(6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = {m: batched_scores(stack, m) for m in IRT}
    fits = stack.__dict__["_shared"]
    assert sorted(key[0] for key in fits) == ["mml", "xpl", "xpl", "xpl", "xpl", "xpl", "xpl"]
    shared = [got[m][0] for m in ("rasch", "dynamic_irt_linear", "dynamic_irt_growth")]
    np.testing.assert_array_equal(shared[0], shared[1])
    np.testing.assert_array_equal(shared[0], shared[2])
    shared[0][:] = np.nan  # a rule's scores are its own copy: the cached fit is untouched
    assert np.isfinite(batched_scores(stack, "rasch")[0]).any()


def test_single_trial_growth_model_is_the_rasch_fit_with_flat_slopes(aime):
    one = aime.subset(models=np.arange(8), trials=[3])
    growth = br.rank(one, "dynamic_irt_growth", return_item_params=True)
    rasch = br.rank(one, "rasch", return_item_params=True)
    np.testing.assert_array_equal(growth.scores, rasch.scores)
    np.testing.assert_array_equal(growth.details["slope"], 0.0)
    np.testing.assert_array_equal(growth.details["difficulty"], rasch.details["difficulty"])
    for score in ("final", "mean"):
        np.testing.assert_array_equal(
            br.rank(one, "dynamic_irt_growth", score=score).scores, rasch.scores)
    with pytest.raises(ValueError, match="slope_reg"):
        br.rank(one, "dynamic_irt_growth", slope_reg=0.0)
    with pytest.raises(br.errors.DataError, match="time_points"):
        br.rank(one, "dynamic_irt_growth", time_points=[0.0, 1.0])
    # the Newton fit of the growth model itself reaches the same abilities
    direct = br.baselines.irt.fit_growth_irt(one.R)
    np.testing.assert_allclose(direct.ability, rasch.scores, atol=1e-7)
    np.testing.assert_allclose(direct.extra["slope"], 0.0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.lists(st.integers(0, n), min_size=4, max_size=4),
                         min_size=3, max_size=3))))
def test_batched_ford_condition_agrees_with_the_per_problem_check(case):
    """Strong connectivity of the beats graph (uninformative items tied to model 0)
    passes exactly the problems check_ford_condition accepts."""
    n_trials, k = case
    k = np.asarray(k, dtype=float)
    n = np.full(k.shape, float(n_trials))
    keep = (k.sum(axis=0) > 0) & ((n - k).sum(axis=0) > 0)
    try:
        check_ford_condition(k[:, keep], n[:, keep], "test")
        expected = True
    except br.errors.NotIdentifiedError:
        expected = False
    kk, nn = np.where(keep, k, 0.0), np.where(keep, n, 0.0)
    assert ford_condition_batch(kk[None], nn[None], keep[None])[0] == expected
