"""How time and peak memory grow with the benchmark's size L x M (issue 47, docs/scale.md).

Each point runs in a fresh subprocess, on simulated Rasch-like data (abilities and
difficulties N(0, 1.5^2), one trial per cell, int8), and reports its wall time and its
peak resident memory (``resource.getrusage(RUSAGE_SELF).ru_maxrss``); the parent polls
the child's resident memory and stops it above ``--max-rss-gb`` (8 GB by default: other
work shares the machine), and after ``--max-seconds``.  A task whose point was stopped,
or took over half the time limit, skips its larger points.  The log-log slope of time
and of memory against the number of cells L x M is fitted per task over its finished
points (least squares on log-log).

Tasks: ``closed_form`` (closed-form Bayes@N and its leaderboard), ``rules`` (the
paper's 72 ranking rules, each by ``bayesrank.rank``), ``report_closed_form`` (the HTML
report of the closed form), ``report_bayes`` (``fit(d, "bayes")`` and its report),
``fit_<model>`` (``bayesrank.fit`` with its defaults, then ``leaderboard()``),
``laplace_rasch`` and ``laplace_2pl`` (the Laplace approximation, its LCB ranking and
P(theta_i > theta_j), then its report up to 4,000,000 cells and its leaderboard beyond),
``loo_<model>`` (the fit, then ``post.loo()`` block by block); a task named with
``+sparse`` (``fit_rasch+sparse``) runs on data with 90% of the cells missing.

Run: ``python benchmarks/bench_scale.py`` (the short grid of ``make bench``) or
``python benchmarks/bench_scale.py --grid full`` (10 x 1,000 up to 1,000 x 20,000; one
point at a time; a task skips its larger points once one is stopped).  Writes
``bench-results/bench_scale.csv`` and ``bench_scale.png``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "bench-results"

GRIDS = {
    "short": [(10, 1_000), (20, 2_000)],
    "full": [(10, 1_000), (20, 2_000), (50, 4_000), (50, 14_000), (100, 14_000),
             (200, 14_000), (1_000, 20_000)],
}
TASKS = {
    "short": ["closed_form", "rules", "report_closed_form", "fit_bayes", "fit_rasch",
              "fit_rasch+sparse"],
    "full": ["closed_form", "rules", "report_closed_form", "fit_bayes", "loo_bayes",
             "fit_rasch", "fit_rasch+sparse", "loo_rasch", "fit_2pl", "fit_2pl+sparse",
             "fit_3pl", "fit_3pl+sparse", "fit_bradley_terry",
             "fit_davidson", "fit_davidson_luce", "laplace_rasch", "laplace_2pl"],
}


def simulate(L: int, M: int, seed: int = 0, missing: float = 0.0):
    """Rasch-like outcomes, one trial per cell; ``missing``: that share of cells unobserved
    (a mask, chosen at random)."""
    import bayesrank

    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.5, L)
    b = rng.normal(0.0, 1.5, M)
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :])))
    R = (rng.random((L, M)) < p).astype(np.int8)
    if not missing:
        return bayesrank.ResponseData(R)
    mask = rng.random((L, M, 1)) >= missing
    return bayesrank.ResponseData(R[:, :, None], mask=mask)


def run_point(task: str, L: int, M: int) -> dict:
    """Run ``task`` once on L x M data in this process; its seconds (data excluded)."""
    import warnings

    import bayesrank
    from bayesrank.inference.diagnostics import problems

    warnings.simplefilter("ignore")
    task, sparse = task.removesuffix("+sparse"), task.endswith("+sparse")
    data = simulate(L, M, missing=0.9 if sparse else 0.0)
    refused, converged = 0, {}
    t0 = time.perf_counter()
    if task == "closed_form":
        bayesrank.closed_form(data).leaderboard()
    elif task == "rules":
        for name in bayesrank.methods().query("in_paper")["identifier"]:
            try:
                bayesrank.rank(data, name)
            except bayesrank.errors.BayesrankError:  # a one-line refusal of these data, e.g.
                refused += 1  # pass@k with k > 1 trial, the 3PL's joint ML (no estimate)
    elif task == "report_closed_form":
        bayesrank.write_report(bayesrank.closed_form(data), OUT / "bench_scale_report.html")
    elif task == "report_bayes":  # the fit, then its report (leaderboard, PPC, figures)
        post = bayesrank.fit(data, "bayes", random_seed=0, progressbar=False)
        bayesrank.write_report(post, OUT / "bench_scale_report.html")
    elif task in ("laplace_rasch", "laplace_2pl"):  # the CPU route at leaderboard scale,
        # then its rankings
        post = bayesrank.fit(data, task.removeprefix("laplace_"), sampler="laplace",
                             random_seed=0, progressbar=False)
        post.rank(by="lcb")
        post.superiority()
        if L * M <= 4_000_000:  # the report's PPC replicates every cell 500 times
            bayesrank.write_report(post, OUT / "bench_scale_report.html")
        else:
            post.leaderboard()
    elif task.startswith(("fit_", "loo_")):
        post = bayesrank.fit(data, task[4:], random_seed=0, progressbar=False)
        frame = post.diagnostics  # the fit's own checks (R-hat, ESS, divergences, E-BFMI)
        converged = {"passed": not problems(frame), "max_rhat": float(frame["r_hat"].max()),
                     "min_ess_bulk": float(frame["ess_bulk"].min()),
                     "min_ess_tail": float(frame["ess_tail"].min()),
                     "problems": "; ".join(problems(frame)),
                     "max_rhat_variable": str(frame["r_hat"].idxmax())}
        post.leaderboard()
        if task.startswith("loo_"):
            post.loo()
    else:
        raise SystemExit(f"unknown task {task!r}")
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "refused": refused, **converged,
            "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def _rss_gb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def measure(task: str, L: int, M: int, max_rss_gb: float, max_seconds: float) -> dict:
    """One point in a fresh subprocess, stopped above ``max_rss_gb`` or ``max_seconds``."""
    row = {"task": task, "L": L, "M": M, "cells": L * M, "status": "ok"}
    child = subprocess.Popen([sys.executable, __file__, "--point", task, str(L), str(M)],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    start, peak = time.monotonic(), 0.0
    while child.poll() is None:
        peak = max(peak, _rss_gb(child.pid))
        if peak > max_rss_gb or time.monotonic() - start > max_seconds:
            child.kill()
            child.wait()
            row.update(status=f"stopped: over {max_rss_gb:g} GB" if peak > max_rss_gb
                       else f"stopped: over {max_seconds:g} s",
                       seconds=time.monotonic() - start, peak_rss_gb=peak)
            return row
        time.sleep(0.2)
    out = child.stdout.read().strip().splitlines()
    if child.returncode != 0 or not out:
        row.update(status=f"failed (exit {child.returncode})", seconds=np.nan,
                   peak_rss_gb=peak)
        return row
    row.update(json.loads(out[-1]))
    return row


def slope(rows: list[dict], key: str) -> float:
    """Least-squares slope of log(key) against log(cells) over a task's finished points."""
    ok = [r for r in rows if r["status"] == "ok" and r[key] > 0]
    if len({r["cells"] for r in ok}) < 2:
        return float("nan")
    x = np.log([r["cells"] for r in ok])
    y = np.log([r[key] for r in ok])
    return float(np.polyfit(x, y, 1)[0])


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for task in dict.fromkeys(r["task"] for r in rows):
        ok = [r for r in rows if r["task"] == task and r["status"] == "ok"]
        for ax, key in zip(axes, ("seconds", "peak_rss_gb"), strict=True):
            ax.loglog([r["cells"] for r in ok], [r[key] for r in ok], "o-", label=task)
    for ax, label in zip(axes, ("wall time (s)", "peak resident memory (GB)"), strict=True):
        ax.set_xlabel("cells L x M")
        ax.set_ylabel(label)
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--point", nargs=3, metavar=("TASK", "L", "M"))
    parser.add_argument("--grid", choices=sorted(GRIDS), default="short")
    parser.add_argument("--sizes", help="L x M points instead of the grid's: 10x1000,50x14000")
    parser.add_argument("--tasks", help="comma-separated tasks (default: the grid's)")
    parser.add_argument("--name", default="bench_scale", help="bench-results/NAME.csv, .png")
    parser.add_argument("--max-rss-gb", type=float, default=8.0)
    parser.add_argument("--max-seconds", type=float, default=600.0)
    args = parser.parse_args()
    if args.point:
        task, L, M = args.point
        print(json.dumps(run_point(task, int(L), int(M))), flush=True)
        return
    import pandas as pd

    OUT.mkdir(exist_ok=True)
    tasks = args.tasks.split(",") if args.tasks else TASKS[args.grid]
    sizes = ([tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
             if args.sizes else GRIDS[args.grid])
    rows: list[dict] = []
    for task in tasks:
        stopped = False
        for L, M in sizes:
            if stopped:
                rows.append({"task": task, "L": L, "M": M, "cells": L * M,
                             "status": "skipped: a smaller point took too long or too much",
                             "seconds": np.nan, "peak_rss_gb": np.nan})
                continue
            row = measure(task, L, M, args.max_rss_gb, args.max_seconds)
            rows.append(row)
            checks = ("" if "passed" not in row else
                      f"  checks {'passed' if row['passed'] else 'FAILED'} (R-hat "
                      f"{row['max_rhat']:.4f} at {row['max_rhat_variable']}, min bulk/tail ESS "
                      f"{row['min_ess_bulk']:.0f}/{row['min_ess_tail']:.0f}) {row['problems']}")
            print(f"{task:20s} {L:5d} x {M:6d}  {row['seconds']:8.1f} s  "
                  f"{row['peak_rss_gb']:6.2f} GB  {row['status']}{checks}", flush=True)
            stopped = row["status"] != "ok" or row["seconds"] > args.max_seconds / 2
    frame = pd.DataFrame(rows)
    frame.to_csv(OUT / f"{args.name}.csv", index=False)
    plot(rows, OUT / f"{args.name}.png")
    print("\nlog-log slope against cells (time, memory):")
    for task in tasks:
        mine = [r for r in rows if r["task"] == task]
        print(f"  {task:20s} {slope(mine, 'seconds'):5.2f}  {slope(mine, 'peak_rss_gb'):5.2f}")


if __name__ == "__main__":
    main()
