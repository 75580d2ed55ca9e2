"""Shared machinery of the study protocols: draws, safe ranking, tau summaries.

Nothing here is specific to one protocol.  Rankings always come from
:func:`bayesrank.rank`, subsamples from :meth:`ResponseData.subset` and
agreement is Kendall tau-b (ties allowed), as :func:`bayesrank.kendall_tau`.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bayesrank.data import ResponseData
from bayesrank.errors import DataError
from bayesrank.registry import get_method, methods, rank
from bayesrank.study.batched import (
    SKIPPABLE,
    DrawRanks,
    DrawStack,
    batched_kendall_tau,
    draws_per_stack,
    rank_stack,
)
from bayesrank.study.engine import run_tasks
from bayesrank.study.progress import Progress

__all__ = [
    "SKIPPABLE",
    "SLOW_METHODS",
    "TauSample",
    "default_budgets",
    "resolve_methods",
    "safe_ranks",
    "trial_draws",
]


#: Two tau values closer than this count as equal (ties for "best", tau_b = 1).
TAU_TOL = 1e-12

#: ``skip_reason`` of a method whose tau_b was undefined on some draw (and nothing failed).
UNDEFINED_TAU = "tau_b undefined (a ranking with every model tied)"


#: Paper identifiers that cost > 10 ms per ranking of an N=1 draw of the 20 x 120
#: example (docs/study.md has the times); ``methods="fast"`` leaves them out.
SLOW_METHODS = (
    "rasch_3pl_map", "rasch_3pl", "rasch_2pl", "rasch_2pl_map", "bayesian_mcmc", "thompson",
)

#: Ranking engines of the low-budget protocols: closed forms over a stack of draws with
#: shared reductions, or today's per-draw loop (kept as the reference and for timing).
ENGINES = ("batched", "reference")


def check_engine(engine: str) -> None:
    """Raise ValueError naming the choices unless ``engine`` is one of :data:`ENGINES`."""
    if engine not in ENGINES:
        raise ValueError(f"unknown study engine {engine!r}; choose from {list(ENGINES)}")


def resolve_methods(selection: str | Iterable[str] | None) -> list[str]:
    """Method identifiers to study.

    ``None`` or ``"paper"``: the paper's 72; ``"fast"``: those minus
    :data:`SLOW_METHODS`; ``"all"``: every registered identifier; otherwise the
    given identifiers (a comma-separated string is accepted).  Unknown
    identifiers raise :class:`~bayesrank.UnknownMethodError` before any work starts.
    """
    if selection is None or selection in ("paper", "fast"):
        paper = methods(paper_only=True)["identifier"].tolist()
        return [m for m in paper if m not in SLOW_METHODS] if selection == "fast" else paper
    if selection == "all":
        return methods()["identifier"].tolist()
    ids = [s.strip() for s in selection.split(",")] if isinstance(selection, str) else list(
        selection
    )
    ids = [m for m in ids if m]
    if not ids:
        raise ValueError("no ranking methods selected")
    duplicated = sorted({m for m in ids if ids.count(m) > 1})
    if duplicated:
        raise ValueError(f"methods listed twice: {duplicated}")
    for m in ids:
        get_method(m)
    return ids


def safe_ranks(data: ResponseData, method: str) -> tuple[np.ndarray | None, str | None, int]:
    """Competition ranks (1 = best) of ``method`` on ``data``, or why it cannot run.

    Returns ``(ranks, None, n_warnings)`` or ``(None, reason, n_warnings)`` when
    the method raises one of :data:`SKIPPABLE` (identification failure, too few
    trials for pass@k, a disconnected comparison graph, ...).
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ranks = rank(data, method).ranks
        except SKIPPABLE as exc:
            return None, f"{type(exc).__name__}: {exc}", len(caught)
    return np.asarray(ranks, dtype=float), None, len(caught)


def default_budgets(N: int) -> tuple[int, ...]:
    """Powers of two below ``N``, then ``N`` itself: (1, 2, 4, ..., N)."""
    budgets = [b for b in (2**i for i in range(N.bit_length())) if b < N]
    return (*budgets, N)


