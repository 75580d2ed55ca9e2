"""Stacked Thompson ranks (bayesrank.study.stack_rules) against the per-draw path, cold.

On pools of 5, 10 and 15 models of the bundled aime24 example (20 x 30 x 80) with its 80
single-trial draws, in the same run: ranking every draw of a pool alone (``_per_draw``
over ``DrawStack.subset``, the path before the stacked rule), ranking the pool's own stack
(``rank_stack`` on ``DrawStack.pool``, a fresh stack each time so no pairwise counts are
reused), and scoring ``--pools`` pools of the size on one pool stack
(``DrawStack.pools``, fresh full stack, per pool), as the model-pool bootstrap does.
Checks that all three give the same ranks.  Each timing is the best of ``--repeat`` runs.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_stack_thompson.py [--pools 50]
[--repeat 3]``.  Read the ratio columns, not the absolute seconds.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bayesrank.datasets import example
from bayesrank.study.batched import (
    DrawStack,
    _per_draw,
    batched_scores,
    competition_ranks,
    rank_stack,
)


def _best(func, repeat: int):
    best, out = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        out = func()
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=50, help="pools per size, pool stack")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    data = example("aime24")
    draws = [np.array([n]) for n in range(data.N)]
    rng = np.random.default_rng(args.seed)
    print(f"{'size':>4s} {'per-draw s/pool':>15s} {'own stack s/pool':>16s} "
          f"{'pool stack s/pool':>17s} {'ratio own':>9s} {'ratio pools':>11s}  same")
    for size in (5, 10, 15):
        pools = np.array([np.sort(rng.choice(data.L, size, replace=False))
                          for _ in range(args.pools)])
        full = DrawStack.from_data(data, draws)
        subs = [full.pool(pools[0]).subset(d) for d in range(full.D)]
        t_alone, alone = _best(lambda subs=subs: _per_draw(subs, "thompson"), args.repeat)
        t_own, own = _best(lambda p=pools[0]: rank_stack(
            DrawStack.from_data(data, draws).pool(p), ["thompson"])["thompson"], args.repeat)
        t_pools, stacked = _best(lambda p=pools: batched_scores(
            DrawStack.from_data(data, draws).pools(p), "thompson"), args.repeat)
        t_pools /= len(pools)
        same = all(np.array_equal(a, b) for a, b in zip(alone.ranks, own.ranks, strict=True))
        same &= np.array_equal(competition_ranks(stacked[:full.D]), np.array(alone.ranks))
        print(f"{size:4d} {t_alone:15.3f} {t_own:16.4f} {t_pools:17.5f} {t_alone / t_own:9.1f} "
              f"{t_alone / t_pools:11.1f}  {'yes' if same else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
