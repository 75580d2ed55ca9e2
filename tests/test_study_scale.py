"""Study at scale: the Dask engine, the paper tables, progress reporting, CLI options."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from bayesrank import ResponseData, run_study
from bayesrank.cli import main
from bayesrank.study import tables
from bayesrank.study.progress import Progress, format_seconds

METHODS = ["avg", "bayes", "bayes_greedy", "borda", "copeland", "elo_tie_draw",
           "bradley_terry_map", "pass_at_k_2", "rasch"]


def _simulate(L=6, M=10, N=8, seed=3) -> ResponseData:
    rng = np.random.default_rng(seed)
    p = 1.0 / (1.0 + np.exp(-(np.linspace(-1.2, 1.2, L)[:, None, None]
                              - rng.normal(size=(1, M, 1)))))
    R = (rng.random((L, M, N)) < p).astype(int)
    R0 = (rng.random((L, M, 1)) < p).astype(int)
    return ResponseData(R, models=[f"m{i}" for i in range(L)], R0=R0)


PLAN = {"protocols": "gold,stability,convergence,bootstrap,prior", "methods": METHODS,
        "budgets": (1, 2, 8), "reps": 3, "sizes": (3, 5), "subsets": 4, "prior_reps": 5,
        "seed": 7, "quiet": True}


def _assert_same_frames(a, b) -> None:
    assert list(a.frames) == list(b.frames)
    for name in a.frames:
        drop = [c for c in ("seconds",) if c in a[name]]
        pd.testing.assert_frame_equal(a[name].drop(columns=drop), b[name].drop(columns=drop),
                                      rtol=0, atol=1e-12)


def test_dask_cluster_gives_the_serial_frames():
    distributed = pytest.importorskip("distributed")
    data = _simulate()
    serial = run_study(data, **PLAN)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        on_cluster = run_study(data, client=client, **PLAN)
        # the same plan given by scheduler address (bayesrank study --scheduler ADDRESS)
        by_address = run_study(data, scheduler=cluster.scheduler_address,
                               **{**PLAN, "protocols": "bootstrap"})
    _assert_same_frames(on_cluster, serial)
    pd.testing.assert_frame_equal(by_address["bootstrap"], serial["bootstrap"])


def test_reference_engine_gives_the_same_study():
    data = _simulate(seed=4)
    _assert_same_frames(run_study(data, engine="reference", **PLAN), run_study(data, **PLAN))


def test_client_and_scheduler_together_are_refused():
    with pytest.raises(ValueError, match="either client= or scheduler="):
        run_study(_simulate(), methods=["avg"], client=object(), scheduler="tcp://x:1")


# -- tables ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def result():
    return run_study(_simulate(L=7, seed=9), name="sim", **PLAN)


def test_gold_table_is_the_summary_row(result):
    frame = result.table("gold")
    s = result["gold_summary"].iloc[0]
    assert frame.loc[0, "benchmark"] == "sim"
    for col in ("mean", "median", "min", "n_tau_1", "n_tau_ge_0.95"):
        assert frame.loc[0, col] == s[col]


def test_n1_winners_are_the_best_means_without_failing_methods(result):
    frame = result.table("n1_winners").iloc[0]
    st = result["stability"]
    ran = st[st["n_failed"] == 0]
    for target in ("gold", "self"):
        sub = ran[ran["target"] == target].dropna(subset=["tau_mean"])
        best = sub["tau_mean"].max()
        assert frame[f"{target}_mean"] == best
        assert frame[f"{target}_n_tied"] == int((sub["tau_mean"] >= best - 1e-12).sum())
        assert frame[f"best_{target}"] in set(sub.loc[sub["tau_mean"] >= best - 1e-12,
                                                     "method"])
    assert "pass_at_k_2" not in set(ran["method"])  # needs 2 trials per cell: excluded at N=1


def test_bootstrap_table_one_row_per_pool_size_with_both_targets(result):
    frame = result.table("bootstrap")
    bt = result["bootstrap"]
    assert frame["pool"].tolist() == [3, 5]
    for _, row in frame.iterrows():
        at = bt[(bt["size"] == row["pool"])]
        gold = at[at["target"] == "gold"]
        assert row["gold_mean"] == gold["mean"].max()
        own = at[(at["target"] == "self") & (at["method"] == row["best"])]
        assert row["self_mean"] == own["mean"].iloc[0]


def test_prior_table_matches_the_diagnostics(result):
    frame = result.table("prior").iloc[0]
    d = result["prior_diagnostics"].iloc[0]
    assert frame["tau_gs"] == d["tau_gs"] and frame["delta_tau"] == d["delta_tau"]
    md = result.table("prior", "markdown")
    assert f"{100 * d['std_reduction']:.0f}%" in md and f"{d['delta_tau']:+.3f}" in md


def test_layouts_have_the_paper_columns(result):
    # column counts of the paper's tabulars: lccccc, l l c l c, l c l c c, lcccc
    paper_columns = {"gold": 6, "n1_winners": 5, "bootstrap": 5, "prior": 5}
    for name, n in paper_columns.items():
        md = result.table(name, "markdown").splitlines()
        assert md[0].count("|") == n + 1 and len(md) == 2 + len(result.table(name))
        tex = result.table(name, "latex")
        assert tex.startswith(r"\begin{tabular}") and r"\toprule" in tex
        body = tex.splitlines()[4]
        assert body.count("&") == n - 1
    tex = result.table("n1_winners", "latex")
    assert r"\_" in tex and r"$\pm$" in tex  # identifiers escaped, mean +- std


def test_side_by_side_benchmarks_and_missing_protocols(result):
    both = tables.gold_table({"a": result, "b": result})
    assert both["benchmark"].tolist() == ["a", "b"]
    only_gold = run_study(_simulate(), protocols="gold", methods=["avg", "bayes"], quiet=True)
    assert list(only_gold.tables()) == ["gold"]
    with pytest.raises(ValueError, match="stability"):
        only_gold.table("n1_winners")
    with pytest.raises(ValueError, match="unknown table"):
        only_gold.table("nope")
    with pytest.raises(ValueError, match="format"):
        tables.render("gold", only_gold.table("gold"), "html")


# -- progress ---------------------------------------------------------------------------------


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal_unless_forced():
    quiet_pipe = io.StringIO()
    p = Progress(stream=quiet_pipe)
    p.start("bootstrap", 4, "pools")
    p.advance(4)
    p.finish()
    assert quiet_pipe.getvalue() == ""
    tty = _Tty()
    p = Progress(stream=tty, min_interval=0)
    p.start("bootstrap", 4, "pools")
    p.advance()
    assert "1/4 pools" in tty.getvalue() and "left" in tty.getvalue()
    p.advance(3)
    p.finish()
    assert tty.getvalue().endswith("\n") and "4/4 pools" in tty.getvalue()
    silent = _Tty()
    p = Progress(quiet=True, stream=silent)
    p.start("x", 2, "pools")
    p.advance(2)
    assert silent.getvalue() == ""
    forced = io.StringIO()
    p = Progress(quiet=False, stream=forced)
    p.start("x", 2, "pools")
    assert "\r" not in forced.getvalue() and forced.getvalue().endswith("\n")


def test_time_left_is_elapsed_per_unit_times_units_left(monkeypatch):
    clock = iter([0.0, 30.0])  # start(), then line()
    monkeypatch.setattr("bayesrank.study.progress.time.perf_counter", lambda: next(clock))
    p = Progress(quiet=True)
    p.start("bootstrap", 4, "pools")
    p._done = 1
    assert p.line() == "[study] bootstrap 1/4 pools, 30 s, ~1 min 30 s left"
    assert format_seconds(7300) == "2 h 01 min"


def test_cli_quiet_engine_and_tables(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["study", "--key", "aime24", "--methods", "avg,bayes,borda", "--protocol",
                 "gold,stability", "--draws", "3", "--quiet", "--engine", "reference",
                 "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    md = (out / "tables.md").read_text()
    assert "| aime24 |" in md and "Best vs. gold standard" in md
    assert r"\begin{tabular}" in (out / "tables.tex").read_text()


def test_run_studies_puts_benchmarks_side_by_side():
    from bayesrank.study import run_studies

    a, b = _simulate(seed=1), _simulate(seed=2)
    results = run_studies({"a": a, "b": b}, protocols="gold", methods=["avg", "bayes", "borda"],
                          quiet=True)
    frame = tables.gold_table(results)
    assert frame["benchmark"].tolist() == ["a", "b"]
    single = run_study(b, protocols="gold", methods=["avg", "bayes", "borda"], quiet=True)
    assert frame.loc[1, "mean"] == single["gold_summary"].loc[0, "mean"]
    with pytest.raises(ValueError, match="no datasets"):
        run_studies({})


def test_unreachable_scheduler_is_a_clear_error(monkeypatch):
    pytest.importorskip("distributed")
    from bayesrank.study import engine

    monkeypatch.setattr(engine, "CONNECT_TIMEOUT", "1s")  # the default waits 10 s
    with pytest.raises(ValueError, match="cannot reach the Dask scheduler"):
        run_study(_simulate(), methods=["avg"], scheduler="tcp://127.0.0.1:9", quiet=True)
