"""A self-contained HTML report of a Bayesian ranking.

:func:`write_report` takes a fitted posterior (it never fits) and writes one
HTML file: leaderboard with intervals, LCB ranks, P(best), expected ranks and
top-set membership; forest plot; superiority heat map; rank distribution;
posterior-predictive checks; sampler diagnostics in plain language; the data
summary; and deterministic baselines with their Kendall tau-b agreement.
Figures are embedded as base64 PNG; the page loads nothing from the network and
runs no script.  The file is written atomically (temporary file in the same
directory, then :func:`os.replace`).
"""

from __future__ import annotations

import base64
import functools
import html
import io
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from bayesrank.analysis.posterior import NormalPosterior, Posterior, RankAnalytics
from bayesrank.analysis.suite import SuitePosterior
from bayesrank.data import ResponseData
from bayesrank.data.pairwise import PairwiseData
from bayesrank.errors import CovariatesIgnoredWarning

__all__ = [
    "DEFAULT_BASELINES", "DEFAULT_MODEL", "DEFAULT_MODEL_OPTIONS", "ReportOptions",
    "default_model", "render_report", "write_report",
]

DEFAULT_BASELINES = ("avg", "bradley_terry", "elo_tie_draw")
#: what the report shows beside a posterior of pairwise battles when the defaults are asked
#: for (avg and Elo read a response tensor or the battles' order, which counts lack)
PAIRWISE_BASELINES = ("bradley_terry", "bradley_terry_davidson", "win_rate")

# The report's default model, chosen by posterior-predictive checks and PSIS-LOO on the real
# benchmark sets (docs/report.md): fit(data, DEFAULT_MODEL, **DEFAULT_MODEL_OPTIONS).
DEFAULT_MODEL = "2pl"
DEFAULT_MODEL_OPTIONS: dict[str, Any] = {"likelihood": "beta_binomial"}


