"""Categorical schemes from completion signals (paper appendix "Categorical Ranking").

Expected categories and thresholds below are worked by hand from the paper's
definitions (predicates, table "Eight representative categorical schemes").
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import bayesrank as br
from bayesrank import schemes
from bayesrank.cli import main
from bayesrank.errors import DataError
from bayesrank.study import categorical_schemes, categorical_table

# Ten completions of one model on one question (trial t = 0..9):
#   completion_bpt = prompt_bpt = t + 1, token_ratio = (t + 1) / 10
#   correct at even t; boxed at t in {0, 1, 4, 5, 8, 9}; t = 3 repeated; t = 5 has C = 0.6.
# Hand-worked per-model thresholds (linear-interpolation percentiles of 1..10):
#   P40(bpt) = 4.6 -> high_conf: t 0..3
#   wrong bpt {2, 4, 6, 8, 10}: P60 = 6.8 -> wrong_high_conf: t 1, 3, 5
#   P90(prompt_bpt) = 9.1 -> ood: t 9
#   P33(token_ratio) = 0.397, P66 = 0.694 -> economical t 0-2, moderate 3-5, verbose 6-9
CORRECT = [1, 0, 1, 0, 1, 0, 1, 0, 1, 0]
BOXED = [1, 1, 0, 0, 1, 1, 0, 0, 1, 1]
REPEATED = [0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
COMPASS = {  # (A, B, C); default (0.7, 0.2, 0.1)
    0: (0.5, 0.3, 0.2),   # A dominant, below 0.6
    1: (0.65, 0.25, 0.1),  # wrong but verifier-high
    2: (0.2, 0.7, 0.1),   # B dominant
    5: (0.2, 0.2, 0.6),   # verifier says irrelevant -> invalid
}

EXPECTED = {
    "conservative":        [3, 1, 3, 0, 3, 0, 3, 2, 3, 2],
    "efficiency_adjusted": [4, 1, 4, 0, 5, 0, 6, 3, 6, 3],
    "format_aware":        [4, 2, 3, 0, 4, 0, 3, 1, 4, 2],
    "balanced_composite":  [7, 3, 5, 0, 6, 0, 4, 1, 6, 2],
    "ood_robust":          [4, 2, 4, 0, 4, 0, 4, 2, 4, 1],
    "rare_event":          [4, 3, 4, 0, 4, 0, 4, 5, 4, 1],
    "verifier_calibrated": [4, 1, 3, 0, 5, 0, 5, 1, 5, 1],
    "verifier_only":       [3, 3, 2, 0, 3, 1, 3, 3, 3, 3],
}

PAPER_WEIGHTS = {
    "conservative": (0, -0.10, 0.05, 1.00),
    "efficiency_adjusted": (0, 0.10, 0.07, 0.03, 1, 0.92, 0.85),
    "format_aware": (0, 0.10, 0.05, 0.90, 1),
    "balanced_composite": (0, 0.10, 0.06, -0.02, 0.90, 0.95, 0.97, 1),
    "ood_robust": (0, 0.05, 0.10, 0.95, 1),
    "rare_event": (0, 0.05, 1, 0.08, 0.95, 0.20),
    "verifier_calibrated": (0, -0.05, 0.05, 0.88, 0.94, 1),
    "verifier_only": (0, 0, 0.1, 1),
}


def hand_frame(model: str = "m") -> pd.DataFrame:
    rows = []
    for t in range(10):
        a, b, c = COMPASS.get(t, (0.7, 0.2, 0.1))
        rows.append({
            "model": model, "question": "q", "trial": t, "has_box": BOXED[t],
            "is_correct": CORRECT[t], "token_ratio": (t + 1) / 10,
            "repeated_pattern": REPEATED[t], "prompt_bpt": t + 1.0, "completion_bpt": t + 1.0,
            "compass_A": a, "compass_B": b, "compass_C": c,
        })
    return pd.DataFrame(rows)


@pytest.fixture
def hand() -> br.signals.Signals:
    return br.load_signals(hand_frame())


def flags(signals, name):
    return np.flatnonzero(schemes.predicate(signals, name)[0, 0]).tolist()


def test_percentile_oracle_matches_hand_values():
    x = np.arange(1, 11, dtype=float)
    assert np.percentile(x, 40) == pytest.approx(4.6)
    assert np.percentile([2, 4, 6, 8, 10], 60) == pytest.approx(6.8)
    assert np.percentile(x, 90) == pytest.approx(9.1)


@pytest.mark.parametrize("name, expected", [
    ("invalid", [3, 5]),
    ("high_conf", [0, 1, 2, 3]),
    ("wrong_high_conf", [1, 3, 5]),
    ("ood", [9]),
    ("economical", [0, 1, 2]),
    ("moderate", [3, 4, 5]),
    ("verbose", [6, 7, 8, 9]),
    ("verifier_high", [1, 3, 4, 6, 7, 8, 9]),
    ("dominant_A", [0, 1, 3, 4, 6, 7, 8, 9]),
    ("dominant_B", [2]),
    ("dominant_C", [5]),
    ("abstain", [3, 7]),
    ("!boxed", [2, 3, 6, 7]),
])
def test_predicates_on_hand_worked_completions(hand, name, expected):
    assert flags(hand, name) == expected


def test_dominant_label_ties_go_to_A_then_B(hand):
    frame = hand_frame()
    frame.loc[0, ["compass_A", "compass_B", "compass_C"]] = (0.4, 0.4, 0.2)
    frame.loc[1, ["compass_A", "compass_B", "compass_C"]] = (0.1, 0.45, 0.45)
    s = br.load_signals(frame)
    assert schemes.predicate(s, "dominant_A")[0, 0, 0]
    assert schemes.predicate(s, "dominant_B")[0, 0, 1]
    assert not schemes.predicate(s, "dominant_C")[0, 0, 1]


def test_verifier_irrelevant_at_exactly_one_half_is_invalid(hand):
    frame = hand_frame()
    frame.loc[7, ["compass_A", "compass_B", "compass_C"]] = (0.3, 0.2, 0.5)
    frame.loc[8, ["compass_A", "compass_B", "compass_C"]] = (0.31, 0.2, 0.49)
    inv = schemes.predicate(br.load_signals(frame), "invalid")[0, 0]
    assert inv[7] and not inv[8]


@pytest.mark.parametrize("ident", list(EXPECTED))
def test_each_paper_scheme_on_hand_worked_completions(hand, ident):
    data = schemes.apply(hand, ident)
    assert data.R[0, 0].tolist() == EXPECTED[ident]
    assert data.models == ("m",) and data.questions == ("q",)
    np.testing.assert_array_equal(data.weights, PAPER_WEIGHTS[ident])


def test_paper_schemes_are_the_eight_of_the_table():
    names = [s.name for s in schemes.PAPER_SCHEMES.values()]
    assert names == ["Conservative", "Efficiency-adj.", "Format-aware", "Balanced comp.",
                     "OOD-robust", "Rare-event", "Verifier-calib.", "Verifier-only"]
    for ident, w in PAPER_WEIGHTS.items():
        np.testing.assert_array_equal(schemes.PAPER_SCHEMES[ident].weights, w)
    assert schemes.get("Format-aware") is schemes.PAPER_SCHEMES["format_aware"]
    with pytest.raises(br.UnknownMethodError, match="unknown categorical scheme"):
        schemes.get("nope")


def random_signals(seed: int, L: int = 3, M: int = 6, N: int = 8) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    idx = pd.MultiIndex.from_product([[f"m{i}" for i in range(L)], [f"q{j}" for j in range(M)],
                                      range(N)], names=["model", "question", "trial"])
    n = len(idx)
    abc = rng.dirichlet([2.0, 1.0, 0.4], size=n)
    frame = pd.DataFrame({
        "has_box": rng.integers(0, 2, n), "is_correct": rng.integers(0, 2, n),
        "token_ratio": rng.random(n), "repeated_pattern": (rng.random(n) < 0.1).astype(int),
        "prompt_bpt": rng.gamma(2.0, 1.0, n), "completion_bpt": rng.gamma(2.0, 0.5, n),
        "compass_A": abc[:, 0], "compass_B": abc[:, 1], "compass_C": abc[:, 2],
    }, index=idx)
    return frame.reset_index()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_invalid_is_always_category_zero(seed):
    s = br.load_signals(random_signals(seed))
    invalid = schemes.predicate(s, "invalid")
    repeated = schemes.predicate(s, "repeated")
    assert invalid.any() and (~invalid).any()
    for ident, scheme in schemes.PAPER_SCHEMES.items():
        cats = schemes.categories(s, scheme)
        zero = cats == 0
        if ident == "verifier_only":  # the paper's "0: Repeated"
            np.testing.assert_array_equal(zero, repeated)
            assert (scheme.weights[cats[invalid]] == 0).all()
        else:
            np.testing.assert_array_equal(zero, invalid)


def test_thresholds_are_per_model():
    base = random_signals(3)
    shifted = base.copy()
    other = shifted["model"] == "m2"
    shifted.loc[other, "completion_bpt"] += 50.0
    shifted.loc[other, "prompt_bpt"] *= 3.0
    shifted.loc[other, "token_ratio"] = shifted.loc[other, "token_ratio"] ** 2
    a, b = br.load_signals(base), br.load_signals(shifted)
    for scheme in schemes.PAPER_SCHEMES.values():
        ca, cb = schemes.categories(a, scheme), schemes.categories(b, scheme)
        np.testing.assert_array_equal(ca[:2], cb[:2])
        # monotone transformations move the model's own percentiles with it
        np.testing.assert_array_equal(ca[2], cb[2])
    alone = br.load_signals(base[base["model"] == "m0"])
    for scheme in schemes.PAPER_SCHEMES.values():
        np.testing.assert_array_equal(schemes.categories(alone, scheme)[0],
                                      schemes.categories(a, scheme)[0])


def test_threshold_changes_when_the_model_itself_shifts():
    base = random_signals(4)
    moved = base.copy()
    sel = (moved["model"] == "m0") & (moved["question"] == "q0")
    moved.loc[sel, "completion_bpt"] += 100.0  # this model's P40 moves; others' do not
    a, b = br.load_signals(base), br.load_signals(moved)
    ha, hb = schemes.predicate(a, "high_conf"), schemes.predicate(b, "high_conf")
    np.testing.assert_array_equal(ha[1:], hb[1:])
    assert not hb[0, 0].any()


def test_missing_signal_named_only_when_a_scheme_needs_it():
    s = br.load_signals(random_signals(5).drop(columns=["token_ratio", "prompt_bpt"]))
    assert schemes.apply(s, "conservative").n_categories == 4
    with pytest.raises(DataError, match=r"Efficiency-adj.*token_ratio"):
        schemes.apply(s, "efficiency_adjusted")
    with pytest.raises(DataError, match=r"OOD-robust.*prompt_bpt"):
        schemes.apply(s, "ood_robust")
    assert schemes.PAPER_SCHEMES["verifier_only"].signals_needed() == (
        "compass_A", "compass_B", "compass_C", "repeated_pattern")


def test_user_defined_scheme_and_uncovered_completions():
    s = br.load_signals(hand_frame())
    mine = schemes.Scheme(
        "Long-correct", (
            schemes.Category("Invalid", 0.0, ("invalid",)),
            schemes.Category("Wrong", 0.0, ("wrong",)),
            schemes.Category("Correct & short", 1.0, ("correct", "short")),
            schemes.Category("Correct & long", 0.5, ("correct", "!short")),
        ),
        predicates={"short": schemes.Threshold("token_ratio", "<", value=0.5)},
    )
    # token_ratio 0.5 (t = 4) is not < 0.5: long
    assert schemes.apply(s, mine).R[0, 0].tolist() == [2, 1, 2, 0, 3, 0, 3, 1, 3, 1]
    gappy = schemes.Scheme("Gappy", (schemes.Category("Invalid", 0.0, ("invalid",)),
                                     schemes.Category("Correct", 1.0, ("correct",))))
    with pytest.raises(DataError, match=r"Gappy.*no category.*trial 1"):
        schemes.apply(s, gappy)
    with pytest.raises(ValueError, match="unknown predicate 'shiny'"):
        schemes.Scheme("Bad", (schemes.Category("a", 0, ("invalid",)),
                               schemes.Category("b", 1, ("shiny",))))
    with pytest.raises(ValueError, match="precedence"):
        schemes.Scheme("Bad", mine.categories, precedence=(0, 1, 2))


def test_load_signals_files_columns_and_missing_trials(tmp_path):
    frame = random_signals(6).rename(columns={"model": "llm", "is_correct": "ok"})
    frame = frame.drop(index=[0, 1])  # m0/q0 has 2 fewer trials
    csv, jsonl = tmp_path / "s.csv", tmp_path / "s.jsonl"
    frame.to_csv(csv, index=False)
    frame.to_json(jsonl, orient="records", lines=True, double_precision=15)
    cols = {"model": "llm", "is_correct": "ok"}
    a = br.load_signals(csv, columns=cols)
    b = br.load_signals(jsonl, columns=cols)
    assert a.shape == (3, 6, 8) and a.models == ("m0", "m1", "m2")
    assert a.mask is not None and not a.mask[0, 0, :2].any() and a.mask.sum() == 3 * 6 * 8 - 2
    assert np.isnan(a["is_correct"][0, 0, 0])
    for name in a.names:
        np.testing.assert_allclose(a[name], b[name], equal_nan=True)
    data = schemes.apply(a, "format_aware")
    np.testing.assert_array_equal(data.mask, a.mask)


@pytest.mark.parametrize("edit, message", [
    (lambda f: f.assign(has_box=f["has_box"] * 2), "has_box.*0 or 1"),
    (lambda f: f.assign(compass_A=f["compass_A"] + 1), "compass_A.*probability"),
    (lambda f: f.assign(token_ratio=np.nan), "token_ratio.*finite"),
    (lambda f: f.drop(columns=["trial"]), r"key column.*trial"),
    (lambda f: pd.concat([f, f.iloc[:1]]), "rows sharing"),
    (lambda f: f[["model", "question", "trial"]], "none of the signals"),
])
def test_load_signals_rejects_bad_tables(edit, message):
    with pytest.raises(DataError, match=message):
        br.load_signals(edit(random_signals(7)))


def test_categorical_protocol_from_signals_and_paper_table():
    s = br.load_signals(random_signals(8, L=4, M=10, N=6))
    frame = categorical_schemes(s, "conservative,format_aware", draws=3, seed=1)
    assert set(frame["scheme"]) == {"Conservative", "Format-aware"}
    table = categorical_table(frame)
    assert list(table.columns) == ["tau_GS", "tau_Self", "tau_Greedy"]
    assert (table["tau_Greedy"] == "n/a").all()  # no greedy prior given
    gs = table.attrs["mean"]["tau_GS"]
    assert list(gs.index) == list(gs.sort_values(ascending=False).index)
    # tau_Self against an independent oracle: scipy's tau-b of the Bayes@N scores
    data = schemes.apply(s, "conservative")
    full = br.rank(data, "bayes").scores
    taus = [stats.kendalltau(br.rank(data.subset(trials=[d]), "bayes").scores, full).statistic
            for d in range(6)]
    row = frame[(frame["scheme"] == "Conservative") & (frame["target"] == "self")].iloc[0]
    assert any(np.isclose(row["tau_min"], t) for t in taus)
    assert row["n_draws"] == 3
    assert table.loc["Conservative", "tau_Self"] == (
        f"{row['tau_mean']:.3f} \u00b1 {row['tau_std']:.3f}")


def test_categorical_protocol_with_greedy_prior():
    s = br.load_signals(random_signals(9, L=4, M=10, N=6))
    R0 = np.random.default_rng(0).integers(0, 2, size=(10, 1))
    frame = categorical_schemes(s, ["ood_robust"], draws=2, R0=R0)
    greedy = frame[frame["target"] == "greedy"].iloc[0]
    assert greedy["n_draws"] == 2 and not greedy["skip_reason"]
    with pytest.raises(ValueError, match="need a signals table"):
        categorical_schemes(s.outcomes(), "paper")


def test_cli_study_from_signals(tmp_path, capsys):
    path = tmp_path / "sig.csv"
    random_signals(10, L=4, M=8, N=4).to_csv(path, index=False)
    out = tmp_path / "out"
    rc = main(["study", "--signals", str(path), "--schemes", "conservative,verifier_only",
               "--draws", "2", "-o", str(out)])
    assert rc == 0
    table = pd.read_csv(out / "categorical_table.csv")
    assert list(table.columns) == ["scheme", "tau_GS", "tau_Self", "tau_Greedy"]
    assert sorted(table["scheme"]) == ["Conservative", "Verifier-only"]
    assert "tau_GS" in capsys.readouterr().out
    bad = tmp_path / "bad"
    assert main(["study", "--signals", str(path), "--schemes", "nope", "-o", str(bad)]) == 2
    assert not bad.exists()
    assert "unknown categorical scheme" in capsys.readouterr().err


def test_public_names_are_lazy_exports():
    assert br.load_signals is br.data.signals.load_signals
    assert br.schemes.PAPER_SCHEMES is schemes.PAPER_SCHEMES
    assert callable(br.adaptive.next_trials)
