"""Speed and convergence of the suite model on the shared two-benchmark suite (issue 49).

ZeroEval MATH level 5 (38 models x 721 questions) and GSM8K (41 x 1,319), greedy (N = 1):
52 models, 27 of them in both.  Fits ``bayesrank.fit_benchmarks`` with its defaults
(nutpie, 4 chains, default warm-up and draws) and, in the same process, each benchmark
alone with ``bayesrank.fit(data, "rasch")``, so the suite's time reads as a ratio to the
single fits it replaces.  Reported: wall seconds (compile + sampling, the process warmed by
one small fit first), the worst R-hat, the smallest bulk and tail ESS over every reported
variable, divergences, the process's CPU seconds (all its threads) and the load average of
the machine (2 cores shared with other jobs: wall times are noisy, the CPU seconds less so;
on two idle cores the wall time is about half the CPU seconds, nutpie's chains in parallel).

Target (issue 49): the suite fit under 60 s on a 2-core machine.

Run: ``python benchmarks/bench_suite.py [--model rasch] [--no-single]``; the table is printed
and written to ``bench-results/bench_suite.csv``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import bayesrank

#: Reads the real sets in ../shared/data: run_all.py skips it where they are absent.
NEEDS_SHARED_DATA = True

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
OUT = Path(__file__).resolve().parents[1] / "bench-results"
SUITE = {"math_l5": "real_zeroeval_math_l5", "gsm8k": "real_zeroeval_gsm8k"}


def load_suite(root: Path = DATA) -> dict[str, bayesrank.ResponseData]:
    """The shared ZeroEval suite: {"math_l5": 38 x 721 x 1, "gsm8k": 41 x 1319 x 1}."""
    suite = {}
    for name, folder in SUITE.items():
        z = np.load(root / folder / "R.npz")
        suite[name] = bayesrank.ResponseData(z[name], models=list(z["models"]),
                                             questions=list(z["questions"]))
    return suite


def summary(diagnostics: pd.DataFrame) -> dict:
    return {"r_hat_max": float(diagnostics["r_hat"].max()),
            "ess_bulk_min": float(diagnostics["ess_bulk"].min()),
            "ess_tail_min": float(diagnostics["ess_tail"].min()),
            "divergences": int(diagnostics.attrs["divergences"])}


def timed(label: str, fit) -> dict:
    load = os.getloadavg()[0]
    t0, cpu0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = fit()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"fit": label, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "compile_s": round(post.timings.get("compile", np.nan), 1),
            "sample_s": round(post.timings.get("sample", np.nan), 1),
            **summary(post.diagnostics), "load_before": round(load, 1),
            "load_after": round(os.getloadavg()[0], 1)}


def warm_process() -> None:
    """One small unrelated fit, so the timings below do not pay the imports."""
    rng = np.random.default_rng(0)
    small = {f"b{j}": bayesrank.ResponseData((rng.random((4, 6, 2)) < 0.5).astype(np.int8),
                                             models=["a", "b", "c", "d"]) for j in range(2)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bayesrank.fit_benchmarks(small, draws=50, tune=50, chains=1, progressbar=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="rasch", choices=("rasch", "2pl"))
    parser.add_argument("--no-single", action="store_true", help="skip the single fits")
    args = parser.parse_args()
    suite = load_suite()
    warm_process()
    rows = [timed(f"suite {args.model}", lambda: bayesrank.fit_benchmarks(
        suite, args.model, random_seed=0, progressbar=False))]
    if not args.no_single:
        for name, data in suite.items():
            rows.append(timed(f"{name} alone", lambda d=data: bayesrank.fit(
                d, args.model, random_seed=0, progressbar=False, log_likelihood=False)))
        rows[0]["vs_single_fits"] = round(rows[0]["wall_s"] / sum(r["wall_s"] for r in rows[1:]),
                                          2)
    table = pd.DataFrame(rows)
    OUT.mkdir(exist_ok=True)
    table.to_csv(OUT / "bench_suite.csv", index=False)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs")
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
