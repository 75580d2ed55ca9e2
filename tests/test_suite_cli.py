"""The command line and HTML report of a suite of benchmarks (issue 49).

Two simulated benchmarks with partial overlap (``alpha``: m0..m4, ``beta``: m1..m5) in the
paper's ``.npz`` layout; one fit of the suite through ``bayesrank report`` (2 chains x 100
draws after 100 warm-up: the checks read the report's structure, not converged tails),
shared by the content and browser checks.  The error checks stop before any fit.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import numpy as np
import pytest
from _html_tables import parse
from test_report import CHROMIUM, run_chromium

from bayesrank import ResponseData, save
from bayesrank.cli import main, suite_paths
from bayesrank.data.suites import SuiteReadOptions, read_suite

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MODELS = np.array([f"m{i}" for i in range(6)])
RAN = {"alpha": [0, 1, 2, 3, 4], "beta": [1, 2, 3, 4, 5]}  # m5 missed alpha, m0 beta
FAST = ["--draws", "100", "--tune", "100", "--chains", "2", "--seed", "0", "-q"]
SECTIONS = ["overall-leaderboard", "benchmark-alpha", "benchmark-beta", "spread", "data",
            "sampler-diagnostics"]


def write_benchmark(path: Path, name: str, rows: list[int], level: float, seed: int) -> Path:
    """Benchmark ``name`` run by the models ``rows``: 20 questions x 2 trials of a Rasch."""
    rng = np.random.default_rng(seed)
    skill = np.linspace(-1.5, 1.5, MODELS.size)[rows]
    p = 1 / (1 + np.exp(-(skill[:, None] - rng.normal(level, 1.0, 20))))
    R = (rng.random((len(rows), 20, 2)) < p[..., None]).astype(np.int8)
    np.savez(path, **{name: R, "models": MODELS[rows]})
    return path


@pytest.fixture(scope="module")
def suite_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("suite")
    for seed, (name, rows) in enumerate(RAN.items()):
        write_benchmark(folder / f"{name}.npz", name, rows, level=seed - 0.5, seed=seed)
    return folder


@pytest.fixture(scope="module")
def suite_report(suite_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("suite-report") / "suite.html"
    code = main(["report", str(suite_dir / "alpha.npz"), str(suite_dir / "beta.npz"), *FAST,
                 "-o", str(out)])
    assert code == 0 and out.exists()
    return out


def rows_of(page: str, table_id: str) -> list[tuple[str, list[str]]]:
    """(class of the row, its cells' text) of every body row of table ``table_id``."""
    table = re.search(rf'<table id="{table_id}">(.*?)</table>', page, re.S)
    assert table is not None, table_id
    body = table.group(1).split("<tbody>")[1]
    return [(cls or "", re.findall(r"<td[^>]*>(.*?)</td>", cells))
            for cls, cells in re.findall(r'<tr(?: class="([^"]*)")?>(.*?)</tr>', body)]


# -- the report -------------------------------------------------------------------------
def test_suite_report_opens_with_the_overall_leaderboard_then_each_benchmark(suite_report):
    page = suite_report.read_text(encoding="utf-8")
    assert re.findall(r'<h2 id="([^"]+)"', page) == SECTIONS
    # 2 chains x 100 draws fail the convergence checks: said before the answer
    assert page.index('id="convergence-warning"') < page.index('id="answer"')
    # the answer and the overall table come before any benchmark's table
    assert page.index('id="answer"') < page.index('id="skill-leaderboard"') < page.index(
        'id="leaderboard-alpha"')
    tables = parse(suite_report).tables
    header, body = tables["skill-leaderboard"][0], tables["skill-leaderboard"][1:]
    for column in ("skill (posterior mean)", "skill 90% CrI", "LCB rank", "P(best)",
                   "top set (95%)", "benchmarks run"):
        assert column in header
    assert sorted(r[header.index("model")] for r in body) == list(MODELS)
    runs = {r[header.index("model")]: r[header.index("benchmarks run")] for r in body}
    assert runs["m0"] == runs["m5"] == "1 of 2" and runs["m2"] == "2 of 2"
    p_best = [float(r[header.index("P(best)")]) for r in body]
    assert sum(p_best) == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize(("benchmark", "missing"), [("alpha", "m5"), ("beta", "m0")])
def test_each_benchmark_lists_every_model_with_the_missing_ones_marked(suite_report, benchmark,
                                                                       missing):
    page = suite_report.read_text(encoding="utf-8")
    header = parse(suite_report).tables[f"leaderboard-{benchmark}"][0]
    rows = rows_of(page, f"leaderboard-{benchmark}")
    models = [cells[header.index("model")] for _, cells in rows]
    assert sorted(models) == list(MODELS)  # every model of the suite, run or not
    for cls, cells in rows:
        predicted = cells[header.index("model")] == missing
        assert ("predicted" in cls.split()) == predicted
        assert cells[header.index("ran it")] == ("predicted" if predicted else "yes")
        assert (cells[header.index("observed accuracy")] == "–") == predicted
        estimate = cells[header.index("expected accuracy [90% PI]")]
        mean, low, high = map(float, re.findall(r"[-\d.]+", estimate))
        assert 0 <= low <= mean <= high <= 1
    assert f'id="missing-{benchmark}"' in page and f"did not run {benchmark} ({missing})" in page


def test_spread_section_has_one_row_per_benchmark(suite_report):
    rows = parse(suite_report).tables["spread"]
    assert [r[0] for r in rows[1:]] == ["alpha", "beta"]
    assert all(r[1] == "5 of 6" and float(r[2]) > 0 for r in rows[1:])


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed "
                    "(apt-get install chromium); the browser check is skipped")
