"""Stacked sequential ratings (bayesrank.study.stack_seq) against the per-draw path.

For every identifier of the family, on model pools of 5, 10 and 15 models of the bundled
aime24 example (20 x 30 x 80) with its 80 single-trial draws (the model-pool bootstrap's
unit of work), times ranking every draw one at a time (``_per_draw`` over
``DrawStack.subset``, today's path for these rules) and with one stacked call
(``rank_stack``), in the same run, and checks that both give the same ranks.  Each
timing is the best of ``--repeat`` alternating runs (the machine is shared).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_stack_seq.py [--pools 1] [--repeat 3]
[--ids a,b]``.  Read the ratio column, not the absolute seconds.  ``path``: "seq" where
:mod:`bayesrank.study.stack_seq` has the rule, "batched" for the closed forms of
:mod:`bayesrank.study.batched`, "per-draw" where the stack falls back on these draws.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from bayesrank.datasets import example
from bayesrank.registry import get_method
from bayesrank.study.batched import DrawStack, _per_draw, batched_scores, rank_stack
from bayesrank.study.stack_seq import RULES

FAMILY = [
    "elo_tie_skip", "elo_tie_draw", "elo_tie_correct_draw_only",
    "glicko_tie_skip", "glicko_tie_draw", "glicko_tie_correct_draw_only",
    "trueskill", "thompson", "bayesian_mcmc",
    "pass_at_k_2", "pass_hat_k_2", "mg_pass_at_k_2", "bayes_ci",
    "ranked_pairs_strength_margin_tie_ignore", "ranked_pairs_strength_margin_tie_half",
    "ranked_pairs_strength_winning_votes_tie_ignore",
    "ranked_pairs_strength_winning_votes_tie_half",
    "kemeny_young_tie_ignore", "kemeny_young_tie_half",
    "nanson_rank_ties_average", "nanson_rank_ties_max",
    "baldwin_rank_ties_average", "baldwin_rank_ties_max", "majority_judgment",
]


def _same(a: list, b: list) -> bool:
    pairs = zip(a, b, strict=True)
    return all(x is y if x is None or y is None else np.array_equal(x, y) for x, y in pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=1, help="pools per size")
    parser.add_argument("--ids", default=",".join(FAMILY))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    data = example("aime24")
    stack = DrawStack.from_data(data, [np.array([n]) for n in range(data.N)])
    rng = np.random.default_rng(args.seed)
    ids = args.ids.split(",")
    warm = stack.pool(np.arange(4))
    for m in ids:  # compile numba kernels and import lazily loaded modules first
        rank_stack(warm, [m])
        _per_draw([warm.subset(0)], m)
    print(f"{'identifier':48s} {'size':>4s} {'per-draw s':>10s} {'stacked s':>10s} "
          f"{'ratio':>7s}  same  path")
    for size in (5, 10, 15):
        pools = [np.sort(rng.choice(data.L, size, replace=False)) for _ in range(args.pools)]
        for m in ids:
            per_draw = stacked = 0.0
            same = True
            for pool in pools:
                sub = stack.pool(pool)
                subs = [sub.subset(d) for d in range(sub.D)]
                best_per_draw = best_stacked = np.inf
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    ref = _per_draw(subs, m)
                    best_per_draw = min(best_per_draw, time.perf_counter() - start)
                    start = time.perf_counter()
                    got = rank_stack(sub, [m])[m]
                    best_stacked = min(best_stacked, time.perf_counter() - start)
                    same &= _same(ref.ranks, got.ranks)
                per_draw += best_per_draw
                stacked += best_stacked
            if batched_scores(stack.pool(pools[0]), m) is None:
                path = "per-draw"
            else:
                path = "seq" if get_method(m).base in RULES else "batched"
            print(f"{m:48s} {size:4d} {per_draw:10.3f} {stacked:10.3f} "
                  f"{per_draw / stacked:7.1f}  {'yes' if same else 'NO':4s}  {path}", flush=True)


if __name__ == "__main__":
    main()
