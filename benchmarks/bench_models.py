"""Speed of the Bayesian ranking models: ESS per second per sampler vs a naive PyMC peer.

For every model on the bundled 20 models x 120 questions x 80 trials example
(``bayesrank.datasets.example("combined")``), and every sampler, one fit with
4 chains x (1,000 tune + 1,000 draws) reports compile and sampling wall time,
the minimum bulk ESS of ``theta`` (the ranking quantity) and of all variables,
divergences, and min-ESS(theta) per second of sampling.

The peer, measured in the same run, is a straightforward PyMC model of the
same likelihood (same sufficient statistics) with a naive parameterisation:
every location and scale floats freely under wide normal priors (no zero-sum
constraints, no reparameterisation), sampled by default ``pm.sample``.  For
Bayes@N the peer is its Dirichlet model under default ``pm.sample``; for the
3PL it has the default 3PL's beta-binomial likelihood (PyMC's BetaBinomial).

Targets (issue #4): >= 10x the peer's min-ESS(theta)/s for every model;
Rasch >= 200 min-ESS/s after compilation on 2 CPU cores.

Run: ``python benchmarks/bench_models.py [--models rasch,2pl] [--samplers nutpie]
[--key combined] [--draws 1000] [--no-naive]``.  Results are printed as a
table and written to ``bench-results/bench_models.csv``.  Timings on a shared
machine are noisy; compare the ratios measured in the same run.

``--defaults`` instead fits every model with default settings (sampler,
draws, chains) to every bundled example key and reports whether the
convergence checks pass (R-hat <= 1.01, bulk/tail ESS >= 400, no divergence,
E-BFMI >= 0.3): ``bench-results/bench_models_defaults.csv``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from bayesrank.models import davidson_luce as dl
from bayesrank.models.bradley_terry import pairs_of

import bayesrank
from bayesrank.inference.fitting import fit

MODELS = ("bayes", "rasch", "2pl", "3pl", "bradley_terry", "davidson", "davidson_luce")
SAMPLERS = ("nutpie", "numpyro", "pymc")
OUT = Path(__file__).resolve().parents[1] / "bench-results"


# -- naive peers: same likelihood, free locations/scales, default pm.sample ----------------

def naive_model(name: str, data: bayesrank.ResponseData) -> pm.Model:
    red = data.reductions
    coords = {
        "llm": list(data.models),
        "question": list(data.questions),
        "category": list(range(data.n_categories)),
    }
    with pm.Model(coords=coords) as model:
        if name == "bayes":
            counts = red.category_counts
            p = pm.Dirichlet("p", a=np.ones(counts.shape), dims=("llm", "question", "category"))
            pm.Multinomial("counts", n=counts.sum(-1), p=p, observed=counts)
            pm.Deterministic("theta", (p @ data.weights).mean(axis=1), dims="llm")
        elif name in ("rasch", "2pl", "3pl"):
            theta = pm.Normal("theta", 0.0, 3.0, dims="llm")
            b = pm.Normal("b", 0.0, 3.0, dims="question")
            logit = theta[:, None] - b[None, :]
            if name != "rasch":
                a = pm.LogNormal("a", 0.0, 0.5, dims="question")
                logit = a * logit
            if name == "3pl":  # our default 3PL's likelihood: beta-binomial cells
                c = pm.Beta("c", 1.0, 19.0, dims="question")
                prob = c + (1 - c) * pm.math.sigmoid(logit)
                phi = pm.HalfNormal("inv_sqrt_phi", 1.0) ** -2
                pm.BetaBinomial(
                    "k", n=red.trials, alpha=prob * phi, beta=(1 - prob) * phi,
                    observed=red.successes,
                )
            else:
                pm.Binomial("k", n=red.trials, logit_p=logit, observed=red.successes)
        elif name in ("bradley_terry", "davidson"):
            W, T = red.wins, red.ties
            i, j = pairs_of(data.L)
            theta = pm.Normal("theta", 0.0, 3.0, dims="llm")
            if name == "bradley_terry":
                pm.Binomial(
                    "wins", n=W[i, j] + W[j, i], logit_p=theta[i] - theta[j], observed=W[i, j]
                )
            else:
                log_nu = pm.Normal("log_nu", 0.0, 2.0)
                logits = pt.stack(
                    [theta[i], theta[j], log_nu + 0.5 * (theta[i] + theta[j])], axis=-1
                )
                table = np.stack([W[i, j], W[j, i], T[i, j]], axis=-1)
                pm.Multinomial(
                    "outcomes", n=table.sum(-1), p=pt.special.softmax(logits, -1), observed=table
                )
        elif name == "davidson_luce":
            ev = red.setwise
            D = data.L - 1
            theta = pm.Normal("theta", 0.0, 3.0, dims="llm")
            eta = pm.Normal("eta", 0.0, 3.0, shape=D - 1)
            log_delta = pt.concatenate([pt.zeros(1), eta])
            sets, which = np.unique(ev.winners | ev.losers, axis=0, return_inverse=True)
            log_z = dl.log_tie_normalisers(theta, log_delta, sets.astype(float), D)
            sizes = ev.winners.sum(1)
            log_g = (ev.winners.astype(float) @ theta) / sizes
            pm.Potential(
                "events",
                pt.sum(ev.counts * (log_delta[sizes - 1] + log_g - log_z[which.ravel()])),
            )
        else:
            raise ValueError(name)
    return model


def ess_summary(idata: xr.DataTree) -> tuple[float, float]:
    post = idata["posterior"].to_dataset()
    names = [v for v in post.data_vars if not v.endswith("__")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ess = az.ess(post[names], method="bulk")
    theta = float(ess["theta"].min())
    every = float(min(float(ess[v].min()) for v in names if np.isfinite(ess[v]).all()))
    return theta, every


def run_naive(name, data, draws, seed):
    model = naive_model(name, data)
    t0 = time.perf_counter()
    model.compile_logp()  # fills PyTensor's cache: pm.sample's own compilation is then a hit
    model.compile_dlogp()
    t1 = time.perf_counter()
    with model:
        idata = pm.sample(
            nuts_sampler="pymc",  # PyMC 6 would pick nutpie when installed: the peer stays PyMC
            draws=draws, tune=draws, chains=4, cores=min(4, os.cpu_count() or 1),
            random_seed=seed, progressbar=False, compute_convergence_checks=False,
        )
    t2 = time.perf_counter()
    ess_theta, ess_all = ess_summary(idata)
    return {
        "model": name, "sampler": "naive pm.sample", "compile_s": t1 - t0, "sample_s": t2 - t1,
        "min_ess_theta": ess_theta, "min_ess_all": ess_all,
        "divergences": int(idata.sample_stats["diverging"].sum()),
    }


def run_ours(name, data, sampler, draws, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = fit(data, name, sampler=sampler, draws=draws, tune=draws, chains=4,
                   random_seed=seed, log_likelihood=False, progressbar=False)
    ess_theta, ess_all = ess_summary(post.idata)
    return {
        "model": name, "sampler": sampler, "compile_s": post.timings["compile"],
        "sample_s": post.timings["sample"], "min_ess_theta": ess_theta, "min_ess_all": ess_all,
        "divergences": post.diagnostics.attrs["divergences"],
    }


def check_defaults(models) -> None:
    from bayesrank.datasets import EXAMPLE_KEYS

    rows = []
    for key in EXAMPLE_KEYS:
        data = bayesrank.datasets.example(key)
        for name in models:
            t0 = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                post = fit(data, name, random_seed=0, progressbar=False)
            frame = post.diagnostics
            rows.append({
                "key": key, "model": name, "sampler": post.sampler,
                "wall_s": time.perf_counter() - t0,
                "max_r_hat": float(frame["r_hat"].max()),
                "min_ess_bulk": float(frame["ess_bulk"].min()),
                "min_ess_tail": float(frame["ess_tail"].min()),
                "divergences": frame.attrs["divergences"],
                "min_bfmi": min(frame.attrs["bfmi"], default=np.nan),
                "passed": not any(w.category.__name__ == "SamplingWarning" for w in caught),
            })
            print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    OUT.mkdir(exist_ok=True)
    table.to_csv(OUT / "bench_models_defaults.csv", index=False)
    with pd.option_context("display.width", 160, "display.float_format", "{:.4g}".format):
        print(table.to_string(index=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--samplers", default=",".join(SAMPLERS))
    parser.add_argument("--key", default="combined")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-naive", action="store_true")
    parser.add_argument("--defaults", action="store_true")
    args = parser.parse_args()
    if args.defaults:
        check_defaults(args.models.split(","))
        return

    data = bayesrank.datasets.example(args.key)
    print(f"{data}\n", flush=True)
    rows = []
    for name in args.models.split(","):
        samplers = args.samplers.split(",") + (["conjugate"] if name == "bayes" else [])
        for sampler in samplers:
            rows.append(run_ours(name, data, sampler, args.draws, args.seed))
            print(rows[-1], flush=True)
        if not args.no_naive:
            rows.append(run_naive(name, data, args.draws, args.seed))
            print(rows[-1], flush=True)

    table = pd.DataFrame(rows)
    table["ess_per_s"] = table["min_ess_theta"] / table["sample_s"]
    naive = table[table["sampler"] == "naive pm.sample"].set_index("model")["ess_per_s"]
    table["x_naive"] = table["ess_per_s"] / table["model"].map(naive)
    OUT.mkdir(exist_ok=True)
    table.to_csv(OUT / "bench_models.csv", index=False)
    with pd.option_context("display.width", 160, "display.float_format", "{:.4g}".format):
        print(table.to_string(index=False))


if __name__ == "__main__":
    main()
