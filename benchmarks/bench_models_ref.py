"""Default fits on the real sets: the models of today against the models at a git ref.

Issue 46, item 5: the generative model layer must not cost users speed.  For each real set
of ``../shared/data`` (:func:`bench_models_real.load_real_sets`, every ``--every``-th
question) and each Bayesian model, ``bayesrank.fit(data, model, random_seed=seed)`` with
its defaults runs in a child process with the package at ``--ref`` (:mod:`git_tree`) and
in one with the working tree's, one set after the other and the two versions alternately
(ref first on even sets), so that both see the same machine load.  Each child first fits
a small unrelated model (the process's one-off costs), then fits each model twice and times
the second fit from the call to its return (its compiled functions cached, as for a user's
second fit: warm-up, draws and diagnostics; no pointwise log-likelihood where the version
lets it be left out).  Reported per fit: wall seconds, the smallest
bulk ESS over every reported variable (the user's diagnostics table) and over the
abilities ``theta``, its ratio to the wall time (min-ESS/s), the largest R-hat and the
divergences; then, per model, today's min-ESS/s over the ref's.

``--rounds R`` repeats the whole sequence R times (the order of the versions alternating
between rounds too) and reports each fit's median over the rounds.

Run: ``python benchmarks/bench_models_ref.py --ref 78aa85c^ [--every 4] [--rounds 2]
[--models rasch,2pl] [--sets lcb_repair,aime]``; the table is written to
``bench-results/bench_models_ref.csv``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
MODELS = ("rasch", "2pl", "3pl", "bradley_terry", "davidson", "davidson_luce")

_CHILD = r"""
import inspect, json, sys, time, warnings
import numpy as np
sys.path.insert(0, sys.argv[1])
warnings.simplefilter("ignore")
import bayesrank
from real_sets import every_kth_question, load_real_sets
name, every, seed = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
models = sys.argv[5].split(",")
kwargs = {"random_seed": seed, "progressbar": False}
if "log_likelihood" in inspect.signature(bayesrank.fit).parameters:
    kwargs["log_likelihood"] = False
rng = np.random.default_rng(0)
bayesrank.fit(bayesrank.ResponseData((rng.random((4, 6, 2)) < 0.5).astype(int)), "rasch",
              draws=50, tune=50, **kwargs)
data = every_kth_question(load_real_sets()[name], every)
for model in models:
    bayesrank.fit(data, model, **kwargs)  # compiled and cached: the timed fit samples
    start = time.perf_counter()
    post = bayesrank.fit(data, model, **kwargs)
    wall = time.perf_counter() - start
    table = post.diagnostics
    theta = table.loc["theta"] if "theta" in table.index else table.iloc[:0]
    print(json.dumps({"set": name, "model": model, "wall_s": wall,
                      "ess_bulk_min": float(table["ess_bulk"].min()),
                      "theta_ess_bulk_min": float(theta["ess_bulk"].min()) if len(theta) else None,
                      "r_hat_max": float(table["r_hat"].max()),
                      "divergences": int(table.attrs.get("divergences", -1)),
                      "passed": bool(table["passed"].all())}), flush=True)
"""


def _run(version: str, package: Path | None, name: str, args) -> list[dict]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    if package is not None:  # the ref's bayesrank and bayesrank.models first on the path
        env["PYTHONPATH"] = os.pathsep.join([str(package), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(HERE), name, str(args.every), str(args.seed),
         ",".join(args.models)],
        capture_output=True, text=True, env=env, timeout=args.timeout, cwd=tempfile.gettempdir())
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0:
        print(f"{version} on {name} failed: {done.stderr[-1500:]}", file=sys.stderr)
    for row in rows:
        row["version"] = version
        row["min_ess_per_s"] = row["ess_bulk_min"] / row["wall_s"]
        print(row, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", required=True, help="git ref of the models to compare with")
    parser.add_argument("--every", type=int, default=4, help="every k-th question")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", type=lambda s: s.split(","), default=list(MODELS))
    parser.add_argument("--sets", type=lambda s: s.split(","),
                        default=["lcb_repair", "zeroeval_math_l5", "reasoning_gym_hard",
                                 "matharena_aime2025_I", "alpaca_eval_wins"])
    parser.add_argument("--rounds", type=int, default=1, help="repeats of the whole run")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per child")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    from git_tree import extract_package

    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        package = extract_package(args.ref, Path(tmp) / "ref")
        for r in range(args.rounds):
            for i, name in enumerate(args.sets):
                order = [("ref", package), ("today", None)]
                for version, where in order if (i + r) % 2 == 0 else order[::-1]:
                    rows += [{**row, "round": r} for row in _run(version, where, name, args)]
    table = pd.DataFrame(rows)
    out = HERE.parent / "bench-results"
    out.mkdir(exist_ok=True)
    table.to_csv(out / "bench_models_ref.csv", index=False)
    print(table.to_string(index=False, float_format="%.3g"))
    wide = table.pivot_table(index=["model", "set"], columns="version", values="min_ess_per_s",
                             aggfunc="median")
    wide["today / ref"] = wide["today"] / wide["ref"]
    print(wide.to_string(float_format="%.3g"))
    print(wide.groupby("model")["today / ref"].agg(["min", "median"]).to_string(
        float_format="%.3g"))


if __name__ == "__main__":
    main()
