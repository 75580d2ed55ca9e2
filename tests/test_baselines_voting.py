"""Voting rules (questions as voters): paper configurations vs oracles.

Oracles: scorio 0.2.3 (the paper's implementation) for every identifier;
pref_voting on random profiles (with and without tied ballots); textbook
profiles with published outcomes (Condorcet PHP library test suite); Debian
leader elections (Schulze with margins on real ballots).
"""

from __future__ import annotations

import csv
import itertools
import json

import numpy as np
import pytest
from _sims import binary_with_spread as _binary

import bayesrank
from bayesrank import DataError, ResponseData
from bayesrank.baselines import voting

scorio_rank = pytest.importorskip("scorio.rank")
pv_profiles = pytest.importorskip("pref_voting.profiles")
from pref_voting.grade_methods import majority_judgement as pv_majority_judgement  # noqa: E402
from pref_voting.grade_profiles import GradeProfile  # noqa: E402
from pref_voting.iterative_methods import baldwin as pv_baldwin  # noqa: E402
from pref_voting.iterative_methods import weak_nanson as pv_weak_nanson  # noqa: E402
from pref_voting.margin_based_methods import beat_path as pv_beat_path  # noqa: E402
from pref_voting.margin_based_methods import minimax_scores as pv_minimax_scores  # noqa: E402
from pref_voting.margin_based_methods import ranked_pairs as pv_ranked_pairs  # noqa: E402
from pref_voting.other_methods import kemeny_young_rankings  # noqa: E402
from pref_voting.profiles_with_ties import ProfileWithTies  # noqa: E402

VOTING = sorted(
    i for i in bayesrank.methods(paper_only=True).query("label == 'Voting rules'")["identifier"]
)
KEMENY = [i for i in VOTING if i.startswith("kemeny")]


TENSORS = {
    "N1_small": _binary(11, 5, 9, 1),
    "N1_wide": _binary(12, 12, 40, 1),
    "tiny_pair": _binary(13, 2, 3, 2),
    "equal_models": _binary(14, 6, 10, 4, spread=0.0),
    "close_models": _binary(15, 8, 12, 3, spread=0.05),
    "mid": _binary(16, 8, 15, 6),
    "one_question": _binary(17, 7, 1, 5),
}


def _scorio(identifier: str, R: np.ndarray) -> np.ndarray:
    spec = bayesrank.registry.get_method(identifier)
    return np.asarray(getattr(scorio_rank, spec.base)(R, **spec.defaults))


@pytest.mark.parametrize("name", list(TENSORS))
@pytest.mark.parametrize("identifier", VOTING)
def test_paper_identifiers_match_scorio(identifier, name):
    R = TENSORS[name]
    np.testing.assert_array_equal(bayesrank.rank(R, identifier).ranks, _scorio(identifier, R))


@pytest.fixture(scope="module")
def example():
    return bayesrank.datasets.example("combined")


@pytest.mark.parametrize("identifier", [i for i in VOTING if i not in KEMENY])
def test_paper_sized_example_matches_scorio(identifier, example):
    assert example.shape == (20, 120, 80)
    R = np.asarray(example.R)
    np.testing.assert_array_equal(bayesrank.rank(example, identifier).ranks,
                                  _scorio(identifier, R))
    single = example.subset(trials=[0])  # the paper's N = 1 setting
    np.testing.assert_array_equal(bayesrank.rank(single, identifier).ranks,
                                  _scorio(identifier, np.asarray(single.R)))


@pytest.mark.slow
def test_kemeny_young_on_the_paper_sized_example_matches_scorio(example):
    # scorio solves up to 190 extra MILPs here (~3 s); ours decomposes first.
    ours = bayesrank.rank(example, "kemeny_young_tie_half")
    np.testing.assert_array_equal(ours.ranks, _scorio("kemeny_young_tie_half",
                                                      np.asarray(example.R)))


