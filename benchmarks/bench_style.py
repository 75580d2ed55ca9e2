"""Style control at arena scale: the contextual Bradley-Terry or Davidson on 1 M battles, 4
covariates.

Simulated battles (``--battles``, default 1,000,000; ``--models``, default 64) between
models of known strengths, each side with four style features as LMArena's style
control has them (response length in hundreds of tokens, markdown headers, lists and
bold counts), the winner drawn from logistic(theta_a - theta_b + beta . (x_a - x_b))
with known beta; no ties (``--model davidson``: the outcome drawn from Davidson's
softmax(delta / 2, -delta / 2, log nu) with nu = 0.5, about a fifth of them ties).

* bayesrank: ``bayesrank.from_battles(frame, covariates=[...])`` (timed); one log-density
  and gradient of the model's fast and plain (``fast=False``) builds, compiled with
  Numba as nutpie runs them (the median of 20 evaluations each, and their ratio); then
  ``bayesrank.fit(pairs, model, chains=--chains, tune=400)`` with nutpie and the
  default draws for that many chains, after a throw-away 5-draw fit that fills the
  on-disk compile caches: wall and CPU seconds, ``post.timings``, R-hat (max), bulk /
  tail ESS (min), divergences.
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
  Bradley-Terry only (arena-rank has no contextual Davidson); ``--bootstrap 0`` skips it.

The machine's load average is printed with every row.  Run: ``python
benchmarks/bench_style.py [--model davidson] [--chains C] [--battles N] [--bootstrap B]``;
rows are appended to ``bench-results/bench_style.csv``.
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
FIT = {"tune": 400, "progressbar": False, "log_likelihood": False}
LOG_NU = np.log(0.5)  # Davidson's tie parameter of the simulated battles
_PEER: tuple = ()  # a bootstrap worker's model and dataset (set once per process)


def simulate(n: int, L: int, seed: int = 0, ties: bool = False) -> tuple[pd.DataFrame,
                                                                           np.ndarray]:
    """``n`` battles of ``L`` models with each side's four style features, and theta; with
    ``ties``, Davidson's outcomes (nu = e^LOG_NU)."""
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
    delta = theta[a] - theta[b] + x @ BETA
    if ties:
        logits = np.stack([delta / 2, -delta / 2, np.full(n, LOG_NU)], axis=1)
        p = np.exp(logits - np.logaddexp.reduce(logits, axis=1, keepdims=True))
        outcome = (rng.random(n)[:, None] > np.cumsum(p, axis=1)[:, :2]).sum(axis=1)
    else:
        outcome = (rng.random(n) >= 1.0 / (1.0 + np.exp(-delta))).astype(int)
    names = np.array([f"model_{k:03d}" for k in range(L)], dtype=object)
    frame = pd.DataFrame({"model_a": names[a], "model_b": names[b],
                          "winner": np.array(["model_a", "model_b", "tie"])[outcome], **sides})
    return frame, theta


def gradient_seconds(pairs, model: str, fast: bool, repeats: int = 20) -> float:
    """The median wall time of one log-density and gradient of ``model``'s build, compiled
    with Numba as nutpie runs it."""
    import pytensor
    from bayesrank.models import build

    pm_model = build(model, pairs, fast=fast)
    logp = pm_model.logp()
    fn = pm_model.compile_fn([logp, *pytensor.grad(logp, pm_model.value_vars)],
                             inputs=pm_model.value_vars, point_fn=True, mode="NUMBA")
    point = pm_model.initial_point()
    fn(point)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(point)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


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
    parser.add_argument("--model", choices=("bradley_terry", "davidson"),
                        default="bradley_terry")
    parser.add_argument("--chains", type=int, default=4)
    args = parser.parse_args(argv)
    n, model_name = args.battles, args.model
    frame, theta = simulate(n, args.models, ties=model_name == "davidson")
    rows = []
    pairs, wall, cpu = timed(lambda: bayesrank.from_battles(frame, covariates=list(STYLE)))
    rows.append(row(f"from_battles ({n:,} rows, 4 covariates)", wall, cpu))
    fast, plain = (gradient_seconds(pairs, model_name, f) for f in (True, False))
    rows.append(row(f"log-density and gradient, {model_name}: fast / plain", fast, np.nan,
                    plain_s=round(plain, 4), ratio=round(fast / plain, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bayesrank.fit(pairs, model_name, chains=1, draws=5, tune=5, random_seed=1,
                      progressbar=False, log_likelihood=False)
    post, wall, cpu = timed(lambda: bayesrank.fit(pairs, model_name, random_seed=0,
                                                  chains=args.chains, **FIT))
    d = post.diagnostics
    draws = post.idata.posterior
    steps = float(post.idata.sample_stats["n_steps"].mean())
    rows.append(row(f"bayesrank.fit contextual {model_name} ({args.chains} x "
                    f"{draws.sizes['draw']} draws, {steps:.1f} steps a draw)", wall, cpu,
                    compile_s=round(post.timings.get("compile", np.nan), 1),
                    sample_s=round(post.timings.get("sample", np.nan), 1),
                    rhat_max=round(float(d["r_hat"].max()), 4),
                    ess_bulk_min=round(float(d["ess_bulk"].min())),
                    ess_tail_min=round(float(d["ess_tail"].min())),
                    divergences=int(post.idata.sample_stats["diverging"].sum())))
    ours, ours_cpu = wall, cpu
    if model_name == "davidson" or args.bootstrap == 0:
        return write(rows, n, args.models)

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
    return write(rows, n, args.models)


def write(rows: list[dict], battles: int, models: int) -> int:
    """Append the rows to ``bench-results/bench_style.csv``."""
    OUT.mkdir(exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M")
    table = pd.DataFrame(rows).assign(date=stamp, battles=battles, models=models)
    path = OUT / "bench_style.csv"
    table.to_csv(path, mode="a", header=not path.exists(), index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
