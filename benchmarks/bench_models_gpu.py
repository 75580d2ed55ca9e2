"""Batched fitting (``fit_many``, NumPyro under ``jax.vmap``) for the paper's N = 1 protocol.

The paper's low-budget experiments refit a model to many subsampled datasets
of the same shape (e.g. one trial per question: N = 1).  ``fit_many`` runs all
chains of all datasets in one compiled JAX program; on a GPU the batch runs
in parallel.  This script draws B such datasets from the bundled example
(one random trial per model-question cell), fits them with ``fit_many`` for
several batch sizes, and compares the time per dataset with one-at-a-time
``fit`` calls (nutpie, the CPU default, compiled once and reused) measured in
the same run.

Run on a GPU machine: ``python benchmarks/bench_models_gpu.py --batches 1,16,64,256``.
It also runs on a CPU (``--batches 1,4,16``; JAX then uses the host), which is
how the numbers in docs/samplers.md were taken: no GPU was lent to the
session that wrote it.  ``run_all.py`` skips this script (``*_gpu.py``).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

import bayesrank
from bayesrank.inference.fitting import fit, fit_many


def subsample(data: bayesrank.ResponseData, rng: np.random.Generator) -> bayesrank.ResponseData:
    """One random trial per model-question cell (N = 1), prior outcomes kept."""
    pick = rng.integers(0, data.N, size=(data.L, data.M))
    R = np.take_along_axis(data.R, pick[..., None], axis=2)
    return bayesrank.ResponseData(R, models=data.models, questions=data.questions, R0=data.R0)


def min_ess(post) -> float:
    return float(post.diagnostics.loc["theta", "ess_bulk"])


def main() -> None:
    import jax

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="rasch")
    parser.add_argument("--key", default="aime25")
    parser.add_argument("--batches", default="1,4,16")
    parser.add_argument("--sequential", type=int, default=4, help="datasets fitted one by one")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    args = parser.parse_args()

    print(f"JAX devices: {jax.devices()}", flush=True)
    base = bayesrank.datasets.example(args.key)
    rng = np.random.default_rng(0)
    sizes = [int(b) for b in args.batches.split(",")]
    pool = [subsample(base, rng) for _ in range(max(sizes + [args.sequential]))]
    print(f"{len(pool)} datasets like {pool[0]}", flush=True)
    rows = []
    settings = dict(draws=args.draws, tune=args.draws, chains=args.chains)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for b in sizes:
            t0 = time.perf_counter()
            posts = fit_many(pool[:b], args.model, sampler="numpyro", random_seed=1,
                             log_likelihood=False, **settings)
            wall = time.perf_counter() - t0
            t = posts[0].timings
            rows.append({
                "how": "fit_many (numpyro, vmap)", "datasets": b, "compile_s": t["compile"],
                "sample_s": t["sample"], "wall_s": wall, "sample_s_each": t["sample"] / b,
                "wall_s_each": wall / b,
                "median_min_ess": float(np.median([min_ess(p) for p in posts])),
                "divergences": int(sum(p.diagnostics.attrs["divergences"] for p in posts)),
            })
            print(rows[-1], flush=True)
        posts, sample_s, compile_s = [], 0.0, 0.0
        t0 = time.perf_counter()
        for i, d in enumerate(pool[: args.sequential]):
            post = fit(d, args.model, sampler="nutpie", random_seed=i, log_likelihood=False,
                       progressbar=False, **settings)
            posts.append(post)
            sample_s += post.timings["sample"]
            compile_s += post.timings["compile"]
        wall = time.perf_counter() - t0
        n = args.sequential
        rows.append({
            "how": "fit one by one (nutpie)", "datasets": n, "compile_s": compile_s,
            "sample_s": sample_s, "wall_s": wall, "sample_s_each": sample_s / n,
            "wall_s_each": wall / n,
            "median_min_ess": float(np.median([min_ess(p) for p in posts])),
            "divergences": int(sum(p.diagnostics.attrs["divergences"] for p in posts)),
        })
        print(rows[-1], flush=True)
    with pd.option_context("display.width", 160, "display.float_format", "{:.4g}".format):
        print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