def default_model(data: ResponseData | PairwiseData) -> tuple[str, dict[str, Any]]:
    """The report's default model and its options for ``data``.

    The beta-binomial 2PL (:data:`DEFAULT_MODEL`, :data:`DEFAULT_MODEL_OPTIONS`): on
    every real benchmark set it passes the posterior-predictive checks and has the
    best PSIS-LOO, 187 +- 16 ELPD above the beta-binomial Rasch on LiveCodeBench and
    131 +- 22 / 248 +- 16 above the Rasch on ZeroEval / Reasoning Gym (docs/report.md).
    With one trial per cell the beta-binomial is the Bernoulli, so the binomial 2PL is
    the same model without an unidentified dispersion parameter.  Categorical
    outcomes get the Dirichlet-multinomial Bayes@N (``"bayes"``), the one model that
    reads categories with their weights.  Pairwise battles get Davidson's Bradley-Terry with
    ties (plain Bradley-Terry when there is no tie).
    """
    from bayesrank.analysis.ppc import one_trial_per_cell

    if isinstance(data, PairwiseData):  # battles: Davidson models their ties
        return ("davidson" if data.ties.any() else "bradley_terry"), {}
    if not data.is_binary:  # the only model that reads categories
        return "bayes", {}
    if one_trial_per_cell(data):
        return DEFAULT_MODEL, {}
    return DEFAULT_MODEL, dict(DEFAULT_MODEL_OPTIONS)

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;
max-width:1200px;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid
#ddd;padding-bottom:.2em}
table{border-collapse:collapse;font-size:.85em;margin:.6em 0;display:block;max-width:100%;
overflow-x:auto}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:right;white-space:nowrap}
th{background:#f3f5f8}td.name,th.name{text-align:left}
tr.top td{background:#eef5ff}
tr.predicted td{font-style:italic;color:#666;background:repeating-linear-gradient(
135deg,#fff,#fff 6px,#f4f4f4 6px,#f4f4f4 12px)}tr.top.predicted td{background:#e4ecf7}
.banner{background:#fff3cd;border:2px solid #e0a800;padding:.8em 1em;font-weight:600;margin:1em 0}
.warn{background:#fdecea;border-left:4px solid #c0392b;padding:.5em 1em;margin:.4em 0}
.ok{background:#eaf7ee;border-left:4px solid #2e8b57;padding:.5em 1em;margin:.4em 0}
.note{color:#555;font-size:.9em}
figure{margin:1em 0}img{max-width:100%;height:auto}
.sep{color:#c0392b;font-weight:600}
.answer{font-size:1.15em;margin:.6em 0}
#decision-table{display:table;font-size:.9em;max-width:100%}
#decision-table th{white-space:normal;vertical-align:bottom}
#decision-table td.name{white-space:normal;overflow-wrap:anywhere;min-width:12em}
"""


# ------------------------------------------------------------------------ helpers
def _esc(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _new_figure(kind: str, n_models: int, nrows: int = 1, ncols: int = 1) -> tuple[Any, Any]:
    """A figure outside pyplot (no global backend state; safe inside notebooks)."""
    from matplotlib.figure import Figure

    from bayesrank.report.plots import figure_size

    fig = Figure(figsize=figure_size(kind, n_models), layout="constrained")
    axes = fig.subplots(nrows, ncols)
    return fig, axes


def _figure_html(fig: Any, alt: str) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, metadata={"Software": None})
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<figure><img alt="{_esc(alt)}" src="data:image/png;base64,{encoded}"></figure>'


def _table_html(frame: pd.DataFrame, *, name_columns: Sequence[str] = (),
                row_classes: Sequence[str] | None = None, table_id: str | None = None) -> str:
    head = "".join(
        f'<th class="name">{_esc(c)}</th>' if c in name_columns else f"<th>{_esc(c)}</th>"
        for c in frame.columns
    )
    body = []
    for k, (_, row) in enumerate(frame.iterrows()):
        cls = f' class="{row_classes[k]}"' if row_classes and row_classes[k] else ""
        cells = "".join(
            f'<td class="name">{_esc(v)}</td>' if c in name_columns else f"<td>{_esc(v)}</td>"
            for c, v in row.items()
        )
        body.append(f"<tr{cls}>{cells}</tr>")
    ident = f' id="{_esc(table_id)}"' if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _fmt(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)) or x is pd.NA:
        return "–"
    if isinstance(x, (bool, np.bool_)):
        return "yes" if x else "no"
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    return f"{float(x):.{digits}f}"


def _is_simulated(source: str | None, simulated: bool | None) -> bool:
    if simulated is not None:
        return simulated
    return source is not None and "simulated" in source.lower()


# ------------------------------------------------------------------------ sections
def _simulated_banner(simulated: bool) -> str:
    if not simulated:
        return ""
    return ('<div class="banner" id="simulated-note">SIMULATED DATA: this report uses the '
            "bundled example, random outcomes calibrated to published accuracies. The "
            "models' names are labels only; nothing here is a measurement of real models.</div>")


def _pairwise_data_section(data: PairwiseData, source: str | None) -> str:
    decisive = int(data.wins.sum())
    met = int((np.triu(data.reductions.comparisons, 1) > 0).sum())
    rows = pd.DataFrame(
        {
            "quantity": ["source", "models (L)", "battles", "decisive battles", "ties",
                         "pairs that met", "battles in order"],
            "value": [source or "in-memory data", data.L, data.n_battles, decisive,
                      data.n_battles - decisive, f"{met} of {data.L * (data.L - 1) // 2}",
                      "yes" if data.battles is not None else "no (counts)"],
        }
    )
    if data.covariate_names:  # style control: theta is the strength with these held equal
        rows.loc[len(rows)] = ["covariates held equal (style control)",
                               ", ".join(data.covariate_names)]
    return _table_html(rows, name_columns=("quantity", "value"))


def _style_section(post: RankAnalytics, level: float) -> str:
    """The contextual model's coefficients (style control), where the fit has them: ``beta``
    per root-mean-square unit of each covariate's difference and ``beta_per_unit`` per unit
    of the covariate itself, with an equal-tailed interval and P(beta > 0)."""
    idata = getattr(post, "idata", None)
    # the contextual model's own variable: the 2PL's intercepts are "beta" too
    if idata is None or "beta_per_unit" not in idata.posterior:
        return ""
    draws = idata.posterior.to_dataset()
    lo, hi = (1 - level) / 2, (1 + level) / 2

    def stacked(name: str) -> np.ndarray:
        return draws[name].stack(sample=("chain", "draw")).transpose("covariate", "sample").values

    beta, per_unit = stacked("beta"), stacked("beta_per_unit")
    pct = f"{100 * level:g}%"
    rows = pd.DataFrame({
        "covariate": [str(c) for c in draws["covariate"].values],
        "beta per unit (mean)": [_fmt(b.mean(), 4) for b in per_unit],
        f"{pct} interval": [f"[{_fmt(np.quantile(b, lo), 4)}, {_fmt(np.quantile(b, hi), 4)}]"
                            for b in per_unit],
        "beta per RMS unit (mean)": [_fmt(b.mean()) for b in beta],
        "P(beta > 0)": [_fmt((b > 0).mean()) for b in beta],
    })
    return ("<p>Log-odds of winning added per unit by which a model's answer exceeds its "
            "opponent's in each covariate; theta is each model's strength with the covariates "
            "held equal. The baseline columns of the leaderboard rank the outcomes without "
            "them.</p>" + _table_html(rows, name_columns=("covariate",), table_id="style"))


def _data_section(data: ResponseData | PairwiseData, source: str | None) -> str:
    if isinstance(data, PairwiseData):
        return _pairwise_data_section(data, source)
    if data.R0 is None:
        prior = "none (uniform prior only)"
    else:
        kind = "per model" if data.R0.ndim == 3 else "shared by all models"
        prior = f"R0 with {data.R0.shape[-1]} prior outcome(s) per question, {kind}"
    missing = 0 if data.mask is None else int((~data.mask).sum())
    rows = pd.DataFrame(
        {
            "quantity": ["source", "models (L)", "questions (M)", "trials per cell (N)",
                         "outcome categories", "category weights", "missing trials",
                         "prior outcomes"],
            "value": [source or "in-memory data", data.L, data.M, data.N, data.n_categories,
                      ", ".join(f"{w:g}" for w in data.weights), missing, prior],
        }
    )
    return _table_html(rows, name_columns=("quantity", "value"))


def _baseline_rankings(data: ResponseData, baselines: Sequence[str]) -> dict[str, Any]:
    from bayesrank.errors import BayesrankError
    from bayesrank.registry import rank

    out: dict[str, Any] = {}
    for ident in baselines:
        try:
            with warnings.catch_warnings():  # the style section says it once
                warnings.simplefilter("ignore", CovariatesIgnoredWarning)
                out[ident] = rank(data, ident)
        except (BayesrankError, ValueError) as exc:  # shown in the report, not fatal
            out[ident] = exc
    return out


#: the models compared by PSIS-LOO on the real benchmarks (docs/report.md)
MODELS_TRIED = ("Bayes@N, Rasch, 2PL and 3PL, each with the binomial and the beta-binomial "
                "likelihood")


def _remedy(post: RankAnalytics, ppc: Any) -> str:
    """The banner's advice: the model that fits better by PSIS-LOO among those tried on the
    real benchmarks, as the call that fits it, or that none of them does."""
    from bayesrank.analysis.ppc import better_model_call, one_trial_per_cell

    better = better_model_call(post)  # type: ignore[arg-type]
    if better:
        return (f" A model that fits better by PSIS-LOO among those tried on the real "
                f"benchmarks ({MODELS_TRIED}; docs/report.md): <code>{_esc(better)}</code> "
                f"(the {_esc(_describe_call(better))}).")
    none = (f" None of the models tried on the real benchmarks ({MODELS_TRIED}; "
            "docs/report.md) fits better by PSIS-LOO than this one")
    if one_trial_per_cell(getattr(post, "data", None)):
        return (none + ": with one trial per model-question cell no model here can absorb "
                "this, since variation from cell to cell is only identified with repeated "
                "trials, where the beta-binomial likelihood models it.")
    return (none + ", so no better model can be named; more trials per question, or a "
            "model of what the item-response curve misses (e.g. question groups), are what "
            "is left.")


def _misfit_warning(post: RankAnalytics, ppc: Any) -> str:
    """Plain-words warning, shown first, when the fitted model fails its predictive checks."""

    if ppc is None or not bool(ppc.overall["flagged"].any()):
        return ""
    failed = ", ".join(
        f"{row.statistic.replace('_', ' ')} (p = {row.p_value:.3f})"
        for row in ppc.overall.itertuples() if row.flagged
    )
    label = _model_label(post)
    advice = _remedy(post, ppc)
    over = any(row.p_value < 0.5 for row in ppc.overall.itertuples() if row.flagged)
    what = ("the benchmark's results vary more from cell to cell than this model allows, so "
            "its intervals are too narrow and the verdicts below (top set, 'separated', "
            "P(best)) are overconfident" if over else
            "the benchmark's results vary less than this model expects, so its intervals "
            "are likely too wide")
    return (
        f'<div class="banner" id="misfit-warning">MODEL MISFIT: the {_esc(label)} model fails '
        f"its posterior-predictive checks ({_esc(failed)}): {what}. Read this leaderboard "
        f"with that in mind.{advice} See the posterior-predictive checks below.</div>"
    )


#: the share of models whose observed accuracy a fitting model's predictive interval holds
COVERAGE_FLOOR = 0.9


def _coverage_warning(post: RankAnalytics, board: pd.DataFrame, prob: float, ppc: Any) -> str:
    """A misfit banner when the predictive intervals miss too many observed accuracies."""
    if not _predictive(post) or "observed" not in board or "accuracy_lower" not in board:
        return ""
    outside = board.index[(board["observed"] < board["accuracy_lower"])
                          | (board["observed"] > board["accuracy_upper"])]
    if len(outside) <= (1 - COVERAGE_FLOOR) * len(board):
        return ""
    listed = ", ".join(_esc(m) for m in outside[:3]) + (", ..." if len(outside) > 3 else "")
    chance = stats.binom.sf(len(outside) - 1, len(board), 1 - prob)
    return (
        f'<div class="banner" id="coverage-warning">MODEL MISFIT: the observed accuracy of '
        f"{len(outside)} of {len(board)} models ({listed}) lies outside its {prob:.0%} "
        "posterior predictive interval (a model that fits leaves this many outside with "
        f"probability {chance:.2g}), so the model may not reproduce these models' own "
        f"results; their estimates and the verdicts below may be off.{_remedy(post, ppc)} "
        "See the posterior-predictive checks below.</div>"
    )


def _describe_call(call: str | None) -> str:
    if call is None:
        return ""
    kind = call.split('"')[1]
    names = {"rasch": "Rasch", "2pl": "2PL", "3pl": "3PL"}
    if "beta_binomial" not in call:
        text = (f"{names.get(kind, kind)}: a discrimination per question, which PSIS-LOO "
                "prefers on the real benchmarks with one trial per cell")
    else:
        text = (f"beta-binomial {names.get(kind, kind)}: it lets each model-question cell "
                "vary around the item-response curve")
    if "binarize()" in call:
        text += ("; it reads binary outcomes, so it is fitted to the top category as success, "
                 "since no model that reads categories does better")
    return text


def _predictive(post: RankAnalytics) -> bool:
    return bool(getattr(post, "predictive_interval", False))


def _model_label(post: RankAnalytics) -> str:
    if isinstance(post, Posterior) and "phi" in post.idata["posterior"].data_vars:
        return f"{post.model} (beta-binomial)"
    return post.model


def _leaderboard_section(post: RankAnalytics, board: pd.DataFrame, baselines: dict[str, Any],
                         prob: float, q: float, alpha: float, level: float,
                         ppc: Any = None, *, quantity: str = "theta",
                         extra: dict[str, list[Any]] | None = None,
                         table_id: str = "leaderboard") -> str:
    """The full leaderboard: ``quantity`` (the ranked parameter's name) with its interval,
    LCB rank, ranks, P(best), top set, separation and the baselines' ranks; ``extra``
    columns (name to values in the board's order) follow the model's name."""
    from bayesrank.ranking import kendall_tau

    accuracy: dict[str, list[Any]] = dict(extra or {})
    if "observed" in board:
        accuracy[board.attrs["observed_label"]] = [_fmt(x) for x in board["observed"]]
    if "accuracy" in board:
        kind = "predictive interval" if _predictive(post) else "CrI"
        accuracy[f"{board.attrs['accuracy_label']} [{prob:.0%} {kind}]"] = [
            f"{_fmt(m)} [{_fmt(a)}, {_fmt(b)}]" for m, a, b in
            zip(board["accuracy"], board["accuracy_lower"], board["accuracy_upper"], strict=True)
        ]
    rows = pd.DataFrame(
        {
            "rank": board["rank"].to_numpy(),
            "model": board.index.to_numpy(),
            **accuracy,
            f"{quantity} (posterior mean)": [_fmt(x) for x in board["mean"]],
            f"{quantity} {prob:.0%} CrI": [f"[{_fmt(a)}, {_fmt(b)}]"
                                      for a, b in zip(board["lower"], board["upper"],
                                                      strict=True)],
            f"LCB (q={q:g})": [_fmt(x) for x in board["lcb"]],
            "LCB rank": board["lcb_rank"].to_numpy(),
            "E[rank]": [_fmt(x, 2) for x in board["expected_rank"]],
            f"rank {prob:.0%} CrI": [f"{a}–{b}" for a, b in
                                     zip(board["rank_lower"], board["rank_upper"], strict=True)],
            "P(best)": [_fmt(x) for x in board["p_best"]],
            f"top set ({1 - alpha:.0%})": ["✓" if x else "" for x in board["in_top_set"]],
            "P(> next)": [_fmt(x) for x in board["p_above_next"]],
            "vs next": ["" if pd.isna(s) else ("separated" if s else "≈ not separated")
                        for s in board["separated_from_next"]],
        }
    )
    taus = []
    bayes_scores = post.rank("mean").scores
    for ident, result in baselines.items():
        if isinstance(result, Exception):
            rows[f"{ident} rank"] = "n/a"
            taus.append((ident, "failed", str(result)))
            continue
        by_name = dict(zip(result.models, result.ranks, strict=True))
        rows[f"{ident} rank"] = [by_name[m] for m in board.index]
        scores = dict(zip(result.models, result.scores, strict=True))
        tau = kendall_tau(bayes_scores, np.array([scores[m] for m in post.models]))
        taus.append((ident, _fmt(tau), ""))
    classes = ["top" if x else "" for x in board["in_top_set"]]
    table = _table_html(rows, name_columns=("model",), row_classes=classes, table_id=table_id)
    top = ", ".join(_esc(m) for m in post.top_set(alpha))
    unseparated = int((board["separated_from_next"] == False).sum())  # noqa: E712
    groups = board.attrs.get("tie_groups", [])
    ties = ""
    if groups:
        listed = "; ".join(" = ".join(_esc(m) for m in g) for g in groups)
        ties = ('<p id="ties"><b>Ties</b>' f" (same rank): {listed}. These models have identical "
                "results on every question, or their order rests only on Monte Carlo error "
                "(the gap is within 2 Monte Carlo standard errors), so no order between "
                "them is reported.</p>")
    if "accuracy" in board:
        # with categories the model's mean is its expected score under the category weights
        quantity = "accuracy" if post.data.is_binary else "score"
        per_question = ("posterior mean probability of solving a question" if post.data.is_binary
                        else "posterior mean score on a question (the category weights "
                        f"{', '.join(f'{w:g}' for w in post.data.weights)} averaged over its "
                        "outcome probabilities)")
        spread = ("the central interval of the benchmark's accuracy on replicated trials of "
                  "these questions (posterior predictive), where the observed accuracy should "
                  "fall when the model fits" if _predictive(post) else "a central credible "
                  "interval")
        scale = (f"<p>The observed {quantity} is counted from the data. The estimate is each "
                 f"model's {per_question} of this benchmark, averaged over its "
                 f"{len(post.data.questions)} questions, with {spread}. {quantity.capitalize()} "
                 "is the ranking quantity on the model's own scale.</p>")
    else:
        note = _esc(board.attrs.get("accuracy_note"))
        scale = f'<p class="note" id="accuracy-note">{note}</p>'
    text = (
        f'<p>Ranked by posterior mean of {quantity}. <b>Top set</b> (contains the best model with '
        f"posterior probability ≥ {1 - alpha:.0%}): {top}. {unseparated} of {len(board) - 1} "
        f"adjacent pairs are <i>not separated</i> (P(upper &gt; lower) &lt; {level:.0%}): their "
        "order is not established by these data. The LCB rank orders models by a lower "
        f"credible bound (the posterior {q:g}-quantile), the conservative choice when a wrong "
        "promotion costs more than a missed one.</p>"
    )
    tau_html = ""
    if taus:
        tau_frame = pd.DataFrame(taus, columns=["baseline", "Kendall tau-b vs posterior mean",
                                                "note"])
        tau_html = ("<h3>Deterministic baselines</h3>" +
                    _table_html(tau_frame, name_columns=("baseline", "note"), table_id="baselines"))
    return text + scale + ties + table + tau_html


#: models of the top set named in the report's opening sentence (all are shaded below it)
TOP_SET_NAMED = 3


def _answer(board: pd.DataFrame, alpha: float) -> str:
    """Who is best and how sure, and the top set, in one sentence (``id="answer"``)."""
    best = board.index[0]
    p_best = float(board["p_best"].iloc[0])
    top = [m for m in board.index if board.loc[m, "in_top_set"]]
    verdict = (f"<b>Best: {_esc(best)}</b>, with posterior probability P(best) = "
               f"{_fmt(p_best, 2)}" if p_best >= 0.5 else
               f"<b>No model is clearly best</b>: the most likely is {_esc(best)}, with "
               f"P(best) = {_fmt(p_best, 2)}")
    shown = ", ".join(_esc(m) for m in top[:TOP_SET_NAMED])
    more = f" and {len(top) - TOP_SET_NAMED} more" if len(top) > TOP_SET_NAMED else ""
    return (f'<p class="answer" id="answer">{verdict}. <b>Top set</b> ({1 - alpha:.0%}: the '
            f"smallest set holding the best model with that probability): {shown}{more} "
            f"({len(top)} of {len(board)} models, shaded below).</p>")


def _decision_section(post: RankAnalytics, board: pd.DataFrame, o: ReportOptions,
                      ppc: Any) -> str:
    """The answer first: banners, who is best and how sure, the top set, and a compact
    leaderboard (rank, model, observed accuracy, estimate with its interval, P(best), rank
    interval, separated from the next) narrow enough for an 800 px window."""
    prob = o.prob
    answer = _answer(board, o.alpha)
    quantity = board.attrs["observed_label"]
    columns: dict[str, Any] = {"rank": board["rank"].to_numpy(), "model": board.index.to_numpy(),
                               quantity: [_fmt(x) for x in board["observed"]]}
    legend = [f"<b>observed</b>: the {_esc(quantity)} counted from the data"]
    if "accuracy" in board:
        kind = "PI" if _predictive(post) else "CrI"
        columns[f"estimate [{prob:.0%} {kind}]"] = [
            f"{_fmt(m)} [{_fmt(a)}, {_fmt(b)}]" for m, a, b in
            zip(board["accuracy"], board["accuracy_lower"], board["accuracy_upper"], strict=True)]
        interval = ("posterior predictive interval of the benchmark accuracy on replicated "
                    "trials" if _predictive(post) else "credible interval")
        legend.append(f"<b>estimate</b>: {_esc(board.attrs['accuracy_label'])}, "
                      f"[{prob:.0%} {interval}]")
    columns["P(best)"] = [_fmt(x, 2) for x in board["p_best"]]
    columns[f"rank {prob:.0%}"] = [f"{a}–{b}" for a, b in
                                      zip(board["rank_lower"], board["rank_upper"], strict=True)]
    columns["separated from next"] = ["" if pd.isna(s) else ("yes" if s else "no")
                                      for s in board["separated_from_next"]]
    legend.append(f"<b>separated from next</b>: P(this model &gt; the next) ≥ {o.level:.0%}")
    rows = pd.DataFrame(columns)
    classes = ["top" if x else "" for x in board["in_top_set"]]
    table = _table_html(rows, name_columns=("model",), row_classes=classes,
                        table_id="decision-table")
    return (_misfit_warning(post, ppc) + _coverage_warning(post, board, prob, ppc) + answer
            + table + f'<p class="note">{"; ".join(legend)}. The full table, the data and '
            "the diagnostics follow.</p>")


def _diagnostics_section(post: RankAnalytics | SuitePosterior) -> str:
    if not isinstance(post, Posterior | SuitePosterior):
        return ('<p class="ok">Closed-form normal approximation: no sampling, so no sampler '
                "diagnostics apply.</p>")
    from bayesrank.inference import diagnostics as diag

    frame = post.diagnostics
    if not isinstance(frame, pd.DataFrame) or "r_hat" not in frame:
        frame = diag.summarize(post.idata)
    problems = diag.problems(frame)
    parts = []
    if problems:
        for p in problems:
            parts.append(f'<div class="warn">{_esc(p)}</div>')
        parts.append(
            '<p class="warn">The sampler did not pass every check, so intervals and '
            "probabilities may be off. Rerun with more <code>--draws</code>/<code>--tune</code> "
            "(or chains); for divergences raise target_accept.</p>"
        )
    else:
        parts.append(
            f'<p class="ok">All convergence checks passed: R-hat ≤ {diag.RHAT_MAX}, bulk and '
            f"tail ESS ≥ {diag.ESS_MIN}, no divergent transitions, E-BFMI ≥ {diag.BFMI_MIN}.</p>"
        )
    shown = frame.reset_index().rename(columns={"index": "variable"})
    for c in ("r_hat", "ess_bulk", "ess_tail"):
        if c in shown:
            shown[c] = [_fmt(x, 3 if c == "r_hat" else 0) for x in shown[c]]
    if "passed" in shown:
        shown["passed"] = [_fmt(bool(x)) for x in shown["passed"]]
    extra = (
        f"<p class='note'>{frame.attrs.get('draws', '?')} draws; "
        f"{frame.attrs.get('divergences', 0)} divergent transitions; E-BFMI per chain: "
        f"{', '.join(_fmt(b, 2) for b in frame.attrs.get('bfmi', [])) or '–'}. "
        f"Sampler: {_esc(post.sampler)}.</p>"
    )
    return "".join(parts) + _table_html(shown, name_columns=("variable",)) + extra


def _run_ppc(post: RankAnalytics, ppc_draws: int, random_seed: int | None,
             alpha: float) -> tuple[Any, str | None]:
    """The posterior-predictive check, or None and the plain-words reason it does not apply."""
    if not isinstance(post, Posterior) or post.pymc_model is None:
        return None, ("Posterior-predictive checks need a generative model fitted by MCMC; "
                      "not available for this posterior.")
    from bayesrank.analysis.ppc import not_applicable_reason
    from bayesrank.errors import DataError

    reason = not_applicable_reason(post)
    if reason is not None:
        return None, reason
    try:
        return post.ppc(num_draws=ppc_draws, random_seed=random_seed, alpha=alpha), None
    except DataError as exc:
        return None, str(exc)


def _ppc_section(result: Any, reason: str | None) -> str:
    if result is None:
        return f'<p class="note" id="ppc-not-applicable">{_esc(reason)}</p>'
    from bayesrank.report.plots import plot_ppc_statistics

    notes = "".join(
        f'<div class="{"ok" if n.startswith("No misfit") else "warn"}">{_esc(n)}</div>'
        for n in result.notes
    )
    summary = result.summary()
    summary["overall_p_value"] = [_fmt(x) for x in summary["overall_p_value"]]
    summary["overall_flagged"] = [_fmt(bool(x)) for x in summary["overall_flagged"]]
    fig, axes = _new_figure("ppc", 0, 2, 2)
    plot_ppc_statistics(result, axes=axes)
    explanation = (
        "<p>Replicated data were drawn from the fitted model "
        f"({result.replicated['accuracy'].sizes['sample']} posterior draws) and compared with "
        "the observed counts per model-question cell. A Bayesian p-value is "
        "P(T(replicated) &gt; T(observed)); values near 0 or 1 mean the model does not "
        "reproduce that feature of the data. Dispersion statistics measure how much cell "
        "solve rates vary; values above the replicated range (p near 0) are over-dispersion, "
        "typical when models are unusually strong or weak on particular questions.</p>"
    )
    counts = _counts_ppc_figure(result)
    return (explanation + notes + _table_html(summary, name_columns=("statistic",),
                                              table_id="ppc-summary")
            + _figure_html(fig, "posterior-predictive test statistics") + counts)


def _counts_ppc_figure(result: Any) -> str:
    from bayesrank.report.plots import cells_are_binary, plot_ppc_calibration, plot_ppc_rootogram

    total = result.replicated["accuracy"].sizes["sample"]
    part = ("" if result.kept_draws == total else
            f'<p class="note">The figure below pools the cells of {result.kept_draws} of the '
            f"{total} replicated draws (the statistics above read all {total}): the data are "
            "too large to hold every replicated cell at once.</p>")
    if cells_are_binary(result):
        return part + _figure_html(plot_ppc_calibration(result),
                                   "posterior predictive calibration of the binary cells")
    fig = plot_ppc_rootogram(result)
    return part + _figure_html(fig, "posterior predictive rootogram of the cell counts")


def _plot(function: Any, kind: str, post: RankAnalytics, alt: str, **options: Any) -> str:
    fig, ax = _new_figure(kind, len(post.models))
    function(post, ax=ax, **options)
    return _figure_html(fig, alt)


# ------------------------------------------------------------------------ public API
@dataclass(frozen=True)
class ReportOptions:
    """What a report shows and how (every field has a default).

    Attributes
    ----------
    baselines : sequence of str
        Deterministic methods (:func:`bayesrank.methods`) shown beside the posterior
        with their Kendall tau-b agreement.
    prob, q, alpha, level : float
        Credible-interval mass, LCB quantile, top-set level 1 - alpha, and
        superiority level for calling adjacent models separated.
    ppc_draws : int
        Posterior draws used to replicate the data in the predictive checks.
    random_seed : int, optional
        Seeds the posterior-predictive replication.
    source : str, optional
        Where the data came from (shown in the report).  A source mentioning
        "simulated" (as the CLI's bundled example does) adds a SIMULATED banner.
    simulated : bool, optional
        Force the SIMULATED banner on or off.
    progress : callable, optional
        Called with the name of each slow stage as it starts ("leaderboard",
        "posterior-predictive checks", "plots"), e.g. the command line's stage lines.
    """

    baselines: Sequence[str] = DEFAULT_BASELINES
    prob: float = 0.9
    q: float = 0.05
    alpha: float = 0.05
    level: float = 0.95
    ppc_draws: int = 500
    random_seed: int | None = 0
    source: str | None = None
    simulated: bool | None = None
    progress: Callable[[str], None] | None = None


def _settings(post: RankAnalytics) -> dict[str, Any]:
    settings: dict[str, Any] = {"model": post.model}
    if isinstance(post, Posterior):
        theta = post.theta
        seed = post.idata["posterior"].attrs.get("random_seed")
        settings.update(sampler=post.sampler, chains=theta.sizes["chain"],
                        draws=theta.sizes["draw"], seed=seed)
    elif isinstance(post, NormalPosterior):
        settings["approximation"] = "normal (closed form)"
    return settings


@functools.singledispatch
def render_report(post: RankAnalytics, options: ReportOptions | None = None) -> str:
    """The report of a fitted posterior as one HTML string (see :func:`write_report`).

    A :class:`~bayesrank.analysis.suite.SuitePosterior` is rendered by
    :func:`bayesrank.report.suite.render_suite_report` (registered there).
    """
    from bayesrank.report.plots import plot_forest, plot_rank_distribution, plot_superiority

    o = options or ReportOptions()
    prob, q, alpha, level = o.prob, o.q, o.alpha, o.level
    data = getattr(post, "data", None)
    if data is None:
        raise ValueError("a report needs the data the posterior was fitted to (post.data)")
    started = time.perf_counter()
    stage = o.progress or (lambda _: None)
    stage("leaderboard and baselines")
    board = post.leaderboard(prob=prob, q=q, alpha=alpha, level=level)
    baselines = (PAIRWISE_BASELINES if isinstance(data, PairwiseData)
                 and tuple(o.baselines) == DEFAULT_BASELINES else o.baselines)
    baseline_results = _baseline_rankings(data, baselines)
    stage("posterior-predictive checks")
    ppc, ppc_reason = _run_ppc(post, o.ppc_draws, o.random_seed, alpha)
    stage("plots")
    simulated = _is_simulated(o.source, o.simulated)
    sections = [
        ("Decision", _simulated_banner(simulated) + _decision_section(post, board, o, ppc)),
        ("Leaderboard", _leaderboard_section(post, board, baseline_results, prob, q, alpha,
                                             level, ppc)),
        ("Data", _data_section(data, o.source)),
        *([("Style control", style)] if (style := _style_section(post, level)) else []),
        ("Credible intervals", _plot(plot_forest, "forest", post, "forest plot of credible "
                                     "intervals", prob=prob, q=q)),
        ("Superiority", "<p>Each cell is the posterior probability that the row model's "
                        "theta exceeds the column model's.</p>"
         + _plot(plot_superiority, "superiority", post, "superiority heat map")),
        ("Rank distribution", "<p>Posterior probability of each rank; crosses mark the "
                              "expected rank.</p>"
         + _plot(plot_rank_distribution, "rank_distribution", post, "rank distribution")),
        ("Posterior-predictive checks", _ppc_section(ppc, ppc_reason)),
        ("Sampler diagnostics", _diagnostics_section(post)),
    ]
    intro = (f"{len(post.models)} models, model <b>{_esc(post.model)}</b>, theta on the "
             "model's own scale (larger is better).")
    return page(f"bayesrank report: {_model_label(post)}", intro, sections, _settings(post),
                post, started)


def section_id(title: str) -> str:
    """A section's ``id``: its title in lower case, spaces as hyphens."""
    return title.lower().replace(" ", "-")


def page(title: str, intro: str, sections: Sequence[tuple[str, str]], settings: dict[str, Any],
         post: Any, started: float) -> str:
    """The HTML page: title, ``intro`` (HTML) and the settings, the sections as ``<h2>`` and
    their HTML, and the version and times (the fit's ``post.timings`` and the report's since
    ``started``)."""
    from bayesrank import __version__

    timings = dict(getattr(post, "timings", {}) or {})
    timings["report"] = time.perf_counter() - started
    settings_text = "; ".join(f"{_esc(k)}={_esc(v)}" for k, v in settings.items())
    timing_text = ", ".join(f"{_esc(k)} {v:.1f} s" for k, v in timings.items())
    body = "".join(f'<h2 id="{_esc(section_id(t))}">{_esc(t)}</h2>{s}' for t, s in sections)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_esc(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{_esc(title)}</h1><p class=\"note\">{intro} {settings_text}</p>{body}"
        f"<p class=\"note\">bayesrank {_esc(__version__)}. Time: {timing_text}.</p>"
        "</body></html>\n"
    )


def write_report(
    post: RankAnalytics | SuitePosterior,
    output: str | os.PathLike[str],
    options: ReportOptions | None = None,
    **option_fields: Any,
) -> Path:
    """Write the self-contained HTML report of a fitted posterior to ``output``.

    Parameters
    ----------
    post : Posterior, NormalPosterior or SuitePosterior
        From :func:`bayesrank.fit`, :func:`bayesrank.closed_form`,
        :func:`bayesrank.load_posterior` or :func:`bayesrank.fit_benchmarks` (a suite's
        report: :mod:`bayesrank.report.suite`); the report only renders it, it never fits.
    output : path
        Destination ``.html``; written atomically (nothing is left behind on error).
    options : ReportOptions, optional
    **option_fields
        Fields of :class:`ReportOptions` set directly (``baselines=[...]``).

    Returns
    -------
    pathlib.Path
        The written file.
    """
    from bayesrank.data.io import atomic_write
    from bayesrank.registry import get_method

    o = replace(options or ReportOptions(), **option_fields)
    for ident in o.baselines:
        get_method(ident)  # fail on typos before any work
    text = render_report(post, o)
    if o.progress is not None:
        o.progress(f"writing {output}")
    return atomic_write(output, lambda tmp: tmp.write_text(text, encoding="utf-8"))
