"""The HTML report of a suite of benchmarks (:func:`bayesrank.fit_benchmarks`).

The sections, in this order: the overall leaderboard (the common skill: the answer, its
credible interval, LCB rank, P(best), top set), one leaderboard per benchmark (every
model of the suite with its expected accuracy there; a model that did not run the
benchmark is a prediction from the hierarchy, its row marked ``predicted``), the spread
of each benchmark (how far its abilities stray from the common skill), the data and the
sampler diagnostics.  Rendered by :func:`bayesrank.report.render_report` /
:func:`~bayesrank.report.write_report` (which dispatch a
:class:`~bayesrank.analysis.suite.SuitePosterior` here) with the single-benchmark
report's tables, page and atomic writer.
"""

from __future__ import annotations

import time

import pandas as pd

from bayesrank.analysis.suite import SuitePosterior
from bayesrank.report.html import (
    DEFAULT_BASELINES,
    ReportOptions,
    _answer,
    _diagnostics_section,
    _esc,
    _fmt,
    _is_simulated,
    _leaderboard_section,
    _plot,
    _simulated_banner,
    _table_html,
    page,
    render_report,
)

__all__ = ["render_suite_report", "OVERALL", "benchmark_title"]

#: the first section's title
OVERALL = "Overall leaderboard"
#: what a row of a benchmark's leaderboard says when the model did not run it
PREDICTED = "predicted"


def benchmark_title(name: str) -> str:
    """The title of benchmark ``name``'s section (its ``id``: :func:`section_id`)."""
    return f"Benchmark {name}"


def _overall_section(post: SuitePosterior, o: ReportOptions) -> str:
    board = post.leaderboard(prob=o.prob, q=o.q, alpha=o.alpha, level=o.level)
    board.attrs["accuracy_note"] = ("No accuracy column: the skill is on the logit scale of "
                                    "no single benchmark; each benchmark's section below gives "
                                    "the expected accuracy there.")
    total = len(post.benchmarks)
    ran = {"benchmarks run": [f"{n} of {total}" for n in board["benchmarks"]]}
    intro = ("<p>The common <b>skill</b> of each model, pooled over the benchmarks it ran "
             "(its ability on a benchmark is its skill plus that benchmark's deviation). "
             "A model that ran fewer benchmarks has a wider interval.</p>")
    table = _leaderboard_section(post.overall, board, {}, o.prob, o.q, o.alpha, o.level,
                                 quantity="skill", extra=ran, table_id="skill-leaderboard")
    from bayesrank.report.plots import plot_forest

    forest = _plot(plot_forest, "forest", post.overall, "forest plot of the skills' credible "
                   "intervals", prob=o.prob, q=o.q)
    return _convergence_warning(post) + _answer(board, o.alpha) + intro + table + forest


def _convergence_warning(post: SuitePosterior) -> str:
    """A warning above the answer when the sampler failed a convergence check."""
    from bayesrank.inference import diagnostics as diag

    if post.diagnostics is None or not diag.problems(post.diagnostics):
        return ""
    return ('<div class="warn" id="convergence-warning">The sampler did not pass every '
            "convergence check (see Sampler diagnostics): the intervals, P(best) and top sets "
            "below may be off. Rerun with more --draws / --tune (docs/suite.md: the default "
            "fit of a two-benchmark suite may fall short on the skills).</div>")


def _benchmark_section(post: SuitePosterior, name: str, o: ReportOptions) -> str:
    board = post.leaderboard(name, prob=o.prob, q=o.q, alpha=o.alpha, level=o.level)
    data = post.suite.data[name]
    missing = [m for m in board.index if not board.loc[m, "ran"]]
    columns = {
        "rank": board["rank"].to_numpy(),
        "model": board.index.to_numpy(),
        "ran it": ["yes" if r else PREDICTED for r in board["ran"]],
        board.attrs["observed_label"]: [_fmt(x) for x in board["observed"]],
        f"expected accuracy [{o.prob:.0%} PI]": [
            f"{_fmt(m)} [{_fmt(a)}, {_fmt(b)}]" for m, a, b in
            zip(board["accuracy"], board["accuracy_lower"], board["accuracy_upper"],
                strict=True)],
        "P(best)": [_fmt(x, 2) for x in board["p_best"]],
        f"rank {o.prob:.0%}": [f"{a}–{b}" for a, b in
                                zip(board["rank_lower"], board["rank_upper"], strict=True)],
    }
    classes = [" ".join(c for c, on in (("top", top), (PREDICTED, not ran)) if on)
               for top, ran in zip(board["in_top_set"], board["ran"], strict=True)]
    table = _table_html(pd.DataFrame(columns), name_columns=("model",), row_classes=classes,
                        table_id=f"leaderboard-{name}")
    if missing:
        listed = ", ".join(_esc(m) for m in missing)
        gap = (f'<p class="warn" id="missing-{_esc(name)}">{len(missing)} of {len(board)} '
               f"models did not run {_esc(name)} ({listed}): their rows are marked "
               f"<i>{PREDICTED}</i>, no observed accuracy, and their expected accuracy is a "
               "prediction from their skill and this benchmark's spread, not a "
               "measurement.</p>")
    else:
        gap = f'<p class="ok">Every model of the suite ran {_esc(name)}.</p>'
    text = (f"<p>{data.M} questions, {data.N} trial(s) per question. Ranked by the posterior "
            f"mean ability on {_esc(name)}; the expected accuracy is on its questions, with "
            f"the {o.prob:.0%} posterior predictive interval of the benchmark accuracy on "
            "replicated trials (the benchmark's typical trials for a model that did not run "
            "it). Shaded: the top set on this benchmark.</p>")
    return gap + text + table


