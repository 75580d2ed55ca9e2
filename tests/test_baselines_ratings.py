"""Sequential ratings (Elo, Glicko, TrueSkill): paper configurations vs oracles.

Oracles: scorio 0.2.3 (the paper's implementation) for every identifier, the
``trueskill`` package and its published test cases for TrueSkill updates, and
Glickman's worked example for the Glicko update.
"""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from _sims import binary_with_spread as _binary
from scipy.stats import norm

import bayesrank
from bayesrank import DataError, ResponseData
from bayesrank.baselines import ratings

scorio_rank = pytest.importorskip("scorio.rank")
trueskill_pkg = pytest.importorskip("trueskill")

IDENTIFIERS = [
    "elo_tie_skip",
    "elo_tie_draw",
    "elo_tie_correct_draw_only",
    "glicko_tie_skip",
    "glicko_tie_draw",
    "glicko_tie_correct_draw_only",
    "trueskill",
]


# Small and medium tensors; scorio's Python loops cost ~0.1 ms per event and pair.
TENSORS = {
    "N1_small": _binary(1, 5, 9, 1),
    "N1_wide": _binary(2, 12, 40, 1),
    "tiny_pair": _binary(3, 2, 3, 2),
    "equal_models": _binary(4, 6, 10, 4, spread=0.0),
    "mid": _binary(5, 8, 15, 6),
    "paper_shape_short": _binary(6, 20, 30, 4),
}


def _scorio_call(identifier: str, R: np.ndarray):
    spec = bayesrank.registry.get_method(identifier)
    ranks, scores = getattr(scorio_rank, spec.base)(R, return_scores=True, **spec.defaults)[:2]
    return np.asarray(ranks), np.asarray(scores)


@pytest.mark.parametrize("name", list(TENSORS))
@pytest.mark.parametrize("identifier", IDENTIFIERS)
def test_paper_identifiers_match_scorio(identifier, name):
    R = TENSORS[name]
    ours = bayesrank.rank(R, identifier)
    ranks, scores = _scorio_call(identifier, R)
    np.testing.assert_array_equal(ours.ranks, ranks)
    # Same formulas, same event order: the ratings agree to rounding.
    np.testing.assert_allclose(ours.scores, scores, rtol=1e-11, atol=1e-9)


@pytest.mark.slow
def test_elo_on_the_paper_sized_example_matches_scorio():
    data = bayesrank.datasets.example("combined")
    assert data.shape == (20, 120, 80)
    ours = bayesrank.rank(data, "elo_tie_skip")
    ranks, scores = _scorio_call("elo_tie_skip", np.asarray(data.R))
    np.testing.assert_array_equal(ours.ranks, ranks)
    np.testing.assert_allclose(ours.scores, scores, rtol=1e-11)


def test_registered_defaults_are_the_papers(shared_dir):
    rows = {}
    with open(shared_dir / "spec" / "paper_methods.tsv") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            rows[row["identifier"]] = row["arguments_used_in_the_paper"]
    for identifier in IDENTIFIERS:
        spec = bayesrank.registry.get_method(identifier)
        assert spec.in_paper and spec.family == "ratings" and spec.label == "Pairwise rating"
        expected = {}
        for item in rows[identifier].split(", "):
            key, value = item.split("=")
            if key == "return_deviation":  # details["rating_deviation"] always holds RD
                assert key not in spec.defaults
                continue
            expected[key] = {"false": False}.get(value, value)
        got = {k: (v if isinstance(v, str | bool) else repr(float(v))) for k, v in
               spec.defaults.items()}
        expected = {k: (v if isinstance(v, bool) or not _is_number(v) else repr(float(v)))
                    for k, v in expected.items()}
        assert got == expected, identifier


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------------------------
# The event stream: order, simultaneity within an event, tie policies, mask
# ---------------------------------------------------------------------------------------
def _reference_elo(R: np.ndarray, K: float, tie_handling: str) -> np.ndarray:
    """Direct transcription of the paper's Elo formulas, events trial-major."""
    L, M, N = R.shape
    r = np.full(L, 1500.0)
    for n in range(N):
        for m in range(M):
            start = r.copy()
            for i in range(L):
                for j in range(L):
                    a, b = R[i, m, n], R[j, m, n]
                    if i == j or (a == b and (tie_handling == "skip" or
                                              (tie_handling == "correct_draw_only" and a == 0))):
                        continue
                    s = 0.5 if a == b else float(a > b)
                    r[i] += K * (s - 1 / (1 + 10 ** ((start[j] - start[i]) / 400)))
    return r


