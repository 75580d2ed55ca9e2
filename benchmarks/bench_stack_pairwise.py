"""Paired-comparison identifiers: per-draw against batched over a DrawStack, same run.

For each identifier of the family (Bradley–Terry, Davidson, Rao–Kupper, Plackett–Luce,
Bradley–Terry–Luce; ML and MAP) and each pool size, ranks the 80 single-trial draws of
the bundled example on ``--pools`` random model pools both ways: the per-draw path of
:func:`bayesrank.study.batched.rank_stack` (each draw's ``ResponseData`` from the stack,
the rule run alone) and the stack rule of :mod:`bayesrank.study.stack_pairwise`, and
checks that both give the same ranks.  Prints seconds per pool (80 draws) and the
per-draw / batched ratio; the two are timed alternately in the same process, so the
ratio holds on a shared machine where absolute seconds do not.  ``rank_stack_s`` is
all the methods on one pool through :func:`~bayesrank.study.batched.rank_stack`, as the
bootstrap runs them (fits shared between the rules of one stack).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_stack_pairwise.py [--pools 3]
[--sizes 5,10,15] [--methods bradley_terry,...]``.  Results:
``bench-results/bench_stack_pairwise.csv``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from bayesrank.datasets import example
from bayesrank.study.batched import (
    DrawStack,
    _per_draw,
    batched_scores,
    competition_ranks,
    rank_stack,
)

HERE = Path(__file__).resolve().parent
IDS = (
    "bradley_terry", "bradley_terry_map", "bradley_terry_davidson",
    "bradley_terry_davidson_map", "rao_kupper", "rao_kupper_map", "plackett_luce",
    "plackett_luce_map", "bradley_terry_luce", "bradley_terry_luce_map",
)


def time_pool(stack: DrawStack, method: str) -> tuple[float, float, bool]:
    """(per-draw seconds, batched seconds, same ranks) of one method on one pool."""
    subs = [stack.subset(d) for d in range(stack.D)]
    per_draw = _per_draw(subs, method)
    start = time.perf_counter()
    with np.errstate(all="ignore"):
        scores = batched_scores(stack, method)
    batched_s = time.perf_counter() - start
    ok = scores is not None and np.isfinite(scores).all()
    same = ok and all(r is not None and np.array_equal(r, b)
                      for r, b in zip(per_draw.ranks, competition_ranks(scores), strict=True))
    return per_draw.seconds, batched_s, bool(same)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=3, help="random pools per size")
    parser.add_argument("--sizes", default="5,10,15")
    parser.add_argument("--methods", default=",".join(IDS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = example()
    stack = DrawStack.from_data(data, [np.array([t]) for t in range(data.N)])
    rng = np.random.default_rng(args.seed)
    rows = []
    methods = args.methods.split(",")
    family = []
    for size in (int(s) for s in args.sizes.split(",")):
        pools = [np.sort(rng.choice(data.L, size, replace=False)) for _ in range(args.pools)]
        start = time.perf_counter()
        for p in pools:  # as the bootstrap runs them: every method on one pool's stack
            rank_stack(stack.pool(p), methods)
        family.append({"size": size, "rank_stack_s": (time.perf_counter() - start) / len(pools)})
        for method in methods:
            runs = [time_pool(stack.pool(p), method) for p in pools]
            per_draw = sum(r[0] for r in runs) / len(runs)
            batched = sum(r[1] for r in runs) / len(runs)
            rows.append({"size": size, "method": method, "per_draw_s": per_draw,
                         "batched_s": batched, "ratio": per_draw / batched,
                         "identical": all(r[2] for r in runs)})
            print(f"{size:>3} {method:<28} {per_draw:8.3f} s {batched:8.3f} s "
                  f"{per_draw / batched:7.1f}x identical={rows[-1]['identical']}", flush=True)
    table = pd.DataFrame(rows)
    out = HERE.parent / "bench-results" / "bench_stack_pairwise.csv"
    out.parent.mkdir(exist_ok=True)
    table.to_csv(out, index=False)
    print(f"\nseconds per pool of {data.N} single-trial draws (mean over {args.pools} pools)")
    print(table.to_string(index=False, float_format="%.3f"))
    total = table.groupby("size")[["per_draw_s", "batched_s"]].sum()
    total["ratio"] = total["per_draw_s"] / total["batched_s"]
    total["rank_stack_s"] = pd.DataFrame(family).set_index("size")["rank_stack_s"]
    print("\nall identifiers of the family, per pool (rank_stack_s: through rank_stack)")
    print(total.to_string(float_format="%.3f"))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