def trial_draws(
    N: int, n_trials: int, draws: int | None, rng: np.random.Generator
) -> list[np.ndarray]:
    """Trial-index sets of the low-budget subsamples.

    - ``n_trials == N``: the full data, once (every draw would be identical).
    - ``draws=None, n_trials=1``: the paper's protocol, every one of the ``N``
      single-trial draws: draw ``d`` keeps trial ``d`` of every model-question
      cell (Sec. 4.2, "80 single-trial draws").
    - ``draws=None, n_trials>1``: ``N // n_trials`` disjoint blocks of a
      random permutation of the trials.
    - ``draws`` given: ``n_trials == 1`` picks ``draws`` distinct trials;
      otherwise each draw is an independent random ``n_trials``-subset (without
      replacement inside a draw).

    The same trial positions are used for every model and question, as a rerun
    of the benchmark with fewer samples would.
    """
    if isinstance(n_trials, bool) or not isinstance(n_trials, (int, np.integer)):
        raise TypeError(f"the trial budget must be an integer, got {n_trials!r}")
    if not 1 <= n_trials <= N:
        raise ValueError(f"trial budget {n_trials} is outside 1..N={N} (the data have N={N})")
    if draws is not None and (isinstance(draws, bool) or int(draws) < 1):
        raise ValueError(f"draws must be a positive integer or None, got {draws!r}")
    if n_trials == N:
        return [np.arange(N)]
    if draws is None:
        if n_trials == 1:
            return [np.array([n]) for n in range(N)]
        perm = rng.permutation(N)
        return [np.sort(perm[i * n_trials:(i + 1) * n_trials]) for i in range(N // n_trials)]
    draws = int(draws)
    if n_trials == 1:
        if draws > N:
            raise ValueError(f"{draws} distinct single-trial draws requested but N={N}")
        return [np.array([n]) for n in rng.choice(N, size=draws, replace=False)]
    return [np.sort(rng.choice(N, size=n_trials, replace=False)) for _ in range(draws)]


def check_budgets(budgets: Sequence[int], N: int) -> tuple[int, ...]:
    """Validate trial budgets against N before any work starts."""
    budgets = tuple(int(b) for b in budgets)
    bad = [b for b in budgets if not 1 <= b <= N]
    if bad or not budgets:
        raise ValueError(f"trial budget(s) {bad} outside 1..N={N} (the data have N={N})")
    return budgets


def budget_draws(N: int, budget: int, reps: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``reps`` draws of ``budget`` trials; at budget 1 with reps >= N, every trial once."""
    return trial_draws(N, budget, None if budget == 1 and reps >= N else reps, rng)


@dataclass
class TauSample:
    """Kendall tau_b values of one method against one target over many draws."""

    taus: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    undefined: int = 0
    warnings: int = 0
    seconds: float = 0.0
    target_missing: str | None = None

    def add_many(
        self,
        ranks: Sequence[np.ndarray | None],
        target: np.ndarray | None,
        reasons: Sequence[str | None],
    ) -> None:
        """Record the draws' ranks (None: failed, with its reason) against ``target``, in order."""
        if target is None:
            return
        self.failures += [r or "failed" for x, r in zip(ranks, reasons, strict=True) if x is None]
        ranked = [x for x in ranks if x is not None]
        if not ranked:
            return
        tau = batched_kendall_tau(np.asarray(ranked), target)
        self.undefined += int(np.isnan(tau).sum())
        self.taus += [float(v) for v in tau if not np.isnan(v)]

    def summary(self) -> dict[str, object]:
        """Mean, population std (ddof=0), median, min, max, counts, time and skip reason.

        ``seconds`` is the time spent ranking the draws with this method (the same
        for every target of one method).
        """
        t = np.asarray(self.taus, dtype=float)
        ok = t.size > 0
        reason = self.target_missing or (self.failures[0] if self.failures else "")
        if self.undefined and not reason:
            reason = UNDEFINED_TAU
        return {
            "tau_mean": float(t.mean()) if ok else np.nan,
            "tau_std": float(t.std()) if ok else np.nan,
            "tau_median": float(np.median(t)) if ok else np.nan,
            "tau_min": float(t.min()) if ok else np.nan,
            "tau_max": float(t.max()) if ok else np.nan,
            "n_draws": int(t.size),
            "n_failed": len(self.failures),
            "n_undefined": self.undefined,
            "n_warnings": self.warnings,
            "seconds": self.seconds,
            "skip_reason": reason,
        }


def rank_draws(
    draws: Sequence[np.ndarray],
    *,
    data: ResponseData,
    methods: Sequence[str],
    engine: str = "batched",
    stack: DrawStack | None = None,
    scores_cache: dict[str, np.ndarray] | None = None,
) -> dict[str, DrawRanks]:
    """Every method's ranks on every draw (a study task: module-level, picklable).

    ``engine="batched"`` reduces all draws at once (:class:`DrawStack`, or the
    given ``stack`` of these draws) and evaluates closed-form rules over the whole
    stack (:func:`~bayesrank.study.batched.rank_stack`); ``"reference"`` is the
    original loop, one :func:`bayesrank.rank` per draw and method on
    :meth:`ResponseData.subset`.  Both give the same ranks.
    """
    check_engine(engine)
    if engine == "batched" and stack is not None:
        return rank_stack(stack, methods, scores_cache=scores_cache)
    block = draws_per_stack(data, draws) if engine == "batched" else 0
    if block:  # one stack per block of draws (one block unless memory says otherwise)
        return merge_draw_ranks([
            rank_stack(DrawStack.from_data(data, draws[i:i + block]), methods)
            for i in range(0, len(draws), block)])
    out = {m: DrawRanks([], [], 0, 0.0) for m in methods}
    for idx in draws:
        sub = data.subset(trials=idx)
        for m in methods:
            start = time.perf_counter()
            ranks, reason, n_warn = safe_ranks(sub, m)
            res = out[m]
            res.seconds += time.perf_counter() - start
            res.ranks.append(ranks)
            res.reasons.append(reason)
            res.warnings += n_warn
    return out


def draw_blocks(draws: Sequence[np.ndarray], client: Any) -> list[list[np.ndarray]]:
    """Draws split into task-sized blocks: one block in-process, ~2 per worker on a cluster."""
    draws = list(draws)
    if client is None or not draws:
        return [draws]
    size = -(-len(draws) // (2 * worker_count(client)))
    return [draws[i:i + size] for i in range(0, len(draws), size)]


def worker_count(client: Any) -> int:
    """Number of workers of a Dask ``client``'s cluster (at least 1)."""
    return max(1, len(client.scheduler_info().get("workers", {})))


def merge_draw_ranks(parts: Sequence[dict[str, DrawRanks]]) -> dict[str, DrawRanks]:
    """Concatenate per-block results in block order."""
    out: dict[str, DrawRanks] = {}
    for part in parts:
        for m, res in part.items():
            acc = out.setdefault(m, DrawRanks([], [], 0, 0.0))
            acc.ranks += res.ranks
            acc.reasons += res.reasons
            acc.warnings += res.warnings
            acc.seconds += res.seconds
    return out


def tally(
    ranked: dict[str, DrawRanks],
    targets: dict[str, dict[str, np.ndarray | None]],
    target_reasons: dict[str, dict[str, str | None]],
) -> dict[tuple[str, str], TauSample]:
    """Kendall tau_b of every method's draw ranks against each of its targets.

    ``targets[name][method]`` is the reference ranks for that method (None when
    the reference itself could not be computed, with the reason in
    ``target_reasons``).
    """
    samples = {}
    for m, res in ranked.items():
        for t in targets:
            s = samples[(m, t)] = TauSample()
            if targets[t][m] is None:
                s.target_missing = f"no {t} target: {target_reasons[t][m]}"
            s.warnings += res.warnings
            s.seconds += res.seconds
            s.add_many(res.ranks, targets[t][m], res.reasons)
    return samples


def low_budget_taus(
    data: ResponseData,
    method_ids: Sequence[str],
    draws: Sequence[np.ndarray],
    targets: dict[str, dict[str, np.ndarray | None]],
    target_reasons: dict[str, dict[str, str | None]],
    *,
    engine: str = "batched",
    client: Any = None,
    progress: Progress | None = None,
    label: str = "draws",
) -> dict[tuple[str, str], TauSample]:
    """Rank every draw with every method (see :func:`rank_draws`) and :func:`tally` the taus.

    With a Dask ``client`` the draws run as blocks of tasks (:func:`draw_blocks`).
    """
    check_engine(engine)
    parts = run_tasks(rank_draws, draw_blocks(draws, client), client=client, progress=progress,
                      label=label, unit="draw blocks", data=data, methods=list(method_ids),
                      engine=engine)
    return tally(merge_draw_ranks(parts), targets, target_reasons)


def full_rankings(
    data: ResponseData, method_ids: Sequence[str]
) -> tuple[dict[str, np.ndarray | None], dict[str, str | None]]:
    """Every method's ranking on the full data, with the reasons of failures."""
    ranks: dict[str, np.ndarray | None] = {}
    reasons: dict[str, str | None] = {}
    for m in method_ids:
        ranks[m], reasons[m], _ = safe_ranks(data, m)
    return ranks, reasons


def gold_ranks(data: ResponseData, gold: str) -> np.ndarray:
    """The gold-standard ranking (default Bayes_U@N) on the full data; it must exist."""
    ranks, reason, _ = safe_ranks(data, gold)
    if ranks is None:
        raise DataError(f"the gold-standard method {gold!r} cannot rank these data: {reason}")
    return ranks
