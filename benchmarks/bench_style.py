"""Style control at arena scale: the contextual Bradley-Terry on 1 M battles, 4 covariates.

Simulated battles (``--battles``, default 1,000,000; ``--models``, default 64) between
models of known strengths, each side with four style features as LMArena's style
control has them (response length in hundreds of tokens, markdown headers, lists and
bold counts), the winner drawn from logistic(theta_a - theta_b + beta . (x_a - x_b))
with known beta; no ties.

* bayesrank: ``bayesrank.from_battles(frame, covariates=[...])`` (timed), then
  ``bayesrank.fit(pairs, "bradley_terry", chains=2, tune=400)`` with nutpie and the
  default draws for two chains (1,250 at 68 parameters), after a throw-away 5-draw fit
  that fills the on-disk compile caches: wall and CPU seconds, ``post.timings``, R-hat
  (max), bulk / tail ESS (min), divergences.
* arena-rank (the peer, ``ContextualBradleyTerry``, JAX): the same battles with the same
  covariate differences, unweighted, not normalised and without its coefficient
  penalty (the same likelihood: maximum likelihood), timed for its dataset, its MLE and
  its 100-resample bootstrap: arena-rank's own ``fit_single_bootstrap_sample`` on each of
  100 keys split from one seed, as ``compute_ratings_and_cis(ci_method="bootstrap")``
  runs it, in a pool of 2 processes.  Its method forks a process that has started JAX's
  threads, which deadlocked here (no resample finished in 9 minutes at 100,000
  battles), so the pool is started with ``spawn`` and each worker receives the dataset
  once.  The ratio is bayesrank's fit over arena-rank's MLE + bootstrap.
  The largest gap between bayesrank's posterior means and arena-rank's MLE is printed.

The machine's load average is printed with every row.  Run: ``python
benchmarks/bench_style.py [--battles N] [--bootstrap B]``; rows are appended to
``bench-results/bench_style.csv``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import bayesrank

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_arena import OUT, row, timed  # noqa: E402

STYLE = ("length", "header", "list", "bold")
BETA = np.array([0.25, 0.1, 0.05, 0.08])  # per unit of each difference
FIT = {"chains": 2, "tune": 400, "progressbar": False, "log_likelihood": False}
_PEER: tuple = ()  # a bootstrap worker's model and dataset (set once per process)


def simulate(n: int, L: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """``n`` battles of ``L`` models with each side's four style features, and theta."""
    rng = np.random.default_rng(seed)
    theta = np.sort(rng.normal(0.0, 1.0, L))
    a = rng.integers(0, L, n)
    b = (a + rng.integers(1, L, n)) % L
    sides = {}
    for side, idx in (("a", a), ("b", b)):
        sides[f"length_{side}"] = rng.gamma(4.0, 1.0, n) + 0.3 * theta[idx]
        for k, name in enumerate(STYLE[1:]):
            sides[f"{name}_{side}"] = rng.poisson(1.0 + k, n).astype(np.float64)
    x = np.column_stack([sides[f"{c}_a"] - sides[f"{c}_b"] for c in STYLE])
    p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b] + x @ BETA)))
    names = np.array([f"model_{k:03d}" for k in range(L)], dtype=object)
    frame = pd.DataFrame({"model_a": names[a], "model_b": names[b],
                          "winner": np.where(rng.random(n) < p, "model_a", "model_b"),
                          **sides})
    return frame, theta


def _start_worker(model, dataset) -> None:
    global _PEER
    _PEER = (model, dataset)


def _resample(key) -> np.ndarray:
    from arena_rank.models.contextual_bradley_terry import fit_single_bootstrap_sample

    return np.asarray(fit_single_bootstrap_sample(key, *_PEER)["ratings"])


