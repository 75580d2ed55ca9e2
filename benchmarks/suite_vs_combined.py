"""The suite's overall ranking against the concatenated "Combined" Rasch (issue 49, item 3).

The paper's "Combined" results concatenate benchmarks into one question axis.  Here the
shared ZeroEval suite (``bench_suite.load_suite``) is concatenated over the union of its
52 models, a model's cells on a benchmark it did not run missing (``mask``), and fitted
with ``bayesrank.fit(data, "rasch")``; the suite model is ``bayesrank.fit_benchmarks``.
Both with their defaults, seed 0.  Printed: Kendall's tau between the two rankings (posterior
means) over all models and over the 27 that ran both benchmarks, the models whose ranks
differ most, and the suite fit's smallest bulk ESS of the skill among models that ran one
benchmark and among those that ran both.

Run: ``python benchmarks/suite_vs_combined.py``.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd
from bench_suite import load_suite

import bayesrank
from bayesrank.inference.diagnostics import convergence

#: Reads the real sets in ../shared/data: run_all.py skips it where they are absent.
NEEDS_SHARED_DATA = True


def concatenated(suite: dict[str, bayesrank.ResponseData]) -> bayesrank.ResponseData:
    """One question axis over the union of the models; cells not run are masked out."""
    models = list(dict.fromkeys(m for d in suite.values() for m in d.models))
    blocks, masks, questions = [], [], []
    for name, d in suite.items():
        rows = [models.index(m) for m in d.models]
        R = np.zeros((len(models), d.M, d.N), np.int8)
        mask = np.zeros(R.shape, bool)
        R[rows], mask[rows] = d.R, True
        blocks.append(R)
        masks.append(mask)
        questions += [f"{name}/{q}" for q in d.questions]
    return bayesrank.ResponseData(np.concatenate(blocks, axis=1), models=models,
                                  questions=questions, mask=np.concatenate(masks, axis=1))


def main() -> None:
    suite = load_suite()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = bayesrank.fit_benchmarks(suite, random_seed=0, progressbar=False)
        combined = bayesrank.fit(concatenated(suite), "rasch", random_seed=0,
                                 progressbar=False, log_likelihood=False)
    skill = post.leaderboard()["mean"]
    theta = combined.leaderboard()["mean"].reindex(skill.index)
    both = post.ran().all(axis=1).reindex(skill.index)
    rank_suite, rank_combined = skill.rank(ascending=False), theta.rank(ascending=False)
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    print(f"Kendall tau, all {len(skill)} models: {bayesrank.kendall_tau(skill, theta):.3f}")
    print(f"Kendall tau, the {int(both.sum())} in both: "
          f"{bayesrank.kendall_tau(skill[both], theta[both]):.3f}")
    print(f"combined fit: r_hat max {combined.diagnostics['r_hat'].max():.3f}, "
          f"bulk ESS min {combined.diagnostics['ess_bulk'].min():.0f}")
    table = pd.DataFrame({"ran": post.ran().sum(axis=1).reindex(skill.index),
                          "suite_rank": rank_suite, "combined_rank": rank_combined,
                          "skill": skill, "combined_theta": theta})
    table["shift"] = table["combined_rank"] - table["suite_rank"]
    print(table.reindex(table["shift"].abs().sort_values(ascending=False).index).head(12)
          .to_string(float_format="%.2f"))
    draws = post.idata.posterior["skill"].transpose("chain", "draw", "llm").values
    ess = pd.Series(convergence(draws)[1], index=post.models).reindex(skill.index)
    print(f"suite skill bulk ESS min: one benchmark {ess[~both].min():.0f}, "
          f"both {ess[both].min():.0f}")


if __name__ == "__main__":
    main()