def _spread_section(post: SuitePosterior, o: ReportOptions) -> str:
    spread = post.spread(prob=o.prob)
    ran = post.ran().sum(axis=0)
    rows = pd.DataFrame({
        "benchmark": spread.index.to_numpy(),
        "models that ran it": [f"{ran[b]} of {len(post.models)}" for b in spread.index],
        "spread (posterior mean)": [_fmt(x) for x in spread["mean"]],
        f"spread {o.prob:.0%} CrI": [f"[{_fmt(a)}, {_fmt(b)}]" for a, b in
                                     zip(spread["lower"], spread["upper"], strict=True)],
    })
    return ("<p>The spread sigma_b of a benchmark is the standard deviation of the models' "
            "abilities on it around their common skill (logit scale): how much the "
            "benchmark disagrees with the overall ranking. A large spread means it ranks "
            "models its own way, and predictions for the models that did not run it are "
            "wide.</p>" + _table_html(rows, name_columns=("benchmark",), table_id="spread"))


def _data_section(post: SuitePosterior, source: str | None) -> str:
    rows = []
    for name in post.benchmarks:
        d = post.suite.data[name]
        missing = 0 if d.mask is None else int((~d.mask).sum())
        rows.append((name, d.L, len(post.models) - d.L, d.M, d.N, missing))
    frame = pd.DataFrame(rows, columns=["benchmark", "models that ran it", "models predicted",
                                        "questions (M)", "trials per cell (N)",
                                        "missing trials"])
    both = int(post.ran().all(axis=1).sum())
    return (f"<p>Source: {_esc(source or 'in-memory data')}. {len(post.models)} models over "
            f"{len(post.benchmarks)} benchmarks, {both} of them ran every benchmark; models "
            "are matched by name.</p>" + _table_html(frame, name_columns=("benchmark",),
                                                     table_id="suite-data")
            + '<p class="note" id="ppc-not-applicable">Posterior-predictive checks of a '
              "suite are not available yet; fit a benchmark alone (bayesrank report FILE) "
              "for its checks.</p>")


def render_suite_report(post: SuitePosterior, o: ReportOptions) -> str:
    """The report of a suite posterior as one HTML string, the overall leaderboard first.

    Parameters
    ----------
    post : SuitePosterior
        From :func:`bayesrank.fit_benchmarks`.
    o : ReportOptions
        ``prob``, ``q``, ``alpha``, ``level``, ``source``, ``simulated`` and ``progress``
        as for one benchmark; a suite's report has no deterministic baselines, so
        ``baselines`` must be left at its default (or empty).

    Returns
    -------
    str
        The page.
    """
    if tuple(o.baselines) not in (tuple(DEFAULT_BASELINES), ()):
        raise ValueError("a suite's report shows no deterministic baselines (they rank one "
                         "benchmark); leave baselines out")
    started = time.perf_counter()
    stage = o.progress or (lambda _: None)
    stage("overall leaderboard")
    banner = _simulated_banner(_is_simulated(o.source, o.simulated))
    sections = [(OVERALL, banner + _overall_section(post, o))]
    for name in post.benchmarks:
        stage(f"leaderboard of {name}")
        sections.append((benchmark_title(name), _benchmark_section(post, name, o)))
    sections += [("Spread", _spread_section(post, o)),
                 ("Data", _data_section(post, o.source)),
                 ("Sampler diagnostics", _diagnostics_section(post))]
    ran = post.ran().to_numpy()
    intro = (f"{len(post.models)} models on {len(post.benchmarks)} benchmarks "
             f"({', '.join(_esc(b) for b in post.benchmarks)}), {int((~ran).sum())} "
             f"model-benchmark combinations not run (predicted, marked <i>{PREDICTED}</i>); "
             f"suite model <b>{_esc(post.model)}</b>, skill on the logit scale (larger is "
             "better).")
    diagnostics = post.diagnostics
    settings = {"model": f"suite_{post.model}", "sampler": post.sampler}
    if diagnostics is not None:
        settings["draws"] = diagnostics.attrs.get("draws")
    settings["seed"] = post.idata["posterior"].attrs.get("random_seed")
    title = f"bayesrank suite report: {post.model}, {len(post.benchmarks)} benchmarks"
    return page(title, intro, sections, settings, post, started)


@render_report.register(SuitePosterior)
def _render_suite(post: SuitePosterior, options: ReportOptions | None = None) -> str:
    return render_suite_report(post, options or ReportOptions())
