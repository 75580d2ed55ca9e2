"""The paper's result tables from study frames, as DataFrames, Markdown and LaTeX.

Layouts follow the paper's LaTeX tables (one row per benchmark, so a user's
benchmark can sit next to the paper's rows): :func:`gold_table` (Table 1),
:func:`n1_winners_table` (Table 2), :func:`bootstrap_table` (Table 3) and
:func:`prior_table` (Table 4); :data:`TABLES` holds their columns.

Each function takes ``{benchmark name: StudyResult}`` (or one result) and returns
a DataFrame of numbers (``*_mean``/``*_std`` columns); :func:`render` formats it
as the paper prints it (``0.779 ± 0.034``, ``+0.020``, ``42%``) in Markdown or
LaTeX (booktabs), without extra dependencies.  Where several methods share the
best score (within 1e-12, the paper's tied classes) the first in method order is
shown and ``n_tied`` says how many share it (the paper's dagger).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from bayesrank.study._core import TAU_TOL

if TYPE_CHECKING:
    from bayesrank.study.result import StudyResult

__all__ = ["TABLES", "bootstrap_table", "gold_table", "n1_winners_table", "prior_table",
           "render"]


def _named(results) -> dict[str, StudyResult]:
    if isinstance(results, Mapping):
        return dict(results)
    return {results.settings.get("name") or "benchmark": results}


def _frame(result: StudyResult, name: str, table: str) -> pd.DataFrame:
    if name not in result.frames:
        raise ValueError(f"the {table} table needs the study's {name!r} frame; run the "
                         f"protocol that makes it (this study has {list(result.frames)})")
    return result.frames[name]


def gold_table(results) -> pd.DataFrame:
    """Table 1: full-N agreement with the gold standard over the other methods."""
    rows = []
    for bench, res in _named(results).items():
        s = _frame(res, "gold_summary", "gold-agreement").iloc[0]
        rows.append({"benchmark": bench, "mean": s["mean"], "median": s["median"],
                     "min": s["min"], "n_tau_1": s["n_tau_1"],
                     "n_tau_ge_0.95": s["n_tau_ge_0.95"], "n_methods": s["n_methods"]})
    return pd.DataFrame(rows)


def _best(frame: pd.DataFrame, key: str, std: str) -> tuple[str, float, float, int]:
    """First method with the best ``key`` (ties within TAU_TOL), its std, and the tie size."""
    ok = frame.dropna(subset=[key])
    if ok.empty:
        return "", np.nan, np.nan, 0
    best = ok[key].max()
    tied = ok[ok[key] >= best - TAU_TOL]
    first = tied.iloc[0]
    return str(first["method"]), float(first[key]), float(first[std]), len(tied)


def n1_winners_table(results) -> pd.DataFrame:
    """Table 2: the best low-budget method under each target (mean +- std over draws).

    Methods that could not rank some draw (``n_failed > 0``, e.g. pass@k at N=1)
    are left out, as the paper excludes them.
    """
    rows = []
    for bench, res in _named(results).items():
        st = _frame(res, "stability", "N=1 winners")
        st = st[st["n_failed"] == 0]
        row: dict[str, object] = {"benchmark": bench}
        for target, label in (("gold", "gold"), ("self", "self")):
            m, mean, std, tied = _best(st[st["target"] == target], "tau_mean", "tau_std")
            row.update({f"best_{label}": m, f"{label}_mean": mean, f"{label}_std": std,
                        f"{label}_n_tied": tied})
        rows.append(row)
    return pd.DataFrame(rows)


def bootstrap_table(results) -> pd.DataFrame:
    """Table 3: per pool size, the best method vs the pool's avg@N and its two target scores."""
    rows = []
    for bench, res in _named(results).items():
        bt = _frame(res, "bootstrap", "model-pool bootstrap")
        for size, at in bt.groupby("size", sort=True):
            gold = at[at["target"] == "gold"]
            m, mean, std, tied = _best(gold, "mean", "std")
            own = at[(at["target"] == "self") & (at["method"] == m)]
            rows.append({
                "benchmark": bench, "pool": int(size), "best": m, "n_tied": tied,
                "gold_mean": mean, "gold_std": std,
                "self_mean": float(own["mean"].iloc[0]) if len(own) else np.nan,
                "self_std": float(own["std"].iloc[0]) if len(own) else np.nan,
                "win_fraction": float(gold.loc[gold["method"] == m, "win_fraction"].iloc[0])
                if m else np.nan,
            })
    return pd.DataFrame(rows)


def prior_table(results) -> pd.DataFrame:
    """Table 4: difficulty, greedy-sampling alignment and the greedy prior's effect at N=1."""
    rows = []
    for bench, res in _named(results).items():
        d = _frame(res, "prior_diagnostics", "prior-effect").iloc[0]
        rows.append({"benchmark": bench, "difficulty": d["difficulty"], "tau_gs": d["tau_gs"],
                     "delta_tau": d["delta_tau"], "std_reduction": d["std_reduction"]})
    return pd.DataFrame(rows)


# -- rendering ------------------------------------------------------------------------------
def _num(v: float, digits: int = 3) -> str:
    return "n/a" if pd.isna(v) else f"{v:.{digits}f}"


