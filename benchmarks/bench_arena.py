"""Chatbot Arena at full scale as pairwise data (issue 48, item 5).

The shared Chatbot Arena counts (``../shared/data/chatbot_arena_20240814_pairwise``:
129 models, 1,670,250 battles of 2024-08-14 as leaderbot's pair counts) are read
with ``bayesrank.load`` (both-bad ties counted as ties) and

* ranked with every order-free pairwise rule of ``bayesrank.methods()`` (wall and
  CPU seconds of each ``bayesrank.rank`` call, the data's counts cached; Kemeny-Young,
  exact and NP-hard, under ``time_limit=KEMENY_LIMIT``);
* ranked with the sequential ratings (Elo, Glicko, TrueSkill), which need the battles
  in order: the counts are expanded to a table of 1,670,250 battles in a seeded random
  order (the public counts have none), read with ``bayesrank.from_battles`` (timed);
* fitted with ``bayesrank.fit(pairs, "bradley_terry" | "davidson")`` with its defaults
  (nutpie, 4 chains, 500 warm-up + default draws, pointwise log-likelihood stored),
  after a throw-away 5-draw fit that fills the on-disk compile caches: wall and CPU
  seconds, ``post.timings``, R-hat (max), bulk / tail ESS (min), divergences.

Peer: choix's ``ilsr_pairwise_dense`` (Bradley-Terry ML by iterative Luce spectral
ranking) on the same decisive counts, timed in the same run, beside bayesrank's
``bradley_terry`` (Newton on the same W); the ratio is bayesrank / choix.

The machine's load average is printed with every row (the development machine has 2
cores shared with other jobs).  Run: ``python benchmarks/bench_arena.py
[--parts rules,sequential,fits]``; rows are appended to ``bench-results/bench_arena.csv``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import bayesrank

#: Reads the real sets in ../shared/data: run_all.py skips it where they are absent.
NEEDS_SHARED_DATA = True

ARENA = (Path(__file__).resolve().parents[2] / "shared" / "data"
         / "chatbot_arena_20240814_pairwise" / "chatbotarena_20240814.json")
OUT = Path(__file__).resolve().parents[1] / "bench-results"
#: Kemeny-Young is exact (NP-hard linear ordering): on the Arena's 129 models, with the 4,796
#: pairs that never met at margin 0, the majority graph is one strongly connected component
#: of all 129, so it runs under this budget and reports whether it finished.
KEMENY_LIMIT = 600.0


def timed(call):
    """``(result, wall seconds, CPU seconds)`` of ``call()``."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def battles_in_random_order(pairs, seed: int = 0) -> pd.DataFrame:
    """One row per battle counted in ``pairs`` (ties as ``tie``), in a seeded random order."""
    W, T = pairs.wins.astype(np.int64), np.triu(pairs.ties, 1).astype(np.int64)
    i, j = np.nonzero(W)
    wa, wb = np.repeat(i, W[i, j]), np.repeat(j, W[i, j])
    ti, tj = np.nonzero(T)
    ta, tb = np.repeat(ti, T[ti, tj]), np.repeat(tj, T[ti, tj])
    a = np.concatenate([wa, ta])
    b = np.concatenate([wb, tb])
    winner = np.concatenate([np.full(wa.size, "model_a", dtype=object),
                             np.full(ta.size, "tie", dtype=object)])
    rng = np.random.default_rng(seed)
    flip = rng.random(a.size) < 0.5  # the winner on either side
    a, b = np.where(flip, b, a), np.where(flip, a, b)
    winner = np.where(flip & (winner == "model_a"), "model_b", winner)
    order = rng.permutation(a.size)
    names = np.asarray(pairs.models, dtype=object)
    return pd.DataFrame({"model_a": names[a[order]], "model_b": names[b[order]],
                         "winner": winner[order]})


