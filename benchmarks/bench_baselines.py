"""Every paper identifier, bayesrank vs scorio 0.2.3, side by side on the same tensor.

Prints per-identifier times (bayesrank: first call, including any JIT compile, and
a warm call; scorio: one call), the ratio scorio / bayesrank, and Kendall's tau-b
between the two rankings.  Totals exclude Kemeny–Young (exact, NP-hard), which is
reported separately, as in the issue's targets.

Run: ``python benchmarks/bench_baselines.py [--key combined] [--skip-scorio ID ...]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scorio_calls import PAPER_METHODS  # noqa: E402

import bayesrank  # noqa: E402
from bayesrank import datasets  # noqa: E402

EXTRA = {"davidson_luce": ("davidson_luce", "Probabilistic comparisons", {"max_iter": 500})}


def timed(fn):
    start = time.perf_counter()
    try:
        out = fn()
    except Exception as exc:  # scorio fails on some inputs; report, don't stop
        return time.perf_counter() - start, exc
    return time.perf_counter() - start, out


def scorio_ranks(base: str, args: dict, R: np.ndarray, R0: np.ndarray):
    from scorio import rank as sr

    kwargs = {k: (R0 if v == "R0" else v) for k, v in args.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(sr, base)(R, **kwargs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--key", default="combined", help="example benchmark key")
    parser.add_argument("--skip-scorio", nargs="*", default=[],
                        help="identifiers not to run in scorio")
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    data = datasets.example(args.key)
    R = np.asarray(data.R, dtype=int)
    R0 = np.asarray(data.R0, dtype=int)
    table = {**PAPER_METHODS, **EXTRA}
    if args.only:
        table = {k: v for k, v in table.items() if k in args.only}
    print(f"# {data!r}")
    print(f"{'identifier':45s} {'first s':>8s} {'warm s':>8s} {'scorio s':>9s} "
          f"{'ratio':>7s} {'tau':>6s}")
    totals = {"ours": 0.0, "scorio": 0.0}
    slowest_ratio = np.inf
    for ident, (base, _family, kwargs) in table.items():
        first, ours = timed(lambda ident=ident: bayesrank.rank(data, ident))
        warm, ours = timed(lambda ident=ident: bayesrank.rank(data, ident))
        if isinstance(ours, Exception):
            print(f"{ident:45s} bayesrank failed: {ours!r}")
            continue
        if ident in args.skip_scorio:
            print(f"{ident:45s} {first:8.4f} {warm:8.4f} {'skipped':>9s}")
            continue
        peer, theirs = timed(lambda base=base, kwargs=kwargs: scorio_ranks(base, kwargs, R, R0))
        if isinstance(theirs, Exception):
            print(f"{ident:45s} {first:8.4f} {warm:8.4f} {peer:9.3f} scorio failed: "
                  f"{type(theirs).__name__}: {str(theirs)[:60]}")
            continue
        tau = bayesrank.kendall_tau(ours.ranks, np.asarray(theirs))
        ratio = peer / warm
        print(f"{ident:45s} {first:8.4f} {warm:8.4f} {peer:9.3f} {ratio:7.1f} {tau:6.3f}")
        if not ident.startswith("kemeny_young"):
            totals["ours"] += warm
            totals["scorio"] += peer
            slowest_ratio = min(slowest_ratio, ratio)
    speedup = totals["scorio"] / max(totals["ours"], 1e-9)
    print(f"# total excluding Kemeny-Young: bayesrank {totals['ours']:.3f} s, scorio "
          f"{totals['scorio']:.1f} s, aggregate speed-up x{speedup:.0f}, "
          f"smallest per-identifier ratio x{slowest_ratio:.1f}")


if __name__ == "__main__":
    main()
