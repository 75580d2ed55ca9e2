"""Speed of :func:`bayesrank.inference.diagnostics.summarize` against the ArviZ path.

The peer is the previous summarize(): az.rhat and az.ess(bulk|tail), which loop over
every posterior element in Python.  Both run in the same process on (a) a synthetic
posterior shaped like the hierarchical Rasch fit of lcb_repair (theta 15, b 713,
b_z 243, two scalars; 4 chains x 1000 draws) and (b) a real Rasch fit of lcb_repair.
The frames must agree to 1e-10; the script prints seconds and the speed-up ratio.

Run: ``python benchmarks/bench_diagnostics.py [--draws 1000] [--repeats 3] [--no-fit]``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pandas as pd

from bayesrank.inference.diagnostics import summarize

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def summarize_arviz(idata) -> pd.DataFrame:
    """The worst-element columns as the previous, ArviZ-based summarize() computed them."""
    post = idata["posterior"].to_dataset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        results = {
            "r_hat": (az.rhat(post), np.nanmax),
            "ess_bulk": (az.ess(post, method="bulk"), np.nanmin),
            "ess_tail": (az.ess(post, method="tail"), np.nanmin),
        }
    columns = {
        column: [
            np.nan if np.all(np.isnan(ds[n].values)) else float(reduce(ds[n].values))
            for n in post.data_vars
        ]
        for column, (ds, reduce) in results.items()
    }
    return pd.DataFrame(columns, index=pd.Index(list(post.data_vars), name="variable"))


def synthetic_posterior(draws: int, seed: int = 0):
    """AR(1) chains (phi 0.5) shaped like a hierarchical Rasch posterior."""
    rng = np.random.default_rng(seed)
    shapes = {"theta": (15,), "b": (713,), "b_z": (243,), "sigma_b": (), "mu_b": ()}
    posterior = {}
    for name, shape in shapes.items():
        noise = rng.standard_normal((4, draws, *shape))
        chain = np.empty_like(noise)
        chain[:, 0] = noise[:, 0]
        for t in range(1, draws):
            chain[:, t] = 0.5 * chain[:, t - 1] + noise[:, t]
        posterior[name] = chain
    energy = rng.standard_normal((4, draws))
    return az.from_dict({"posterior": posterior, "sample_stats": {"energy": energy}})


def real_fit(draws: int):
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_models_real import load_real_sets

    from bayesrank.inference.fitting import fit

    data = load_real_sets()["lcb_repair"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit(data, "rasch", draws=draws, tune=draws, chains=4, random_seed=1).idata


def best_seconds(func, idata, repeats: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = func(idata)
        times.append(time.perf_counter() - start)
    return min(times), result


def compare(label: str, idata, repeats: int) -> None:
    old_s, old = best_seconds(summarize_arviz, idata, repeats)
    new_s, new = best_seconds(summarize, idata, repeats)
    gap = np.nanmax(np.abs(new[old.columns].to_numpy() / old.to_numpy() - 1))
    sizes = int(new["size"].sum())
    print(
        f"{label:<10} elements {sizes:>5}  arviz {old_s:7.3f} s  vectorised {new_s:7.3f} s  "
        f"ratio {old_s / new_s:6.1f}x  max rel. diff {gap:.1e}"
    )
    if not gap <= 1e-10:
        raise SystemExit(f"{label}: summarize differs from the ArviZ path by {gap}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-fit", action="store_true", help="skip the real lcb_repair fit")
    args = parser.parse_args()
    compare("synthetic", synthetic_posterior(args.draws), args.repeats)
    if args.no_fit:
        return
    if not SHARED_DATA.is_dir():
        print(f"no real data at {SHARED_DATA}: the lcb_repair fit is skipped")
        return
    compare("lcb_repair", real_fit(args.draws), args.repeats)


if __name__ == "__main__":
    main()
