"""The self-contained HTML report: content, self-containment, atomic writes, and a
real browser (headless Chromium) loading it without console errors."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pytest
from _html_tables import parse
from scipy import stats

import bayesrank
from bayesrank.analysis.posterior import Posterior, closed_form
from bayesrank.cli import EXAMPLE_NOTE, main
from bayesrank.data import ResponseData
from bayesrank.errors import UnknownMethodError
from bayesrank.report.html import write_report

pm = pytest.importorskip("pymc")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--enable-logging=stderr", "--v=0",
]


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def data() -> ResponseData:
    rng = np.random.default_rng(4)
    L, M, N = 6, 20, 10
    theta = np.array([1.2, 1.1, 0.3, 0.0, -0.4, -1.5])
    b = rng.normal(0, 1, M)
    p = 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))
    R = (rng.random((L, M, N)) < p[..., None]).astype(np.int8)
    names = ["alpha", "beta<script>", "gamma & co", "delta", "epsilon", "zeta"]
    return ResponseData(R, models=names)


@pytest.fixture(scope="module")
def posterior(data) -> Posterior:
    """A small Rasch fit written here, independent of bayesrank's model code."""
    return hand_written_rasch(data, hierarchical=True, draws=300, tune=300, seed=3)


def hand_written_rasch(d: ResponseData, *, hierarchical: bool, draws: int, tune: int,
                       seed: int) -> Posterior:
    """Binomial Rasch in plain PyMC (difficulty scale learnt or fixed), PyMC's own NUTS."""
    k, n = d.reductions.successes, d.reductions.trials
    with pm.Model(coords={"llm": list(d.models), "question": list(d.questions)}) as model:
        theta = pm.Normal("theta", 0, 2, dims="llm")
        b_sd = pm.HalfNormal("sigma_b", 2) if hierarchical else 2
        b = pm.Normal("b", 0, b_sd, dims="question")
        pm.Binomial("k", n=n, logit_p=theta[:, None] - b[None, :], observed=k,
                    dims=("llm", "question"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = pm.sample(draws=draws, tune=tune, chains=2, cores=1, random_seed=seed,
                              nuts_sampler="pymc", progressbar=False,
                              compute_convergence_checks=False)
    return Posterior(idata, d, "rasch", sampler="pymc", pymc_model=model, observed_var="k")


@pytest.fixture(scope="module")
def report(tmp_path_factory, data, posterior) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    write_report(posterior, out, baselines=["avg", "bradley_terry"],
                 source="bundled simulated example", ppc_draws=200)
    return out


# ------------------------------------------------------------------------- content
def test_leaderboard_orders_models_by_posterior_mean(report, posterior):
    rows = parse(report).tables["leaderboard"]
    header, body = rows[0], rows[1:]
    assert len(body) == posterior.data.L
    models = [r[header.index("model")] for r in body]
    means = posterior.theta_draws().mean(axis=0)
    expected = [posterior.models[i] for i in np.argsort(-means, kind="stable")]
    assert models == expected
    shown = [float(r[header.index("theta (posterior mean)")]) for r in body]
    np.testing.assert_allclose(shown, np.sort(means)[::-1], atol=5e-4)
    p_best = dict(zip(models, (float(r[header.index("P(best)")]) for r in body), strict=True))
    draws = posterior.theta_draws()
    for i, m in enumerate(posterior.models):
        assert p_best[m] == pytest.approx(np.mean(draws.argmax(axis=1) == i), abs=5e-4)
    top = {m for m, r in zip(models, body, strict=True) if r[header.index("top set (95%)")]}
    assert top == set(posterior.top_set(0.05))
    for column in ("theta 90% CrI", "LCB rank", "E[rank]", "avg rank", "bradley_terry rank"):
        assert column in header


def test_baselines_agreement_is_kendall_tau_b(report, data, posterior):
    rows = parse(report).tables["baselines"]
    taus = {r[0]: float(r[1]) for r in rows[1:]}
    means = posterior.theta_draws().mean(axis=0)
    for ident in ("avg", "bradley_terry"):
        scores = bayesrank.rank(data, ident).scores
        ref = stats.kendalltau(means, scores, variant="b").statistic
        assert taus[ident] == pytest.approx(ref, abs=5e-4)


def test_report_is_self_contained_and_escapes_names(report):
    text = report.read_text(encoding="utf-8")
    parser = parse(report)
    assert not any(tag in ("script", "link", "iframe", "object") for tag, _ in parser.tags)
    for tag, attrs in parser.tags:
        for key in ("src", "href"):
            if key in attrs:
                assert attrs[key].startswith(("data:", "#")), (tag, attrs[key][:40])
    assert not re.search(r"url\(\s*['\"]?https?:", text)
    images = [a["src"] for t, a in parser.tags if t == "img"]
    assert len(images) >= 4 and all(s.startswith("data:image/png;base64,") for s in images)
    assert "beta&lt;script&gt;" in text and "beta<script>" not in text
    assert "gamma &amp; co" in text


def test_report_sections_and_simulated_banner(report, tmp_path, data, posterior):
    text = report.read_text(encoding="utf-8")
    for section in ("Leaderboard", "Credible intervals", "Superiority", "Rank distribution",
                    "Posterior-predictive checks", "Sampler diagnostics", "Data"):
        assert f">{section}</h2>" in text
    assert 'id="simulated-note"' in text and "SIMULATED" in text
    assert 'id="ppc-summary"' in text
    plain = tmp_path / "plain.html"
    write_report(posterior, plain, baselines=[], source="my_results.csv",
                 ppc_draws=100)
    assert 'id="simulated-note"' not in plain.read_text(encoding="utf-8")


def test_diagnostics_warn_in_plain_language(tmp_path, data):
    """Two chains stuck in different places must produce a visible R-hat warning."""
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(2, 200, data.L))
    theta[1] += 3.0
    idata = az.from_dict({"posterior": {"theta": theta}}, coords={"llm": list(data.models)},
                         dims={"theta": ["llm"]})
    bad = Posterior(idata, data, "stuck")
    out = tmp_path / "bad.html"
    write_report(bad, out, baselines=[])
    text = out.read_text(encoding="utf-8")
    assert "R-hat &gt; 1.01" in text or "R-hat > 1.01" in text
    assert "did not pass every check" in text
    assert "need a generative model" in text  # no PPC without a pymc model


def test_closed_form_report_needs_no_sampling(tmp_path, data):
    out = tmp_path / "closed.html"
    write_report(closed_form(data), out, baselines=["avg"])
    text = out.read_text(encoding="utf-8")
    rows = parse(out).tables["leaderboard"]
    header = rows[0]
    expected = closed_form(data).rank("mean").to_frame()["model"].tolist()
    assert [r[header.index("model")] for r in rows[1:]] == expected
    assert "no sampler diagnostics apply" in text


# ---------------------------------------------------------------------- atomic write
def test_failed_report_leaves_no_file_and_keeps_the_old_one(tmp_path, data, posterior,
                                                             monkeypatch):
    out = tmp_path / "r.html"
    out.write_text("previous report", encoding="utf-8")
    with pytest.raises(UnknownMethodError):
        write_report(posterior, out, baselines=["no_such_method"])
    import bayesrank.report.html as report_module

    def boom(*args, **kwargs):
        raise RuntimeError("rendering failed")

    monkeypatch.setattr(report_module, "render_report", boom)
    with pytest.raises(RuntimeError):
        write_report(posterior, out, baselines=[])
    fresh = tmp_path / "fresh.html"
    with pytest.raises(RuntimeError):
        write_report(posterior, fresh, baselines=[])
    assert out.read_text(encoding="utf-8") == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]


