"""Speed of the posterior analytics and of the HTML report on the bundled example.

Targets (issue #5), on 20 models x 120 questions x 80 trials with 4,000 draws:
all analytics together < 1 s; the report excluding the fit < 10 s.

Peers measured in the same run: a straightforward implementation of the same
analytics (scipy ``rankdata`` per draw, one ``az.mcse`` call per pair) for the
analytics, and the fit itself for the report.

Run: ``python benchmarks/bench_analytics.py [--key combined] [--synthetic]``
(``--synthetic`` skips the MCMC fit: draws come from the closed-form normal
approximation, and the report then has no posterior-predictive section).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import xarray as xr
from scipy import stats

import bayesrank
from bayesrank.analysis.posterior import Posterior, closed_form
from bayesrank.report import ReportOptions, render_report


def all_analytics(post) -> None:
    for by in ("mean", "median", "lcb"):
        post.rank(by)
    post.credible_intervals(0.9, "eti")
    post.credible_intervals(0.9, "hdi")
    post.superiority()
    post.rank_distribution()
    post.rank_summary()
    post.top_set(0.05)
    post.separated_pairs(0.95)
    post.leaderboard()


def naive_analytics(theta: np.ndarray) -> None:
    """The same quantities computed the obvious way (the peer)."""
    C, D, L = theta.shape
    x = theta.reshape(-1, L)
    ranks = np.array([stats.rankdata(-row, method="average") for row in x])
    dist = np.array([[np.mean(ranks[:, i] == r) for r in range(1, L + 1)] for i in range(L)])
    for i in range(L):
        for j in range(i + 1, L):
            ind = (theta[..., i] > theta[..., j]).astype(float)
            az.mcse(xr.Dataset({"x": (("chain", "draw"), ind)}), method="mean")
    np.quantile(x, [0.05, 0.5, 0.95], axis=0)
    az.hdi(xr.Dataset({"theta": (("chain", "draw", "llm"), theta)}), prob=0.9)
    dist.sum()


def best_of(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--key", default="combined")
    parser.add_argument("--synthetic", action="store_true")
    args = parser.parse_args()
    data = bayesrank.datasets.example(args.key)
    print(f"data: {data!r}")

    fit_seconds = float("nan")
    if args.synthetic:
        post = closed_form(data).sample(1000, chains=4, random_seed=0)
        post = Posterior(post.idata, data, "synthetic_normal")
    else:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            post = bayesrank.fit(data, "rasch", draws=1000, tune=1000, chains=4, random_seed=0,
                                 progressbar=False)
        fit_seconds = time.perf_counter() - start
    theta = post.theta.transpose("chain", "draw", "llm").values
    print(f"draws: {theta.shape[0]} chains x {theta.shape[1]} = {theta.shape[0] * theta.shape[1]}")

    def fresh():  # a new object each time, so nothing is cached between repetitions
        return Posterior(post.idata, data, post.model, pymc_model=post.pymc_model,
                         observed_var=post.observed_var, diagnostics=post.diagnostics)

    ours = best_of(lambda: all_analytics(fresh()))
    peer = best_of(lambda: naive_analytics(theta), repeat=1)
    exact = best_of(lambda: all_analytics(closed_form(data)))

    report_post = fresh()
    start = time.perf_counter()
    html = render_report(report_post, ReportOptions(source="bundled simulated example",
                                                    ppc_draws=500, random_seed=0))
    report_seconds = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "r.html").write_text(html, encoding="utf-8")

    print(f"{'task':52s} {'seconds':>8s}  target")
    print(f"{'all analytics on 4,000 draws (bayesrank)':52s} {ours:8.3f}  < 1 s")
    print(f"{'same analytics, naive peer (rankdata + az.mcse/pair)':52s} {peer:8.3f}  "
          f"(ratio peer/ours {peer / ours:.1f}x)")
    print(f"{'all analytics, closed-form Bayes@N (exact)':52s} {exact:8.3f}")
    print(f"{'HTML report excluding the fit (incl. PPC, 500 draws)':52s} {report_seconds:8.3f}"
          f"  < 10 s ({len(html) / 1e6:.2f} MB)")
    if np.isfinite(fit_seconds):
        print(f"{'fit (rasch, 4 x 1000 draws, for reference)':52s} {fit_seconds:8.3f}  "
              f"(report/fit {report_seconds / fit_seconds:.2f})")


if __name__ == "__main__":
    main()
