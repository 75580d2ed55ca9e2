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

``--before REF`` compares the stacked rules of this tree with those of the package at git
``REF`` instead (e.g. ``main``, to measure a solver change): both run in fresh
interpreters on the same pools, alternately ``--repeats`` times, and the table gives the
least CPU seconds of each, their ratio and whether the abilities are identical to the
last bit (NaN rows, the failed draws, included).

Run: ``python benchmarks/bench_stack_irt.py [--draws 80] [--methods rasch_2pl,...]``
or ``python benchmarks/bench_stack_irt.py --before main --methods rasch_3pl_map``.
"""

from __future__ import annotations

import argparse
import json
import os
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import bayesrank as br
from bayesrank.study.batched import DrawStack, _per_draw, batched_scores, rank_stack

IRT = ("rasch", "rasch_map", "rasch_2pl", "rasch_2pl_map", "rasch_3pl", "rasch_3pl_map",
       "rasch_mml", "rasch_mml_credible", "dynamic_irt_linear", "dynamic_irt_growth")
PER_DRAW_ONLY: set[str] = set()  # growth is the Rasch JML fit on these single-trial draws
ROOT = Path(__file__).resolve().parents[1]
# A fresh interpreter importing bayesrank from the tree given first, without site's .pth
# files (an editable install would otherwise win over sys.path).
_BOOT = ("import os, runpy, sys; tree, sites, script = sys.argv[1:4]; sys.path[:0] = [tree]; "
         "sys.path += sites.split(os.pathsep); sys.argv = [script, *sys.argv[4:]]; "
         "runpy.run_path(script, run_name='__main__')")


def _pools(data, seed: int) -> dict[int, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {size: np.sort(rng.choice(data.L, size, replace=False)) for size in (5, 10, 15)}


def _stack(args):
    data = br.datasets.example(args.key)
    draws = [np.array([t]) for t in range(min(args.draws, data.N))]
    return data, draws, DrawStack.from_data(data, draws)


def per_draw_vs_stacked(args) -> None:
    data, draws, full = _stack(args)
    pools = _pools(data, args.seed)
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


def worker(args) -> None:
    """Stacked scores and CPU seconds of every (method, pool) into ``args.worker`` (.npz)."""
    data, _, full = _stack(args)
    out, seconds = {}, {}
    for method in args.methods.split(","):
        for size, models in _pools(data, args.seed).items():
            start = time.process_time()
            scores = batched_scores(full.pool(models), method)
            seconds[f"{method}/{size}"] = time.process_time() - start
            if isinstance(scores, tuple):
                scores = scores[0]
            out[f"{method}/{size}"] = np.asarray(scores, dtype=float)
    print(f"# worker: {br.__file__}", file=sys.stderr)
    np.savez(args.worker, seconds=json.dumps(seconds), **out)


def _run_worker(tree: Path, args, path: Path) -> np.lib.npyio.NpzFile:
    cmd = [sys.executable, "-S", "-c", _BOOT, str(tree), os.pathsep.join(site.getsitepackages()),
           str(Path(__file__).resolve()),
           "--worker", str(path), "--methods", args.methods, "--key", args.key,
           "--draws", str(args.draws), "--seed", str(args.seed)]
    subprocess.run(cmd, check=True, cwd=tree)
    return np.load(path)


def before_after(args) -> None:
    """This tree's stacked rules against those at git ``args.before``, alternately."""
    from git_tree import extract_package

    with tempfile.TemporaryDirectory() as tmp:
        old = extract_package(args.before, Path(tmp) / "before")
        best: dict[str, dict[str, float]] = {"before": {}, "after": {}}
        scores = {}
        for _ in range(args.repeats):
            for name, tree in (("before", old), ("after", ROOT)):
                got = _run_worker(tree, args, Path(tmp) / f"{name}.npz")
                for key, sec in json.loads(str(got["seconds"])).items():
                    best[name][key] = min(best[name].get(key, np.inf), sec)
                scores[name] = {key: got[key] for key in got.files if key != "seconds"}
    print(f"stacked rules, {args.draws} N=1 draws of {args.key} per pool; least CPU seconds "
          f"of {args.repeats} alternating runs; before = {args.before}")
    print(f"{'identifier':<16}{'pool':>5}{'before s':>10}{'after s':>9}{'ratio':>8}  identical")
    total = {"before": 0.0, "after": 0.0}
    for key in best["after"]:
        method, size = key.split("/")
        same = np.array_equal(scores["before"][key], scores["after"][key], equal_nan=True)
        b, a = best["before"][key], best["after"][key]
        total["before"] += b
        total["after"] += a
        print(f"{method:<16}{size:>5}{b:>10.2f}{a:>9.2f}{b / a:>7.2f}x  {same}")
    print(f"{'all':<21}{total['before']:>10.2f}{total['after']:>9.2f}"
          f"{total['before'] / total['after']:>7.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--key", default="aime24")
    parser.add_argument("--draws", type=int, default=80, help="N=1 draws (of the N trials)")
    parser.add_argument("--methods", default=",".join(IRT))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--before", help="git ref whose stacked rules to compare against")
    parser.add_argument("--repeats", type=int, default=2, help="alternating runs (--before)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
    elif args.before:
        before_after(args)
    else:
        per_draw_vs_stacked(args)


if __name__ == "__main__":
    main()