def test_suite_report_renders_in_chromium_overall_leaderboard_first(suite_report, tmp_path):
    dom, console = run_chromium(suite_report, tmp_path)
    assert console == []
    headings = re.findall(r"<h2[^>]*>(.*?)</h2>", dom)
    assert headings[0] == "Overall leaderboard"
    assert headings[1:3] == ["Benchmark alpha", "Benchmark beta"]
    first_table = re.search(r'<table id="([^"]+)"', dom)
    assert first_table is not None and first_table.group(1) == "skill-leaderboard"
    assert dom.count('class="predicted"') + dom.count('class="top predicted"') == 2


# -- what is a suite ----------------------------------------------------------------------
def _namespace(*paths: str, key: str | None = None) -> argparse.Namespace:
    return argparse.Namespace(data=list(paths), key=key, metric=None)


def test_several_paths_or_a_folder_are_a_suite_one_file_is_not(suite_dir):
    one = str(suite_dir / "alpha.npz")
    args = _namespace(one)
    assert suite_paths(args) is None and args.data == one  # one file: as before
    args = _namespace()
    assert suite_paths(args) is None and args.data is None  # the bundled example
    args = _namespace(one, str(suite_dir / "beta.npz"))
    assert suite_paths(args) == [one, str(suite_dir / "beta.npz")] and args.data is None
    args = _namespace(str(suite_dir))
    assert suite_paths(args) == [str(suite_dir)]  # a folder of benchmark files
    args = _namespace(str(suite_dir), key="alpha")
    assert suite_paths(args) is None  # --key picks one benchmark, as before


def test_a_folder_of_harness_logs_with_several_tasks_is_a_suite():
    logs = Path(__file__).parent / "data" / "harness" / "lm_eval"  # toy_mc, toy_norm
    args = argparse.Namespace(data=[str(logs)], key=None, metric="acc")
    assert suite_paths(args) == [str(logs)] and args.data is None
    suite = read_suite([logs], SuiteReadOptions(metric="acc"))
    assert sorted(suite) == ["toy_mc", "toy_norm"]
    assert all(d.models == suite["toy_mc"].models for d in suite.values())
    args = argparse.Namespace(data=[str(logs)], key="toy_mc", metric="acc")
    assert suite_paths(args) is None and args.data == str(logs)  # one task, as before


def run_cli(capsys, *argv: str) -> tuple[int, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err


def test_rank_refuses_a_suite_and_points_to_report(capsys, suite_dir):
    a, b = str(suite_dir / "alpha.npz"), str(suite_dir / "beta.npz")
    code, err = run_cli(capsys, "rank", a, b)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"bayesrank report {a} {b}" in err
    assert main(["rank", a]) == 0  # one file ranks as before
    out = capsys.readouterr().out
    assert out.startswith(f"# avg on {a}") and "m4" in out


# -- bad suites: one line, the problem and the fix, before any fit ---------------------------
@pytest.fixture
def bad_inputs(suite_dir, tmp_path) -> dict[str, Path]:
    apart = write_benchmark(tmp_path / "apart.npz", "apart", [0, 1], 0.0, 7)
    np.savez(apart, apart=np.load(apart)["apart"], models=np.array(["x", "y"]))
    graded = save(ResponseData(np.random.default_rng(0).integers(0, 3, (3, 5, 1)),
                               models=["m0", "m1", "m2"], n_categories=3),
                  tmp_path / "graded.npz")
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    write_benchmark(lonely / "solo.npz", "solo", [0, 1, 2], 0.0, 8)
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"not an archive")
    unnamed = tmp_path / "unnamed.npy"
    np.save(unnamed, np.ones((3, 4, 1), np.int8))
    return {"alpha": suite_dir / "alpha.npz", "beta": suite_dir / "beta.npz", "apart": apart,
            "graded": graded, "lonely": lonely, "broken": broken, "unnamed": unnamed,
            "absent": tmp_path / "absent.npz"}


@pytest.mark.parametrize(
    ("names", "flags", "code", "words"),
    [
        (["alpha", "beta", "apart"], [], 1,
         ["'apart' share no model with 'alpha', 'beta'", "bayesrank report FILE"]),
        (["alpha", "graded"], [], 1,
         ["'graded' has 3 outcome categories", "binary", "report it alone"]),
        (["lonely"], [], 1, ["holds one benchmark (solo)", "two or more"]),
        (["alpha", "broken"], [], 1, ["cannot read", "broken.npz"]),
        (["alpha", "absent"], [], 2, ["no such file", "absent.npz"]),
        (["alpha", "alpha"], [], 1, ["alpha.npz is given twice"]),
        (["alpha", "unnamed"], [], 1, ["unnamed.npy names no models", "by name"]),
        (["alpha", "beta"], ["--model", "3pl"], 2, ["--model '3pl'", "rasch or 2pl"]),
        (["alpha", "beta"], ["--baselines", "avg"], 2, ["--baselines does not apply"]),
        (["alpha", "beta"], ["--save-posterior", "p.nc"], 2, ["--save-posterior"]),
        (["alpha", "beta"], ["--weights", "0,1"], 2, ["--weights", "binary"]),
    ],
)
def test_bad_suites_are_one_line_errors(capsys, tmp_path, bad_inputs, names, flags, code,
                                        words):
    out = tmp_path / "never.html"
    got, err = run_cli(capsys, "report", *(str(bad_inputs[n]) for n in names), *flags,
                       "-q", "-o", str(out))
    assert got == code, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("bayesrank: error: ")
    for word in words:
        assert word in err
    assert not out.exists()