def test_kemeny_young_with_large_cyclic_block_matches_scorio():
    # Nearly equal models: one big strongly connected block and tied optima.
    R = _binary(18, 9, 10, 3, spread=0.03)
    ours = bayesrank.rank(R, "kemeny_young_tie_ignore")
    np.testing.assert_array_equal(ours.ranks, _scorio("kemeny_young_tie_ignore", R))
    single = voting.kemeny_young(R, tie_policy="ignore", tie_aware=False)
    np.testing.assert_array_equal(np.sort(single.ranks), np.arange(1, 10))
    assert single.details["objective"] == ours.details["objective"]


def test_registered_defaults_are_the_papers(shared_dir):
    with open(shared_dir / "spec" / "paper_methods.tsv") as fh:
        rows = {r["identifier"]: r for r in csv.DictReader(fh, delimiter="\t")}
    paper = {i for i, r in rows.items() if r["family"] == "Voting rules"}
    assert set(VOTING) == paper
    for identifier in VOTING:
        spec = bayesrank.registry.get_method(identifier)
        assert spec.family == "voting" and spec.in_paper
        expected = {}
        for item in rows[identifier]["arguments_used_in_the_paper"].split(", "):
            key, value = item.split("=")
            if key == "return_scores":  # a bayesrank Ranking always carries scores
                assert key not in spec.defaults
                continue
            expected[key] = {"false": False, "None": None}.get(value, value)
        assert dict(spec.defaults) == expected, identifier


# ---------------------------------------------------------------------------------------
# Data-level reductions
# ---------------------------------------------------------------------------------------
def test_question_counts_agree_with_the_shared_reduction():
    R = TENSORS["mid"]
    data = ResponseData(R)
    wins, ties = voting.question_counts(data)
    k = R.sum(axis=2)
    np.testing.assert_array_equal(wins, (k[:, None, :] > k[None, :, :]).sum(axis=2))
    expected_ties = (k[:, None, :] == k[None, :, :]).sum(axis=2)
    np.fill_diagonal(expected_ties, 0)
    np.testing.assert_array_equal(ties, expected_ties)
    np.testing.assert_array_equal(wins + wins.T + ties, (1 - np.eye(8)) * R.shape[1])


def test_unobserved_questions_abstain():
    R = TENSORS["mid"].copy()
    mask = np.ones(R.shape, dtype=bool)
    mask[0, :4] = False  # model 0 never saw questions 0..3
    data = ResponseData(R, mask=mask)
    wins, ties = voting.question_counts(data)
    assert wins[0].sum() + wins[:, 0].sum() + ties[0].sum() == 7 * (R.shape[1] - 4)
    # Model 0's pairs are decided on the remaining questions only.
    sub = ResponseData(R[:, 4:])
    sub_wins, _ = voting.question_counts(sub)
    np.testing.assert_array_equal(wins[0], sub_wins[0])
    assert np.isfinite(voting.borda(data).scores).all()
    with pytest.raises(DataError, match="majority judgment"):
        voting.majority_judgment(data)


def test_categorical_data_use_mean_utility():
    rng = np.random.default_rng(3)
    R = rng.integers(0, 3, size=(5, 8, 4))
    data = ResponseData(R, weights=[0.0, 0.25, 1.0])
    u = data.weights[R].mean(axis=2)
    wins, _ = voting.question_counts(data)
    np.testing.assert_array_equal(wins, (u[:, None] > u[None, :]).sum(axis=2))
    assert voting.borda(data).scores.shape == (5,)


def test_tie_policy_equivalences_documented():
    # Margins do not depend on the tie policy, so margin-only rules coincide.
    for name, R in TENSORS.items():
        for pair in [("minimax_variant_margin_tie_ignore", "minimax_variant_margin_tie_half"),
                     ("kemeny_young_tie_ignore", "kemeny_young_tie_half")]:
            a, b = (bayesrank.rank(R, i).ranks for i in pair)
            np.testing.assert_array_equal(a, b, err_msg=f"{pair} on {name}")


