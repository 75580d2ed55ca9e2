"""Held-out predictions on the shared ZeroEval suite (issue 49, item 3): is the suite worth it?

For a model that ran both benchmarks, its results on one of them are held out and predicted
from the rest, as per-question solve probabilities p_m; the score is the held-out log
predictive density per question, (1/M) sum_m log E[p_m^k_m (1 - p_m)^(1 - k_m)] (the
expectation over posterior draws; N = 1, greedy).  Three predictors:

* ``suite``: ``bayesrank.fit_benchmarks`` without those cells; p_m = logistic(theta_lb - b_m);
* ``mean_accuracy``: the model's accuracy on its other benchmark, the same for every question;
* ``combined``: ``bayesrank.fit(concatenated, "rasch")`` on the two benchmarks as one
  question axis (``suite_vs_combined.concatenated``) with those cells missing;
  p_m = logistic(theta_l - b_m).

Budget (2 shared cores): the fits run 2 chains x 500 draws after 500 warm-up iterations (a
prediction, not a convergence check), and ``--models`` models (default 4, spread over the
27 by their MATH L5 accuracy) are held out on each benchmark in turn.

Run: ``python benchmarks/suite_heldout.py [--models 4]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from bench_suite import load_suite
from scipy import special
from suite_vs_combined import concatenated

import bayesrank

#: Reads the real sets in ../shared/data: run_all.py skips it where they are absent.
NEEDS_SHARED_DATA = True

SAMPLING = {"draws": 500, "tune": 500, "chains": 2, "random_seed": 0, "progressbar": False}


def log_score(p: np.ndarray, k: np.ndarray) -> float:
    """(1/M) sum_m log mean_s p_sm^k_m (1 - p_sm)^(1 - k_m); p (S, M) or (M,)."""
    p = np.clip(np.atleast_2d(p), 1e-12, 1 - 1e-12)
    like = np.where(k[None, :] == 1, p, 1 - p)
    return float(np.mean(np.log(like.mean(axis=0))))


def without(suite, model: str, bench: str):
    d = suite[bench]
    keep = [i for i, m in enumerate(d.models) if m != model]
    return {**suite, bench: bayesrank.ResponseData(
        d.R[keep], models=[d.models[i] for i in keep], questions=list(d.questions))}


def masked(data: bayesrank.ResponseData, model: str, bench: str) -> bayesrank.ResponseData:
    mask = data.mask.copy()
    columns = np.array([q.startswith(f"{bench}/") for q in data.questions])
    mask[data.models.index(model), columns] = False
    return bayesrank.ResponseData(data.R, models=list(data.models),
                                  questions=list(data.questions), mask=mask)


def held_out(suite, combined_data, model: str, bench: str) -> dict:
    d = suite[bench]
    k = d.R[d.models.index(model), :, 0]
    other = next(b for b in suite if b != bench)
    o = suite[other]
    accuracy = o.R[o.models.index(model)].mean()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = bayesrank.fit_benchmarks(without(suite, model, bench), **SAMPLING)
        combined = bayesrank.fit(masked(combined_data, model, bench), "rasch",
                                 log_likelihood=False, **SAMPLING)
    j = post.benchmarks.index(bench)
    pos = post.idata.posterior
    theta = pos["theta"].isel(benchmark=j).sel(llm=model).values.reshape(-1)
    b = pos["b"].isel(question=post.suite.benchmarks[j].columns).values
    p_suite = special.expit(theta[:, None] - b.reshape(theta.size, -1))
    cpos = combined.idata.posterior
    columns = [q.startswith(f"{bench}/") for q in combined_data.questions]
    ctheta = cpos["theta"].sel(llm=model).values.reshape(-1)
    cb = cpos["b"].isel(question=np.flatnonzero(columns)).values.reshape(ctheta.size, -1)
    p_combined = special.expit(ctheta[:, None] - cb)
    return {"model": model, "held_out": bench, "observed": k.mean(),
            "suite": log_score(p_suite, k),
            "mean_accuracy": log_score(np.full(k.size, accuracy), k),
            "combined": log_score(p_combined, k)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=4)
    args = parser.parse_args()
    suite = load_suite()
    both = [m for m in suite["math_l5"].models if m in suite["gsm8k"].models]
    math = suite["math_l5"]
    accuracy = {m: math.R[math.models.index(m)].mean() for m in both}
    ordered = sorted(both, key=accuracy.get)
    picks = [ordered[i] for i in np.linspace(0, len(ordered) - 1, args.models).round().astype(int)]
    combined_data = concatenated(suite)
    rows = []
    for model in picks:
        for bench in suite:
            rows.append(held_out(suite, combined_data, model, bench))
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    print(time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    print(table.to_string(index=False, float_format="%.4f"))
    print(table[["suite", "mean_accuracy", "combined"]].mean().to_string(float_format="%.4f"))


if __name__ == "__main__":
    main()