def test_interrupted_write_removes_the_temporary_file(tmp_path, monkeypatch, posterior):
    import bayesrank.data.io as io_module

    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(io_module.os, "replace", fail)
    with pytest.raises(OSError):
        write_report(posterior, tmp_path / "x.html", baselines=[], ppc_draws=50)
    assert list(tmp_path.iterdir()) == []


def test_written_file_has_ordinary_permissions(report):
    umask = os.umask(0)
    os.umask(umask)
    assert report.stat().st_mode & 0o777 == 0o666 & ~umask


# ---------------------------------------------------------------- CLI and real fit
def test_cli_report_with_closed_form(tmp_path, capsys):
    out = tmp_path / "cli.html"
    assert main(["report", "--model", "closed_form", "--key", "aime24", "--baselines", "avg",
                 "-o", str(out)]) == 0
    assert out.exists() and "wrote" in capsys.readouterr().out
    text = out.read_text(encoding="utf-8")
    assert 'id="simulated-note"' in text and EXAMPLE_NOTE in text
    assert len(parse(out).tables["leaderboard"]) == 21  # header + 20 models


@pytest.mark.parametrize("model", ["rasch", "2pl"])
def test_report_fits_with_bayesrank_fit(tmp_path, data, model):
    """End to end through bayesrank.fit (the package's own Rasch, and the 2PL, the report's
    default family) and its PPC.  The 2PL's intercepts are named ``beta`` as the contextual
    model's coefficients are: the report tabulated them as covariates and failed (`make
    demo`, 2026-12-06) until it looked for the contextual model's own ``beta_per_unit``."""
    out = tmp_path / "fit.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = bayesrank.fit(data, model, draws=200, tune=200, chains=2, random_seed=1)
        write_report(post, out, baselines=["avg"], ppc_draws=100)
    text = out.read_text(encoding="utf-8")
    assert 'id="ppc-summary"' in text
    assert "Style control" not in text
    assert len(parse(out).tables["leaderboard"]) == data.L + 1