# ---------------------------------------------------------------------------------------
# pref_voting on random profiles
# ---------------------------------------------------------------------------------------
def _random_weak_orders(seed: int, n_cands: int, n_ballots: int, ties: bool):
    rng = np.random.default_rng(seed)
    ballots = []
    for _ in range(n_ballots):
        levels = rng.integers(0, n_cands if not ties else max(2, n_cands - 1), size=n_cands)
        if not ties:
            levels = rng.permutation(n_cands)
        ballots.append(levels)
    counts = rng.integers(1, 6, size=n_ballots)
    return np.array(ballots).T.astype(float), counts  # grades = -level: (cands, ballots)


def _pv_profile(levels: np.ndarray, counts: np.ndarray) -> ProfileWithTies:
    maps = [{c: int(levels[c, v]) + 1 for c in range(levels.shape[0])}
            for v in range(levels.shape[1])]
    return ProfileWithTies(maps, rcounts=[int(x) for x in counts],
                           candidates=list(range(levels.shape[0])))


def _linear_profile(levels: np.ndarray, counts: np.ndarray):
    rankings = [list(np.argsort(levels[:, v])) for v in range(levels.shape[1])]
    return pv_profiles.Profile(rankings, rcounts=[int(x) for x in counts])


def _winners(scores: np.ndarray) -> list[int]:
    return sorted(np.flatnonzero(np.isclose(scores, scores.max())).tolist())


PROFILE_CASES = [(seed, n, v, ties) for seed, (n, v, ties) in enumerate(
    itertools.product([3, 4, 5, 6], [3, 8, 15], [False, True]))]


@pytest.mark.parametrize("seed,n_cands,n_ballots,ties", PROFILE_CASES)
def test_pairwise_rules_match_pref_voting(seed, n_cands, n_ballots, ties):
    levels, counts = _random_weak_orders(seed, n_cands, n_ballots, ties)
    prof = _pv_profile(levels, counts)
    wins, tie_counts = voting.pairwise_counts(-levels, counts)
    for i, j in itertools.permutations(range(n_cands), 2):
        assert wins[i, j] == prof.support(i, j)
    # pref_voting counts strict preferences: tie_policy="ignore".
    P = voting.preference_matrix(wins, tie_counts, "ignore")
    for variant, method in [("margin", "margins"), ("winning_votes", "winning"),
                            ("pairwise_opposition", "pairwise_opposition")]:
        theirs = pv_minimax_scores(prof, score_method=method)
        np.testing.assert_array_equal(voting.minimax_scores(P, variant),
                                      [theirs[c] for c in range(n_cands)])
    copeland = prof.copeland_scores()
    np.testing.assert_array_equal(voting.copeland_scores(P), [copeland[c] for c in range(n_cands)])
    p = voting.schulze_paths(P, "margin")
    assert _winners(voting.dag_levels(p > p.T)) == sorted(pv_beat_path(prof))
    locked = voting.ranked_pairs_locked(P, "margin")
    ours_rp = _winners(voting.dag_levels(locked))
    theirs_rp = sorted(pv_ranked_pairs(prof))  # winners under some tie-breaking of equal margins
    assert set(ours_rp) <= set(theirs_rp)
    strengths = np.abs(P - P.T)[np.triu_indices(n_cands, 1)]
    if np.unique(strengths).size == strengths.size and strengths.all():
        assert ours_rp == theirs_rp  # distinct nonzero strengths: no tie-break involved


@pytest.mark.parametrize("seed,n_cands,n_ballots,ties",
                         [c for c in PROFILE_CASES if not c[3]])
