"""Empirical-prior diagnostics: Bayes_U@N vs Bayes_R0@N, greedy-sampling alignment.

Reference: paper Sec. 4.4 ("Effect of Empirical Priors", Table 4) and appendix
"Additional Prior Diagnostics".  The prior R0 is typically one greedy decode per
question and model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayesrank.data import ResponseData, as_response_data
from bayesrank.errors import DataError
from bayesrank.ranking import kendall_tau, scores_to_ranks
from bayesrank.study._core import (
    budget_draws,
    check_budgets,
    check_engine,
    default_budgets,
    gold_ranks,
    rank_draws,
    tally,
)
from bayesrank.study.engine import run_tasks
from bayesrank.study.progress import Progress

__all__ = ["greedy_sampling_alignment", "prior_effect", "prior_diagnostics", "std_reduction"]


def _require_model_prior(data: ResponseData, what: str) -> None:
    if data.R0 is None:
        raise DataError(
            f"{what} needs prior outcomes R0 (e.g. one greedy decode per model and question); "
            "these data have none: build ResponseData(..., R0=...) or load with R0="
        )
    if data.prior_shared:
        raise DataError(
            f"{what} needs per-model prior outcomes R0 of shape (L, M, D); these data share one "
            "R0 (M, D) across models, which cannot rank the models"
        )


def greedy_accuracy(data: ResponseData) -> np.ndarray:
    """Mean utility of each model's prior outcomes, sum_k w_k c0_lmk / (M D), shape (L,)."""
    _require_model_prior(data, "greedy accuracy")
    counts = data.reductions.prior_category_counts  # (L, M, C+1)
    return (counts @ data.weights).sum(axis=1) / counts.sum(axis=(1, 2))


def greedy_sampling_alignment(data: ResponseData, *, sampling: str = "bayes") -> float:
    """tau_G-S: Kendall tau_b between the greedy (R0) ranking and the full-N sampling ranking.

    The greedy ranking orders models by the mean utility of their prior outcomes
    (greedy accuracy for binary data); the sampling ranking is ``sampling`` at
    full N (default Bayes_U@N).  Ties are kept in both.  Paper Sec. 4.4, Table 4.
    """
    data = as_response_data(data)
    greedy = scores_to_ranks(greedy_accuracy(data))
    return kendall_tau(greedy, gold_ranks(data, sampling))


def std_reduction(std_uniform: float, std_prior: float) -> float:
    """Relative reduction of the tau_b spread by the prior: 1 - std_prior / std_uniform.

    NaN when the uniform spread is 0 (nothing to reduce).  Table 4, "Std. Red.".
    """
    return float(1.0 - std_prior / std_uniform) if std_uniform > 0 else float("nan")


def prior_effect(
    data: ResponseData,
    *,
    budgets: Sequence[int] | None = None,
    reps: int = 50,
    seed: int = 0,
    gold: str = "bayes",
    uniform: str = "bayes",
    prior: str = "bayes_greedy",
    engine: str = "batched",
    client: Any = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Gold-standard agreement of Bayes_U@n and Bayes_R0@n as the budget n grows.

    For each budget ``n`` (default 1, 2, 4, ..., N), ``reps`` resampled datasets
    of n trials per cell (the paper's 50; distinct single trials at n=1, the full
    data once at n=N) are ranked by the uniform-prior and the empirical-prior
    Bayes@N, and Kendall tau_b against the gold standard Bayes_U@N is summarised.
    ``delta_tau`` = mean(prior) - mean(uniform); ``std_reduction`` =
    1 - std(prior) / std(uniform) (ddof=0).  Each budget is one task; ``engine``,
    ``client`` and ``progress`` as in :func:`bayesrank.study.run_study`.

    Returns
    -------
    DataFrame
        One row per budget: ``budget, tau_uniform_mean, tau_uniform_std,
        tau_prior_mean, tau_prior_std, delta_tau, std_reduction, n_draws``.
    """
    data = as_response_data(data)
    _require_model_prior(data, "prior_effect")
    budgets = check_budgets(budgets or default_budgets(data.N), data.N)
    rng = np.random.default_rng(seed)
    plan = [(b, budget_draws(data.N, b, reps, rng)) for b in budgets]
    check_engine(engine)
    target = gold_ranks(data, gold)
    pair = list(dict.fromkeys([uniform, prior]))
    ranked = run_tasks(rank_draws, [idx for _, idx in plan], client=client, progress=progress,
                       label="prior effect", unit="budgets", data=data, methods=pair,
                       engine=engine)
    rows = []
    for (b, _), res in zip(plan, ranked, strict=True):
        samples = tally(res, {"gold": dict.fromkeys(pair, target)}, {"gold": dict.fromkeys(pair)})
        u, p = samples[(uniform, "gold")].summary(), samples[(prior, "gold")].summary()
        rows.append({
            "budget": b,
            "tau_uniform_mean": u["tau_mean"],
            "tau_uniform_std": u["tau_std"],
            "tau_prior_mean": p["tau_mean"],
            "tau_prior_std": p["tau_std"],
            "delta_tau": p["tau_mean"] - u["tau_mean"],
            "std_reduction": std_reduction(u["tau_std"], p["tau_std"]),
            "n_draws": min(u["n_draws"], p["n_draws"]),
            "skip_reason": u["skip_reason"] or p["skip_reason"],
        })
    return pd.DataFrame(rows)


def prior_diagnostics(
    data: ResponseData, *, reps: int = 50, seed: int = 0, budget: int = 1,
    engine: str = "batched",
) -> pd.DataFrame:
    """The paper's Table 4 row: difficulty, tau_G-S, delta_tau and std reduction at N=1.

    ``difficulty`` is the mean accuracy (mean cell utility) over models and
    questions; ``greedy_accuracy`` its greedy counterpart and ``accuracy_gap``
    = sampling - greedy (appendix figure, panel c).
    """
    data = as_response_data(data)
    effect = prior_effect(data, budgets=(budget,), reps=reps, seed=seed, engine=engine).iloc[0]
    sampling_acc = float(np.nanmean(data.reductions.cell_utility))
    greedy_acc = float(greedy_accuracy(data).mean())
    return pd.DataFrame([{
        "difficulty": sampling_acc,
        "greedy_accuracy": greedy_acc,
        "accuracy_gap": sampling_acc - greedy_acc,
        "tau_gs": greedy_sampling_alignment(data),
        "budget": budget,
        "delta_tau": effect["delta_tau"],
        "std_reduction": effect["std_reduction"],
        "n_draws": effect["n_draws"],
    }])
