"""Pairwise battles as data (issue 48, items 1 and 3): PairwiseData from battles tables and
count matrices, its validation, br.load on battles files, and every pairwise rule of
br.methods() ranking it (choix, a hand-written Elo and the tensor path as oracles)."""

from __future__ import annotations

import json

import choix
import numpy as np
import pandas as pd
import pytest
from _battles import THETA, simulate_battles

import bayesrank as br
from bayesrank import DataError, LoadError
from bayesrank.data.pairwise import PAIRWISE_RULES, PairwiseData, from_battles
from bayesrank.registry import METHODS


@pytest.fixture(scope="module")
def battles() -> pd.DataFrame:
    return simulate_battles()


@pytest.fixture(scope="module")
def pairs(battles) -> PairwiseData:
    return from_battles(battles)


def _counts_by_loop(frame: pd.DataFrame, models, tie_values=("tie", "tie (bothbad)")):
    index = {m: k for k, m in enumerate(models)}
    W, T = np.zeros((len(models),) * 2), np.zeros((len(models),) * 2)
    for a, b, w in frame[["model_a", "model_b", "winner"]].itertuples(index=False):
        i, j = index[a], index[b]
        if w == "model_a":
            W[i, j] += 1
        elif w == "model_b":
            W[j, i] += 1
        elif w in tie_values:
            T[i, j] += 1
            T[j, i] += 1
    return W, T


# -- building ---------------------------------------------------------------------------------
def test_counts_from_battles(battles, pairs):
    models = sorted(set(battles.model_a) | set(battles.model_b))
    W, T = _counts_by_loop(battles, models)
    assert pairs.models == tuple(models)
    np.testing.assert_array_equal(pairs.wins, W)
    np.testing.assert_array_equal(pairs.ties, T)
    assert pairs.n_battles == len(battles)
    assert len(pairs.battles) == len(battles)
    # the voting rules' ballots and the observed win rate read the same counts
    np.testing.assert_array_equal(pairs.reductions.question_preferences, W + T / 2)
    n = (W + W.T + T).sum(axis=1)
    np.testing.assert_allclose(pairs.reductions.observed_score, (W + T / 2).sum(axis=1) / n)


def test_tie_options(battles):
    models = sorted(set(battles.model_a) | set(battles.model_b))
    n_ties = int(battles.winner.isin(["tie", "tie (bothbad)"]).sum())
    n_bad = int((battles.winner == "tie (bothbad)").sum())
    assert 0 < n_bad < n_ties
    dropped = from_battles(battles, ties="drop")
    assert dropped.ties.sum() == 0 and dropped.n_battles == len(battles) - n_ties
    assert len(dropped.battles) == len(battles) - n_ties
    no_bad = from_battles(battles, both_bad="drop")
    _, T = _counts_by_loop(battles, models, tie_values=("tie",))
    np.testing.assert_array_equal(no_bad.ties, T)
    np.testing.assert_array_equal(no_bad.wins, from_battles(battles).wins)
    with pytest.raises(DataError, match="both-bad tie and both_bad='error'"):
        from_battles(battles, both_bad="error")
    assert from_battles(battles[battles.winner != "tie (bothbad)"], both_bad="error").n_battles \
        == len(battles) - n_bad


def test_evalica_columns(battles):
    spelled = battles.rename(columns={"model_a": "left", "model_b": "right"}).assign(
        winner=battles.winner.map({"model_a": "left", "model_b": "right", "tie": "tie",
                                   "tie (bothbad)": "both_bad"}))
    a, b = from_battles(spelled), from_battles(battles)
    np.testing.assert_array_equal(a.wins, b.wins)
    np.testing.assert_array_equal(a.ties, b.ties)


def test_from_count_matrices(pairs):
    again = PairwiseData(pairs.wins, pairs.ties, models=pairs.models)
    np.testing.assert_array_equal(again.wins, pairs.wins)
    assert again.battles is None
    assert list(again.to_frame().columns) == ["model_a", "model_b", "wins_a", "wins_b", "ties"]
    assert again.to_frame()[["wins_a", "wins_b", "ties"]].to_numpy().sum() == pairs.n_battles
    assert PairwiseData([[0, 3], [1, 0]]).models == ("model_0", "model_1")


W3 = np.array([[0, 2, 1], [1, 0, 2], [3, 1, 0]])


