"""Speed and convergence of Bradley-Terry, Davidson and Davidson-Luce on real benchmark data.

Issue 9 asks that ``bayesrank.fit`` with its defaults (nutpie, 4 chains x
(1,000 tune + 1,000 draws), the model's ``target_accept``, pointwise
log-likelihood stored) converge on every real set in ``../shared/data`` and,
for a 43 x 400 x 10 tensor, take under 15 s (Bradley-Terry, Davidson) and
under 180 s (Davidson-Luce) of wall time including compilation with a warm
on-disk cache.  LiveCodeBench repair (15 x 713 x 10) is the closest real shape;
a simulated 43 x 400 x 10 tensor (``simulated_43x400x10``: Rasch-like, abilities
N(0, 1), difficulties N(0, 2), so some questions are never or always solved)
gives the target's exact shape.

For each set and model this first runs a throw-away fit of 5 draws (one
chain) so that PyTensor's and Numba's on-disk caches hold the model's
compiled functions, forgets the in-memory compiled model, and then times
``bayesrank.fit(data, model, random_seed=0)``:

* wall: the whole call; compile, sample, log_likelihood: ``post.timings``;
* cpu: process CPU seconds of the call (less sensitive to other jobs on the machine);
* R-hat (max), bulk and tail ESS (min) over every reported variable, divergences;
* min-ESS/s: that smallest bulk ESS per wall second;
* steps: leapfrog steps per draw (mean over chains and draws).

The peer (``--peer``) is the likelihood as it was before 2026-11-29, timed right
after today's in the same run: for Davidson PyMC's ``Multinomial`` on
``softmax(logits)`` (log-gamma terms and parameter checks at every gradient) in
place of ``multinomial_logits``; for the Rasch ``irt.binomial_logit`` at eta = theta
- b (PyTensor's softplus graph) in place of the ``RaschCells`` Op; for the 2PL the same
graph at eta = a theta + beta in place of the ``SlopeCells`` Op; for the 3PL the
beta-binomial's sums over trials as a masked PyTensor graph in place of the
``BetaBinomialCells`` Op, sampled on JAX as ``bayesrank.fit`` then chose.  The machine has
2 cores, possibly shared with other jobs; the load average at each fit is printed
with it.

Run: ``python benchmarks/bench_pairwise_real.py [--sets lcb_repair,simulated_43x400x10]
[--models bradley_terry,davidson,davidson_luce] [--no-warmup] [--peer]``.  Rows are appended to
``bench-results/bench_pairwise_real.csv`` as they finish.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from bayesrank.models import bradley_terry, get_model, irt, likelihoods
from bayesrank.models.fast import beta_binomial

import bayesrank
from bayesrank.inference import backends
from bayesrank.inference.cache import clear_cache

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models_real import load_real_sets  # noqa: E402

#: Reads the real sets in ../shared/data: run_all.py skips it where they are absent.
NEEDS_SHARED_DATA = True

OUT = Path(__file__).resolve().parents[1] / "bench-results"
MODEL_NAMES = ("bradley_terry", "davidson", "davidson_luce")


def simulated_43x400x10(seed: int = 0) -> bayesrank.ResponseData:
    """Binary 43 x 400 x 10 responses, P(solve) = logistic(theta_l - b_m)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, 43)
    b = rng.normal(0.0, 2.0, 400)
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - b[None, :])))
    R = (rng.random((43, 400, 10)) < p[..., None]).astype(np.int8)
    return bayesrank.ResponseData(R)


def pymc_multinomial(name, counts, logits, *, dims):
    """The Davidson peer: the outcomes as PyMC's Multinomial on softmax(logits)."""
    return pm.Multinomial(name, n=counts.sum(axis=-1), p=pt.special.softmax(logits, axis=-1),
                          observed=counts, dims=dims)


def softplus_rasch(name, n, ability, difficulty, observed, dims, weight=None):
    """The Rasch peer: the binomial cells as PyTensor's graph at eta = theta - b."""
    return likelihoods.binomial_logit(name, n, ability - difficulty, observed, dims, weight)


def softplus_2pl(name, n, ability, a, beta, observed, dims):
    """The 2PL peer: the binomial cells as PyTensor's graph at eta = a theta + beta."""
    return likelihoods.binomial_logit(name, n, a * ability + beta, observed, dims)


def _log_rising_steps(count, log_p, log_delta, log_steps):
    """sum_{i<count} log(p + i delta) under a mask up to the largest count (the 3PL peer)."""
    head = pt.switch(count > 0, log_p, 0.0)
    below_count = pt.exp(log_steps) < count[..., None] - 0.5
    terms = pt.logaddexp(log_p[..., None], log_steps + log_delta)
    return head + pt.switch(below_count, terms, 0.0).sum(axis=-1)