def test_borda_elimination_and_kemeny_match_pref_voting(seed, n_cands, n_ballots, ties):
    levels, counts = _random_weak_orders(seed, n_cands, n_ballots, ties)
    prof = _linear_profile(levels, counts)
    wins, tie_counts = voting.pairwise_counts(-levels, counts)
    borda = prof.borda_scores()
    np.testing.assert_array_equal(voting.borda_scores(wins + tie_counts / 2),
                                  [borda[c] for c in range(n_cands)])
    for rule, oracle in [("nanson", pv_weak_nanson), ("baldwin", pv_baldwin)]:
        for rank_ties in voting.RANK_TIES:  # all equal on linear orders
            scores = voting.borda_elimination_scores(wins, tie_counts, rule=rule,
                                                     rank_ties=rank_ties)
            assert _winners(scores) == sorted(oracle(prof)), (rule, rank_ties)
    scores, details = voting.kemeny_young_scores(wins)
    optimal, _ = kemeny_young_rankings(prof)
    forced = np.ones((n_cands, n_cands), dtype=bool)
    for ranking in optimal:
        pos = np.argsort(ranking)
        forced &= pos[:, None] < pos[None, :]
    np.testing.assert_array_equal(details["forced"], forced)
    best = max(sum(wins[a, b] for a, b in itertools.combinations(r, 2)) for r in optimal)
    assert details["objective"] == best


def test_nanson_removes_candidates_at_the_mean():
    # Borda 3, 6, 9 (mean 6): the paper's Nanson (scorio, pref_voting "weak Nanson")
    # drops candidate 1 with candidate 0; "strict" Nanson would keep it and tie 1 with 2.
    orders = [(1, 2, 0)] * 3 + [(2, 0, 1)] * 3
    k = np.zeros((3, len(orders), 1), dtype=np.int64)
    for m, order in enumerate(orders):
        for position, cand in enumerate(order):
            k[cand, m, 0] = 2 - position
    R = (np.arange(2)[None, None, :] < k).astype(np.int8)  # k[c, m] successes out of N = 2
    assert _winners(voting.nanson(R).scores) == [2]
    np.testing.assert_array_equal(voting.nanson(R).ranks, _scorio("nanson_rank_ties_average", R))
    prof = pv_profiles.Profile([list(o) for o in orders])
    assert sorted(pv_weak_nanson(prof)) == [2]


@pytest.mark.parametrize("seed", range(25))
def test_majority_judgment_agrees_with_pref_voting_when_it_decides(seed):
    rng = np.random.default_rng(seed)
    n_cands, n_voters = rng.integers(2, 6), rng.integers(1, 12)
    grades = rng.integers(0, 4, size=(n_cands, n_voters))
    gprof = GradeProfile([{c: int(grades[c, v]) for c in range(n_cands)}
                          for v in range(n_voters)], [0, 1, 2, 3])
    theirs = pv_majority_judgement(gprof)
    ours = _winners(voting.majority_judgment_scores(grades))
    # pref_voting breaks median ties once with the majority gauge; the paper's rule
    # (iterated median removal) refines it, so a decided gauge must agree.
    if len(theirs) == 1:
        assert ours == theirs
    else:
        assert set(ours) <= set(theirs)


def test_majority_judgment_by_hand():
    grades = np.array([[1, 2, 3], [2, 2, 2], [0, 2, 3], [3, 2, 1]])
    # median sequences: (2, 1, 3), (2, 2, 2), (2, 0, 3), (2, 1, 3)
    scores = voting.majority_judgment_scores(grades)
    assert scores[1] > scores[0] == scores[3] > scores[2]
    even = np.array([[0, 1, 2, 3], [1, 1, 2, 2]])  # lower medians 1 and 1, then 2 vs 2, then 0 vs 1
    s = voting.majority_judgment_scores(even)
    assert s[1] > s[0]


# ---------------------------------------------------------------------------------------
# Textbook profiles with published outcomes
# ---------------------------------------------------------------------------------------
def _reference_cases(shared_dir):
    path = shared_dir / "data" / "voting_reference" / "voting_reference_cases.json"
    return {c["id"]: c for c in json.loads(path.read_text())["cases"]}


