"""The study runner (bayesrank.study): the paper's evaluation protocols.

Reference numbers are recomputed here by direct loops over numpy slices of R and
scipy's Kendall tau-b, independently of the runner's draw/target machinery.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import bayesrank as br
from bayesrank import ResponseData, study
from bayesrank.cli import main
from bayesrank.errors import DataError, UnknownMethodError

FAST = ["avg", "bayes", "borda", "elo_tie_draw", "bradley_terry_map"]


def _simulate(L=6, M=12, N=8, seed=3, prior=True) -> ResponseData:
    rng = np.random.default_rng(seed)
    ability = np.linspace(-1.2, 1.2, L)[:, None, None]
    difficulty = rng.normal(0.0, 1.0, size=(1, M, 1))
    p = 1.0 / (1.0 + np.exp(-(ability - difficulty)))
    R = (rng.random((L, M, N)) < p).astype(int)
    R0 = (rng.random((L, M, 1)) < p).astype(int) if prior else None
    return ResponseData(R, models=[f"m{i}" for i in range(L)], R0=R0)


def _tau(a, b) -> float:
    return float(stats.kendalltau(a, b, variant="b").statistic)


def _ranks(data, method) -> np.ndarray:
    return br.rank(data, method).ranks


@pytest.fixture(scope="module")
def small() -> ResponseData:
    return _simulate()


@pytest.fixture(scope="module")
def aime() -> ResponseData:
    return br.datasets.example("aime24")


# -- draws ----------------------------------------------------------------------------------


def test_single_trial_draws_are_every_trial_once():
    draws = study.trial_draws(80, 1, None, np.random.default_rng(0))
    assert [d.tolist() for d in draws] == [[n] for n in range(80)]


def test_multi_trial_draws_disjoint_blocks_and_random_subsets():
    blocks = study.trial_draws(10, 3, None, np.random.default_rng(0))
    assert len(blocks) == 3 and all(b.size == 3 for b in blocks)
    assert len(np.unique(np.concatenate(blocks))) == 9
    subsets = study.trial_draws(10, 4, 7, np.random.default_rng(1))
    assert len(subsets) == 7 and all(len(set(s.tolist())) == 4 for s in subsets)
    assert [s.tolist() for s in subsets] == [
        s.tolist() for s in study.trial_draws(10, 4, 7, np.random.default_rng(1))]
    assert [d.tolist() for d in study.trial_draws(10, 10, 5, np.random.default_rng(0))] == [
        list(range(10))]
    assert study.default_budgets(80) == (1, 2, 4, 8, 16, 32, 64, 80)
    assert study.default_budgets(64) == (1, 2, 4, 8, 16, 32, 64)


def test_named_method_sets():
    paper = study.resolve_methods(None)
    assert len(paper) == 72 and study.resolve_methods("paper") == paper
    fast = study.resolve_methods("fast")
    assert len(fast) == 72 - len(study.SLOW_METHODS)
    assert set(fast) | set(study.SLOW_METHODS) == set(paper)
    assert set(paper) < set(study.resolve_methods("all"))
    assert study.resolve_methods("avg, borda") == ["avg", "borda"]
    with pytest.raises(ValueError, match="listed twice"):
        study.resolve_methods(["avg", "avg"])


# -- gold-standard agreement ------------------------------------------------------------------


def test_gold_agreement_matches_direct_loop_and_summary(aime):
    frame = study.gold_standard_agreement(aime, FAST)
    gold = _ranks(aime, "bayes")
    by = frame.set_index("method")
    assert by.loc["avg", "tau_gold"] == pytest.approx(1.0, abs=1e-12)
    assert by.loc["bayes", "tau_gold"] == pytest.approx(1.0, abs=1e-12)
    for m in FAST:
        assert by.loc[m, "tau_gold"] == pytest.approx(_tau(_ranks(aime, m), gold), abs=1e-12)
    others = [m for m in FAST if m != "bayes"]
    direct = np.array([_tau(_ranks(aime, m), gold) for m in others])
    summary = study.summarize_gold_agreement(frame).iloc[0]
    assert summary["n_methods"] == len(others)
    assert summary["mean"] == pytest.approx(direct.mean(), abs=1e-12)
    assert summary["median"] == pytest.approx(np.median(direct), abs=1e-12)
    assert summary["min"] == pytest.approx(direct.min(), abs=1e-12)
    assert summary["n_tau_1"] == int(np.sum(np.isclose(direct, 1.0, atol=1e-12)))
    # consensus: mean tau_b against every other method
    ranks = {m: _ranks(aime, m) for m in FAST}
    expected = np.mean([_tau(ranks["borda"], ranks[o]) for o in FAST if o != "borda"])
    assert by.loc["borda", "consensus"] == pytest.approx(expected, abs=1e-12)


def test_gold_reports_methods_that_cannot_run(aime):
    frame = study.gold_standard_agreement(aime, ["bayes", "rasch_3pl"]).set_index("method")
    assert np.isnan(frame.loc["rasch_3pl", "tau_gold"])
    assert frame.loc["rasch_3pl", "skip_reason"].startswith("NotIdentifiedError")
    assert study.summarize_gold_agreement(frame.reset_index()).iloc[0]["n_skipped"] == 1


# -- N=1 stability ---------------------------------------------------------------------------


def test_n1_stability_matches_direct_loop(aime):
    methods = ["avg", "elo_tie_draw", "borda"]
    frame = study.stability(aime, methods).set_index(["method", "target"])
    gold = _ranks(aime, "bayes")
    R = np.asarray(aime.R)
    for m in methods:
        full = _ranks(aime, m)
        per_draw = [_ranks(ResponseData(R[:, :, n:n + 1], models=aime.models), m)
                    for n in range(aime.N)]
        for target, ref in (("self", full), ("gold", gold)):
            taus = np.array([_tau(r, ref) for r in per_draw])
            row = frame.loc[(m, target)]
            assert row["n_draws"] == aime.N and row["n_failed"] == 0
            assert row["tau_mean"] == pytest.approx(taus.mean(), abs=1e-12)
            assert row["tau_std"] == pytest.approx(taus.std(), abs=1e-12)
            assert row["tau_median"] == pytest.approx(np.median(taus), abs=1e-12)


def test_self_consistency_is_one_at_full_budget(small):
    methods = FAST + ["pagerank", "schulze_tie_half", "rasch_mml", "plackett_luce_map"]
    frame = study.stability(small, methods, n_trials=small.N)
    self_rows = frame[frame.target == "self"]
    assert (self_rows["n_draws"] == 1).all()
    np.testing.assert_allclose(self_rows["tau_mean"], 1.0, rtol=0, atol=1e-12)
    conv = study.convergence(small, methods, budgets=(1, small.N), reps=3)
    at_full = conv[(conv.budget == small.N) & (conv.target == "self")]
    np.testing.assert_allclose(at_full["tau_mean"], 1.0, rtol=0, atol=1e-12)
    assert (conv[conv.budget == 1]["n_draws"] == 3).all()


def test_pass_at_k_and_unidentified_methods_are_reported_not_dropped(small):
    frame = study.stability(small, ["avg", "pass_at_k_2", "rasch_3pl"])
    assert len(frame) == 6
    pak = frame[frame.method == "pass_at_k_2"]
    assert (pak["n_draws"] == 0).all() and (pak["n_failed"] == small.N).all()
    assert pak["tau_mean"].isna().all()
    assert pak["skip_reason"].str.contains("k=2").all()
    assert (frame[frame.method == "avg"]["skip_reason"] == "").all()


def test_stability_is_deterministic_given_seed(small):
    a = study.stability(small, ["avg", "elo_tie_draw"], n_trials=2, draws=5, seed=7)
    b = study.stability(small, ["avg", "elo_tie_draw"], n_trials=2, draws=5, seed=7)
    cols = ["method", "target", "tau_mean", "tau_std", "n_draws"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


# -- model-pool bootstrap --------------------------------------------------------------------


def test_model_subsets_have_the_size_and_are_reproducible():
    pools = study.model_subsets(20, (5, 10, 15), 30, np.random.default_rng(4))
    again = study.model_subsets(20, (5, 10, 15), 30, np.random.default_rng(4))
    other = study.model_subsets(20, (5, 10, 15), 30, np.random.default_rng(5))
    for k, pool_list in pools.items():
        assert len(pool_list) == 30
        assert all(len(set(p.tolist())) == k and p.max() < 20 for p in pool_list)
        assert [p.tolist() for p in pool_list] == [p.tolist() for p in again[k]]
    assert [p.tolist() for p in pools[5]] != [p.tolist() for p in other[5]]


def test_bootstrap_pool_scores_match_stability_on_each_pool(small):
    methods = ["avg", "bayes", "elo_tie_draw"]
    frame = study.model_pool_bootstrap(small, methods, sizes=(3,), subsets=4, seed=11)
    pools = study.model_subsets(small.L, (3,), 4, np.random.default_rng(11))[3]
    per_pool = [study.stability(small.subset(models=p), methods).set_index(["method", "target"])
                for p in pools]
    by = frame.set_index(["method", "target"])
    for m in methods:
        for t in ("gold", "self"):
            scores = np.array([f.loc[(m, t), "tau_mean"] for f in per_pool])
            assert by.loc[(m, t), "mean"] == pytest.approx(scores.mean(), abs=1e-12)
            assert by.loc[(m, t), "std"] == pytest.approx(scores.std(), abs=1e-12)
    # avg and bayes are order-equivalent: equal scores, and they share every win
    for t in ("gold", "self"):
        assert by.loc[("avg", t), "mean"] == by.loc[("bayes", t), "mean"]
        assert by.loc[("avg", t), "win_fraction"] == by.loc[("bayes", t), "win_fraction"]
        assert max(by.loc[(m, t), "win_fraction"] for m in methods) == 1.0 or (
            by.xs(t, level="target")["win_fraction"].sum() >= 1.0)
    again = study.model_pool_bootstrap(small, methods, sizes=(3,), subsets=4, seed=11)
    pd.testing.assert_frame_equal(frame, again)


# -- empirical priors ------------------------------------------------------------------------


def test_greedy_sampling_alignment_direct(aime):
    greedy_acc = np.asarray(aime.R0).mean(axis=(1, 2))
    sampling_acc = np.asarray(aime.R).mean(axis=(1, 2))
    expected = _tau(stats.rankdata(-greedy_acc), stats.rankdata(-sampling_acc))
    assert study.greedy_sampling_alignment(aime) == pytest.approx(expected, abs=1e-12)


def test_prior_effect_matches_direct_loop(aime):
    frame = study.prior_effect(aime, budgets=(1, aime.N), reps=12, seed=5).set_index("budget")
    gold = _ranks(aime, "bayes")
    # budget N: the uniform prior *is* the gold standard; the greedy prior shifts it
    assert frame.loc[aime.N, "tau_uniform_mean"] == pytest.approx(1.0, abs=1e-12)
    assert frame.loc[aime.N, "tau_prior_mean"] == pytest.approx(
        _tau(_ranks(aime, "bayes_greedy"), gold), abs=1e-12)
    assert frame.loc[aime.N, "n_draws"] == 1
    # budget 1: 12 distinct single trials drawn with the same generator
    trials = np.random.default_rng(5).choice(aime.N, size=12, replace=False)
    uni, pri = [], []
    for n in trials:
        sub = aime.subset(trials=[n])
        mu_u, _ = br.bayes_at_n(sub, R0=None)
        mu_g, _ = br.bayes_at_n(sub, R0="data")
        uni.append(_tau(br.scores_to_ranks(mu_u), gold))
        pri.append(_tau(br.scores_to_ranks(mu_g), gold))
    row = frame.loc[1]
    assert row["tau_uniform_mean"] == pytest.approx(np.mean(uni), abs=1e-12)
    assert row["tau_prior_std"] == pytest.approx(np.std(pri), abs=1e-12)
    assert row["delta_tau"] == pytest.approx(np.mean(pri) - np.mean(uni), abs=1e-12)
    assert row["std_reduction"] == pytest.approx(1 - np.std(pri) / np.std(uni), abs=1e-12)


def test_std_reduction_formula():
    assert study.std_reduction(0.05, 0.03) == pytest.approx(0.4)
    assert study.std_reduction(0.04, 0.05) == pytest.approx(-0.25)
    assert np.isnan(study.std_reduction(0.0, 0.0))


def test_prior_diagnostics_row(aime):
    row = study.prior_diagnostics(aime, reps=10).iloc[0]
    assert row["difficulty"] == pytest.approx(np.asarray(aime.R).mean(), abs=1e-12)
    assert row["greedy_accuracy"] == pytest.approx(np.asarray(aime.R0).mean(), abs=1e-12)
    assert row["tau_gs"] == study.greedy_sampling_alignment(aime)


# -- categorical schemes ---------------------------------------------------------------------


def test_categorical_protocol(small):
    rng = np.random.default_rng(2)
    R = np.asarray(small.R)
    # category 2 = correct, 1 = wrong but well formatted, 0 = wrong and unformatted
    cats = np.where(R == 1, 2, (rng.random(R.shape) < 0.5).astype(int))
    correct_only = ResponseData(cats, models=small.models, weights=[0.0, 0.0, 1.0])
    format_aware = ResponseData(cats, models=small.models, weights=[0.0, 0.3, 1.0])
    frame = study.categorical_schemes(
        small, {"correct_only": correct_only, "format_aware": format_aware})
    by = frame.set_index(["scheme", "target"])
    assert len(frame) == 6
    # a scheme that only rewards correctness orders models as binary Bayes@N does, so its
    # gold agreement equals the binary N=1 stability of bayes, draw for draw
    binary = study.stability(small, ["bayes", "bayes_greedy"]).set_index(["method", "target"])
    for col in ("tau_mean", "tau_std", "n_draws"):
        assert by.loc[("correct_only", "gold"), col] == binary.loc[("bayes", "gold"), col]
        assert by.loc[("correct_only", "self"), col] == binary.loc[("bayes", "self"), col]
    greedy_full = _ranks(small, "bayes_greedy")
    fa_draws = [_ranks(format_aware.subset(trials=[n]), "bayes") for n in range(small.N)]
    assert by.loc[("format_aware", "greedy"), "tau_mean"] == pytest.approx(
        np.mean([_tau(r, greedy_full) for r in fa_draws]), abs=1e-12)
    # without greedy decodes the greedy reference is reported missing, with the reason
    no_prior = ResponseData(small.R, models=small.models)
    frame = study.categorical_schemes(no_prior, {"c": correct_only}).set_index("target")
    assert "R0" in frame.loc["greedy", "skip_reason"]
    assert frame.loc["greedy", "n_draws"] == 0


# -- errors ----------------------------------------------------------------------------------


def test_bad_arguments_raise_clear_errors(small):
    no_prior = ResponseData(small.R, models=small.models)
    with pytest.raises(ValueError, match=r"budget\(s\) \[9\] outside 1..N=8"):
        study.convergence(small, ["avg"], budgets=(1, 9))
    with pytest.raises(ValueError, match=r"size 7 is outside 2..L=6"):
        study.model_pool_bootstrap(small, ["avg"], sizes=(7,))
    with pytest.raises(ValueError, match="unknown study protocol.*'gold_std'"):
        study.run_study(small, protocols=("gold_std",), methods=["avg"])
    with pytest.raises(DataError, match="R0"):
        study.prior_effect(no_prior)
    with pytest.raises(DataError, match="R0"):
        study.run_study(no_prior, protocols="prior", methods=["avg"])
    with pytest.raises(ValueError, match=r"budget\(s\) \[20\]"):
        study.run_study(small, protocols="convergence", methods=["avg"], budgets=(1, 20))
    with pytest.raises(UnknownMethodError, match="elo_tie"):
        study.stability(small, ["elo_tie_drw"])
    with pytest.raises(ValueError, match="draws requested but N=8"):
        study.stability(small, ["avg"], draws=9)
    with pytest.raises(ValueError, match="schemes"):
        study.run_study(small, protocols="categorical", methods=["avg"])


# -- run_study, CSV and CLI --------------------------------------------------------------------


def test_run_study_frames_summary_and_csv(small, tmp_path):
    result = study.run_study(small, "gold,stability,convergence,prior,bootstrap",
                             ["avg", "bayes", "elo_tie_draw"], budgets=(1, 4, 8), reps=3,
                             sizes=(3,), subsets=2, prior_reps=4, seed=1)
    assert set(result.frames) == {"gold", "gold_summary", "stability", "convergence",
                                  "bootstrap", "prior_effect", "prior_diagnostics"}
    summary = result.summary()
    assert sorted(summary["method"]) == ["avg", "bayes", "elo_tie_draw"]
    assert summary["gold_mean"].is_monotonic_decreasing
    assert summary.set_index("method").loc["bayes", "tau_gold"] == pytest.approx(1.0, abs=1e-12)
    assert "stability: 6 rows" in repr(result)
    paths = result.to_csv(tmp_path / "out")
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == sorted(p.name for p in paths)
    assert "summary.csv" in names and "settings.json" in names
    meta = json.loads((tmp_path / "out" / "settings.json").read_text())
    assert meta["seed"] == 1 and meta["settings"]["budgets"] == [1, 4, 8]
    reread = pd.read_csv(tmp_path / "out" / "stability.csv")
    assert reread["tau_mean"].to_numpy() == pytest.approx(result["stability"]["tau_mean"])


def test_to_csv_leaves_no_half_written_file(small, tmp_path, monkeypatch):
    result = study.run_study(small, "gold,stability", ["avg", "bayes"])
    real = pd.DataFrame.to_csv
    calls = {"n": 0}

    def flaky(self, path, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            with open(path, "w") as fh:  # start writing, then fail
                fh.write("method,tau")
            raise OSError("disk full")
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_csv", flaky)
    with pytest.raises(OSError, match="disk full"):
        result.to_csv(tmp_path / "out")
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["gold.csv"]  # the first frame completed; nothing partial or temporary


def test_cli_study_writes_csvs(small, tmp_path, capsys):
    path = br.save(small, tmp_path / "d.npz")
    out = tmp_path / "study"
    assert main(["study", str(path), "--methods", "avg,bayes,borda", "--protocol",
                 "gold,stability", "--draws", "4", "-o", str(out)]) == 0
    assert "wrote 7 files" in capsys.readouterr().out  # 4 csv, settings, tables.md/.tex
    with open(out / "stability.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6 and {r["n_draws"] for r in rows} == {"4"}
    assert main(["study", str(path), "--protocol", "gold,nope", "-o", str(out)]) == 2
    assert "unknown study protocol" in capsys.readouterr().err


# -- real data ---------------------------------------------------------------------------------


def test_matharena_gold_ranking_reproduces_published_leaderboard(shared_dir):
    table = pd.read_csv(shared_dir / "data" / "matharena_aime2025_I" / "counts_correct_of_4.csv")
    counts = table.drop(columns="model").to_numpy()
    R = (np.arange(4)[None, None, :] < counts[:, :, None]).astype(int)  # c ones, 4-c zeros
    data = ResponseData(R, models=table["model"].tolist())
    published = np.array([80.0, 78.3333, 73.3333, 65.0, 53.3333, 53.3333, 51.6667, 50.0, 50.0,
                          36.6667, 30.0, 28.3333, 26.6667, 25.0, 13.3333, 3.3333])
    frame = study.gold_standard_agreement(data, ["avg", "bayes", "bayes_ci", "borda"])
    by = frame.set_index("method")
    assert by.loc["avg", "tau_gold"] == pytest.approx(1.0, abs=1e-12)
    # the gold standard reproduces the published order, ties (53.33, 50.0) included
    gold = _ranks(data, "bayes")
    np.testing.assert_array_equal(gold, stats.rankdata(-published, method="min"))
    conv = study.convergence(data, ["avg", "bayes"], budgets=(4,))
    np.testing.assert_allclose(conv[conv.target == "self"]["tau_mean"], 1.0, rtol=0, atol=1e-12)


def test_summary_explains_failed_draws():
    """A method that cannot rank some draws shows how many and why, never a bare NaN."""
    data = br.datasets.example("aime25").subset(trials=range(4))
    result = br.run_study(data, protocols=("gold", "stability"),
                          methods=["avg", "bradley_terry"], quiet=True)
    summary = result.summary().set_index("method")
    stability = result.frames["stability"].set_index(["method", "target"])
    failed = int(stability.loc[("bradley_terry", "gold"), "n_failed"])
    assert failed > 0  # single-trial draws where a model wins or loses everything
    assert summary.loc["bradley_terry", "n_failed"] == failed
    assert summary.loc["bradley_terry", "reason"].startswith("NotIdentifiedError")
    assert summary.loc["avg", "n_failed"] == 0 and summary.loc["avg", "reason"] == ""