def _stepped_graph_logp(value, n, eta, c, log_delta, log_coef, *, log_steps, levels):
    log_p, log_q = beta_binomial.log_curve(eta, c)
    log_delta = pt.squeeze(log_delta)
    steps = pt.exp(log_steps)
    below = pt.cast(steps < levels[:, None] - 0.5, "float64")
    at_levels = (below * pt.log1p(steps * pt.exp(log_delta))).sum(axis=-1)
    normaliser = beta_binomial._per_trial_count(n, at_levels)
    return (log_coef + _log_rising_steps(value, log_p, log_delta, log_steps)
            + _log_rising_steps(n - value, log_q, log_delta, log_steps) - normaliser)


def stepped_graph_beta_binomial(name, n, eta, c, log_delta, observed, dims):
    """The 3PL peer: the beta-binomial's sums over trials as PyTensor's masked graph (one
    ``logaddexp`` per cell and step up to the largest count), sampled on JAX at scale."""
    most = int(np.max(n.get_value(), initial=1))
    levels = pm.Data(f"{name}_trial_counts", np.arange(most + 1.0))
    log_steps = pm.Data(f"{name}_log_steps", np.log(np.arange(1.0, most)))
    logp = partial(_stepped_graph_logp, log_steps=log_steps, levels=levels)
    log_coef = likelihoods._log_coef(name, observed, n, dims)
    return pm.CustomDist(name, n, eta, c, log_delta, log_coef, logp=logp,
                         random=likelihoods._beta_binomial_random, observed=observed, dims=dims)


#: model -> (module, likelihood builder replaced by the peer, the peer, the peer's back end)
PEERS = {"davidson": (bradley_terry, "multinomial_logits", pymc_multinomial, None),
         "rasch": (irt, "binomial_rasch", softplus_rasch, None),
         "2pl": (irt, "binomial_2pl", softplus_2pl, None),
         "3pl": (irt, "beta_binomial", stepped_graph_beta_binomial, "jax")}


def measure(data: bayesrank.ResponseData, model: str, *, warmup: bool,
            backend: str | None = None) -> dict:
    """Time one default fit (after an optional cache-warming fit) and summarise it, on
    nutpie's ``backend`` (None: the one ``bayesrank.fit`` picks)."""
    variable = backends.NUTPIE_BACKEND_VARIABLE
    saved = os.environ.get(variable)
    # the warm-up and the timed (default-length) fit on the same back end
    chosen = backend or backends.nutpie_backend(get_model(model).build(data))
    os.environ[variable] = chosen
    try:
        if warmup:
            bayesrank.fit(data, model, draws=5, tune=5, chains=1, random_seed=1,
                          progressbar=False)
        row = _timed_fit(data, model)
    finally:
        if saved is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = saved
    return {"backend": chosen, **row}


def _timed_fit(data: bayesrank.ResponseData, model: str) -> dict:
    clear_cache()
    load = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    post = bayesrank.fit(data, model, random_seed=0, progressbar=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    diagnostics = post.diagnostics
    steps = float(np.asarray(post.idata["sample_stats"]["n_steps"]).mean())
    return {
        "load": load,
        "wall_s": wall,
        "cpu_s": cpu,
        **{f"{k}_s": v for k, v in post.timings.items()},
        "r_hat": float(diagnostics["r_hat"].max()),
        "min_bulk_ess": float(diagnostics["ess_bulk"].min()),
        "slowest": str(diagnostics["ess_bulk"].idxmin()),
        "min_tail_ess": float(diagnostics["ess_tail"].min()),
        "divergences": int(diagnostics.attrs["divergences"]),
        "passed": bool(diagnostics["passed"].all()) and diagnostics.attrs["divergences"] == 0,
        "steps_per_draw": steps,
        "min_ess_per_s": float(diagnostics["ess_bulk"].min()) / wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=None, help="comma-separated set names (default all)")
    parser.add_argument("--models", default=",".join(MODEL_NAMES))
    parser.add_argument("--no-warmup", action="store_true", help="time a cold compile")
    parser.add_argument("--peer", action="store_true",
                        help="also time the previous Davidson and Rasch likelihoods")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    sets = {"simulated_43x400x10": simulated_43x400x10(), **load_real_sets()}
    chosen = sets if args.sets is None else {k: sets[k] for k in args.sets.split(",")}
    OUT.mkdir(exist_ok=True)
    path = OUT / "bench_pairwise_real.csv"
    rows = []
    for set_name, data in chosen.items():
        for model in args.models.split(","):
            row = {"data": set_name, "shape": "x".join(map(str, data.R.shape)), "model": model}
            versions = ["today"] + (["peer"] if args.peer and model in PEERS else [])
            for version in versions:
                backend = None
                if version == "peer":
                    module, name, peer, backend = PEERS[model]
                    saved = getattr(module, name)
                    setattr(module, name, peer)
                try:
                    row = {**row, "version": version,
                           **measure(data, model, warmup=not args.no_warmup, backend=backend)}
                finally:
                    if version == "peer":
                        setattr(module, name, saved)
                rows.append(row)
                pd.DataFrame([row]).to_csv(path, mode="a", header=not path.exists(), index=False)
                print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                               for k, v in row.items()), flush=True)
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.4g}"))


if __name__ == "__main__":
    main()
