"""Graph rules: the per-draw path against the batched stack rules, measured in one run.

For each graph identifier and pool size (5, 10, 15 models of the bundled aime24 example,
20 x 30 x 80) it ranks the 80 single-trial (N=1) draws of a random pool

- per draw: :func:`bayesrank.study.batched._per_draw` over ``DrawStack.subset`` (today's
  path for these rules, reductions shared from the stack);
- batched: :func:`bayesrank.study.batched.rank_stack` with the stack rule (ranks included;
  today a stack with any refused draw goes down the per-draw path as a whole);
- hybrid: the stack rule, then the per-draw path for its NaN rows only (what rank_stack
  would cost if it sent only those draws per draw);
- stacked pools: the stack rule once over ``--pools`` pools of that size stacked into one
  DrawStack of ``pools x 80`` draws (what a pool-stacking bootstrap hands the rule),
  reported per pool, plus the per-draw cost of the draws it leaves (``left``: their share).

and prints seconds per pool (80 draws), the per-draw / batched ratios and the implied cost
of the paper's bootstrap (1,000 pools at each of the three sizes) on each path.  Every
timed call recomputes the win probabilities the rules share per stack (so the sum over
identifiers overstates the batched cost a little).  The machine is shared: compare the
ratios, measured in the same run, not absolute times.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_stack_graph.py [--repeat 3] [--pools 50]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd

import bayesrank as br
from bayesrank.registry import get_method
from bayesrank.study.batched import DrawStack, _per_draw, competition_ranks, rank_stack
from bayesrank.study.stack_graph import RULES

GRAPH = [
    "pagerank", "spectral", "alpharank", "nash_vs_equilibrium", "nash_advantage_vs_equilibrium",
    "rank_centrality_tie_ignore", "rank_centrality_tie_half", "serial_rank_prob_diff",
    "serial_rank_sign", "hodge_rank_binary_total", "hodge_rank_binary_decisive",
    "hodge_rank_binary_uniform", "hodge_rank_log_odds_total", "hodge_rank_log_odds_decisive",
    "hodge_rank_log_odds_uniform",
]
SIZES = (5, 10, 15)


def stacked_pools(full: DrawStack, pools: list[np.ndarray]) -> DrawStack:
    """One DrawStack holding every pool's draws (the graph rules read only counts and L)."""
    parts = [full.pool(p) for p in pools]
    cat = {f: np.concatenate([getattr(s, f) for s in parts]) for f in
           ("draws", "counts", "wins", "ties", "question_wins", "question_ties")}
    return DrawStack(parts[0].data, **cat)


def hybrid(stack: DrawStack, subs, method: str) -> None:
    """Stack rule, then the per-draw path for the draws it leaves (NaN rows) only."""
    spec = get_method(method)
    scores = RULES[spec.base](stack, **spec.options)
    left = np.flatnonzero(~np.isfinite(scores).all(axis=1))
    if left.size:
        _per_draw([subs[d] for d in left], method)
    competition_ranks(np.where(np.isfinite(scores), scores, 0.0))


def best_of(repeat: int, fn, *stacks: DrawStack) -> float:
    times = []
    for _ in range(repeat):
        for stack in stacks:  # each identifier pays the shared win probabilities in full
            stack.__dict__.pop("_shared", None)
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pools", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore", RuntimeWarning)
    data = br.datasets.example("aime24")
    full = DrawStack.from_data(data, [np.array([t]) for t in range(data.N)])
    rng = np.random.default_rng(args.seed)
    rows = []
    for size in SIZES:
        pools = [np.sort(rng.choice(data.L, size, replace=False)) for _ in range(args.pools)]
        stack = full.pool(pools[0])
        subs = [stack.subset(d) for d in range(stack.D)]
        big = stacked_pools(full, pools)
        for method in GRAPH:
            spec = get_method(method)
            rule = RULES[spec.base]
            options = dict(spec.options)
            per_draw = best_of(args.repeat, lambda m=method, s=subs: _per_draw(s, m))
            batched = best_of(args.repeat, lambda m=method, s=stack: rank_stack(s, [m]), stack)
            mixed = best_of(args.repeat, lambda m=method, s=stack, u=subs: hybrid(s, u, m),
                            stack)
            pooled = best_of(args.repeat, lambda r=rule, b=big, o=options: r(b, **o), big)
            left = float(np.mean(~np.isfinite(rule(big, **options)).all(axis=1)))
            rows.append({"identifier": method, "pool": size, "per_draw_s": per_draw,
                         "batched_s": batched, "hybrid_s": mixed,
                         "stacked_s": pooled / args.pools + left * per_draw, "left": left})
    table = pd.DataFrame(rows)
    table["ratio"] = table["per_draw_s"] / table["batched_s"]
    table["ratio_hybrid"] = table["per_draw_s"] / table["hybrid_s"]
    table["ratio_stacked"] = table["per_draw_s"] / table["stacked_s"]
    pd.set_option("display.width", 160)
    print("seconds per pool of 80 N=1 draws (best of", args.repeat, "runs)")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    paper = table.groupby("pool")[["per_draw_s", "batched_s", "hybrid_s", "stacked_s"]].sum()
    paper *= 1000
    print("\nall 15 graph identifiers, 1,000 pools per size (seconds, extrapolated):")
    print(paper.to_string(float_format=lambda v: f"{v:.1f}"))
    print("total:", paper.sum().round(1).to_dict())


if __name__ == "__main__":
    main()