@pytest.mark.parametrize("tie_handling", ratings.TIE_HANDLING)
def test_elo_follows_the_formulas_in_trial_major_order(tie_handling):
    R = _binary(7, 4, 5, 3)
    ours = ratings.elo(R, K=24.0, tie_handling=tie_handling)
    np.testing.assert_allclose(ours.scores, _reference_elo(R, 24.0, tie_handling), rtol=1e-12)
    # Question-major order would give different ratings: the order is a real choice.
    swapped = np.ascontiguousarray(R.transpose(0, 2, 1))
    other = _reference_elo(swapped, 24.0, tie_handling)
    assert not np.allclose(ours.scores, other, rtol=1e-9)


def test_single_event_elo_by_hand():
    R = np.array([[[1]], [[0]], [[1]]])
    # Model 0 and 2 beat model 1 (E = 1/2); under "draw" they also draw each other.
    skip = ratings.elo(R, K=32.0, tie_handling="skip").scores
    np.testing.assert_allclose(skip, [1516.0, 1468.0, 1516.0])
    draw = ratings.elo(R, K=32.0, tie_handling="draw").scores
    np.testing.assert_allclose(draw, [1516.0, 1468.0, 1516.0])
    # A second event: all wrong; "draw" plays it, "correct_draw_only" and "skip" do not.
    R2 = np.concatenate([R, np.zeros_like(R)], axis=1)
    e01 = 1 / (1 + 10 ** ((1468 - 1516) / 400))
    expected_0 = 1516 + 32 * (0.5 - e01) + 32 * (0.5 - 0.5)
    np.testing.assert_allclose(ratings.elo(R2, K=32.0, tie_handling="draw").scores[0],
                               expected_0)
    np.testing.assert_allclose(ratings.elo(R2, K=32.0, tie_handling="correct_draw_only").scores,
                               [1516.0, 1468.0, 1516.0])


def test_elo_expected_score_textbook_value():
    assert ratings.elo_expected_score(1600, 1400) == pytest.approx(1 / (1 + 10 ** -0.5))
    assert ratings.elo_expected_score(1500, 1500) == 0.5


@pytest.mark.parametrize("identifier", IDENTIFIERS)
def test_models_with_identical_outcomes_tie(identifier):
    R = _binary(8, 7, 12, 5)
    R[4] = R[1]
    R[6] = R[1]
    result = bayesrank.rank(R, identifier)
    assert result.ranks[1] == result.ranks[4] == result.ranks[6]
    scores = result.scores[[1, 4, 6]]
    if identifier.startswith("elo") or identifier in ("glicko_tie_skip", "trueskill"):
        assert scores[0] == scores[1] == scores[2]  # documented: bit-identical here
    else:
        np.testing.assert_allclose(scores, scores[0], rtol=1e-14)


def test_masked_model_does_not_play():
    R = np.array([[[1, 1]], [[0, 1]], [[1, 0]]], dtype=np.int8)  # L=3, M=1, N=2
    mask = np.ones_like(R, dtype=bool)
    mask[2, 0, 1] = False  # model 2 misses trial 2
    data = ResponseData(R, mask=mask)
    after_first = ratings.elo(R[:, :, :1], K=32.0, tie_handling="skip").scores
    final = ratings.elo(data, K=32.0, tie_handling="skip").scores
    assert final[2] == after_first[2]
    # Trial 2: model 0 and 1 both correct -> tie, skipped; nothing else happens.
    np.testing.assert_allclose(final, after_first)
    draw = ratings.elo(data, K=32.0, tie_handling="draw").scores
    first = ratings.elo(R[:, :, :1], K=32.0, tie_handling="draw").scores
    e01 = float(ratings.elo_expected_score(first[0], first[1]))
    np.testing.assert_allclose(draw[:2], [first[0] + 32 * (0.5 - e01),
                                          first[1] - 32 * (0.5 - e01)])
    assert draw[2] == first[2]


