"""IRT and graph/game identifiers, bayesrank vs scorio 0.2.3, on a seeded IRT-like tensor.

The tensor is 20 models x 120 questions x 80 trials drawn from a 2PL model
(abilities N(0, 1), difficulties N(0, 1.5^2), log-discriminations N(0, 0.3^2)),
the robustness case of the baselines issue: scorio stops with optimizer errors
on several IRT identifiers here.  Shared reductions (W, T, counts) are computed
once and reported separately; each identifier is then timed warm (best of 3) and
scorio once per identifier, in the same run.

Run: ``python benchmarks/bench_irt_graph.py [--seed 1] [--skip-scorio]``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import bayesrank
from bayesrank import ResponseData
from bayesrank.ranking import kendall_tau


def irt_like(L: int, M: int, N: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, L)
    b = rng.normal(0.0, 1.5, M)
    a = np.exp(rng.normal(0.0, 0.3, M))
    p = 1.0 / (1.0 + np.exp(-a * (theta[:, None] - b)))
    return (rng.random((L, M, N)) < p[:, :, None]).astype(np.int8)


def scorio_call(identifier: str, R: np.ndarray):
    from scorio import rank as sr

    spec = bayesrank.registry.get_method(identifier)
    base = spec.function.__name__
    name = identifier if base in ("rasch", "rasch_2pl", "rasch_3pl", "rasch_mml") else base
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(sr, name)(R, return_scores=True, **spec.defaults)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-scorio", action="store_true")
    args = parser.parse_args()
    R = irt_like(20, 120, 80, args.seed)
    data = ResponseData(R)
    start = time.perf_counter()
    red = data.reductions
    red.wins, red.successes  # noqa: B018  (computed once, shared by every rule)
    print(f"# {data!r}\n# shared reductions: {time.perf_counter() - start:.4f} s")
    table = bayesrank.methods(paper_only=True)
    ids = table[table.family.isin(["irt", "graph"])].identifier
    print(f"{'identifier':32s} {'ours s':>8s} {'scorio s':>9s} {'ratio':>7s} {'tau':>6s}")
    total = 0.0
    for identifier in ids:
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            try:
                ours = bayesrank.rank(data, identifier)
            except Exception as exc:  # report, don't stop
                ours = exc
            times.append(time.perf_counter() - t0)
        warm = min(times)
        total += warm
        if isinstance(ours, Exception):
            print(f"{identifier:32s} bayesrank: {type(ours).__name__}: {str(ours)[:70]}")
            continue
        if args.skip_scorio:
            print(f"{identifier:32s} {warm:8.4f}")
            continue
        t0 = time.perf_counter()
        try:
            _, scores = scorio_call(identifier, R)[:2]
        except Exception as exc:
            peer = time.perf_counter() - t0
            print(
                f"{identifier:32s} {warm:8.4f} {peer:9.3f}  scorio failed: "
                f"{type(exc).__name__}: {str(exc)[:60]}"
            )
            continue
        peer = time.perf_counter() - t0
        tau = kendall_tau(ours.scores, np.asarray(scores, float))
        print(f"{identifier:32s} {warm:8.4f} {peer:9.3f} {peer / warm:7.1f} {tau:6.3f}")
    print(f"# total (warm, these identifiers): {total:.3f} s")


if __name__ == "__main__":
    main()