def bootstrap(model, dataset, resamples: int, seed: int = 42) -> np.ndarray:
    """arena-rank's bootstrap refits, ``resamples`` of them on 2 spawned processes."""
    import multiprocessing

    import jax

    keys = list(jax.random.split(jax.random.PRNGKey(seed), resamples))
    with multiprocessing.get_context("spawn").Pool(
            2, initializer=_start_worker, initargs=(model, dataset)) as pool:
        return np.stack(pool.map(_resample, keys, chunksize=1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=64)
    parser.add_argument("--bootstrap", type=int, default=100)
    args = parser.parse_args(argv)
    n = args.battles
    frame, theta = simulate(n, args.models)
    rows = []
    pairs, wall, cpu = timed(lambda: bayesrank.from_battles(frame, covariates=list(STYLE)))
    rows.append(row(f"from_battles ({n:,} rows, 4 covariates)", wall, cpu))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bayesrank.fit(pairs, "bradley_terry", chains=1, draws=5, tune=5, random_seed=1,
                      progressbar=False, log_likelihood=False)
    post, wall, cpu = timed(lambda: bayesrank.fit(pairs, "bradley_terry", random_seed=0, **FIT))
    d = post.diagnostics
    draws = post.idata.posterior
    steps = float(post.idata.sample_stats["n_steps"].mean())
    rows.append(row(f"bayesrank.fit contextual bradley_terry (2 x {draws.sizes['draw']} draws, "
                    f"{steps:.1f} steps a draw)", wall, cpu,
                    compile_s=round(post.timings.get("compile", np.nan), 1),
                    sample_s=round(post.timings.get("sample", np.nan), 1),
                    rhat_max=round(float(d["r_hat"].max()), 4),
                    ess_bulk_min=round(float(d["ess_bulk"].min())),
                    ess_tail_min=round(float(d["ess_tail"].min())),
                    divergences=int(post.idata.sample_stats["diverging"].sum())))
    ours, ours_cpu = wall, cpu

    from arena_rank.models.contextual_bradley_terry import ContextualBradleyTerry
    from arena_rank.utils.data_utils import ContextualPairDataset

    features = frame[["model_a", "model_b", "winner"]].assign(
        **{c: frame[f"{c}_a"] - frame[f"{c}_b"] for c in STYLE})
    dataset, wall, cpu = timed(lambda: ContextualPairDataset.from_pandas(
        features, feature_cols=list(STYLE), reweighted=False, normalize_features=False))
    rows.append(row("arena-rank ContextualPairDataset.from_pandas", wall, cpu))
    model = ContextualBradleyTerry(dataset.n_competitors, len(STYLE), reg=0.0)
    _, mle_wall, cpu = timed(lambda: model.fit(dataset))
    rows.append(row("arena-rank ContextualBradleyTerry.fit (MLE)", mle_wall, cpu))
    _, boot_wall, cpu = timed(lambda: bootstrap(model, dataset, args.bootstrap))
    rows.append(row(f"arena-rank bootstrap ({args.bootstrap} resamples, 2 processes)",
                    boot_wall, cpu))
    ratings = np.asarray(model.params["ratings"])
    gap_theta = np.abs(draws["theta"].mean(("chain", "draw")).values
                       - (ratings - ratings.mean())).max()
    gap_beta = np.abs(draws["beta_per_unit"].mean(("chain", "draw")).values
                      - np.asarray(model.params["coeffs"])).max()
    rows.append(row("ratio bayesrank fit / arena-rank (MLE + bootstrap)", ours, ours_cpu,
                    peer_wall_s=round(mle_wall + boot_wall, 1),
                    ratio=round(ours / (mle_wall + boot_wall), 3),
                    max_gap_theta=float(f"{gap_theta:.2g}"),
                    max_gap_beta=float(f"{gap_beta:.2g}")))
    OUT.mkdir(exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M")
    table = pd.DataFrame(rows).assign(date=stamp, battles=n, models=args.models)
    path = OUT / "bench_style.csv"
    table.to_csv(path, mode="a", header=not path.exists(), index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