# ---------------------------------------------------------------------------------------
# Glicko: Glickman's worked example and the stream
# ---------------------------------------------------------------------------------------
def test_glicko_update_reproduces_glickmans_example(shared_dir):
    ex = json.loads((shared_dir / "data" / "glicko_examples" /
                     "glicko_worked_examples.json").read_text())
    case = ex["glicko1_update"]
    opp = case["opponents"]
    r_opp = [o["r"] for o in opp]
    rd_opp = [o["RD"] for o in opp]
    np.testing.assert_allclose(ratings.glicko_g(rd_opp), case["intermediate"]["g"], atol=5e-5)
    np.testing.assert_allclose(
        ratings.glicko_expected_score(case["player"]["r"], r_opp, rd_opp),
        case["intermediate"]["E"], atol=5e-4)
    r_new, rd_new = ratings.glicko_update(
        case["player"]["r"], case["player"]["RD"], r_opp, rd_opp, [o["score"] for o in opp]
    )
    assert round(r_new) == case["result"]["r_new"]  # 1464
    assert round(rd_new, 1) == case["result"]["RD_new"]  # 151.4
    pred = ex["glicko1_expected_score"]
    combined = math.hypot(pred["player_i"]["RD"], pred["player_j"]["RD"])
    assert round(float(ratings.glicko_g(combined)), 2) == pred["g_170"]
    e = ratings.glicko_expected_score(pred["player_i"]["r"], pred["player_j"]["r"], combined)
    assert round(float(e), 3) == pred["E"]


def test_glicko_stream_is_the_period_update():
    # One event, three models: every model's period update against the two others.
    R = np.array([[[1]], [[0]], [[1]]])
    out = ratings.glicko(R, tie_handling="draw")
    for i in range(3):
        others = [j for j in range(3) if j != i]
        s = [0.5 if R[i, 0, 0] == R[j, 0, 0] else float(R[i, 0, 0] > R[j, 0, 0]) for j in others]
        r_new, rd_new = ratings.glicko_update(1500.0, 350.0, [1500.0] * 2, [350.0] * 2, s,
                                              rd_max=350.0)
        assert out.scores[i] == pytest.approx(r_new, rel=1e-14)
        assert out.details["rating_deviation"][i] == pytest.approx(rd_new, rel=1e-14)


def test_glicko_deviation_inflation_and_cap():
    R = _binary(9, 4, 6, 3)
    base = ratings.glicko(R)
    inflated = ratings.glicko(R, c=60.0)
    rd0 = base.details["rating_deviation"]
    assert np.all(rd0 < 350.0)
    assert np.all(inflated.details["rating_deviation"] > rd0)
    capped = ratings.glicko(R, initial_rd=500.0, rd_max=350.0)
    np.testing.assert_allclose(capped.scores, base.scores)


# ---------------------------------------------------------------------------------------
# TrueSkill: the trueskill package and its published cases
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "mu1,sigma1,mu2,sigma2",
    [(25, 25 / 3, 25, 25 / 3), (30, 4, 18, 7), (10, 2, 45, 1.5), (25, 8, 26, 0.5), (0, 3, 60, 3)],
)
def test_trueskill_update_matches_trueskill_package(mu1, sigma1, mu2, sigma2):
    beta = 25 / 6
    env = trueskill_pkg.TrueSkill(mu=25, sigma=25 / 3, beta=beta, tau=0.0, draw_probability=0.1,
                                  backend="scipy")
    a, b = env.create_rating(mu1, sigma1), env.create_rating(mu2, sigma2)
    margin = trueskill_pkg.calc_draw_margin(0.1, 2, env=env)
    for outcome, (first, second), drawn in [(1.0, (a, b), False), (0.0, (b, a), False),
                                            (0.5, (a, b), True)]:
        new_first, new_second = trueskill_pkg.rate_1vs1(first, second, drawn=drawn, env=env)
        got = ratings.trueskill_update(mu1, sigma1, mu2, sigma2, outcome, beta=beta,
                                       draw_margin=margin)
        want = ((new_first, new_second) if outcome != 0.0 else (new_second, new_first))
        np.testing.assert_allclose(got, [want[0].mu, want[0].sigma, want[1].mu, want[1].sigma],
                                   rtol=1e-6, atol=1e-9)


