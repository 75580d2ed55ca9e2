"""The pointwise log-likelihood after a fit: bayesrank's compiled function against PyMC's.

For every sampled model on every real set in ``../shared/data`` this scores the same
draws (4 chains x the fit's default draws; jittered initial points, whose values do not
change the cost) with :func:`pymc.compute_log_likelihood` (the peer: what ``fit`` called
before) and with :func:`bayesrank.inference.log_likelihood.pointwise_log_likelihood`,
first with its function compiled (``cold``: the function store empty, PyTensor's on-disk
cache warm) and then loaded from the function store as a fresh process does (``stored``),
and checks that the values agree.  It reports seconds for each and the ratio peer / stored.

Run: ``python benchmarks/bench_log_likelihood.py [--sets lcb_repair,...]
[--models rasch,...]``; the table is printed and written to
``bench-results/bench_log_likelihood.csv``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import warnings

import numpy as np
import pymc as pm
import xarray as xr
from bayesrank.models import MODELS, scoring_model
from bench_models_real import load_real_sets, write_table
from pymc.initial_point import make_initial_point_fn

from bayesrank.datatree import group
from bayesrank.inference.cache import clear_cache, structure_key
from bayesrank.inference.fitting import _draws, _tag
from bayesrank.inference.log_likelihood import pointwise_log_likelihood

#: Reads the real sets in ../shared/data: run_all.py skips it where they are absent.
NEEDS_SHARED_DATA = True

SAMPLED = ["rasch", "2pl", "3pl", "bradley_terry", "davidson", "davidson_luce"]
CHAINS = 4


def fake_posterior(model: pm.Model, draws: int, seed: int = 0) -> xr.Dataset:
    """``CHAINS`` x ``draws`` jittered initial points (constrained) as a posterior."""
    points = make_initial_point_fn(model=model, jitter_rvs=set(model.free_RVs),
                                   return_transformed=False)
    first = points(seed)
    variables = {}
    for rv in model.free_RVs:
        dims = model.named_vars_to_dims.get(rv.name) or tuple(
            f"{rv.name}_dim_{i}" for i in range(np.ndim(first[rv.name])))
        one = np.asarray(first[rv.name])
        variables[rv.name] = (("chain", "draw", *dims),
                              np.broadcast_to(one, (CHAINS, draws, *one.shape)).copy())
    posterior = xr.Dataset(variables, coords={"chain": np.arange(CHAINS),
                                              "draw": np.arange(draws)})
    for i in range(1, 8):  # a few distinct draws; the cost does not depend on the values
        point = points(seed + i)
        for rv in model.free_RVs:
            posterior[rv.name].values[:, i::8] = point[rv.name]
    return posterior


def measure(name: str, data) -> dict:
    spec = MODELS[name]
    model = spec.build(data)
    var = spec.observed_var(model)
    scoring = scoring_model(model)
    draws = _draws(None, model, CHAINS, "nutpie")  # the fit's default
    posterior = fake_posterior(scoring, draws)
    key = structure_key(model, _tag(spec, {}))
    t0 = time.perf_counter()
    peer = pm.compute_log_likelihood(xr.DataTree.from_dict({"posterior": posterior}),
                                     model=scoring, var_names=[var],
                                     extend_inferencedata=False, progressbar=False)
    t1 = time.perf_counter()
    peer = (group(peer, "log_likelihood") if isinstance(peer, xr.DataTree) else peer)[var]
    with tempfile.TemporaryDirectory() as store:
        os.environ["BAYESRANK_FUNCTION_CACHE_DIR"] = store
        clear_cache()
        t2 = time.perf_counter()
        pointwise_log_likelihood(posterior, scoring, var, key)
        t3 = time.perf_counter()
        clear_cache()  # a fresh process: the function comes from the store
        t4 = time.perf_counter()
        ours = pointwise_log_likelihood(posterior, scoring, var, key)[var]
        t5 = time.perf_counter()
        del os.environ["BAYESRANK_FUNCTION_CACHE_DIR"]
    difference = float(np.max(np.abs(ours.values - peer.values)))
    return {"model": name, "draws": CHAINS * draws, "cells": int(np.prod(ours.shape[2:])),
            "pymc_s": t1 - t0, "cold_s": t3 - t2, "stored_s": t5 - t4,
            "pymc_over_stored": (t1 - t0) / (t5 - t4), "max_abs_difference": difference}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=None)
    parser.add_argument("--models", default=",".join(SAMPLED))
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    sets = load_real_sets()
    chosen = sets if args.sets is None else {k: sets[k] for k in args.sets.split(",")}
    rows = []
    for set_name, data in chosen.items():
        for name in args.models.split(","):
            row = {"data": set_name, "shape": "x".join(map(str, data.R.shape)),
                   **measure(name, data)}
            rows.append(row)
            print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in row.items()), flush=True)
            if row["max_abs_difference"] > 1e-8:
                raise SystemExit(f"{set_name} {name}: the log-likelihoods differ by "
                                 f"{row['max_abs_difference']:.3g}")
    write_table(rows, "bench_log_likelihood", float_format=lambda x: f"{x:.4g}")


if __name__ == "__main__":
    main()
