"""Wall time of ``bayesrank.fit(d, "bayes")`` (exact conjugate draws + pointwise log-likelihood).

Issue 9, item 2: Bayes@N in closed form should fit in under 1 s, log-likelihood
included, on a 43 x 400 x 10 tensor.  For a simulated 43 x 400 x 10 binary
tensor and every real data set in ``../shared/data`` this times, in the same
run and one right after the other:

* ``new``: ``fit(d, "bayes", random_seed=0)`` as it is now (the exact sampler
  by kind of cell, the log-likelihood in closed form from the same draws);
* ``previous``: the path before it, kept below as the peer: one
  ``standard_gamma`` call with an array of shapes over the whole
  (chain, draw, llm, question, category) tensor, then
  :func:`pymc.compute_log_likelihood` on the stored draws.

Both use the defaults (4 chains x 1,000 draws) and return the same groups.  The
machine has 2 cores shared with other jobs, so absolute seconds are noisy; the
ratio previous / new within a run is the number to read.  ``--repeats`` takes
the best of several runs of each.

Run: ``python benchmarks/bench_bayes_fit.py [--sets sim_43x400x10,lcb_repair]
[--repeats 1] [--no-peer]``.  The table is printed and written to
``bench-results/bench_bayes_fit.csv``.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
from bayesrank.models import get_model

import bayesrank
from bayesrank import conjugate
from bayesrank.inference import fitting

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models_real import DATA, load_real_sets  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "bench-results"


def simulated(L: int = 43, M: int = 400, N: int = 10, seed: int = 0,
              hardness: float = 2.0) -> bayesrank.ResponseData:
    """A binary tensor from a Rasch model: abilities N(0, 1), difficulties N(hardness, 2).

    ``hardness=2`` leaves about 40% of the cells never or always solved;
    ``hardness=4.5`` about 75%, like the real LiveCodeBench 43 x 400 x 10 set of
    issue 9 (73% of its cells 0/10).
    """
    rng = np.random.default_rng(seed)
    eta = rng.normal(0.0, 1.0, L)[:, None] - rng.normal(hardness, 2.0, M)[None, :]
    solve = 1.0 / (1.0 + np.exp(-eta))
    return bayesrank.ResponseData((rng.random((L, M, N)) < solve[..., None]).astype(np.int8))


# -- peer: the exact sampler before this benchmark (copied from bayesrank/conjugate.py) -----

def previous_exact_draws(model, *, draws, chains, seed, log_likelihood=True):
    """All Gamma variates in one call with an array of shapes; no log-likelihood here."""
    nu = np.asarray(model["alpha"].get_value()) + np.asarray(
        model["category_counts"].get_value())
    weights = np.asarray(model["weights"].get_value())
    rng = np.random.default_rng(seed)
    gamma = rng.standard_gamma(nu, size=(chains, draws, *nu.shape))
    p = gamma / gamma.sum(axis=-1, keepdims=True)
    return {"posterior": {"p": p, "theta": (p @ weights).mean(axis=-1)}}


def fit_previous(data: bayesrank.ResponseData) -> bayesrank.Posterior:
    """``fit(d, "bayes")`` with the previous sampler: fit() then runs pm.compute_log_likelihood."""
    spec = dataclasses.replace(get_model("bayes"), exact_draws=previous_exact_draws)
    with mock.patch.object(fitting, "get_model", lambda name: spec):
        return bayesrank.fit(data, "bayes", random_seed=0, progressbar=False, log_likelihood=True)


def fit_new(data: bayesrank.ResponseData) -> bayesrank.Posterior:
    return bayesrank.fit(data, "bayes", random_seed=0, progressbar=False, log_likelihood=True)


def best_of(fn, data, repeats: int) -> tuple[float, float, bayesrank.Posterior]:
    """Best wall-clock and best process-CPU seconds of ``repeats`` calls, and the last result.

    On a machine shared with other jobs the CPU seconds of a one-thread run are
    the better guide to the wall time on an idle machine.
    """
    wall, cpu, post = np.inf, np.inf, None
    for _ in range(repeats):
        post = None
        c0, t0 = time.process_time(), time.perf_counter()
        post = fn(data)
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return wall, cpu, post


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=None, help="comma-separated subset of the data sets")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--no-peer", action="store_true", help="skip the previous path")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads of the new sampler (default: one per core, at most 4)")
    args = parser.parse_args(argv)
    if args.threads:
        conjugate._workers = lambda: args.threads
    sets = {"sim_43x400x10": simulated(), "sim_43x400x10_lcb_like": simulated(hardness=4.5)}
    if DATA.is_dir():
        sets.update(load_real_sets())
    else:
        print(f"no real data at {DATA}: timing the simulated tensor only")
    if args.sets:
        sets = {k: v for k, v in sets.items() if k in args.sets.split(",")}
    fit_new(simulated(4, 5, 2))  # imports and PyTensor's cache warm before any timing
    rows = []
    for name, data in sets.items():
        new_s, new_cpu, post = best_of(fit_new, data, args.repeats)
        counts = data.reductions.category_counts
        row = {"data": name, "shape": "x".join(map(str, data.R.shape)),
               "cells_solved_never_or_always": float(np.mean(counts.min(axis=-1) == 0)),
               "threads": conjugate._workers(),
               "new_s": new_s, "new_cpu_s": new_cpu, "new_sample_s": post.timings["sample"]}
        if not args.no_peer:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                old_s, old_cpu, old = best_of(fit_previous, data, args.repeats)
            row.update(previous_s=old_s, previous_cpu_s=old_cpu,
                       previous_sample_s=old.timings["sample"],
                       previous_log_likelihood_s=old.timings["log_likelihood"],
                       speedup_wall=old_s / new_s, speedup_cpu=old_cpu / new_cpu)
            # both answer the same question: theta's posterior mean agrees within MC error
            gap = np.abs(post.theta.mean(("chain", "draw")) - old.theta.mean(("chain", "draw")))
            row["max_theta_mean_gap"] = float(gap.max())
            del old
        rows.append(row)
        print(pd.DataFrame([row]).to_string(index=False), flush=True)
        del post
    table = pd.DataFrame(rows)
    OUT.mkdir(exist_ok=True)
    table.to_csv(OUT / "bench_bayes_fit.csv", index=False)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3g}"))
    return table


if __name__ == "__main__":
    main()