# ------------------------------------------------- issue 9: misfit first, accuracy, ties, DL
def test_accuracy_column_is_the_mean_solve_probability(report, posterior):
    rows = parse(report).tables["leaderboard"]
    header, body = rows[0], rows[1:]
    column = header.index("expected accuracy on these questions [90% predictive interval]")
    observed = header.index("observed accuracy")
    assert header.index("model") + 1 == observed and observed + 1 == column  # read first
    assert column < header.index("theta (posterior mean)")
    counted = dict(zip(posterior.data.models, posterior.data.reductions.observed_score,
                       strict=True))
    rep = posterior.predictive_accuracy().transpose("chain", "draw", "llm").values
    rep_by_name = dict(zip(posterior.models, rep.reshape(-1, rep.shape[-1]).T, strict=True))
    tv = posterior.idata.posterior["theta"].transpose("chain", "draw", "llm").values
    bv = posterior.idata.posterior["b"].transpose("chain", "draw", "question").values
    acc = stats.logistic.cdf(tv[..., :, None] - bv[..., None, :]).mean(-1).reshape(-1, tv.shape[-1])
    by_name = dict(zip(posterior.models, acc.T, strict=True))
    for r in body:
        mean, interval = r[column].split(" [")
        lower, upper = (float(x) for x in interval.rstrip("]").split(", "))
        name = r[header.index("model")]
        a, replicated = by_name[name], rep_by_name[name]
        assert float(r[observed]) == pytest.approx(counted[name], abs=5e-4)
        assert float(mean) == pytest.approx(a.mean(), abs=5e-4)
        # the interval is the predictive one of replicated trials, wider than the mean's
        assert lower == pytest.approx(np.quantile(replicated, 0.05), abs=5e-4)
        assert upper == pytest.approx(np.quantile(replicated, 0.95), abs=5e-4)
        assert upper - lower >= np.quantile(a, 0.95) - np.quantile(a, 0.05)


def test_no_misfit_warning_when_the_checks_pass(report):
    text = report.read_text(encoding="utf-8")
    assert "MODEL MISFIT" not in text  # the data are Rasch: the checks pass


@pytest.fixture(scope="module")
def overdispersed_posterior() -> Posterior:
    """Rasch fitted (hand-written model) to data with strong model-by-question interaction."""
    rng = np.random.default_rng(8)
    L, M, N = 6, 25, 20
    logit = rng.normal(0, 1, L)[:, None] - rng.normal(0, 1, M)[None, :]
    logit = logit + rng.normal(0, 2.0, (L, M))  # interaction: over-dispersed cells
    R = (rng.random((L, M, N)) < 1 / (1 + np.exp(-logit))[..., None]).astype(np.int8)
    return hand_written_rasch(ResponseData(R), hierarchical=False, draws=200, tune=300, seed=1)


def test_misfit_warning_opens_the_decision_and_names_a_better_model(
        tmp_path, overdispersed_posterior):
    out = tmp_path / "misfit.html"
    write_report(overdispersed_posterior, out, baselines=["avg"], ppc_draws=200)
    text = out.read_text(encoding="utf-8")
    section = text[text.index('<h2 id="decision">'):]
    warning = section.index('id="misfit-warning"')
    assert warning < section.index("Top set") < section.index('<table id="decision-table">')
    assert section.index('<table id="decision-table">') < section.index('<h2 id="leaderboard">')
    banner = section[warning:section.index("</div>", warning)]
    assert "fails its posterior-predictive checks" in banner
    assert "overconfident" in banner  # over-dispersion, in plain words
    assert 'fit(data, &quot;rasch&quot;, likelihood=&quot;beta_binomial&quot;)' in banner


