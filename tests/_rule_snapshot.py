"""Scores of all 72 paper identifiers, per draw and stacked, as one ``.npz`` snapshot.

``tests/rule_snapshot.npz`` holds what main gave on 2026-12-04 (commit 091c985, before
the per-draw and batched paths were merged; against ab339b3 it differs only in
``rasch_mml`` and ``rasch_mml_credible``, whose person scores issue 53 changed);
``tests/test_rule_snapshot.py`` checks that the current code gives the same.  Regenerate it
only when a change of results is intended and said so in the commit:

    .venv/bin/python tests/_rule_snapshot.py

Cases: the bundled simulated example (binary, with greedy R0), the bundled LiveCodeBench
set and the four real sets of ``/work/shared/data`` (one of them categorical), each cut to
a few models and questions so that the slow rules (Kemeny-Young, 3PL MAP, Bayesian MCMC,
Thompson sampling, Rasch MML) take seconds; plus one stack of model pools.  For each case
and identifier the archive keeps

- ``perdraw``: ``bayesrank.rank(sub, m).scores`` on each draw alone (NaN row: it raised one
  of the skippable errors, whose one-line reason is in ``perdraw_reason``);
- ``stacked``: the batched engine's scores of every draw (``batched_scores``; NaN rows are
  the draws it hands to the per-draw path; all NaN when the rule has no stacked form);
- ``ranks`` / ``reason``: what ``rank_stack`` returns for every draw (the study's ranks).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

import bayesrank as br
from bayesrank import ResponseData, datasets
from bayesrank.study.batched import (
    SKIPPABLE,
    DrawStack,
    PoolStackError,
    batched_scores,
    rank_stack,
)

HERE = Path(__file__).resolve().parent
SNAPSHOT = HERE / "rule_snapshot.npz"
SHARED = HERE.parents[1] / "shared" / "data"
PAPER = br.methods(paper_only=True)["identifier"].tolist()

#: (name, archive directory under shared/data or None for a bundled set, key, models, questions)
REAL = (
    ("lcb", "real_lcb_repair_2024_10", "repair", slice(0, 15, 2), slice(0, 60)),
    ("rg_cat", "real_reasoning_gym_hard", "rg_hard_cat", slice(0, 6), slice(0, 40)),
    ("gsm8k", "real_zeroeval_gsm8k", "gsm8k", slice(0, 41, 5), slice(0, 50)),
    ("math_l5", "real_zeroeval_math_l5", "math_l5", slice(0, 38, 6), slice(0, 50)),
)


def _real(directory: str, key: str, models: slice, questions: slice) -> ResponseData | None:
    path = SHARED / directory / "R.npz"
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as z:
        R = np.asarray(z[key][models, questions], dtype=np.int64)
        names = [str(s) for s in z["models"][models]]
    # rg_hard_cat's three levels (its SOURCE.md: 0, partial credit, 1) stated, not inferred
    stated = {"n_categories": 3} if key == "rg_hard_cat" else {}
    return ResponseData(R, models=names, **stated)


def cases() -> dict[str, tuple[ResponseData, list[np.ndarray], np.ndarray | None]]:
    """Case name -> (data, trial draws, pools or None); real sets only where present."""
    ex = datasets.example("aime25")
    ex = ResponseData(ex.R[::3, :, :8], models=ex.models[::3], R0=ex.R0[::3])
    out = {"example": (ex, [np.array([d]) for d in range(4)], None),
           "example_pairs": (ex, [np.array([0, 1]), np.array([2, 5])], None),
           "example_pools": (ex, [np.array([d]) for d in range(2)],
                             np.array([[0, 1, 2, 3], [1, 3, 4, 6], [0, 2, 5, 6]]))}
    lcb = datasets.livecodebench()
    out["lcb_bundled"] = (ResponseData(lcb.R[1::3, 100:140], models=lcb.models[1::3]),
                          [np.array([d]) for d in range(3)], None)
    for name, directory, key, models, questions in REAL:
        data = _real(directory, key, models, questions)
        if data is not None:
            out[name] = (data, [np.array([d]) for d in range(min(data.N, 3))], None)
    return out


def _perdraw(data: ResponseData, method: str) -> tuple[np.ndarray, str]:
    try:
        return np.asarray(br.rank(data, method).scores, dtype=float), ""
    except SKIPPABLE as exc:
        return np.full(data.L, np.nan), f"{type(exc).__name__}: {exc}"


def _stacked(stack: DrawStack, m: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Batched scores, ranks and reasons of every row of ``stack``."""
    got = batched_scores(stack, m)
    if isinstance(got, tuple):
        got = got[0]
    scores = (np.full((stack.D, stack.data.L), np.nan) if got is None
              else np.asarray(got, dtype=float))
    ranked = rank_stack(stack, [m])[m]
    ranks = np.array([np.full(stack.data.L, np.nan) if r is None else r for r in ranked.ranks])
    return scores, ranks, np.array([w or "" for w in ranked.reasons])


def compute(name: str) -> dict[str, np.ndarray]:
    """Every array of one case, keyed ``case/identifier/field``.

    On a stack of model pools a rule that reads per-model data of the stack raises
    :class:`~bayesrank.study.batched.PoolStackError`; as the bootstrap does, it then runs
    on each pool's own stack (``pool_stack`` says which rules did).
    """
    data, draws, pools = cases()[name]
    full = DrawStack.from_data(data, draws)
    subs = [data.subset(trials=d) for d in draws]
    stack = full
    if pools is not None:
        stack = full.pools(pools)
        subs = [data.subset(models=p, trials=d) for p in pools for d in draws]
    out: dict[str, np.ndarray] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for m in PAPER:
            rows = [_perdraw(s, m) for s in subs]
            out[f"{name}/{m}/perdraw"] = np.array([r for r, _ in rows])
            out[f"{name}/{m}/perdraw_reason"] = np.array([w for _, w in rows])
            try:
                got = _stacked(stack, m)
                by_pool = False
            except PoolStackError:
                parts = [_stacked(full.pool(p), m) for p in pools]
                got = tuple(np.concatenate(a) for a in zip(*parts, strict=True))
                by_pool = True
            for key, value in zip(("stacked", "ranks", "reason"), got, strict=True):
                out[f"{name}/{m}/{key}"] = value
            out[f"{name}/{m}/pool_stack"] = np.array(by_pool)
    return out


def main() -> None:
    from bayesrank.data.io import atomic_write

    arrays: dict[str, np.ndarray] = {}
    for name in cases():
        arrays.update(compute(name))
        print(name, "done", file=sys.stderr)
    atomic_write(SNAPSHOT, lambda tmp: np.savez_compressed(tmp, **arrays))


if __name__ == "__main__":
    main()
