"""``bayesian_mcmc`` on 80 single-trial draws: per-draw vs stacked, before vs now, one run.

On model pools of 5, 10 and 15 models of the bundled aime24 example (20 x 30 x 80), times
ranking the 80 N=1 draws one at a time (``_per_draw``) and with one stacked call
(``rank_stack``), for the package as of git ``--before`` (default main, ``git archive``d
and run in a fresh interpreter) and for this working tree, alternating the two
``--repeat`` times (best of each; the machine is shared, read the ratios).  Checks that
all four paths give bit-identical scores.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_stack_mcmc.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from git_tree import extract_package

ROOT = Path(__file__).resolve().parents[1]
SIZES = (5, 10, 15)
METHOD = "bayesian_mcmc"


def _child(out: str) -> None:
    """Times of one package (the one on sys.path): {size: (per-draw s, stacked s, scores)}."""
    from bayesrank.datasets import example
    from bayesrank.registry import rank
    from bayesrank.study.batched import DrawStack, batched_scores

    warnings.simplefilter("ignore")
    data = example("aime24")
    stack = DrawStack.from_data(data, [np.array([n]) for n in range(data.N)])
    rng = np.random.default_rng(0)
    batched_scores(stack.pool(np.arange(4)), METHOD)  # compile the kernels first
    result = {}
    for size in SIZES:
        sub = stack.pool(np.sort(rng.choice(data.L, size, replace=False)))
        subs = [sub.subset(d) for d in range(sub.D)]
        start = time.perf_counter()
        alone = np.array([rank(s, METHOD).scores for s in subs])
        per_draw = time.perf_counter() - start
        start = time.perf_counter()
        stacked = batched_scores(sub, METHOD)
        result[size] = (per_draw, time.perf_counter() - start, alone, stacked)
    with open(out, "wb") as f:
        pickle.dump(result, f)


def _run(package: Path | None, out: Path) -> dict:
    env = dict(os.environ)
    if package is not None:
        env["PYTHONPATH"] = str(package)
    subprocess.run([sys.executable, __file__, "--_child", str(out)], check=True, env=env)
    with open(out, "rb") as f:
        return pickle.load(f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="git ref of the code before")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--_child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._child:
        _child(args._child)
        return
    with tempfile.TemporaryDirectory() as tmp:
        package = extract_package(args.before, Path(tmp) / "before")
        runs = {"before": [], "now": []}
        for k in range(args.repeat):
            runs["before"].append(_run(package, Path(tmp) / f"before{k}.pkl"))
            runs["now"].append(_run(None, Path(tmp) / f"now{k}.pkl"))
    print(f"# {METHOD}, 80 N=1 draws of aime24 per pool; before = {args.before}; best of "
          f"{args.repeat} alternating runs")
    print("| models | before per-draw s | before stacked s | now per-draw s | now stacked s "
          "| now stacked vs before stacked | now stacked vs before per-draw | scores |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for size in SIZES:
        best = {name: [min(r[size][i] for r in rs) for i in (0, 1)] for name, rs in runs.items()}
        ref = runs["before"][0][size][2]
        same = all(np.array_equal(r[size][i], ref) for rs in runs.values() for r in rs
                   for i in (2, 3))
        (bp, bs), (npd, ns) = best["before"], best["now"]
        print(f"| {size} | {bp:.3f} | {bs:.3f} | {npd:.3f} | {ns:.3f} | {bs / ns:.1f}x | "
              f"{bp / ns:.1f}x | {'identical' if same else 'DIFFER'} |")


if __name__ == "__main__":
    main()