@pytest.mark.parametrize("wins, ties, message", [
    (np.ones((2, 3)), None, "square"),
    (W3, np.zeros((2, 2)), "ties has shape"),
    (W3 - 2, None, "negative count"),
    (np.where(W3 == 3, np.nan, W3), None, "NaN"),
    (W3 + 0.5 * np.eye(3)[::-1], None, "fractional"),
    (W3 + np.eye(3, dtype=int), None, "against itself"),
    (W3, np.triu(np.ones((3, 3)), 1), "symmetric"),
    ([[0]], None, "at least two models"),
    (np.array([[0, 1, 0, 0], [2, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]), None,
     "disconnected .* drop their battles or add battles"),
    (np.array([["a", "b"], ["c", "d"]]), None, "numeric"),
])
def test_bad_counts(wins, ties, message):
    with pytest.raises(DataError, match=message) as info:
        PairwiseData(wins, ties)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("change, message", [
    (lambda f: f.assign(winner="model_c"), "winner 'model_c'.*model_a, model_b, tie"),
    (lambda f: f.assign(model_b=f.model_a), "against itself"),
    (lambda f: f.assign(model_a=None), "no model in column 'model_a'"),
    (lambda f: f.drop(columns="winner"), "needs model_a, model_b, winner"),
    (lambda f: f.iloc[:0], "no battles"),
    (lambda f: f[f.model_a.isin(["llm_0", "llm_1"]) & f.model_b.isin(["llm_0", "llm_1"])
                 | f.model_a.isin(["llm_3", "llm_4"]) & f.model_b.isin(["llm_3", "llm_4"])],
     "disconnected"),
])
def test_bad_battles(battles, change, message):
    with pytest.raises(DataError, match=message) as info:
        from_battles(change(battles))
    assert "\n" not in str(info.value)


def test_bad_options(battles):
    with pytest.raises(DataError, match="ties must be"):
        from_battles(battles, ties="half")
    with pytest.raises(DataError, match="not among models="):
        from_battles(battles, models=["llm_0", "llm_1"])


# -- files ----------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_load_battles_file(tmp_path, battles, pairs, suffix):
    path = tmp_path / f"battles{suffix}"
    if suffix == ".csv":
        battles.to_csv(path, index=False)
    elif suffix == ".jsonl":
        battles.to_json(path, orient="records", lines=True)
    else:
        battles.to_parquet(path)
    loaded = br.load(path)
    assert isinstance(loaded, PairwiseData)
    np.testing.assert_array_equal(loaded.wins, pairs.wins)
    np.testing.assert_array_equal(loaded.ties, pairs.ties)
    np.testing.assert_array_equal(loaded.battles.outcome, pairs.battles.outcome)


def test_load_battles_options(tmp_path, battles):
    path = tmp_path / "battles.csv"
    battles.to_csv(path, index=False)
    dropped = br.load_battles(path, ties="drop")
    np.testing.assert_array_equal(dropped.wins, from_battles(battles).wins)
    assert dropped.ties.sum() == 0
    long = tmp_path / "long.csv"
    pd.DataFrame({"model": ["a"], "question": [0], "outcome": [1]}).to_csv(long, index=False)
    with pytest.raises(LoadError, match="not a battles table"):
        br.load_battles(long)


def test_load_detects_and_forces(tmp_path, battles):
    assert isinstance(br.load(battles), PairwiseData)
    odd = tmp_path / "battles.txt"
    battles.to_csv(odd, index=False)
    with pytest.raises(LoadError, match="cannot tell the format"):
        br.load(odd)
    renamed = tmp_path / "other.csv"
    battles.rename(columns={"winner": "verdict"}).to_csv(renamed, index=False)
    with pytest.raises(DataError, match="verdict"):  # not a battles table: the tensor reader
        br.load(renamed)
    with pytest.raises(DataError, match="needs model_a, model_b, winner"):
        br.load(renamed, format="battles")
    with pytest.raises(LoadError, match="R0 apply to response tensors"):
        br.load(battles, R0=np.zeros(3))
    with pytest.raises(DataError, match="row 0 has winner"):
        br.load(battles.assign(winner="??"))
    # a long tensor table is still a tensor
    long = pd.DataFrame({"model": ["a", "a", "b", "b"], "question": [0, 1, 0, 1],
                         "trial": 0, "outcome": [1, 0, 1, 1]})
    assert isinstance(br.load(long), br.ResponseData)


def test_load_battle_records_json(tmp_path, battles, pairs):
    """LMArena's clean_battle_*.json: one JSON array of battle records."""
    path = tmp_path / "clean_battle.json"
    battles.to_json(path, orient="records")
    loaded = br.load(path)
    np.testing.assert_array_equal(loaded.wins, pairs.wins)
    np.testing.assert_array_equal(loaded.battles.outcome, pairs.battles.outcome)
    path.write_text(json.dumps({"models": ["a", "b"]}))
    with pytest.raises(LoadError, match="neither a list of battles"):
        br.load(path, format="battles")
    with pytest.raises(LoadError, match="cannot tell the format"):  # other JSON: not battles
        br.load(path)


def test_load_pair_counts_json(tmp_path, pairs):
    L = pairs.L
    i, j = np.triu_indices(L, 1)
    Y = np.stack([pairs.wins[i, j], pairs.wins[j, i], pairs.ties[i, j] - 1, np.ones(i.size)],
                 axis=1)
    path = tmp_path / "counts.json"
    path.write_text(json.dumps({"models": list(pairs.models), "X": np.stack([i, j], 1).tolist(),
                                "Y": Y.astype(int).tolist()}))
    loaded = br.load(path)  # both-bad ties (the fourth column) count as ties
    np.testing.assert_array_equal(loaded.wins, pairs.wins)
    np.testing.assert_array_equal(loaded.ties, pairs.ties)
    assert loaded.battles is None
    no_bad = br.load_battles(path, both_bad="drop")
    np.testing.assert_array_equal(no_bad.ties, pairs.ties - (pairs.ties > 0))
    assert br.load_battles(path, ties="drop").ties.sum() == 0
    with pytest.raises(DataError, match="both_bad='error'"):
        br.load_battles(path, both_bad="error")
    path.write_text(json.dumps({"models": ["a"], "X": [[0, 1]], "Y": [[1, 2]]}))
    with pytest.raises(LoadError, match=r"Y \(pairs, 3 or 4\)"):
        br.load(path)


# -- ranking --------------------------------------------------------------------------------
def test_every_pairwise_rule_ranks(pairs):
    table = br.methods()
    assert set(table.loc[table.pairwise, "base"]) == PAIRWISE_RULES
    for identifier in table.loc[table.pairwise, "identifier"]:
        result = br.rank(pairs, identifier)
        assert result.models == pairs.models
        assert np.isfinite(result.scores).all()
        # five models 0.4 apart or more on 1,500 battles: every rule finds the best
        assert result.ranks[np.argmax(THETA)] == 1, identifier
    for identifier in table.loc[~table.pairwise, "identifier"]:
        with pytest.raises(DataError, match="needs the L x M x N response tensor") as info:
            br.rank(pairs, identifier)
        assert "\n" not in str(info.value)


def test_sequential_rules_need_order(pairs):
    counts = PairwiseData(pairs.wins, pairs.ties, models=pairs.models)
    for identifier in ("elo_tie_draw", "glicko_tie_skip", "trueskill"):
        with pytest.raises(DataError, match="counts without an order"):
            br.rank(counts, identifier)


def test_bradley_terry_matches_choix(pairs):
    """The ML Bradley-Terry of the decisive battles is choix's (an independent optimiser)."""
    i, j = np.nonzero(pairs.wins)
    comparisons = [(a, b) for a, b, n in zip(i, j, pairs.wins[i, j].astype(int), strict=True)
                   for _ in range(n)]
    theirs = choix.opt_pairwise(pairs.L, comparisons, alpha=0.0, method="Newton-CG", tol=1e-10)
    ours = br.rank(pairs, "bradley_terry").details["log_strengths"]
    np.testing.assert_allclose(ours - ours.mean(), theirs - theirs.mean(), atol=1e-5)
    ranked = br.rank(pairs, "bradley_terry").ranks
    np.testing.assert_array_equal(ranked, pd.Series(-theirs).rank(method="min").to_numpy())


def _elo_by_hand(frame: pd.DataFrame, models, K: float, draws: set[str]) -> np.ndarray:
    """Plain sequential Elo, one battle at a time (r += K (S - E)), ties in ``draws`` 1/2."""
    r = dict.fromkeys(models, 1500.0)
    for a, b, w in frame[["model_a", "model_b", "winner"]].itertuples(index=False):
        if w not in ("model_a", "model_b") and w not in draws:
            continue
        s = 1.0 if w == "model_a" else 0.0 if w == "model_b" else 0.5
        e = 1.0 / (1.0 + 10 ** ((r[b] - r[a]) / 400))
        r[a], r[b] = r[a] + K * (s - e), r[b] - K * (s - e)
    return np.array([r[m] for m in models])


@pytest.mark.parametrize("tie_handling, draws", [
    ("skip", set()), ("draw", {"tie", "tie (bothbad)"}), ("correct_draw_only", {"tie"})])
def test_elo_plays_battles_in_order(battles, pairs, tie_handling, draws):
    ours = br.rank(pairs, "elo", K=4.0, tie_handling=tie_handling).scores
    np.testing.assert_allclose(ours, _elo_by_hand(battles, pairs.models, 4.0, draws),
                               rtol=0, atol=1e-9)


def test_count_rules_equal_on_a_tensor_and_its_counts():
    """One code path: the rules that read W and T give the tensor's ranking from its counts."""
    from _sims import simulate

    data = br.ResponseData(simulate(6, 30, 3, seed=4))
    counts = PairwiseData(data.reductions.wins, data.reductions.ties, models=data.models)
    same = [s.identifier for s in METHODS.values()
            if s.family in ("paired", "graph") or s.base == "plackett_luce"]
    assert len(same) > 20
    for identifier in same:
        np.testing.assert_allclose(br.rank(counts, identifier).scores,
                                   br.rank(data, identifier).scores, rtol=1e-9, atol=1e-12,
                                   err_msg=identifier)


def test_command_line_ranks_battles(tmp_path, battles, capsys):
    from bayesrank.cli import main

    path = tmp_path / "battles.csv"
    battles.to_csv(path, index=False)
    assert main(["rank", str(path), "--method", "elo_tie_draw"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "observed win rate (ties half)" in lines[1]
    assert lines[2].split()[:2] == ["1", f"llm_{int(np.argmax(THETA))}"]
    assert main(["rank", str(path), "--method", "avg"]) == 1  # a data error, not usage
    assert "needs the L x M x N response tensor" in capsys.readouterr().err