def _grades(case) -> tuple[np.ndarray, np.ndarray, list[str]]:
    names = case["candidates"]
    index = {n: i for i, n in enumerate(names)}
    grades = np.empty((len(names), len(case["ballots"])))
    for v, ballot in enumerate(case["ballots"]):
        for position, entry in enumerate(ballot["order"]):
            for name in entry if isinstance(entry, list) else [entry]:
                grades[index[name], v] = -position
    return grades, np.array([b["count"] for b in case["ballots"]], float), names


def _order(scores: np.ndarray, names: list[str]) -> list[str]:
    assert len(np.unique(scores)) == len(scores), "expected a strict order"
    return [names[i] for i in np.argsort(-scores)]


def test_tennessee(shared_dir):
    case = _reference_cases(shared_dir)["tennessee"]
    grades, counts, names = _grades(case)
    wins, ties = voting.pairwise_counts(grades, counts)
    exp = case["expected"]
    P = voting.preference_matrix(wins, ties, "ignore")
    scores, details = voting.kemeny_young_scores(P)
    assert _order(scores, names) == exp["kemeny_young"]["ranking"]
    assert details["objective"] == exp["kemeny_young"]["best_score"]
    copeland = voting.copeland_scores(P)
    assert _order(copeland, names) == exp["copeland"]["ranking"]
    assert dict(zip(names, copeland, strict=True)) == exp["copeland"]["balance_wins_minus_losses"]
    for strength, key in [("winning_votes", "ranked_pairs_winning"),
                          ("margin", "ranked_pairs_margin")]:
        locked = voting.ranked_pairs_locked(P, strength)
        assert _order(voting.dag_levels(locked), names) == exp[key]
    for variant, key, field in [
        ("winning_votes", "minimax_winning", "worst_pairwise_defeat_winning_votes"),
        ("margin", "minimax_margin", "worst_pairwise_defeat_margin"),
        ("pairwise_opposition", "minimax_opposition", "worst_pairwise_opposition"),
    ]:
        s = voting.minimax_scores(P, variant)
        assert _order(s, names) == exp[key]["ranking"]
        # The library reports the largest margin even when negative (no defeat);
        # the paper's minimax clamps it at 0, which changes no order.
        worst = {n: max(v, 0) if variant == "margin" else v for n, v in exp[key][field].items()}
        assert dict(zip(names, -s, strict=True)) == worst


def test_borda_textbook_scores(shared_dir):
    cases = _reference_cases(shared_dir)
    for cid in ("borda_fr_wikipedia_1", "borda_fr_wikipedia_2_weighted"):
        grades, counts, names = _grades(cases[cid])
        wins, ties = voting.pairwise_counts(grades, counts)
        scores = voting.borda_scores(wins + ties / 2)
        n_to_1 = cases[cid]["expected"]["borda_points_n_to_1"]
        # n..1 points = (n-1)..0 points + 1 per ballot
        assert dict(zip(names, scores + counts.sum(), strict=True)) == n_to_1["scores"]
        assert _order(scores, names) == n_to_1["ranking"]
        zero_based = cases[cid]["expected"].get("borda_points_n_minus_1_to_0")
        if zero_based:
            assert dict(zip(names, scores, strict=True)) == zero_based["scores"]


def test_schulze_and_ranked_pairs_textbook(shared_dir):
    cases = _reference_cases(shared_dir)
    for cid in ("schulze_wikipedia_45_voters", "legrand_rbvote"):
        grades, counts, names = _grades(cases[cid])
        P = voting.pairwise_counts(grades, counts)[0]
        exp = cases[cid]["expected"]
        p = voting.schulze_paths(P, "winning_votes")
        assert _order(voting.dag_levels(p > p.T), names) == exp["schulze_winning"]
        for strength, key in [("winning_votes", "ranked_pairs_winning"),
                              ("margin", "ranked_pairs_margin")]:
            locked = voting.ranked_pairs_locked(P, strength)
            assert _order(voting.dag_levels(locked), names) == exp[key]
    grades, counts, names = _grades(cases["legrand_rbvote"])
    P = voting.pairwise_counts(grades, counts)[0]
    copeland = voting.copeland_scores(P)
    groups = [sorted(names[i] for i in np.flatnonzero(copeland == v))
              for v in sorted(set(copeland), reverse=True)]
    assert groups == cases["legrand_rbvote"]["expected"]["copeland"]
    winner = names[int(np.argmax(voting.minimax_scores(P, "winning_votes")))]
    assert winner == cases["legrand_rbvote"]["expected"]["minimax_winning_winner"]


