"""Speed and convergence of the Bayesian models on real benchmark data, old vs new parameterisation.

Issue 9: fitted with default settings to real LLM benchmark data (questions
that no model ever solves, or every model always solves), the Rasch and 2PL
models of before mixed slowly (R-hat 1.02-1.04, min bulk ESS 57-142).  For
every model and every real data set in ``../shared/data`` this fits the
current model (``bayesrank.models``) and, in the same run right after it,
the previous parameterisation (a copy of its model-building code is kept
below as the peer), both with nutpie, 4 chains x 1,000 draws, the current model
after ``bayesrank.fit``'s default warm-up (500 with nutpie, ``DEFAULT_TUNE``), the
previous one after the 1,000 that was the default before, each with
the model's default ``target_accept``: the current model compiled with the
back end ``bayesrank.fit`` picks (Numba, for runs this long), the previous one with
nutpie's Numba build, the default before.  It reports:

* wall time: nutpie compilation (PyTensor's on-disk cache warm) + sampling, in a process
  warmed by one small unrelated fit first (:func:`warm_process`);
* the worst R-hat and the smallest bulk and tail ESS over every element of
  every reported variable (free and deterministic), divergences;
* min-ESS/s: that smallest bulk ESS per second of wall time;
* leapfrog steps per draw (mean over chains and draws).

Models whose parameterisation did not change (Bradley-Terry, Davidson,
Davidson-Luce) have no peer row.  The machine has 2 cores shared with other
jobs, so absolute times are noisy; compare old and new within a run.

Run: ``python benchmarks/bench_models_real.py [--sets lcb,aime] [--models rasch,2pl]
[--no-peer] [--draws 1000] [--every 1]``.  The table is printed and written to
``bench-results/bench_models_real.csv``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from functools import partial
from pathlib import Path

import arviz as az
import numpy as np
import nutpie
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from bayesrank.models import MODELS, irt, likelihoods
from bayesrank.models._common import coords_of
from bayesrank.models.fast import beta_binomial
from real_sets import DATA, alpaca_eval_wins, every_kth_question, load_real_sets  # noqa: F401

import bayesrank
from bayesrank.inference.backends import model_var_names, nutpie_backend
from bayesrank.inference.cache import structure_key
from bayesrank.inference.fitting import _tag
from bayesrank.inference.nutpie_models import compile_for_nutpie, nutpie_cores
from bayesrank.inference.options import DEFAULT_TUNE

#: Reads the real sets in ../shared/data: run_all.py skips it where they are absent.
NEEDS_SHARED_DATA = True

OUT = Path(__file__).resolve().parents[1] / "bench-results"
MODEL_NAMES = ("rasch", "2pl", "3pl", "bradley_terry", "davidson", "davidson_luce")
CHANGED = ("rasch", "2pl", "3pl")
PREVIOUS_TARGET_ACCEPT = {"rasch": 0.9, "2pl": 0.8, "3pl": 0.8}
PREVIOUS_TUNE = 1000  # bayesrank.fit's warm-up per chain before issue 9


def write_table(rows: list[dict], name: str, float_format=None) -> pd.DataFrame:
    """The rows as a table: written to ``bench-results/<name>.csv`` and printed."""
    table = pd.DataFrame(rows)
    OUT.mkdir(exist_ok=True)
    table.to_csv(OUT / f"{name}.csv", index=False)
    print(table.to_string(index=False, float_format=float_format))
    return table


# -- peer: the IRT parameterisation before issue 9 (copied from models/irt.py) -------------

#: The beta-binomial as before issue 9: gammaln differences with a series branch (six
#: gammaln per cell); the model keeps this form for more than 16 trials per cell.
previous_beta_binomial_logp = beta_binomial.beta_binomial_logp_gamma


def previous_irt(data: bayesrank.ResponseData, kind: str) -> pm.Model:
    """theta ~ N(0, 3) i.i.d.; zero-sum difficulties / intercepts over all questions;
    zero-sum log-discriminations over all questions; two softplus per cell; the
    beta-binomial by gammaln differences (six gammaln per cell)."""
    red = data.reductions
    k, n = red.successes, red.trials
    cell = ("llm", "question")
    centered = irt.informative_items(k, n)
    likelihood = irt.DEFAULT_LIKELIHOOD[kind]

    def pooled(name, scale_name):
        scale = pm.HalfNormal(scale_name, 2.5)
        if centered:
            return pm.ZeroSumNormal(name, sigma=scale, dims="question")
        raw = pm.ZeroSumNormal(f"{name}_z", sigma=1.0, dims="question")
        return pm.Deterministic(name, scale * raw, dims="question")

    def binomial_logit_logp(value, n, eta, log_coef):
        return log_coef - value * pt.softplus(-eta) - (n - value) * pt.softplus(eta)

    with pm.Model(coords=coords_of(data)) as model:
        successes = pm.Data("successes", k, dims=cell)
        trials = pm.Data("trials", n, dims=cell)
        log_coef = pm.Data("k_log_binomial", likelihoods.log_binomial(k, n), dims=cell)
        theta = pm.Normal("theta", 0.0, 3.0, dims="llm")
        if kind == "rasch":
            eta = theta[:, None] - pooled("b", "sigma_b")
        else:
            log_a = pm.ZeroSumNormal("log_a", sigma=0.5, dims="question")
            a = pm.Deterministic("a", pt.exp(log_a), dims="question")
            beta = pooled("beta", "sigma_beta")
            pm.Deterministic("b", -beta / a, dims="question")
            eta = a * theta[:, None] + beta
        if likelihood == "binomial":
            pm.CustomDist(
                "k", trials, eta, log_coef, logp=binomial_logit_logp,
                observed=successes, dims=cell,
            )
        else:
            c = pm.Beta("c", 1.0, 19.0, dims="question")
            inv_sqrt_phi = pm.HalfNormal("inv_sqrt_phi", 1.0)
            pm.Deterministic("phi", inv_sqrt_phi**-2)
            log_p, log_q = beta_binomial.log_curve(eta, c)  # the same formula as before
            levels = pm.Data("k_trial_counts", np.arange(np.max(n) + 1.0))
            pm.CustomDist(
                "k", trials, log_p, log_q, 2.0 * pt.log(inv_sqrt_phi), log_coef,
                logp=partial(previous_beta_binomial_logp, levels=levels),
                observed=successes, dims=cell,
            )
    return model


# -- measurement ---------------------------------------------------------------------------

def warm_process(seed: int = 0) -> None:
    """Compile and sample a small unrelated model once, so that no measured fit pays the
    process's one-off costs.

    The first nutpie compile and sample in a process import and initialise what every later
    one reuses (about 0.3 s each on an idle 2-core machine, 2026-12-03): measured first,
    the current model of the first set paid them and its peer, measured second, did not.
    """
    rng = np.random.default_rng(seed)
    R = (rng.random((4, 6, 2)) < np.linspace(0.2, 0.8, 6)[:, None]).astype(np.int8)
    model = irt.build(bayesrank.ResponseData(R), kind="rasch")
    compiled = compile_for_nutpie(model, "numba", model_var_names(model))
    nutpie.sample(compiled, draws=50, tune=50, chains=4, cores=nutpie_cores("numba", 4),
                  seed=seed, progress_bar=False)

def measure(model: pm.Model, *, target_accept: float, draws: int, tune: int, seed: int,
            backend: str | None = None, key=None) -> dict:
    """Compile with nutpie's ``backend``, sample 4 chains, and summarise convergence and speed.

    ``backend`` None: the one :func:`bayesrank.fit` picks for ``model``.  ``key``: the
    model's structure key, with which the compiled functions come from the on-disk store
    as in :func:`bayesrank.fit` (``function_store``); the compile is then timed once more
    without the store (``compile_no_store_s``; the draws would be the same).
    """
    backend = backend or nutpie_backend(model, 4 * (tune + draws))
    names = model_var_names(model)
    t0 = time.perf_counter()
    compiled = compile_for_nutpie(model, backend, names, key=key)
    t1 = time.perf_counter()
    no_store = float("nan")
    if key is not None and backend == "numba":
        os.environ["BAYESRANK_FUNCTION_CACHE"] = "0"
        try:
            t = time.perf_counter()
            compile_for_nutpie(model, backend, names, key=key)
            no_store = time.perf_counter() - t
        finally:
            del os.environ["BAYESRANK_FUNCTION_CACHE"]
    t_sample = time.perf_counter()
    idata = nutpie.sample(
        compiled, draws=draws, tune=tune, chains=4, cores=nutpie_cores(backend, 4),
        seed=seed,
        progress_bar=False, target_accept=target_accept,
    )
    t2 = t1 + time.perf_counter() - t_sample
    post = idata.posterior
    rhat = max(float(np.nanmax(np.asarray(az.rhat(post[v])))) for v in names)
    bulk = {v: float(np.nanmin(np.asarray(az.ess(post[v], method="bulk")))) for v in names}
    tail = min(float(np.nanmin(np.asarray(az.ess(post[v], method="tail")))) for v in names)
    slowest = min(bulk, key=bulk.get)
    stats = idata.sample_stats
    return {
        "backend": backend,
        "compile_s": t1 - t0,
        "compile_no_store_s": no_store,
        "wall_s": t2 - t0,
        "r_hat": rhat,
        "min_bulk_ess": bulk[slowest],
        "slowest": slowest,
        "min_tail_ess": tail,
        "divergences": int(np.asarray(stats["diverging"]).sum()),
        "steps_per_draw": float(np.asarray(stats["n_steps"]).mean()),
        "step_size": float(np.asarray(stats["step_size"]).mean()),
        "min_ess_per_s": bulk[slowest] / (t2 - t0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=None, help="comma-separated set names (default all)")
    parser.add_argument("--models", default=",".join(MODEL_NAMES))
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=DEFAULT_TUNE["nutpie"],
                        help="warm-up per chain of the current model (the previous one keeps "
                        "the 1,000 it had by default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-peer", action="store_true", help="skip the previous models")
    parser.add_argument("--every", type=int, default=1,
                        help="keep every k-th question only (quick runs on a loaded machine)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    sets = load_real_sets()
    warm_process()
    chosen = sets if args.sets is None else {k: sets[k] for k in args.sets.split(",")}
    rows = []
    for set_name, data in chosen.items():
        data = every_kth_question(data, args.every)
        for name in args.models.split(","):
            spec = MODELS[name]
            # new: today's model with the back end bayesrank.fit picks; old: the model
            # before issue 9 with nutpie's Numba build, the default then
            builds = [("new", spec.target_accept, args.tune,
                       lambda d=data, s=spec: s.build(d), None)]
            if name in CHANGED and not args.no_peer:
                builds.append(("old", PREVIOUS_TARGET_ACCEPT[name], PREVIOUS_TUNE,
                               lambda d=data, n=name: previous_irt(d, n), "numba"))
            for version, target_accept, tune, build, backend in builds:
                model = build()
                key = structure_key(model, _tag(spec, {})) if version == "new" else None
                row = {"data": set_name, "shape": "x".join(map(str, data.R.shape)),
                       "model": name, "version": version}
                row["tune"] = tune
                row.update(measure(model, target_accept=target_accept, draws=args.draws,
                                   tune=tune, seed=args.seed, backend=backend, key=key))
                rows.append(row)
                print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in row.items()), flush=True)
    write_table(rows, "bench_models_real", float_format=lambda x: f"{x:.4g}")


if __name__ == "__main__":
    main()