def row(task: str, wall: float, cpu: float, **extra) -> dict:
    out = {"task": task, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
           "load": round(os.getloadavg()[0], 1), **extra}
    print(out, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="rules,sequential,fits",
                        help="comma-separated: rules (order-free), sequential, fits; kemeny "
                        "(Kemeny-Young alone, also part of rules)")
    args = parser.parse_args(argv)
    parts = set(args.parts.split(","))
    if not ARENA.is_file():
        print(f"skipped: {ARENA} is absent (only in the project's checkout)")
        return 0
    rows = []
    pairs, wall, cpu = timed(lambda: bayesrank.load(ARENA))
    rows.append(row("load", wall, cpu, battles=pairs.n_battles))
    table = bayesrank.methods()
    sequential = {"elo", "glicko", "trueskill"}
    for spec in table[table.pairwise].itertuples():
        if spec.base == "kemeny_young" and parts & {"rules", "kemeny"}:
            # exact and NP-hard: one optimal order, then the tie-aware ranking (the pairs
            # ordered alike in every optimum) under a budget, and said so
            _, wall, cpu = timed(lambda s=spec: bayesrank.rank(pairs, s.identifier,
                                                               tie_aware=False))
            rows.append(row(f"rank {spec.identifier}, one optimal order", wall, cpu))
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                bayesrank.rank(pairs, spec.identifier, time_limit=KEMENY_LIMIT)
                note = "solved"
            except RuntimeError:
                note = f"not solved within time_limit={KEMENY_LIMIT:g} s"
            rows.append(row(f"rank {spec.identifier}", time.perf_counter() - wall,
                            time.process_time() - cpu, note=note))
        if spec.base in sequential | {"kemeny_young"} or "rules" not in parts:
            continue
        _, wall, cpu = timed(lambda s=spec: bayesrank.rank(pairs, s.identifier))
        rows.append(row(f"rank {spec.identifier}", wall, cpu))
    if "rules" in parts:
        import choix

        _, wall, cpu = timed(lambda: choix.ilsr_pairwise_dense(pairs.wins, alpha=0.0, tol=1e-10,
                                                               max_iter=10_000))
        ours = next(r for r in rows if r["task"] == "rank bradley_terry")
        rows.append(row("peer choix.ilsr_pairwise_dense (BT ML)", wall, cpu,
                        ratio=round(ours["wall_s"] / wall, 2)))
    if "sequential" in parts:
        frame = battles_in_random_order(pairs)
        ordered, wall, cpu = timed(lambda: bayesrank.from_battles(frame))
        rows.append(row("from_battles (1.67 M rows)", wall, cpu))
        for spec in table[table.pairwise & table.base.isin(sequential)].itertuples():
            _, wall, cpu = timed(lambda s=spec: bayesrank.rank(ordered, s.identifier))
            rows.append(row(f"rank {spec.identifier}", wall, cpu))
        del frame, ordered
    if "fits" in parts:
        for model in ("bradley_terry", "davidson"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bayesrank.fit(pairs, model, chains=1, draws=5, tune=5, random_seed=1,
                              progressbar=False, log_likelihood=False)
            post, wall, cpu = timed(lambda m=model: bayesrank.fit(pairs, m, random_seed=0,
                                                                   progressbar=False))
            d = post.diagnostics
            rows.append(row(f"fit {model}", wall, cpu,
                            **{k: round(float(v), 3) for k, v in post.timings.items()},
                            draws=post.theta.sizes["draw"], chains=post.theta.sizes["chain"],
                            r_hat=round(float(d["r_hat"].max()), 4),
                            ess_bulk=int(d["ess_bulk"].min()), ess_tail=int(d["ess_tail"].min()),
                            divergences=int(d.attrs.get("divergences", 0))))
    OUT.mkdir(exist_ok=True)
    frame = pd.DataFrame(rows).assign(when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    path = OUT / "bench_arena.csv"  # runs differ in columns: rewrite it whole
    if path.exists():
        frame = pd.concat([pd.read_csv(path), frame], ignore_index=True)
    frame.to_csv(path, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
