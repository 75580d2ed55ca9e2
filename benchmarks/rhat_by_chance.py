"""How large the *largest* R-hat gets by chance, for chains that mix perfectly.

The fit's check asks R-hat <= 1.01 on every parameter.  With many parameters
that is a maximum over many noisy estimates: split R-hat of well-mixing chains
still fluctuates with the chains' effective sample size.  This simulates
stationary AR(1) chains (4 x 1,000 draws, the default) whose autocorrelation
gives a chosen bulk ESS, for a chosen number of parameters, and prints the
largest R-hat and how many exceed 1.01.

Run: ``python benchmarks/rhat_by_chance.py [--params 1426] [--rho 0.688,0.333,0.2,0]``
(1,426 is the LiveCodeBench 2PL's beta and log a; rho 0.688 gives ESS about
750, 0.333 about 2,000).
"""

from __future__ import annotations

import argparse

import arviz as az
import numpy as np
import xarray as xr
from scipy.signal import lfilter


def largest_rhat(rho: float, params: int, seed: int, chains: int = 4, draws: int = 1000):
    """(max R-hat, median bulk ESS, min bulk ESS, count above 1.01) of AR(1) chains."""
    rng = np.random.default_rng(seed)
    burn = 200
    noise = rng.normal(size=(chains, draws + burn, params)) * np.sqrt(1 - rho**2)
    x = lfilter([1.0], [1.0, -rho], noise, axis=1)[:, burn:]
    ds = xr.Dataset({"x": (("chain", "draw", "param"), x)})
    rhat = az.rhat(ds)["x"].values
    ess = az.ess(ds, method="bulk")["x"].values
    return rhat.max(), np.median(ess), ess.min(), int((rhat > 1.01).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", type=int, default=1426)
    parser.add_argument("--rho", default="0.688,0.333,0.2,0")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    print("| rho | median bulk ESS | min bulk ESS | largest R-hat | parameters above 1.01 |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for rho in (float(r) for r in args.rho.split(",")):
        for seed in range(args.reps):
            top, median, low, above = largest_rhat(rho, args.params, seed)
            print(f"| {rho} | {median:.0f} | {low:.0f} | {top:.4f} | {above} of {args.params} |")


if __name__ == "__main__":
    main()
