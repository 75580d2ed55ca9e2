"""Adaptive against uniform allocation of trials, replayed on real data.

Data: ``../shared/data/real_lcb_repair_2024_10`` (LiveCodeBench self-repair,
15 models x 713 problems x 10 samples; only each cell's count of passing samples
is known, so the replay shuffles each cell's outcomes and reveals them one at a
time: draws without replacement from the cell's observed outcomes).

Protocol (issue 13 B): start from one trial per cell; each round adds ``batch``
trials, either by :func:`bayesrank.adaptive.next_trials` (closed-form Bayes_U@N)
or uniformly (fewest-trials cells first, random ties); stop when the target is
settled at ``level`` or every recorded trial is used.  Reported per target:
trials used (total, and added beyond the common start), how often the replay
settled, and how often its answer equals the full-data answer, over ``--seeds``
seeds.  Goal: at least 2x fewer trials than uniform at equal agreement.

Run: ``python benchmarks/bench_adaptive.py [--seeds 10]`` (also part of ``make bench``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import bayesrank as br
from bayesrank import adaptive

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "real_lcb_repair_2024_10"
TARGETS = (("top1", None, 100), ("top_k", 3, 200))


def load_repair() -> br.ResponseData:
    with np.load(DATA / "R.npz", allow_pickle=False) as z:
        return br.ResponseData(z["repair"], models=z["models"], questions=z["questions"])


def run(data: br.ResponseData, target: str, k: int | None, batch: int, seeds: int,
        level: float) -> dict[str, dict[str, float]]:
    truth = adaptive.settled(br.closed_form(data, R0=None), target, k, level)
    start = data.L * data.M
    out = {}
    for policy in ("adaptive", "uniform"):
        trials, agree, done, secs = [], [], [], 0.0
        for seed in range(seeds):
            t0 = time.perf_counter()
            r = adaptive.replay(data, target, k, policy=policy, batch=batch, level=level,
                                seed=seed)
            secs += time.perf_counter() - t0
            trials.append(r.trials)
            done.append(r.settled)
            same = set(r.answer) == set(truth.answer) if target == "top_k" else (
                r.answer == truth.answer)
            agree.append(same)
        t = np.asarray(trials, dtype=float)
        out[policy] = {"mean": t.mean(), "median": np.median(t), "min": t.min(), "max": t.max(),
                       "added": t.mean() - start, "settled": np.mean(done),
                       "agree": np.mean(agree), "seconds": secs / seeds}
    out["truth_settled"] = {"value": float(truth.settled)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--level", type=float, default=0.95)
    args = parser.parse_args()
    if not (DATA / "R.npz").is_file():
        print(f"# skipped: {DATA} is absent (the project's shared data)")
        sys.exit(0)
    data = load_repair()
    print(f"# adaptive vs uniform replay on lcb_repair_2024_10: {data!r}")
    print(f"# start: 1 trial per cell = {data.L * data.M} trials; full data = "
          f"{data.L * data.M * data.N}; level {args.level}; {args.seeds} seeds")
    header = (f"{'target':8s} {'policy':9s} {'batch':>5s} {'trials mean':>11s} {'median':>7s} "
              f"{'min..max':>13s} {'added':>7s} {'settled':>7s} {'agree':>6s} {'s/run':>6s}")
    print(header)
    for target, k, batch in TARGETS:
        res = run(data, target, k, batch, args.seeds, args.level)
        name = target if k is None else f"top_{k}"
        for policy in ("adaptive", "uniform"):
            r = res[policy]
            print(f"{name:8s} {policy:9s} {batch:5d} {r['mean']:11.0f} {r['median']:7.0f} "
                  f"{r['min']:6.0f}..{r['max']:<6.0f} {r['added']:7.0f} {r['settled']:7.2f} "
                  f"{r['agree']:6.2f} {r['seconds']:6.2f}")
        a, u = res["adaptive"], res["uniform"]
        print(f"{name:8s} saving: {u['mean'] / a['mean']:.2f}x fewer trials in total, "
              f"{u['added'] / a['added']:.2f}x fewer added beyond the start "
              f"(full data settles the target: {bool(res['truth_settled']['value'])})")


if __name__ == "__main__":
    main()
