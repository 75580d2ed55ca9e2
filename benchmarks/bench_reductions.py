"""Speed and memory of the shared reductions.

Target (issue: foundation): on a (1000, 10000, 10) binary tensor every reduction
takes well under a second and peak extra memory stays within a few times the
input.  The peer is scorio 0.2.3's pairwise-count builder (the paper's own
implementation), timed on the same smaller tensor in the same run, since its
pair loop cannot finish on the large one in reasonable time.

Run: ``python benchmarks/bench_reductions.py`` (also part of ``make bench``).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from bayesrank import ResponseData

REDUCTIONS = ("trials", "successes", "category_counts", "wins", "question_preferences", "setwise")


def measure(data: ResponseData, name: str) -> tuple[float, int]:
    """Seconds and peak traced bytes of computing one reduction on a fresh copy."""
    fresh = ResponseData(data.R, models=data.models, questions=data.questions)
    tracemalloc.start()
    start = time.perf_counter()
    getattr(fresh.reductions, name)
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", default="1000,10000,10")
    parser.add_argument("--peer-shape", default="60,500,10")
    args = parser.parse_args()
    shape = tuple(int(x) for x in args.shape.split(","))
    rng = np.random.default_rng(0)
    R = (rng.random(shape, dtype=np.float32) < 0.5).astype(np.int8)
    data = ResponseData(R)
    print(f"# reductions on {shape}, input {R.nbytes / 2**20:.0f} MiB")
    print(f"{'reduction':24s} {'seconds':>8s} {'peak MiB':>9s} {'peak/input':>10s}")
    for name in REDUCTIONS:
        seconds, peak = measure(data, name)
        print(f"{name:24s} {seconds:8.3f} {peak / 2**20:9.0f} {peak / R.nbytes:10.2f}")

    try:
        from scorio.rank._base import build_pairwise_counts
    except ImportError:
        print("# scorio not installed: peer comparison skipped")
        return
    peer_shape = tuple(int(x) for x in args.peer_shape.split(","))
    small = (rng.random(peer_shape) < 0.5).astype(np.int8)
    start = time.perf_counter()
    W_ref, T_ref = build_pairwise_counts(small.astype(int))
    peer = time.perf_counter() - start
    d = ResponseData(small)
    start = time.perf_counter()
    W, T = d.reductions.wins, d.reductions.ties
    ours = time.perf_counter() - start
    np.fill_diagonal(T_ref, 0)
    assert np.array_equal(W, W_ref) and np.array_equal(T, T_ref)
    print(f"# W/T on {peer_shape}: scorio {peer:.3f} s, bayesrank {ours:.4f} s, "
          f"speed-up x{peer / ours:.0f} (identical counts)")


if __name__ == "__main__":
    main()