def test_duplicated_models_share_their_rank_in_the_report(tmp_path):
    rng = np.random.default_rng(1)
    R = (rng.random((4, 12, 6)) < np.array([0.3, 0.5, 0.5, 0.7])[:, None, None]).astype(np.int8)
    R[2] = R[1]
    d = ResponseData(R, models=["a", "b", "b2", "c"])
    out = tmp_path / "ties.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = bayesrank.fit(d, "bayes", random_seed=5, progressbar=False)
    write_report(post, out, baselines=["avg"], ppc_draws=100)
    rows = parse(out).tables["leaderboard"]
    header, body = rows[0], rows[1:]
    rank = {r[header.index("model")]: r[header.index("rank")] for r in body}
    assert rank == {"c": "1", "b": "2", "b2": "2", "a": "4"}
    assert "b = b2" in out.read_text(encoding="utf-8")


def test_davidson_luce_report_explains_why_the_ppc_does_not_apply(tmp_path):
    rng = np.random.default_rng(2)
    R = (rng.random((3, 8, 2)) < np.array([0.3, 0.5, 0.7])[:, None, None]).astype(np.int8)
    d = ResponseData(R, models=["x", "y", "z"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = bayesrank.fit(d, "davidson_luce", draws=100, tune=100, chains=2, random_seed=0,
                             progressbar=False)
    out = tmp_path / "dl.html"
    write_report(post, out, baselines=["avg"], ppc_draws=50)
    text = out.read_text(encoding="utf-8")
    assert 'id="ppc-not-applicable"' in text
    assert "setwise events" in text and "does not apply to the davidson_luce model" in text
    assert 'id="accuracy-note"' in text  # no accuracy scale for a setwise model
    header = parse(out).tables["leaderboard"][0]
    # the data's own accuracy is shown for every model; the model has no estimate of it
    assert [h for h in header if "accuracy" in h] == ["observed accuracy"]
    assert "MODEL MISFIT" not in text


# ------------------------------------------------------------------------ browser
def run_chromium(page: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """DOM after load, and the console messages Chromium logged."""
    profile = tmp_path / "chromium-profile"
    proc = subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return proc.stdout, console


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed "
                    "(apt-get install chromium); the browser check is skipped")
def test_report_loads_in_headless_chromium_without_console_errors(report, tmp_path):
    # Negative control: the same detection catches a page that does log errors.
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><p>x</p><script>console.error("marker");'
                   "missing();</script></body></html>", encoding="utf-8")
    _, console = run_chromium(bad, tmp_path)
    assert any("marker" in line for line in console)
    assert any("Uncaught" in line for line in console)

    dom, console = run_chromium(report, tmp_path)
    assert console == []
    assert '<table id="leaderboard">' in dom
    assert dom.count("<tr") >= 7 and "alpha" in dom and "Leaderboard" in dom


def test_default_model_is_beta_binomial_2pl_only_with_repeated_trials():
    from bayesrank.report import DEFAULT_MODEL, default_model

    rng = np.random.default_rng(0)
    repeated = ResponseData(rng.integers(0, 2, size=(3, 5, 4)))
    single = ResponseData(rng.integers(0, 2, size=(3, 5, 1)))
    assert DEFAULT_MODEL == "2pl"  # best PSIS-LOO on every real set (docs/report.md)
    assert default_model(repeated) == (DEFAULT_MODEL, {"likelihood": "beta_binomial"})
    assert default_model(single) == (DEFAULT_MODEL, {})  # n = 1: beta-binomial = Bernoulli
    # e.g. wrong / partial / right
    levels = ResponseData(rng.integers(0, 3, size=(3, 5, 1)), n_categories=3)
    assert default_model(levels) == ("bayes", {})  # the one model that reads categories


def test_categorical_report_runs_by_default_and_its_advice_fits_binary_outcomes(tmp_path):
    """Reasoning-Gym-like levels (0 / partial / 1) with cell-level over-dispersion: the
    report's default fits them, and the misfit banner's suggested call runs on them."""
    rng = np.random.default_rng(11)
    L, M = 5, 60
    logit = rng.normal(0, 1, L)[:, None] - rng.normal(0, 1.5, (L, M))
    score = 1 / (1 + np.exp(-logit))
    R = np.where(rng.random((L, M)) < score, 2, (rng.random((L, M)) < 0.3).astype(int))
    d = ResponseData(R[..., None], models=list("abcde"), n_categories=3)
    src = tmp_path / "levels.npz"
    bayesrank.save(d, src)
    out = tmp_path / "levels.html"
    assert main(["report", str(src), "--baselines", "avg", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "model=bayes" in text and "outcome categories" in text
    header = parse(out).tables["leaderboard"][0]
    # a weighted score, not an accuracy, and a shrunken one
    assert ("Bayes@N score (uniform prior, shrinks toward 0.5 at small N) [90% predictive "
            "interval]") in header
    assert header[header.index("model") + 1] == "observed score"
    assert not any("accuracy" in h for h in header)
    weights = ", ".join(f"{w:g}" for w in d.weights)
    assert f"score on a question (the category weights {weights} averaged" in text
    banner = text[text.index('id="misfit-warning"'):]
    banner = banner[:banner.index("</div>")]
    call = 'fit(data.binarize(), "2pl")'  # one trial per cell: the binomial 2PL
    assert call.replace('"', "&quot;") in banner
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        def short_fit(*args, **kwargs):  # the advice's call, with fewer draws
            return bayesrank.fit(*args, draws=200, tune=200, chains=2, progressbar=False,
                                 **kwargs)

        binary = eval(call, {"fit": short_fit, "data": d}, {})
    assert binary.data.is_binary and binary.model == "2pl"
    np.testing.assert_array_equal(binary.data.R, (d.R == 2).astype(np.int8))


# ---------------------------------------------- issue 52: the decision first, at 1,400 and 800 px
_MEASURE = """<script>
window.addEventListener("load", () => {
  const answer = document.getElementById("answer").getBoundingClientRect();
  const table = document.getElementById("decision-table");
  const header = table.querySelector("thead").getBoundingClientRect();
  const firstRow = table.querySelector("tbody tr").getBoundingClientRect();
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = JSON.stringify({
    width: window.innerWidth, height: window.innerHeight,
    pageWidth: document.documentElement.scrollWidth,
    tableRight: table.getBoundingClientRect().right, tableScroll: table.scrollWidth,
    tableClient: table.clientWidth, answerBottom: answer.bottom, rowBottom: firstRow.bottom,
    headerTop: header.top,
    firstSection: document.querySelector("h2").id,
  });
  document.body.appendChild(out);
});
</script>"""


def _decision_report(tmp_path: Path) -> Path:
    """A closed-form report of 40 models with long, harness-style names."""
    rng = np.random.default_rng(12)
    names = [f"Llama-3.1-405B-Instruct-fp8@provider-{i:02d}-2024-08-06" for i in range(40)]
    p = np.linspace(0.3, 0.96, 40)[:, None, None]
    R = (rng.random((40, 200, 1)) < p).astype(np.int8)
    out = tmp_path / "decision.html"
    write_report(closed_form(ResponseData(R, models=names)), out, baselines=["avg"])
    return out


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium not installed "
                    "(apt-get install chromium); the browser check is skipped")
@pytest.mark.parametrize("width", [1400, 800])
def test_decision_opens_the_report_without_scrolling_at_1400_and_800_px(
        report, tmp_path, width):
    """The answer and the compact leaderboard are on the first screen, with no horizontal
    scroll, for the report fixture and for 40 long model names.  Screenshots are kept in
    $BAYESRANK_SCREENSHOTS when it is set (to look at them)."""
    import json

    keep = os.environ.get("BAYESRANK_SCREENSHOTS")
    for name, page in (("fixture", report), ("long_names", _decision_report(tmp_path))):
        measured = tmp_path / f"{name}_{width}.html"
        measured.write_text(page.read_text(encoding="utf-8").replace(
            "</body>", _MEASURE + "</body>"), encoding="utf-8")
        profile = tmp_path / f"profile-{name}-{width}"
        size = f"--window-size={width},1000"
        proc = subprocess.run(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", size, "--hide-scrollbars",
             "--dump-dom", measured.as_uri()], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        found = re.search(r'<pre id="measured">(.*?)</pre>', proc.stdout, re.S)
        assert found, proc.stdout[-500:]
        m = json.loads(found.group(1).replace("&quot;", '"'))
        assert m["width"] == width
        assert m["firstSection"] == "decision"
        assert m["pageWidth"] <= width, m  # no horizontal scrolling of the page
        assert m["tableScroll"] <= m["tableClient"] and m["tableRight"] <= width, m
        assert m["answerBottom"] <= m["height"] and m["rowBottom"] <= m["height"], m
        shot = Path(keep) if keep else tmp_path
        shot.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", size, "--hide-scrollbars",
             f"--screenshot={shot / f'{name}_{width}.png'}", page.as_uri()],
            capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and (shot / f"{name}_{width}.png").stat().st_size > 10_000