def test_trueskill_published_1v1_cases(shared_dir):
    ref = json.loads((shared_dir / "data" / "trueskill_examples" /
                      "trueskill_reference_cases.json").read_text())
    env = ref["environment"]
    beta, tau = env["beta"], env["tau"]
    margin = norm.ppf((env["draw_probability"] + 1) / 2) * math.sqrt(2) * beta
    cases = {c["name"]: c for c in ref["cases"]}
    for name in ("1v1 win", "1v1 draw", "upset 1v1 draw"):
        case = cases[name]
        (mu1, s1), (mu2, s2) = (t[0] for t in case["teams"])
        # The package applies the dynamics factor before the match.
        s1, s2 = math.hypot(s1, tau), math.hypot(s2, tau)
        outcome = 0.5 if "ranks" in case else 1.0
        got = ratings.trueskill_update(mu1, s1, mu2, s2, outcome, beta=beta, draw_margin=margin)
        np.testing.assert_allclose(got, np.ravel(case["result"]), atol=1.5e-3)


def test_zero_margin_draw_is_the_conditional_limit():
    # With no draw margin a draw pins the performance difference at 0: v = -t, w = 1.
    mu1, s1, mu2, s2 = ratings.trueskill_update(30, 4, 20, 5, 0.5, beta=4.0)
    c2 = 2 * 16 + 16 + 25
    t = 10 / math.sqrt(c2)
    assert mu1 == pytest.approx(30 - 16 / math.sqrt(c2) * t)
    assert mu2 == pytest.approx(20 + 25 / math.sqrt(c2) * t)
    assert s1 == pytest.approx(4 * math.sqrt(1 - 16 / c2))


def test_trueskill_stream_single_event_is_the_package_update():
    R = np.array([[[1]], [[0]]])
    out = ratings.trueskill(R, tau=0.0)
    env = trueskill_pkg.TrueSkill(tau=0.0, draw_probability=0.0, backend="scipy")
    w, lose = trueskill_pkg.rate_1vs1(env.create_rating(), env.create_rating(), env=env)
    np.testing.assert_allclose(out.scores, [w.mu, lose.mu], rtol=1e-6)
    np.testing.assert_allclose(out.details["sigma"], [w.sigma, lose.sigma], rtol=1e-6)


def test_trueskill_drift_is_applied_once_per_trial():
    R = np.zeros((2, 3, 2), dtype=np.int8)  # nobody wins: only the drift acts
    out = ratings.trueskill(R, sigma_initial=2.0, tau=0.5)
    np.testing.assert_allclose(out.details["sigma"], math.sqrt(4 + 2 * 0.25))
    np.testing.assert_allclose(out.scores, 25.0)


def test_extreme_mismatch_stays_finite():
    R = np.ones((2, 4, 3), dtype=np.int8)
    R[1] = 0
    out = ratings.trueskill(R, mu_initial=0.0, sigma_initial=50.0, beta=0.1, tau=0.0)
    assert np.all(np.isfinite(out.scores)) and out.scores[0] > out.scores[1]
    v, w = ratings._kernels().win_corrections(-40.0)
    # Mills ratio phi(x)/Phi(x) ~ -x for x -> -inf; w -> 1.
    assert v == pytest.approx(40.0 + 1 / 40.0, rel=1e-4) and 0.99 < w <= 1.0


# ---------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("rule", [ratings.elo, ratings.glicko, ratings.trueskill])
def test_bad_input_is_refused(rule):
    R = _binary(10, 3, 4, 2)
    with pytest.raises(ValueError, match="tie_handling"):
        rule(R, tie_handling="half")
    with pytest.raises(DataError, match="binary"):
        rule(ResponseData(np.array([[[0, 2]], [[1, 1]]]), n_categories=3))
    with pytest.raises(ValueError, match="K must be positive"):
        ratings.elo(R, K=0.0)
    with pytest.raises(ValueError, match="tau"):
        ratings.trueskill(R, tau=-1.0)
    with pytest.raises(ValueError, match="initial_rd"):
        ratings.glicko(R, initial_rd=float("nan"))
