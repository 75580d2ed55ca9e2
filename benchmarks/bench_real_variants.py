"""Every Bayesian model, with defaults, on real-derived sets of issue 9's shapes.

Issue 9's table was measured on LiveCodeBench code generation (43 x 400 x 10, 108
questions no model solves) and ZeroEval CRUXEval (48 x 800 x 1), sets that are not in
``../shared/data``.  This builds sets of those shapes from the real ones that are:

* ``lcb43``: LiveCodeBench self-repair's 15 models on 400 of its 713 questions (its
  108 first never-solved questions, the rest drawn from the 500 hardest), plus 28
  models that mix two real ones (per question the count of one or the other, then
  resampled as Binomial(10, count / 10)): near-identical models and over-dispersion
  as in the real data, 43 x 400 x 10;
* ``crux48``: ZeroEval MATH-L5's 38 models and 721 questions, 79 questions repeated
  (identical columns, as the always-solved ones are) and 10 mixed models (per
  question the outcome of one of two real models), 48 x 800 x 1.

Each model is fitted as a user fits it, ``bayesrank.fit(data, model, random_seed=0)``
(log-likelihood included), and the row gives the wall time, the worst R-hat, the
smallest bulk and tail ESS over every reported element, divergences, whether the fit's
own checks pass, and issue 9's time target for 43 x 400 x 10 where it has one.

Run: ``python benchmarks/bench_real_variants.py [--sets lcb43,crux48]
[--models bayes,rasch,...]``; writes ``bench-results/bench_real_variants.csv``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from bench_models_real import DATA, load_real_sets, write_table

import bayesrank

#: Reads the real sets in ../shared/data: run_all.py skips it where they are absent.
NEEDS_SHARED_DATA = True

MODELS = ("bayes", "rasch", "bradley_terry", "davidson", "2pl", "2pl_beta_binomial",
          "davidson_luce", "3pl")
#: Issue 9's wall-time targets (s) on a 43 x 400 x 10 tensor, 2 cores.
TARGET_S = {"bayes": 1, "rasch": 15, "bradley_terry": 15, "davidson": 15, "2pl": 60,
            "3pl": 180, "davidson_luce": 180}


def _mixed_model(rng, a: np.ndarray, b: np.ndarray, share: float) -> np.ndarray:
    """Per question the value of ``a`` (with probability ``share``) or of ``b``."""
    return np.where(rng.random(a.shape) < share, a, b)


def lcb43(real: dict[str, bayesrank.ResponseData], seed: int = 7) -> bayesrank.ResponseData:
    """43 x 400 x 10 from LiveCodeBench self-repair (module notes)."""
    rng = np.random.default_rng(seed)
    source = real["lcb_repair"]
    counts = source.R.sum(axis=2)
    never = np.flatnonzero(counts.sum(axis=0) == 0)
    others = np.setdiff1d(np.arange(source.M), never)
    hardest = others[np.argsort(counts[:, others].sum(axis=0), kind="stable")][:500]
    n_never = min(never.size, 108)
    questions = np.concatenate([never[:n_never],
                                rng.choice(hardest, 400 - n_never, replace=False)])
    counts = counts[:, questions]
    rows, names = [counts], list(source.models)
    for i in range(28):
        a, b = rng.choice(source.L, 2, replace=False)
        mixed = _mixed_model(rng, counts[a], counts[b], rng.uniform(0.2, 0.8))
        rows.append(rng.binomial(source.N, mixed / source.N)[None])
        names.append(f"mix{i:02d}")
    names_q = [str(q) for q in np.asarray(source.questions)[questions]]
    return bayesrank.from_counts(np.concatenate(rows), source.N, models=names, questions=names_q)


def crux48(real: dict[str, bayesrank.ResponseData], seed: int = 7) -> bayesrank.ResponseData:
    """48 x 800 x 1 from ZeroEval MATH-L5 (module notes)."""
    rng = np.random.default_rng(seed)
    source = real["zeroeval_math_l5"]
    outcomes = source.R[..., 0]
    repeated = rng.choice(source.M, 800 - source.M, replace=False)
    outcomes = np.concatenate([outcomes, outcomes[:, repeated]], axis=1)
    rows, names = [outcomes], list(source.models)
    for i in range(48 - source.L):
        a, b = rng.choice(source.L, 2, replace=False)
        rows.append(_mixed_model(rng, outcomes[a], outcomes[b], 0.5)[None])
        names.append(f"mix{i:02d}")
    questions = [*map(str, source.questions), *(f"{source.questions[q]}#2" for q in repeated)]
    return bayesrank.ResponseData(np.concatenate(rows), models=names, questions=questions)


VARIANTS = {"lcb43": lcb43, "crux48": crux48}


def real_variants(root: Path = DATA) -> dict[str, bayesrank.ResponseData]:
    """Both real-derived sets, by name."""
    real = load_real_sets(root)
    return {name: build(real) for name, build in VARIANTS.items()}


def fit_row(data: bayesrank.ResponseData, name: str) -> dict[str, object]:
    """Wall time and checks of ``bayesrank.fit`` with its defaults."""
    model, options = (("2pl", {"likelihood": "beta_binomial"}) if name == "2pl_beta_binomial"
                      else (name, {}))
    t0 = time.perf_counter()
    post = bayesrank.fit(data, model, random_seed=0, progressbar=False, **options)
    wall = time.perf_counter() - t0
    d = post.diagnostics
    target = TARGET_S.get(name) if data.R.shape == (43, 400, 10) else None
    return {"model": name, "wall_s": round(wall, 1), "r_hat": round(float(d["r_hat"].max()), 4),
            "min_bulk_ess": int(d["ess_bulk"].min()), "min_tail_ess": int(d["ess_tail"].min()),
            "divergences": int(d.attrs["divergences"]), "checks_pass": bool(d["passed"].all()),
            "target_s": target, "target_met": None if target is None else wall < target}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(VARIANTS))
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    real = load_real_sets()
    rows = []
    for set_name in args.sets.split(","):
        data = VARIANTS[set_name](real)
        counts = data.R.sum(axis=(0, 2))
        print(f"{set_name}: {'x'.join(map(str, data.R.shape))}, "
              f"{int((counts == 0).sum())} questions never solved, "
              f"{int((counts == data.L * data.N).sum())} always solved", flush=True)
        for name in args.models.split(","):
            if name == "2pl_beta_binomial" and data.N == 1:
                continue  # one trial per cell: the beta-binomial is the binomial
            rows.append({"data": set_name, "shape": "x".join(map(str, data.R.shape)),
                         **fit_row(data, name)})
            print(" ".join(f"{k}={v}" for k, v in rows[-1].items()), flush=True)
    write_table(rows, "bench_real_variants")


if __name__ == "__main__":
    main()
