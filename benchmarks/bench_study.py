"""The paper's full evaluation protocol at paper scale: batched engine vs today's runner.

Target (issue 14): gold agreement, N=1 stability (both targets), convergence,
the model-pool bootstrap with 1,000 pools at sizes 5, 10 and 15, and the prior
effect with 50 resamples, all 72 identifiers, on the bundled 20 x 30 x 80 example
with greedy R0, in under 10 minutes on the 2-core development machine.

The peer is today's runner, the per-draw loop (``engine="reference"``: one
``bayesrank.rank`` per draw and method on ``ResponseData.subset``), timed in the
same run.  Protocols too long to run whole are measured on a fraction (a few
pools per size, a quarter of the draws) and extrapolated linearly, for both
engines alike; the printed table says which numbers are measured and which
extrapolated.  The machine is shared with other jobs: absolute times are rough,
the ratios are the comparison.

Run: ``python benchmarks/bench_study.py [--methods paper|fast] [--pools 2] [--workers 2]``.

``--bootstrap`` times only the model-pool bootstrap (1,000 pools x sizes 5, 10, 15) for
the closed-form identifiers (``closed``) and for ``methods="fast"``, three ways in one
run: pool stacks (the batched engine now), one stack per pool (the engine before pool
stacks: ``git archive``d from ``--before``, default main, and run in a subprocess, on the
same pools), and today's runner (``engine="reference"``).  Each is measured on the pools
given (``--boot-pools closed=1000/100/5,fast=3/3/1``: pool stacks/before/reference; only
the sets named) and extrapolated linearly to 1,000; the frames of the engines measured
on the same pools are checked identical.

``--rules`` times the full protocol with ``rasch_3pl_map`` and ``bayesian_mcmc`` from this
tree against ``--before`` (default main) in the same run: each of the two alone on every
protocol row, here and in a fresh interpreter on the package at ``--before`` (bootstrap
on ``--pools`` pools per size), the other identifiers once (``--rest-pools``); the table
is in docs/study.md.

Measured 2026-11-26 on the shared 2-core machine (load average 8-12 from other jobs, so
absolute times are rough; the ratios are the comparison), aime24 20 x 30 x 80, each row
one run:

| methods | pool stacks | one stack per pool (main) | reference runner |
| --- | ---: | ---: | ---: |
| closed (14 identifiers) | 39 s (measured) | 2 min 07 s (3.2x) | 44 min 37 s (68x) |
| fast (66 identifiers) | 14 h 53 min | 14 h 12 min (1.0x) | 14 h 04 min (0.9x) |

With methods="fast" the 52 identifiers still ranked draw by draw are the whole cost;
pool stacks pay off there once their rules join BATCHED_RULES.
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

import bayesrank as br
from bayesrank import study
from bayesrank.study.batched import is_batched
from bayesrank.study.progress import format_seconds

PAPER_POOLS = 1000
SIZES = (5, 10, 15)
ROOT = Path(__file__).resolve().parents[1]
#: Pools per size measured by --bootstrap: (pool stacks, before, reference) per method set.
BOOT_POOLS = {"closed": (1000, 100, 5), "fast": (3, 3, 1)}


def method_ids(selection: str) -> list[str]:
    """``closed``: the paper identifiers with a closed form over a stack; else resolve_methods."""
    if selection == "closed":
        return [m for m in study.resolve_methods("paper") if is_batched(m)]
    return study.resolve_methods(selection)


def time_bootstrap(data, selection: str, pools: int, **kwargs):
    """Seconds and frame of the bootstrap of ``pools`` pools per size of SIZES."""
    return timed(study.model_pool_bootstrap, data, method_ids(selection), sizes=SIZES,
                 subsets=pools, **kwargs)


def time_before(key: str, selection: str, pools: int, ref: str, tmp: Path):
    """:func:`time_bootstrap` on the package as of git ``ref``, in a fresh interpreter."""
    from git_tree import extract_package

    package = tmp / "before"
    if not package.exists():
        extract_package(ref, package)
    out = tmp / f"before-{selection}-{pools}.pkl"
    env = {**os.environ, "PYTHONPATH": str(package)}
    subprocess.run([sys.executable, __file__, "--key", key, "--_time-one", selection,
                    str(pools), str(out)], check=True, env=env)
    with open(out, "rb") as f:
        return pickle.load(f)


def bootstrap_table(args) -> None:
    """The --bootstrap comparison (see the module docstring)."""
    data = br.datasets.example(args.key)
    plan = {}  # the sets named by --boot-pools, else every set of BOOT_POOLS
    for item in filter(None, args.boot_pools.split(",")):
        name, counts = item.split("=")
        plan[name] = tuple(int(c) for c in counts.split("/"))
    plan = plan or dict(BOOT_POOLS)
    print(f"# model-pool bootstrap, {PAPER_POOLS} pools x sizes {SIZES}, on {args.key}: "
          f"{data!r}\n# before = {args.before} (one stack per pool), same run")
    print("\n| methods | engine | pools/size measured | seconds | at 1,000 pools | "
          "vs pool stacks |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for selection, (n_new, n_before, n_ref) in plan.items():
            n_ids = len(method_ids(selection))
            sec_new, new = time_bootstrap(data, selection, n_new)
            sec_before, before = time_before(args.key, selection, n_before, args.before,
                                             Path(tmp))
            if n_before == n_new:
                same = before.equals(new)
            else:  # the same pools as before measured them, to check the frames
                same = before.equals(time_bootstrap(data, selection, n_before)[1])
            sec_ref, _ = time_bootstrap(data, selection, n_ref, engine="reference")
            at_new = sec_new * PAPER_POOLS / n_new
            for engine, n, sec in (("pool stacks (new)", n_new, sec_new),
                                   (f"one stack per pool ({args.before}; frames "
                                    f"{'identical' if same else 'DIFFER'})", n_before,
                                    sec_before),
                                   ("reference runner", n_ref, sec_ref)):
                at = sec * PAPER_POOLS / n
                print(f"| {selection} ({n_ids}) | {engine} | {n} | {sec:.1f} | "
                      f"{format_seconds(at)} | {at / at_new:.1f}x |", flush=True)


def timed_work(func, *args, **kwargs):
    """Wall seconds, CPU seconds (every thread of this process) and result of one call."""
    start, cpu = time.perf_counter(), time.process_time()
    out = func(*args, **kwargs)
    return time.perf_counter() - start, time.process_time() - cpu, out


def timed(func, *args, **kwargs):
    wall, _, out = timed_work(func, *args, **kwargs)
    return wall, out


#: The two identifiers issue 51 (item 4) speeds up; --rules times them against --before.
SLOW_RULES = ("rasch_3pl_map", "bayesian_mcmc")


def protocol_work(data, ids: list[str], pools: int) -> dict[str, tuple[float, float]]:
    """(wall, CPU) seconds of each protocol row for ``ids`` (batched engine); the bootstrap
    on ``pools`` pools per size, extrapolated linearly to PAPER_POOLS.  A short warm-up
    first: a package fresh from git compiles its kernels on first use, outside the timings.
    """
    study.model_pool_bootstrap(data, ids, sizes=SIZES, subsets=1, draws=2)
    rows = {"gold": timed_work(study.gold_standard_agreement, data, ids)[:2],
            "stability": timed_work(study.stability, data, ids)[:2],
            "convergence": timed_work(study.convergence, data, ids,
                                      budgets=study.default_budgets(data.N), reps=20)[:2]}
    wall, cpu, _ = timed_work(study.model_pool_bootstrap, data, ids, sizes=SIZES, subsets=pools)
    rows["bootstrap"] = (wall * PAPER_POOLS / pools, cpu * PAPER_POOLS / pools)
    return rows


def time_rules_before(args, tmp: Path) -> dict[str, dict[str, tuple[float, float]]]:
    """:func:`protocol_work` of each of SLOW_RULES on the package at ``--before``."""
    from git_tree import extract_package

    package = extract_package(args.before, tmp / "before")
    out = tmp / "rules-before.pkl"
    subprocess.run([sys.executable, __file__, "--key", args.key, "--pools", str(args.pools),
                    "--_time-rules", str(out)], check=True,
                   env={**os.environ, "PYTHONPATH": str(package)})
    with open(out, "rb") as f:
        return pickle.load(f)


def rules_table(args) -> None:
    """--rules: the full protocol with SLOW_RULES from this tree against ``--before``.

    The other paper identifiers run the same code on both sides, so they are timed once
    (bootstrap on ``--rest-pools`` pools per size, extrapolated) with the prior effect;
    each slow rule is timed alone on every protocol row, here and (in a fresh interpreter)
    on the package at ``--before``, its bootstrap on ``--pools`` pools per size.
    """
    data = br.datasets.example(args.key)
    rest = [m for m in study.resolve_methods("paper") if m not in SLOW_RULES]
    print(f"# full protocol on {args.key}: {data!r}; before = {args.before}, same run")
    with tempfile.TemporaryDirectory() as tmp:
        before = time_rules_before(args, Path(tmp))
    now = {rule: protocol_work(data, [rule], args.pools) for rule in SLOW_RULES}
    others = protocol_work(data, rest, args.rest_pools)
    wall, cpu, _ = timed_work(study.prior_effect, data, reps=50)
    wall_d, cpu_d, _ = timed_work(study.prior_diagnostics, data, reps=50)
    others["prior"] = (wall + wall_d, cpu + cpu_d)
    print("\n| protocol rows | before: wall | CPU | now: wall | CPU | CPU ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")

    def line(name, old, new):
        print(f"| {name} | {format_seconds(old[0])} | {format_seconds(old[1])} | "
              f"{format_seconds(new[0])} | {format_seconds(new[1])} | {old[1] / new[1]:.2f}x |")

    total = lambda rows: tuple(sum(r[i] for r in rows.values()) for i in (0, 1))  # noqa: E731
    for rule in SLOW_RULES:
        for row in now[rule]:
            line(f"{rule}: {row}", before[rule][row], now[rule][row])
        line(f"**{rule}: all rows**", total(before[rule]), total(now[rule]))
    rest_total = total(others)
    line(f"the other {len(rest)} identifiers + prior effect (same code)", rest_total, rest_total)
    full_before = tuple(rest_total[i] + sum(total(before[r])[i] for r in SLOW_RULES)
                        for i in (0, 1))
    full_now = tuple(rest_total[i] + sum(total(now[r])[i] for r in SLOW_RULES) for i in (0, 1))
    line("**full protocol**", full_before, full_now)
    cores = os.cpu_count() or 1
    print(f"\nFull protocol now: {format_seconds(full_now[0])} wall as measured on this "
          f"(shared) machine, {format_seconds(full_now[1])} of CPU time, at least "
          f"{format_seconds(full_now[1] / cores)} with all {cores} cores busy; 15-minute "
          f"target {'met' if full_now[0] < 900 else 'NOT met'} on wall time.")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--key", default="aime24")
    parser.add_argument("--methods", default="paper")
    parser.add_argument("--pools", type=int, default=2, help="measured pools per size (batched)")
    parser.add_argument("--ref-pools", type=int, default=2,
                        help="measured pools per size (reference)")
    parser.add_argument("--ref-draws", type=int, default=20,
                        help="N=1 draws measured with the reference engine (of 80)")
    parser.add_argument("--workers", type=int, default=0,
                        help="also time the bootstrap pools on a Dask LocalCluster with this "
                        "many single-threaded worker processes (0: skip)")
    parser.add_argument("--bootstrap", action="store_true",
                        help="time only the bootstrap: pool stacks vs --before vs reference")
    parser.add_argument("--boot-pools", default="",
                        help="pools per size measured by --bootstrap, new/before/reference "
                        "per method set, e.g. closed=1000/100/5,fast=3/3/1")
    parser.add_argument("--before", default="main", help="git ref of the engine before")
    parser.add_argument("--rules", action="store_true",
                        help="time the full protocol with SLOW_RULES here against --before")
    parser.add_argument("--rest-pools", type=int, default=1,
                        help="measured pools per size for the other identifiers (--rules)")
    parser.add_argument("--_time-one", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--_time-rules", help=argparse.SUPPRESS)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args._time_one:  # the --before subprocess: one timing, pickled
        selection, pools, out = args._time_one
        result = time_bootstrap(br.datasets.example(args.key), selection, int(pools))
        with open(out, "wb") as f:
            pickle.dump(result, f)
        return
    if args._time_rules:  # the --rules subprocess on the package at --before
        data = br.datasets.example(args.key)
        result = {rule: protocol_work(data, [rule], args.pools) for rule in SLOW_RULES}
        with open(args._time_rules, "wb") as f:
            pickle.dump(result, f)
        return
    if args.bootstrap:
        bootstrap_table(args)
        return
    if args.rules:
        rules_table(args)
        return
    data = br.datasets.example(args.key)
    ids = study.resolve_methods(args.methods)
    N = data.N
    print(f"# study at paper scale on {args.key}: {data!r}; {len(ids)} methods")
    rows = []  # (protocol, batched s, how, reference s, how)

    cpu = {}  # protocol row -> CPU seconds of the batched engine (extrapolated as its wall)
    sec, cpu["gold"], _ = timed_work(study.gold_standard_agreement, data, ids)
    rows.append(("gold agreement (full N)", sec, "measured", sec, "same code"))

    sec_b, cpu["stability"], stab = timed_work(study.stability, data, ids)
    sec_r, _ = timed(study.stability, data, ids, draws=args.ref_draws, engine="reference")
    rows.append(("N=1 stability (80 draws, 2 targets)", sec_b, "measured",
                 sec_r * N / args.ref_draws, f"x{N / args.ref_draws:g} of {args.ref_draws} draws"))

    budgets = study.default_budgets(N)
    sec_b, cpu["convergence"], _ = timed_work(study.convergence, data, ids, budgets=budgets,
                                              reps=20)
    sec_r, _ = timed(study.convergence, data, ids, budgets=budgets, reps=5, engine="reference")
    rows.append((f"convergence ({len(budgets)} budgets x 20 reps)", sec_b, "measured",
                 sec_r * 4, "x4 of 5 reps"))

    sec_b, cpu["prior"], _ = timed_work(study.prior_effect, data, reps=50)
    sec_d, cpu_d, _ = timed_work(study.prior_diagnostics, data, reps=50)
    sec_b, cpu["prior"] = sec_b + sec_d, cpu["prior"] + cpu_d
    sec_r, _ = timed(study.prior_effect, data, reps=50, engine="reference")
    sec_r += timed(study.prior_diagnostics, data, reps=50, engine="reference")[0]
    rows.append(("prior effect (8 budgets x 50) + Table 4 row", sec_b, "measured", sec_r,
                 "measured"))

    sec_b, cpu_b, boot = timed_work(study.model_pool_bootstrap, data, ids, sizes=SIZES,
                                    subsets=args.pools)
    cpu["bootstrap"] = cpu_b * PAPER_POOLS / args.pools
    sec_r, _ = timed(study.model_pool_bootstrap, data, ids, sizes=SIZES, subsets=args.ref_pools,
                     engine="reference")
    rows.append((f"model-pool bootstrap ({PAPER_POOLS} pools x sizes 5, 10, 15)",
                 sec_b * PAPER_POOLS / args.pools, f"x{PAPER_POOLS // args.pools} of "
                 f"{args.pools}/size", sec_r * PAPER_POOLS / args.ref_pools,
                 f"x{PAPER_POOLS // args.ref_pools} of {args.ref_pools}/size"))

    if args.workers:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            sec_c, on_cluster = timed(study.model_pool_bootstrap, data, ids, sizes=SIZES,
                                      subsets=args.pools, client=client)
        same = on_cluster.equals(boot)
        rows.append((f"bootstrap on {args.workers} Dask workers (same pools; frames "
                     f"{'identical' if same else 'DIFFER'})", sec_c * PAPER_POOLS / args.pools,
                     f"x{PAPER_POOLS // args.pools} of {args.pools}/size",
                     sec_b * PAPER_POOLS / args.pools, "batched, serial"))

    serial = [r for r in rows if "Dask" not in r[0]]
    print("\n| protocol | batched | | today's runner | | ratio |")
    print("| --- | ---: | --- | ---: | --- | ---: |")
    for name, b, how_b, r, how_r in serial:
        print(f"| {name} | {format_seconds(b)} | {how_b} | {format_seconds(r)} | {how_r} | "
              f"{r / b:.1f}x |")
    total_b = sum(r[1] for r in serial)
    total_r = sum(r[3] for r in serial)
    print(f"| **full protocol** | **{format_seconds(total_b)}** | | "
          f"**{format_seconds(total_r)}** | | {total_r / total_b:.1f}x |")
    for name, b, how_b, r, how_r in rows[len(serial):]:
        print(f"| {name} | {format_seconds(b)} | {how_b} | {format_seconds(r)} | {how_r} | "
              f"{r / b:.1f}x |")
    verdict = "met" if total_b < 600 else "NOT met"
    print(f"\n10-minute target ({len(ids)} methods): {verdict} "
          f"(batched {total_b:.0f} s, today's runner {total_r:.0f} s)")
    cores, work = os.cpu_count() or 1, sum(cpu.values())
    needed = "no less" if work <= 600 * cores else f"{work / (600 * cores):.1f}x less"
    print(f"Work of the batched engine: {format_seconds(work)} of CPU time "
          f"({work / total_b:.2f} cores busy on average; the bootstrap "
          f"{format_seconds(cpu['bootstrap'])}).  With all {cores} cores busy the protocol "
          f"takes at least {format_seconds(work / cores)}; 10 minutes hold {10 * cores} "
          f"CPU-minutes here, so the target needs {needed} work.")

    per_method = (stab[stab["target"] == "gold"].set_index("method")["seconds"]
                  .sort_values(ascending=False))
    share = per_method / per_method.sum()
    print("\nWhere N=1 stability time goes (batched engine, seconds over the 80 draws):")
    for m in per_method.index[:10]:
        print(f"  {m:32s} {per_method[m]:7.2f} s  {100 * share[m]:4.1f}%")
    batched = [m for m in ids if is_batched(m)]
    print(f"  closed forms over the stack ({len(batched)} identifiers): "
          f"{per_method[batched].sum():.3f} s in all")
    print(f"  the {len(study.SLOW_METHODS)} SLOW_METHODS: "
          f"{100 * share[[m for m in study.SLOW_METHODS if m in share]].sum():.0f}% of the time")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