@pytest.mark.parametrize("cid", ["schulze_official_example_1", "schulze_official_example_2",
                                 "schulze_official_example_5"])
def test_schulze_official_strongest_paths(shared_dir, cid):
    case = _reference_cases(shared_dir)[cid]
    grades, counts, names = _grades(case)
    p = voting.schulze_paths(voting.pairwise_counts(grades, counts)[0], "winning_votes")
    expected = case["expected"]["schulze_winning_strongest_paths"]
    for a, row in expected.items():
        for b, value in row.items():
            assert p[names.index(a), names.index(b)] == value, (a, b)
    winners = _winners(voting.dag_levels(p > p.T))
    assert [names[w] for w in winners] == [case["expected"]["schulze_winning_winner"]]


def test_minimax_with_tied_ballots(shared_dir):
    case = _reference_cases(shared_dir)["minimax_with_tied_ballots"]
    grades, counts, names = _grades(case)
    P = voting.pairwise_counts(grades, counts)[0]  # ties on ballots ignored
    for variant, key in [("winning_votes", "minimax_winning"), ("margin", "minimax_margin"),
                         ("pairwise_opposition", "minimax_opposition")]:
        exp = case["expected"][key]
        s = voting.minimax_scores(P, variant)
        assert _order(s, names) == exp["ranking"]
        worst = {n: max(v, 0) if variant == "margin" else v for n, v in exp["scores"].items()}
        assert dict(zip(names, -s, strict=True)) == worst


def test_ranked_pairs_ericgorr(shared_dir):
    case = _reference_cases(shared_dir)["ranked_pairs_ericgorr_example1"]
    grades, counts, names = _grades(case)
    P = voting.pairwise_counts(grades, counts)[0]
    locked = voting.ranked_pairs_locked(P, "winning_votes")
    assert _order(voting.dag_levels(locked), names) == case["expected"]["ranked_pairs_winning"]


# ---------------------------------------------------------------------------------------
# Debian leader elections: Schulze with margins on real ballots
# ---------------------------------------------------------------------------------------
DEBIAN = {
    2020: [["Jonathan Carter"], ["Sruthi Chandran"], ["Brian Gupta"], ["None Of The Above"]],
    2007: [["Sam Hocevar"], ["Steve McIntyre"], ["Raphaël Hertzog"], ["Wouter Verhelst"],
           ["Anthony Towns"], ["Gustavo Franco"], ["None Of The Above"], ["Simon Richter"],
           ["Aigars Mahinovs"]],
    2006: [["Anthony Towns"], ["Steve McIntyre"], ["Andreas Schuldei", "Jeroen van Wolffelaar"],
           ["Bill Allombert"], ["None of the Above"], ["Ari Pollak"],
           ["Jonathan aka Ted Walther"]],
}


