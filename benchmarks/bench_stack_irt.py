"""IRT identifiers over a DrawStack: per-draw path vs the lockstep batch, same run.

For each IRT identifier and model pools of 5, 10 and 15 models of the bundled example
(aime24, 20 x 30 x 80) with its N=1 draws, times the per-draw path
(``batched._per_draw`` over ``DrawStack.subset``, what ``rank_stack`` runs for a rule
without a stacked form) and ``rank_stack`` with the stacked rule (draws whose fit fails
are re-run per draw there, so their cost is included), checks that both give the same
ranks and failure reasons, and prints seconds and the ratio.  Identifiers without a
stacked form are marked "per-draw rule" (both columns then run the same path).  The
machine is shared: absolute times are rough, the ratio (same run, same pools) is the
comparison.

Run: ``python benchmarks/bench_stack_irt.py [--draws 80] [--methods rasch_2pl,...]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import bayesrank as br
from bayesrank.study.batched import DrawStack, _per_draw, rank_stack

IRT = ("rasch", "rasch_map", "rasch_2pl", "rasch_2pl_map", "rasch_3pl", "rasch_3pl_map",
       "rasch_mml", "rasch_mml_credible", "dynamic_irt_linear", "dynamic_irt_growth")
PER_DRAW_ONLY = {"dynamic_irt_growth"}  # its stacked rule returns None (per-draw path)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--key", default="aime24")
    parser.add_argument("--draws", type=int, default=80, help="N=1 draws (of the N trials)")
    parser.add_argument("--methods", default=",".join(IRT))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = br.datasets.example(args.key)
    rng = np.random.default_rng(args.seed)
    draws = [np.array([t]) for t in range(min(args.draws, data.N))]
    full = DrawStack.from_data(data, draws)
    pools = {size: np.sort(rng.choice(data.L, size, replace=False)) for size in (5, 10, 15)}
    print(f"{args.key}: {data.L} x {data.M} x {data.N}, {len(draws)} N=1 draws per pool")
    print(f"{'identifier':<20}{'pool':>5}{'per-draw s':>12}{'batched s':>11}{'ratio':>8}"
          f"{'failed':>8}  same")
    for method in args.methods.split(","):
        for size, models in pools.items():
            stack = full.pool(models)
            subs = [stack.subset(d) for d in range(stack.D)]
            ref = _per_draw(subs, method)
            start = time.perf_counter()
            got = rank_stack(stack, [method])[method]
            seconds = time.perf_counter() - start
            failed = sum(r is None for r in ref.ranks)
            same = ref.reasons == got.reasons and all(
                (a is None and b is None) or (a is not None and b is not None
                                              and np.array_equal(a, b))
                for a, b in zip(ref.ranks, got.ranks, strict=True))
            kind = "  (per-draw rule)" if method in PER_DRAW_ONLY else ""
            print(f"{method:<20}{size:>5}{ref.seconds:>12.2f}{seconds:>11.2f}"
                  f"{ref.seconds / seconds:>7.1f}x{failed:>8}  {same}{kind}", flush=True)


if __name__ == "__main__":
    main()
