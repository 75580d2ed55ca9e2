"""nutpie's CPU back ends on the real sets: PyTensor's function, JAX (XLA), Numba; default fits.

``bayesrank.fit(data, model, random_seed=0)`` with every default, once per back end
(``BAYESRANK_NUTPIE_BACKEND=pytensor``, ``"jax"``, ``"numba"`` or those of ``--backends``),
one right after the other (each the others' peer), on the real data sets of
``../shared/data``; ``auto_picks`` is the one
``BAYESRANK_NUTPIE_BACKEND=auto`` (the default) compiles that model with.  Each row records
wall time (the whole call), nutpie's compile and sampling seconds, leapfrog steps
per draw, seconds per log-density-and-gradient evaluation (sampling seconds x
parallel chains / all leapfrog steps), the worst R-hat, the smallest bulk and tail
ESS and min-ESS per wall second.  nutpie's Numba path compiles a C callback
around the PyTensor functions on every call (not cached on disk); XLA compiles
the log-density in one program; "pytensor" calls PyTensor's own compiled function
(Numba kernels, cached on disk) from Python, all chains on one thread.

Run: ``python benchmarks/bench_nutpie_backend.py [--fits lcb_repair:rasch,...]
[--backends pytensor,jax]``;
the table is printed and written to ``bench-results/bench_nutpie_backend.csv``.
The machine's other jobs share its cores: compare the two rows of a pair only.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

from bayesrank.models import get_model

import bayesrank
from bayesrank.datatree import group
from bayesrank.inference import backends

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models_real import load_real_sets, write_table  # noqa: E402

#: Reads the real sets in ../shared/data: run_all.py skips it where they are absent.
NEEDS_SHARED_DATA = True

DEFAULT_FITS = ("lcb_repair:rasch,zeroeval_math_l5:rasch,lcb_repair:2pl,"
                "matharena_aime2025_I:3pl,lcb_repair:bradley_terry,lcb_repair:davidson,"
                "matharena_aime2025_I:davidson_luce")


def one_fit(data: bayesrank.ResponseData, model: str, backend: str) -> dict:
    os.environ[backends.NUTPIE_BACKEND_VARIABLE] = backend
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = bayesrank.fit(data, model, random_seed=0, progressbar=False)
    wall = time.perf_counter() - start
    diagnostics = post.diagnostics
    steps = group(post.idata, "sample_stats")["n_steps"]
    chains = steps.sizes["chain"]
    parallel = 1 if backend == "pytensor" else min(chains, os.cpu_count() or 1)
    per_draw = float(steps.mean())
    sample_s = post.timings["sample"]
    min_ess = float(diagnostics["ess_bulk"].min())
    return {
        "backend": backend, "wall_s": round(wall, 1),
        "compile_s": round(post.timings["compile"], 1), "sample_s": round(sample_s, 1),
        "steps_per_draw": round(per_draw, 1),
        "ms_per_gradient": round(1000 * sample_s * parallel / float(steps.sum()), 3),
        "rhat_max": round(float(diagnostics["r_hat"].max()), 4),
        "min_bulk_ess": round(min_ess), "min_tail_ess": round(float(diagnostics["ess_tail"].min())),
        "divergences": int(diagnostics.attrs["divergences"]),
        "min_ess_per_wall_s": round(min_ess / wall, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fits", default=DEFAULT_FITS, help="comma-separated set:model pairs")
    parser.add_argument("--backends", default="pytensor,jax,numba",
                        help="comma-separated nutpie back ends to compare")
    args = parser.parse_args()
    sets = load_real_sets()
    rows = []
    for spec in args.fits.split(","):
        name, model = spec.split(":")
        os.environ[backends.NUTPIE_BACKEND_VARIABLE] = "auto"
        model_spec = get_model(model)
        auto = backends.nutpie_backend(model_spec.build(sets[name]))
        for backend in args.backends.split(","):
            row = {"data": name, "model": model, "auto_picks": auto,
                   **one_fit(sets[name], model, backend)}
            rows.append(row)
            print(row, flush=True)
    write_table(rows, "bench_nutpie_backend")


if __name__ == "__main__":
    main()