def plus_minus(mean: float, std: float, digits: int = 3) -> str:
    """``"0.779 ± 0.034"`` (``"n/a"`` for a missing mean)."""
    return "n/a" if pd.isna(mean) else f"{mean:.{digits}f} ± {std:.{digits}f}"


def _tied(name: str, n: int) -> str:
    return f"{name} ({n}-way tie)" if n > 1 else name


#: name -> (builder, [(header, cell(row) -> str)])
_Cell = Callable[[pd.Series], str]
TABLES: dict[str, tuple[Callable[..., pd.DataFrame], list[tuple[str, _Cell]]]] = {
    "gold": (gold_table, [
        ("Benchmark", lambda r: str(r["benchmark"])),
        ("Mean", lambda r: _num(r["mean"])),
        ("Median", lambda r: _num(r["median"])),
        ("Min", lambda r: _num(r["min"])),
        ("#(tau_b=1)", lambda r: str(int(r["n_tau_1"]))),
        ("#(tau_b>=0.95)", lambda r: str(int(r["n_tau_ge_0.95"]))),
    ]),
    "n1_winners": (n1_winners_table, [
        ("Benchmark", lambda r: str(r["benchmark"])),
        ("Best vs. gold standard", lambda r: _tied(r["best_gold"], r["gold_n_tied"])),
        ("tau_b", lambda r: plus_minus(r["gold_mean"], r["gold_std"])),
        ("Best self-consistency (vs. method@N)", lambda r: _tied(r["best_self"],
                                                                 r["self_n_tied"])),
        ("tau_b ", lambda r: plus_minus(r["self_mean"], r["self_std"])),
    ]),
    "bootstrap": (bootstrap_table, [
        ("Benchmark", lambda r: str(r["benchmark"])),
        ("Pool", lambda r: str(int(r["pool"]))),
        ("Best Method", lambda r: _tied(r["best"], r["n_tied"])),
        ("tau_b vs avg@N", lambda r: plus_minus(r["gold_mean"], r["gold_std"])),
        ("tau_b vs method@N", lambda r: plus_minus(r["self_mean"], r["self_std"])),
    ]),
    "prior": (prior_table, [
        ("Benchmark", lambda r: str(r["benchmark"])),
        ("Difficulty", lambda r: _num(r["difficulty"])),
        ("tau_G-S", lambda r: _num(r["tau_gs"])),
        ("Delta tau", lambda r: "n/a" if pd.isna(r["delta_tau"]) else f"{r['delta_tau']:+.3f}"),
        ("Std. Red.", lambda r: "n/a" if pd.isna(r["std_reduction"])
         else f"{100 * r['std_reduction']:.0f}%"),
    ]),
}

_LATEX_HEADER = {"tau_b": r"$\tau_b$", "tau_b ": r"$\tau_b$", "#(tau_b=1)": r"\#($\tau_b=1$)",
                 "#(tau_b>=0.95)": r"\#($\tau_b\ge 0.95$)", "tau_G-S": r"$\tau_{\text{G-S}}$",
                 "Delta tau": r"$\Delta\tau$", "tau_b vs avg@N": r"$\tau_b$ vs \texttt{avg@N}",
                 "tau_b vs method@N": r"$\tau_b$ vs \texttt{method@N}",
                 "Best self-consistency (vs. method@N)":
                     r"Best self-consistency (vs.\ \texttt{method@N})"}


def _latex_cell(text: str) -> str:
    out = text.replace("\\", r"\textbackslash{}")
    for ch in "&%$#_{}":
        out = out.replace(ch, "\\" + ch)
    return out.replace(" ± ", r" $\pm$ ").replace("~", r"\textasciitilde{}")


def render(table: str, frame: pd.DataFrame, fmt: str = "markdown") -> str:
    """Format a table frame (from the function named ``table`` in :data:`TABLES`).

    ``fmt``: ``"markdown"`` (GitHub pipe table) or ``"latex"`` (booktabs tabular).
    """
    if table not in TABLES:
        raise ValueError(f"unknown table {table!r}; choose from {list(TABLES)}")
    cols = TABLES[table][1]
    cells = [[cell(row) for _, cell in cols] for _, row in frame.iterrows()]
    headers = [h for h, _ in cols]
    if fmt == "markdown":
        lines = ["| " + " | ".join(h.strip() for h in headers) + " |",
                 "|" + "|".join(" --- " for _ in headers) + "|"]
        lines += ["| " + " | ".join(c.replace("|", r"\|") for c in row) + " |" for row in cells]
        return "\n".join(lines) + "\n"
    if fmt == "latex":
        spec = "l" + "c" * (len(headers) - 1)
        head = " & ".join(_LATEX_HEADER.get(h, _latex_cell(h)) for h in headers)
        body = [" & ".join(_latex_cell(c) for c in row) + r" \\" for row in cells]
        return "\n".join([rf"\begin{{tabular}}{{{spec}}}", r"\toprule", head + r" \\",
                          r"\midrule", *body, r"\bottomrule", r"\end{tabular}"]) + "\n"
    raise ValueError(f"unknown table format {fmt!r}; use 'markdown' or 'latex'")
