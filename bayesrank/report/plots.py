"""Matplotlib figures of posterior rankings and posterior-predictive checks.

Each function draws on a given Axes (or a new figure) and returns the Axes, so
the figures compose in notebooks; the HTML report embeds them as PNG.
Models appear best first (by posterior mean) everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from bayesrank.analysis.posterior import RankAnalytics
    from bayesrank.analysis.ppc import PPCResult

__all__ = [
    "plot_forest",
    "plot_superiority",
    "plot_rank_distribution",
    "plot_ppc_statistics",
    "plot_ppc_rootogram",
    "plot_ppc_calibration",
    "cells_are_binary",
    "figure_size",
]

_SIZES = {
    "forest": lambda L: (7.0, 0.6 + 0.28 * L),
    "superiority": lambda L: (1.2 + 0.36 * L, 1.0 + 0.32 * L),
    "rank_distribution": lambda L: (1.2 + 0.32 * L, 0.8 + 0.3 * L),
    "ppc": lambda L: (10.0, 6.5),
}


def figure_size(kind: str, n_models: int) -> tuple[float, float]:
    """Default figure size (inches) of a plot kind for ``n_models`` models."""
    width, height = _SIZES[kind](n_models)
    return (max(width, 4.0), max(height, 2.5))


def _axes(ax: Axes | None, kind: str, n_models: int) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figure_size(kind, n_models), layout="constrained")
    return ax


def _order(post: RankAnalytics) -> np.ndarray:
    return post._order("mean", 0.5)


def plot_forest(
    post: RankAnalytics, *, prob: float = 0.9, q: float = 0.05, ax: Axes | None = None
) -> Axes:
    """Posterior mean and central ``prob`` interval per model, with the LCB marked."""
    order = _order(post)
    L = len(order)
    ax = _axes(ax, "forest", L)
    ci = post.credible_intervals(prob, "eti").iloc[order]
    lcb = post.rank("lcb", q).scores[order]
    top = set(post.top_set(0.05))
    y = np.arange(L)[::-1]
    colors = ["#1f5fa8" if m in top else "#555555" for m in ci.index]
    ax.hlines(y, ci["lower"], ci["upper"], colors=colors, linewidth=2)
    ax.scatter(ci["mean"], y, color=colors, zorder=3, s=18, label="posterior mean")
    ax.scatter(lcb, y, marker="|", color="#c0392b", s=120, zorder=4,
               label=f"LCB ({q:g}-quantile)")
    ax.set_yticks(y, list(ci.index), fontsize=8)
    ax.set_xlabel(f"theta ({prob:.0%} credible interval)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(loc="lower right", fontsize=7, frameon=False)
    ax.set_title("Posterior intervals (blue: in the 95% top set)", fontsize=10)
    return ax


def plot_superiority(post: RankAnalytics, *, ax: Axes | None = None,
                     annotate: bool | None = None) -> Axes:
    """Heat map of ``P(theta_row > theta_column | data)``."""
    order = _order(post)
    L = len(order)
    ax = _axes(ax, "superiority", L)
    P = post.superiority()["prob"].values[np.ix_(order, order)]
    names = [post.models[i] for i in order]
    image = ax.imshow(P, cmap="RdBu_r", vmin=0, vmax=1, interpolation="nearest")
    ax.set_xticks(range(L), names, rotation=90, fontsize=7)
    ax.set_yticks(range(L), names, fontsize=7)
    ax.set_xlabel("column model")
    ax.set_ylabel("row model")
    if annotate is None:
        annotate = L <= 25
    if annotate:
        for i in range(L):
            for j in range(L):
                if i != j:
                    value = P[i, j]
                    text = f".{value * 100:02.0f}"
                    if value >= 0.995 or value <= 0.005:
                        text = "1" if value > 0.5 else "0"
                    ax.text(j, i, text, ha="center", va="center", fontsize=5.5,
                            color="white" if abs(value - 0.5) > 0.35 else "black",
                            in_layout=False)  # inside the cells: layout need not measure them
    ax.figure.colorbar(image, ax=ax, shrink=0.7, label="P(row > column)")
    ax.set_title("Superiority probabilities", fontsize=10)
    return ax


def plot_rank_distribution(post: RankAnalytics, *, ax: Axes | None = None) -> Axes:
    """Heat map of ``P(rank = r)`` per model, with the expected rank marked."""
    order = _order(post)
    L = len(order)
    ax = _axes(ax, "rank_distribution", L)
    dist = post.rank_distribution().values[order]
    expected = post.rank_summary()["expected_rank"].to_numpy()[order]
    image = ax.imshow(dist, cmap="Greens", vmin=0, vmax=1, aspect="auto",
                      interpolation="nearest")
    ax.scatter(expected - 1, np.arange(L), marker="x", color="#c0392b", s=14,
               label="expected rank")
    ax.set_xticks(range(L), [str(r) for r in range(1, L + 1)], fontsize=7)
    ax.set_yticks(range(L), [post.models[i] for i in order], fontsize=7)
    ax.set_xlabel("rank (1 = best)")
    ax.legend(loc="lower left", fontsize=7, frameon=True)
    ax.figure.colorbar(image, ax=ax, shrink=0.7, label="P(rank = r)")
    ax.set_title("Rank distribution", fontsize=10)
    return ax


def plot_ppc_statistics(result: PPCResult, *, axes: Any = None) -> Any:
    """Replicated vs observed overall dispersion, and per-model accuracy / dispersion.

    Four panels: histograms of the two overall dispersion statistics under
    replication with the observed value as a vertical line (p-value in the
    title), and per-model intervals of replicated accuracy and dispersion with
    the observed values (red when flagged).
    """
    import matplotlib.pyplot as plt

    if axes is None:
        _, axes = plt.subplots(2, 2, figsize=figure_size("ppc", 0), layout="constrained")
    axes = np.asarray(axes).ravel()
    table = result.statistics
    for ax, name, label in (
        (axes[0], "question_dispersion", "mean over models of Var_questions(rate)"),
        (axes[1], "model_dispersion", "mean over questions of Var_models(rate)"),
    ):
        rep = result.replicated[name].sel(target="all").values
        obs = float(result.observed[name].sel(target="all"))
        overall = table[(table["statistic"] == name) & (table["target"] == "all")]
        p = float(overall["p_value"].iloc[0])
        ax.hist(rep, bins=30, color="#9bb7d4", edgecolor="white", label="replicated")
        ax.axvline(obs, color="#c0392b", linewidth=2, label="observed")
        lo, hi = np.quantile(rep, [result.alpha / 2, 1 - result.alpha / 2])
        ax.text(0.02, 0.95, f"observed {obs:.4g}\nreplicated {1 - result.alpha:.0%}: "
                f"{lo:.4g} to {hi:.4g}", transform=ax.transAxes, va="top", fontsize=7)
        ax.set_title(f"{name.replace('_', ' ')}: p = {p:.3f}", fontsize=10)
        ax.set_xlabel(label, fontsize=8)
        ax.legend(fontsize=7, frameon=False)
    for ax, name in ((axes[2], "accuracy"), (axes[3], "question_dispersion")):
        rows = table[(table["statistic"] == name) & (table["target"] != "all")]
        x = np.arange(len(rows))
        ax.vlines(x, rows["replicated_lower"], rows["replicated_upper"], color="#9bb7d4",
                  linewidth=4, label=f"replicated {1 - result.alpha:.0%}")
        colors = np.where(rows["flagged"], "#c0392b", "#222222")
        ax.scatter(x, rows["observed"], color=colors, s=12, zorder=3, label="observed")
        ax.set_xticks(x, rows["target"], rotation=90, fontsize=6)
        ax.set_title(f"per-model {name.replace('_', ' ')}", fontsize=10)
        ax.legend(fontsize=7, frameon=False)
    return axes


def plot_ppc_rootogram(result: PPCResult) -> Figure:
    """Hanging rootogram of observed vs replicated cell counts, all cells pooled.

    Drawn by :func:`arviz.plot_ppc_rootogram` (arviz-plots) from the check's
    DataTree (``result.idata``); every non-sample dimension of the observed
    variable is stacked into one ``cell`` dimension, since the counts of all
    model-question cells share one support ``0..N``.
    """
    import arviz as az

    var, pooled = _pooled_cells(result)
    collection = az.plot_ppc_rootogram(pooled, var_names=[var], backend="matplotlib")
    fig = collection.viz["figure"].item()
    fig.axes[0].set_title(f"Observed vs replicated {var} per cell (all cells pooled)",
                          fontsize=10)
    return fig


def plot_ppc_calibration(result: PPCResult) -> Figure:
    """PAV-adjusted calibration of binary cells (one trial each), all cells pooled.

    With one outcome per model-question cell a rootogram has two bars and says
    little; :func:`arviz.plot_ppc_pava` instead plots the observed rate of
    success (isotonic in the predicted probability, with its predictive band)
    against each cell's posterior-predictive probability: the diagonal is a
    calibrated model (Dimitriadis, Gneiting & Jordan 2021).
    """
    import arviz as az

    var, pooled = _pooled_cells(result)
    collection = az.plot_ppc_pava(pooled, var_names=[var], backend="matplotlib")
    fig = collection.viz["figure"].item()
    ax = fig.axes[0]
    ax.set_title(f"Calibration of the binary cells {var} (all cells pooled)", fontsize=10)
    ax.set_xlabel("predicted probability of success")
    ax.set_ylabel("observed rate (PAV-adjusted)")
    fig.tight_layout()  # room for the x label, which ArviZ's layout does not reserve
    return fig


def cells_are_binary(result: PPCResult) -> bool:
    """True when every observed and replicated cell value is 0 or 1 (one trial a cell)."""
    from bayesrank.datatree import group

    if result.idata is None:
        raise ValueError("this PPCResult carries no replicated data (result.idata is None)")
    return all(int(group(result.idata, g)[result.observed_var].max()) <= 1
               for g in ("observed_data", "posterior_predictive"))


def _pooled_cells(result: PPCResult) -> tuple[str, xr.DataTree]:
    """The observed variable and a tree of its cells stacked into one ``cell`` dimension."""
    from bayesrank.datatree import group

    if result.idata is None:
        raise ValueError("this PPCResult carries no replicated data (result.idata is None)")
    var = result.observed_var
    predictive = group(result.idata, "posterior_predictive")[[var]]
    observed = group(result.idata, "observed_data")[[var]]
    cell_dims = list(observed[var].dims)
    return var, xr.DataTree.from_dict(
        {
            "posterior_predictive": _pool_cells(predictive, cell_dims),
            "observed_data": _pool_cells(observed, cell_dims),
        }
    )


def _pool_cells(ds: xr.Dataset, cell_dims: list[str]) -> xr.Dataset:
    stacked = ds.stack(cell=cell_dims)
    stacked = stacked.drop_vars([c for c in stacked.coords if c not in ("chain", "draw")])
    # counts stored as floats (PyMC data containers) are integers: a rootogram needs them so
    for name, values in stacked.data_vars.items():
        if not np.array_equal(values, np.round(values)):
            raise ValueError(f"{name!r} holds non-integer values; a rootogram needs counts")
        stacked[name] = values.astype(np.int64)
    return stacked