def _debian_grades(path):
    with open(path, encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    names, ballots = rows[0], rows[1:]
    ranks = np.array([[float(x) if x else np.nan for x in row] for row in ballots]).T
    # Unranked options tie below every ranked one (Debian's rule).
    return names, -np.where(np.isnan(ranks), np.nanmax(ranks) + 1, ranks)


@pytest.mark.parametrize("year", sorted(DEBIAN))
def test_debian_elections_schulze_margin(shared_dir, year):
    names, grades = _debian_grades(
        shared_dir / "data" / "debian_leader_elections" / f"leader{year}_ballots.csv")
    wins, _ = voting.pairwise_counts(grades)
    p = voting.schulze_paths(wins, "margin")
    levels = voting.dag_levels(p > p.T)
    groups = [sorted(names[i] for i in np.flatnonzero(levels == v))
              for v in sorted(set(levels), reverse=True)]
    assert groups == [sorted(g) for g in DEBIAN[year]]
    if year == 2020:
        expected = {("Jonathan Carter", "Sruthi Chandran"): 201,
                    ("Jonathan Carter", "Brian Gupta"): 241,
                    ("Jonathan Carter", "None Of The Above"): 267,
                    ("Sruthi Chandran", "Brian Gupta"): 49,
                    ("Sruthi Chandran", "None Of The Above"): 168,
                    ("Brian Gupta", "None Of The Above"): 69}
        for (a, b), value in expected.items():
            assert p[names.index(a), names.index(b)] == value
            assert p[names.index(b), names.index(a)] == 0


# ---------------------------------------------------------------------------------------
# Kemeny-Young specifics and bad input
# ---------------------------------------------------------------------------------------
def test_kemeny_cycle_ties_and_time_limit():
    # Condorcet cycle a > b > c > a with equal margins: every rotation is optimal.
    P = np.array([[0, 2, 1], [1, 0, 2], [2, 1, 0]], dtype=float)
    scores, details = voting.kemeny_young_scores(P)
    assert not details["forced"].any() and np.all(scores == scores[0])
    with pytest.raises(RuntimeError, match="time_limit"):
        voting.kemeny_young_scores(P, time_limit=1e-9)
    with pytest.raises(ValueError, match="time_limit"):
        voting.kemeny_young_scores(P, time_limit=0)


@pytest.mark.parametrize("certificates", [True, False])
@pytest.mark.parametrize("seed", range(10))
def test_kemeny_subset_dp_and_linear_ordering_agree(seed, certificates, monkeypatch):
    # Two exact solvers: subset DP (blocks <= 14 models) and the cutting-plane linear
    # ordering with pairwise re-solves (larger blocks).  Few voters -> big cyclic blocks and
    # tied optima.  Without certificates every undecided pair is re-solved (the floor cut).
    rng = np.random.default_rng(seed)
    n_cands = int(rng.integers(3, 13))
    levels, counts = _random_weak_orders(seed + 100, n_cands, int(rng.integers(2, 6)), True)
    wins, ties = voting.pairwise_counts(-levels, counts)
    P = voting.preference_matrix(wins, ties, "half")
    dp_scores, dp = voting.kemeny_young_scores(P)
    monkeypatch.setattr(voting, "_SUBSET_DP_MAX", 0)
    if not certificates:
        monkeypatch.setattr(voting, "_certified_pairs", lambda solver, _: np.zeros(
            (solver.margin.shape[0],) * 2, dtype=bool))
        monkeypatch.setattr(voting, "_free_by_moves", lambda margin, order, tol: np.zeros(
            (order.size,) * 2, dtype=bool))
    lp_scores, lp = voting.kemeny_young_scores(P)
    np.testing.assert_array_equal(dp["forced"], lp["forced"])
    assert dp["objective"] == lp["objective"]
    np.testing.assert_array_equal(dp_scores, lp_scores)


def test_bad_input_is_refused():
    R = TENSORS["mid"]
    with pytest.raises(ValueError, match="tie_policy"):
        voting.schulze(R, tie_policy="drop")
    with pytest.raises(ValueError, match="variant"):
        voting.minimax(R, variant="borda")
    with pytest.raises(ValueError, match="strength"):
        voting.ranked_pairs(R, strength="votes")
    with pytest.raises(ValueError, match="rank_ties"):
        voting.nanson(R, rank_ties="dense")
    with pytest.raises(ValueError, match="square"):
        voting.borda_scores(np.ones((2, 3)))
    with pytest.raises(ValueError, match="weights"):
        voting.pairwise_counts(np.ones((2, 3)), weights=[1, -1, 1])
    with pytest.raises(bayesrank.UnknownMethodError):
        bayesrank.rank(R, "schulze_tie_sometimes")
