"""``rasch_3pl_map`` and ``bayesian_mcmc`` on pool stacks: this tree against ``--before``.

Each rule is run through the study's stacked path (``batched_scores``) on the stacks of
the model-pool bootstrap: ``--pools`` random pools of each of 5, 10 and 15 models of
aime24, one stack of its 80 single-trial draws per pool.  Fresh interpreters alternate
between the package at git ``--before`` (default main) and this tree, ``--rounds``
times; each reports its fastest of three repetitions in CPU seconds (all threads), after
a warm-up that compiles the kernels.  Alternating and taking minima keeps the comparison
fair on a shared machine, where the same code varies by 20% from one run to the next.
Scores are checked equal.

Run: ``python benchmarks/bench_slow_rules.py [--pools 2] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RULES = ("rasch_3pl_map", "bayesian_mcmc")


def measure(pools: int, out: str) -> None:
    """In this interpreter: fastest CPU seconds of each rule (3 repetitions), and scores."""
    import warnings

    import bayesrank as br
    from bayesrank.study.batched import DrawStack, batched_scores

    warnings.simplefilter("ignore")
    data = br.datasets.example("aime24")
    rng = np.random.default_rng(0)
    sizes = [size for size in (5, 10, 15) for _ in range(pools)]
    members = [np.sort(rng.choice(data.L, size, replace=False)) for size in sizes]

    def stacks(models):  # new stacks each time: a stack keeps the fits it has made
        stack = DrawStack.from_data(data, [np.array([d]) for d in range(data.N)])
        return [stack.pool(m) for m in models]

    result = {}
    for rule in RULES:
        batched_scores(stacks([np.arange(5)])[0], rule)  # compile outside the timings
        best, scores = np.inf, None
        for _ in range(3):
            todo = stacks(members)
            start = time.process_time()
            scores = [batched_scores(s, rule) for s in todo]
            best = min(best, time.process_time() - start)
        result[f"{rule}/cpu"] = np.array(best)
        for i, got in enumerate(scores):
            result[f"{rule}/{i}"] = np.asarray(got[0] if isinstance(got, tuple) else got)
    np.savez(out, **result)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pools", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default="main")
    parser.add_argument("--_measure", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._measure:
        measure(args.pools, args._measure)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from git_tree import extract_package

    with tempfile.TemporaryDirectory() as tmp:
        package = extract_package(args.before, Path(tmp) / "before")
        runs = {"before": [], "now": []}
        for r in range(args.rounds):
            for side in ("before", "now"):
                out = Path(tmp) / f"{side}-{r}.npz"
                env = dict(os.environ)
                if side == "before":
                    env["PYTHONPATH"] = str(package)
                subprocess.run([sys.executable, __file__, "--pools", str(args.pools),
                                "--_measure", str(out)], check=True, env=env)
                with np.load(out) as z:
                    runs[side].append(dict(z))
    print(f"# {args.pools} pools x sizes 5, 10, 15 of aime24 x 80 N=1 draws; before = "
          f"{args.before}; fastest CPU seconds over {args.rounds} alternating rounds x 3")
    print("\n| rule | before | now | speed-up | scores |")
    print("| --- | ---: | ---: | ---: | --- |")
    for rule in RULES:
        old = min(float(x[f"{rule}/cpu"]) for x in runs["before"])
        new = min(float(x[f"{rule}/cpu"]) for x in runs["now"])
        same = all(np.array_equal(runs["before"][0][f"{rule}/{s}"], x[f"{rule}/{s}"],
                                  equal_nan=True)
                   for x in runs["now"] for s in range(3 * args.pools))
        print(f"| {rule} | {old:.2f} s | {new:.2f} s | {old / new:.2f}x | "
              f"{'identical' if same else 'DIFFER'} |")


if __name__ == "__main__":
    main()
