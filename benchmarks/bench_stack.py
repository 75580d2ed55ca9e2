"""The PyMC 6 / ArviZ 1 stack against the PyMC 5 / ArviZ 0.x stack, measured back to back.

Runs ``benchmarks/bench_models.py`` twice in one go: once in an environment
with the old stack on a checkout of bayesrank from before the move (``--old-python``,
``--old-src``), once in this checkout with the current environment, with the same
models, samplers, data key, draws and seed, and prints compile and sampling seconds,
min bulk ESS of theta and ESS/s side by side with the new/old ratios.

Prepare the old side once, e.g.::

    git archive 818ec8c | tar -x -C /tmp/oldsrc
    python3.11 -m venv /tmp/v11-old && /tmp/v11-old/bin/pip install -e "/tmp/oldsrc[jax,nutpie]"

Run: ``python benchmarks/bench_stack.py --old-python /tmp/v11-old/bin/python
--old-src /tmp/oldsrc [--models rasch,bradley_terry] [--samplers nutpie,numpyro,pymc]
[--key aime25] [--draws 1000]``.  Results: ``bench-results/bench_stack.csv``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
KEYS = ["model", "sampler"]
MEASURES = ["compile_s", "sample_s", "min_ess_theta", "ess_per_s"]


def run_side(python: str, src: Path, args: argparse.Namespace) -> pd.DataFrame:
    out = src / "bench-results" / "bench_models.csv"
    out.unlink(missing_ok=True)
    command = [python, str(src / "benchmarks" / "bench_models.py"), "--models", args.models,
               "--samplers", args.samplers, "--key", args.key, "--draws", str(args.draws),
               "--seed", str(args.seed), "--no-naive"]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    subprocess.run(command, cwd=src, env=env, check=True)
    return pd.read_csv(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-python", required=True)
    parser.add_argument("--old-src", required=True, type=Path)
    parser.add_argument("--models", default="rasch,bradley_terry,bayes")
    parser.add_argument("--samplers", default="nutpie,numpyro,pymc")
    parser.add_argument("--key", default="aime25")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    old = run_side(args.old_python, args.old_src, args)
    new = run_side(sys.executable, HERE.parent, args)
    table = old[KEYS + MEASURES].merge(new[KEYS + MEASURES], on=KEYS, suffixes=("_old", "_new"))
    for measure in ("compile_s", "sample_s", "ess_per_s"):
        table[f"{measure}_new/old"] = table[f"{measure}_new"] / table[f"{measure}_old"]
    out = HERE.parent / "bench-results" / "bench_stack.csv"
    out.parent.mkdir(exist_ok=True)
    table.to_csv(out, index=False)
    print(table.to_string(index=False, float_format="%.2f"))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
