"""The JAX/NumPyro path on real benchmark data: one GPU against the same machine's CPU.

Fits with ``sampler="numpyro"`` (our NUTS in one JAX program, see
:mod:`bayesrank.inference.jax_nuts`) on the real sets in ``../shared/data``
(LiveCodeBench 15 x 713 x 10, ZeroEval MATH-L5 38 x 721 x 1) and, for the
paper's N = 1 protocol, ``fit_many`` batches of B single-trial subsamples of
LiveCodeBench (15 x 713 x 1) as one vectorised program.  Every row records
where JAX ran, wall / compile / sampling seconds, the worst R-hat, the
smallest bulk ESS, min-ESS per second of sampling and divergences.

The peer is the same script with ``--cpu`` (``JAX_PLATFORMS=cpu``) run as a
subprocess in the same invocation, so both sides are measured on one machine.
Run on a GPU machine: ``python benchmarks/bench_real_gpu.py --peer``; the
table is printed and written as CSV to ``--out``.  ``run_all.py`` skips
``*_gpu.py`` scripts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def load_real_sets(root: Path = DATA) -> dict:
    """LiveCodeBench 15 x 713 x 10 and ZeroEval MATH-L5 38 x 721 x 1 from ``../shared/data``."""
    import bayesrank

    sets = {}
    for name, folder, key in (("lcb_repair", "real_lcb_repair_2024_10", "repair"),
                              ("zeroeval_math_l5", "real_zeroeval_math_l5", "math_l5")):
        z = np.load(root / folder / "R.npz")
        sets[name] = bayesrank.ResponseData(z[key], models=list(z["models"]),
                                            questions=list(z["questions"]))
    return sets


def _row(where: str, what: str, data: str, wall: float, posts: list) -> dict:
    diags = [p.diagnostics for p in posts]
    sample_s = posts[0].timings["sample"]
    min_ess = float(min(d["ess_bulk"].min() for d in diags))
    return {
        "device": where, "what": what, "data": data, "datasets": len(posts),
        "wall_s": round(wall, 2), "compile_s": round(posts[0].timings["compile"], 2),
        "sample_s": round(sample_s, 2),
        "rhat_max": round(float(max(d["r_hat"].max() for d in diags)), 4),
        "min_bulk_ess": round(min_ess),
        "min_ess_per_sample_s": round(min_ess * len(posts) / sample_s, 1),
        "divergences": int(sum(d.attrs["divergences"] for d in diags)),
    }


def n1_subsamples(data, count: int, seed: int = 0) -> list:
    """``count`` datasets of one random trial per model-question cell (N = 1)."""
    import bayesrank

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        pick = rng.integers(0, data.N, size=(data.L, data.M))
        R = np.take_along_axis(data.R, pick[..., None], axis=2)
        out.append(bayesrank.ResponseData(R, models=data.models, questions=data.questions))
    return out


def run(single: list[str], batches: list[int], draws: int) -> list[dict]:
    import jax

    import bayesrank

    where = f"{jax.default_backend()}:{jax.devices()[0].device_kind}"
    sets = load_real_sets()
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for spec in single:
            name, model = spec.split(":")
            t0 = time.perf_counter()
            post = bayesrank.fit(sets[name], model, sampler="numpyro", random_seed=0,
                                 draws=draws, tune=draws, progressbar=False)
            rows.append(_row(where, f"fit {model}", name, time.perf_counter() - t0, [post]))
            print(json.dumps(rows[-1]), flush=True)
        pool = n1_subsamples(sets["lcb_repair"], max(batches, default=0))
        for b in batches:
            t0 = time.perf_counter()
            posts = bayesrank.fit_many(pool[:b], "rasch", sampler="numpyro", random_seed=1,
                                       draws=draws, tune=draws, log_likelihood=False,
                                       progressbar=False)
            rows.append(_row(where, "fit_many rasch", "lcb_repair N=1", time.perf_counter() - t0,
                             posts))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--single", default="lcb_repair:rasch,lcb_repair:2pl,"
                        "zeroeval_math_l5:rasch")
    parser.add_argument("--batches", default="1,16,64")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--cpu", action="store_true", help="run JAX on the host CPU")
    parser.add_argument("--peer", action="store_true",
                        help="also run --peer-single/--peer-batches with --cpu, same machine")
    parser.add_argument("--peer-single", default="lcb_repair:rasch")
    parser.add_argument("--peer-batches", default="1,16")
    parser.add_argument("--out", default="bench-results/bench_real_gpu.csv")
    args = parser.parse_args()
    if args.cpu:
        os.environ["JAX_PLATFORMS"] = "cpu"
    listed = [s for s in args.single.split(",") if s]
    batches = [int(b) for b in args.batches.split(",") if b]
    rows = run(listed, batches, args.draws)
    if args.peer:
        cmd = [sys.executable, __file__, "--cpu", "--single", args.peer_single,
               "--batches", args.peer_batches, "--draws", str(args.draws), "--out",
               str(Path(args.out).with_suffix(".cpu.csv"))]
        done = subprocess.run(cmd, capture_output=True, text=True,
                              env={**os.environ, "JAX_PLATFORMS": "cpu"})
        print(done.stderr[-2000:], file=sys.stderr)
        rows += [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    table = pd.DataFrame(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False)
    with pd.option_context("display.width", 200):
        print(table.to_string(index=False))


if __name__ == "__main__":
    main()
