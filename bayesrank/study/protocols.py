"""Method-comparison protocols of the paper: gold agreement, N=1 stability, convergence,
model-pool bootstrap.

Reference: "Ranking Reasoning LLMs under Test-Time Scaling", Sec. 2.1 (gold
standard rankings), Sec. 4.1-4.3 and appendices "Gold Standard Agreement" and
"Ranking-Method Stability at N=1".  Every function returns a tidy
:class:`pandas.DataFrame`; methods that cannot run on some data are kept as rows
with ``skip_reason`` (and ``n_failed`` counts), never dropped.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from bayesrank.data import ResponseData, as_response_data
from bayesrank.ranking import competition_ranks, kendall_tau
from bayesrank.registry import get_method
from bayesrank.study._core import (
    TAU_TOL,
    UNDEFINED_TAU,
    TauSample,
    budget_draws,
    check_budgets,
    check_engine,
    default_budgets,
    full_rankings,
    gold_ranks,
    low_budget_taus,
    rank_draws,
    resolve_methods,
    safe_ranks,
    tally,
    trial_draws,
    worker_count,
)
from bayesrank.study.batched import (
    SEPARABLE_RULES,
    DrawStack,
    PoolStackError,
    _per_draw,
    batched_scores,
    draws_per_stack,
    finite_ranks,
    pair_signs,
    pools_per_stack,
    rank_stack,
    signs_kendall_tau,
)
from bayesrank.study.engine import run_tasks
from bayesrank.study.progress import Progress

__all__ = [
    "gold_standard_agreement",
    "summarize_gold_agreement",
    "stability",
    "convergence",
    "model_pool_bootstrap",
]


def gold_standard_agreement(
    data: ResponseData, methods: str | Iterable[str] | None = None, *, gold: str = "bayes"
) -> pd.DataFrame:
    """Kendall tau_b of every method at full N against the gold-standard ranking.

    The gold standard is Bayes_U@N (``"bayes"``: posterior mean under a uniform
    prior, order-equivalent to avg@N on binary data, ties allowed; paper Sec. 2.1
    and 4.1).  ``consensus`` is the method's mean tau_b against every other
    method that ran (the paper's consensus table).

    Returns
    -------
    DataFrame
        One row per method: ``method, tau_gold, consensus, skip_reason``.
        Summarise with :func:`summarize_gold_agreement`.
    """
    data = as_response_data(data)
    ids = resolve_methods(methods)
    target = gold_ranks(data, gold)
    ranks, reasons = full_rankings(data, ids)
    ran = [m for m in ids if ranks[m] is not None]
    rows = []
    for m in ids:
        r = ranks[m]
        others = [kendall_tau(r, ranks[o]) for o in ran if o != m] if r is not None else []
        rows.append({
            "method": m,
            "tau_gold": kendall_tau(r, target) if r is not None else np.nan,
            "consensus": float(np.nanmean(others)) if others else np.nan,
            "skip_reason": reasons[m] or "",
        })
    frame = pd.DataFrame(rows)
    frame.attrs["gold"] = gold
    return frame


def summarize_gold_agreement(frame: pd.DataFrame, gold: str | None = None) -> pd.DataFrame:
    """The paper's Table 1 row: statistics of tau_b over the methods other than the gold.

    Columns ``n_methods, mean, median, min, argmin, n_tau_1, n_tau_ge_0.95, n_skipped``.
    ``n_tau_1`` counts exact recoveries of the gold ordering (|tau_b - 1| <= 1e-12).
    """
    gold = gold if gold is not None else frame.attrs.get("gold", "bayes")
    others = frame[frame["method"] != gold]
    tau = others["tau_gold"].dropna()
    return pd.DataFrame([{
        "gold": gold,
        "n_methods": int(tau.size),
        "mean": float(tau.mean()),
        "median": float(tau.median()),
        "min": float(tau.min()),
        "argmin": others.loc[tau.idxmin(), "method"] if tau.size else "",
        "n_tau_1": int((np.abs(tau - 1.0) <= TAU_TOL).sum()),
        "n_tau_ge_0.95": int((tau >= 0.95 - TAU_TOL).sum()),
        "n_skipped": int(others["tau_gold"].isna().sum()),
    }])


def _targets(data: ResponseData, ids: Sequence[str], gold: str):
    """Reference rankings at full N: the gold standard and each method's own (method@N)."""
    gold_target = gold_ranks(data, gold)
    own, reasons = full_rankings(data, ids)
    targets = {"gold": dict.fromkeys(ids, gold_target), "self": own}
    return targets, {"gold": dict.fromkeys(ids), "self": reasons}


def _rows(samples, **setting) -> list[dict]:
    return [{"method": m, "target": t, **setting, **s.summary()} for (m, t), s in samples.items()]


def stability(
    data: ResponseData,
    methods: str | Iterable[str] | None = None,
    *,
    n_trials: int = 1,
    draws: int | None = None,
    seed: int = 0,
    gold: str = "bayes",
    engine: str = "batched",
    client: Any = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Low-budget stability: tau_b of method@n_trials against gold@N and method@N.

    With the defaults this is the paper's N=1 protocol (Sec. 4.2): each of the
    ``N`` single-trial draws keeps trial ``d`` of every cell; each method ranks
    the draw; Kendall tau_b is taken against (i) the gold standard Bayes_U@N
    (``target="gold"``, gold-standard agreement) and (ii) the method's own
    full-N ranking (``target="self"``, self-consistency); mean +- std over draws.
    The pass@k family raises at N=1 (it needs N >= 2), so its rows carry that
    reason, as the paper excludes it.  See :func:`bayesrank.study._core.trial_draws`
    for ``draws`` and ``n_trials > 1``.

    ``engine`` ("batched" or "reference", same results), ``client`` (a Dask
    client; blocks of draws become tasks) and ``progress`` are as in
    :func:`bayesrank.study.run_study`.

    Returns
    -------
    DataFrame
        One row per method x target: ``method, target, n_trials, tau_mean,
        tau_std (ddof=0), tau_median, tau_min, tau_max, n_draws, n_failed,
        n_undefined, n_warnings, seconds, skip_reason``.  ``n_draws`` counts draws
        with a defined tau_b; ``n_failed`` draws the method could not rank
        (first reason in ``skip_reason``); ``n_undefined`` draws where tau_b is
        undefined (all models tied); ``seconds`` the ranking time of the draws.
    """
    data = as_response_data(data)
    ids = resolve_methods(methods)
    check_engine(engine)
    idx = trial_draws(data.N, n_trials, draws, np.random.default_rng(seed))
    targets, reasons = _targets(data, ids, gold)
    samples = low_budget_taus(data, ids, idx, targets, reasons, engine=engine, client=client,
                              progress=progress, label=f"stability (n={n_trials})")
    return pd.DataFrame(_rows(samples, n_trials=n_trials))


def convergence(
    data: ResponseData,
    methods: str | Iterable[str] | None = None,
    *,
    budgets: Sequence[int] | None = None,
    reps: int = 20,
    seed: int = 0,
    gold: str = "bayes",
    engine: str = "batched",
    client: Any = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Convergence: tau_b against method@N and gold@N as the trial budget n grows.

    For each budget ``n`` in ``budgets`` (default 1, 2, 4, ..., N) ``reps``
    random n-trial subsamples are ranked (distinct single trials at n=1, all N
    of them when ``reps >= N``; the full data once at n=N, where self-agreement
    is 1 for deterministic rules).  Each budget's draws are one task.

    Returns
    -------
    DataFrame
        One row per method x target x budget, columns as :func:`stability` with
        ``budget`` in place of ``n_trials``.
    """
    data = as_response_data(data)
    ids = resolve_methods(methods)
    budgets = check_budgets(budgets or default_budgets(data.N), data.N)
    check_engine(engine)
    rng = np.random.default_rng(seed)
    plan = [(b, budget_draws(data.N, b, reps, rng)) for b in budgets]
    targets, reasons = _targets(data, ids, gold)
    ranked = run_tasks(rank_draws, [idx for _, idx in plan], client=client, progress=progress,
                       label="convergence", unit="budgets", data=data, methods=ids,
                       engine=engine)
    rows = []
    for (b, _), res in zip(plan, ranked, strict=True):
        rows += _rows(tally(res, targets, reasons), budget=b)
    return pd.DataFrame(rows)


def check_pool_sizes(sizes: Sequence[int], L: int) -> None:
    """Raise ValueError naming the first model-pool size outside 2..L."""
    for k in sizes:
        if isinstance(k, bool) or not 2 <= int(k) <= L:
            raise ValueError(f"model-pool size {k} is outside 2..L={L} (the data have L={L})")


def model_subsets(
    L: int, sizes: Sequence[int], subsets: int, rng: np.random.Generator
) -> dict[int, list[np.ndarray]]:
    """``subsets`` random model pools of each size (sorted indices, no repeats in a pool)."""
    check_pool_sizes(sizes, L)
    if subsets < 1:
        raise ValueError(f"subsets must be a positive integer, got {subsets!r}")
    return {int(k): [np.sort(rng.choice(L, size=int(k), replace=False)) for _ in range(subsets)]
            for k in sizes}


def model_pool_bootstrap(
    data: ResponseData,
    methods: str | Iterable[str] | None = None,
    *,
    sizes: Sequence[int] = (5, 10, 15),
    subsets: int = 50,
    n_trials: int = 1,
    draws: int | None = None,
    seed: int = 0,
    gold: str = "bayes",
    engine: str = "batched",
    client: Any = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Model-pool robustness of the N=1 results (paper Sec. 4.3, Table 3).

    For each pool size k, ``subsets`` random k-model pools are drawn.  In each
    pool the references are recomputed on that pool at full N (pool-specific
    gold, order-equivalent to avg@N, and pool-specific method@N), the
    :func:`stability` protocol is run, and each method's mean tau_b over the
    draws is its pool-level score.  Across pools we report the mean and std
    (ddof=0) of the pool-level scores and ``win_fraction``, the fraction of
    pools in which the method has the best pool-level score (shared bests
    count for every member, as the paper's tied classes).  The paper uses 1000
    pools; the default 50 keeps a 72-method run to minutes.

    With ``engine="reference"`` every drawn pool is one task, ranked draw by draw.
    With ``engine="batched"`` a pool drawn twice is ranked once, the draws are reduced
    once on all models, and the distinct pools of one size are stacked
    (:meth:`DrawStack.pools`) so that a stacked rule runs once on every draw of every
    pool, for the draws and the pools' full-N references alike; rules scored model by
    model (avg, Bayes@N) are scored once and restricted to each pool.  Each pool stack
    is one task (on a Dask ``client``, about two per worker and size).

    Returns
    -------
    DataFrame
        One row per size x method x target: ``size, method, target, mean, std,
        win_fraction, n_subsets, n_failed_subsets, n_failed_draws, skip_reason``.
    """
    data = as_response_data(data)
    ids = resolve_methods(methods)
    check_engine(engine)
    rng = np.random.default_rng(seed)
    pools = model_subsets(data.L, sizes, subsets, rng)
    draw_idx = trial_draws(data.N, n_trials, draws, rng)
    shared: dict[str, Any] = {"data": data, "ids": ids, "draws": draw_idx, "gold": gold,
                              "engine": engine, "stack": None, "full": None, "separable": {}}
    if engine == "batched" and draws_per_stack(data, draw_idx) == len(draw_idx):
        shared["stack"] = DrawStack.from_data(data, draw_idx)
        shared["full"] = DrawStack.from_data(data, [np.arange(data.N)])
        shared["separable"] = _separable_scores(shared["full"], shared["stack"], [*ids, gold])
    tasks = [(k, pool) for k, pool_list in pools.items() for pool in pool_list]
    label = "model-pool bootstrap"
    if engine == "reference":  # today's runner: every drawn pool ranked
        results = run_tasks(_pool_task, [pool for _, pool in tasks], client=client,
                            progress=progress, label=label, unit="pools", **shared)
    else:  # a pool drawn twice has the same scores: rank each distinct pool once
        distinct = list(dict.fromkeys(tuple(pool.tolist()) for _, pool in tasks))
        if POOL_STACKS and shared["stack"] is not None:
            chunks = _pool_chunks(distinct, shared["stack"], client)
            parts = run_tasks(_pool_stack_task, chunks, client=client, progress=progress,
                              label=label, unit="pool stacks", **shared)
            done = [res for part in parts for res in part]
            distinct = [tuple(p.tolist()) for chunk in chunks for p in chunk]
        else:
            done = run_tasks(_pool_task, [np.asarray(p) for p in distinct], client=client,
                             progress=progress, label=label, unit="distinct pools", **shared)
        by_pool = dict(zip(distinct, done, strict=True))
        results = [by_pool[tuple(pool.tolist())] for _, pool in tasks]
    rows = []
    for k in pools:
        scores = {(m, t): [] for m in ids for t in ("gold", "self")}
        failed = dict.fromkeys(scores, 0)
        reasons: dict[tuple[str, str], str] = {}
        for (size, _), res in zip(tasks, results, strict=True):
            if size != k:
                continue
            for key, (mean, n_failed, reason) in res.items():
                scores[key].append(mean)
                failed[key] += n_failed
                if reason:
                    reasons.setdefault(key, reason)
        rows += _pool_rows(k, ids, scores, failed, reasons)
    return pd.DataFrame(rows)


#: Rank the distinct pools of one size on pool stacks (:meth:`DrawStack.pools`); False ranks
#: each pool on its own stack (the engine before pool stacks, kept as the peer of
#: benchmarks/bench_study.py and of the tests).
POOL_STACKS = True


def _separable_scores(full: DrawStack, stack: DrawStack, ids: Sequence[str]):
    """Full-N and per-draw scores on all models of the rules scored model by model."""
    out = {}
    for m in dict.fromkeys(ids):
        if get_method(m).base not in SEPARABLE_RULES:
            continue
        at_n, per_draw = batched_scores(full, m), batched_scores(stack, m)
        if at_n is not None and per_draw is not None:
            out[m] = (at_n[0], per_draw)
    return out


def _pool_task(
    pool: np.ndarray,
    *,
    data: ResponseData,
    ids: list[str],
    draws: list[np.ndarray],
    gold: str,
    engine: str,
    stack: DrawStack | None,
    separable: dict[str, tuple[np.ndarray, np.ndarray]],
    full: DrawStack | None = None,
) -> dict[tuple[str, str], tuple[float, int, str]]:
    """One pool's scores: (mean tau_b over the draws, failed draws, reason) per method x target."""
    sub = data.subset(models=pool)
    if stack is None:
        targets, why = _targets(sub, ids, gold)
        ranked = rank_draws(draws, data=sub, methods=ids, engine=engine)
    else:
        own, own_why = _pool_references(pool[None], data, ids, gold, full, separable)
        targets, why = _pool_targets(own, own_why, 0, ids, gold)
        cache = {m: per_draw[:, pool] for m, (_, per_draw) in separable.items()}
        ranked = rank_draws(draws, data=sub, methods=ids, engine=engine, stack=stack.pool(pool),
                            scores_cache=cache)
    return _pool_scores(ranked, targets, why)


def _pool_scores(ranked, targets, why) -> dict[tuple[str, str], tuple[float, int, str]]:
    return {key: _pool_score(s) for key, s in tally(ranked, targets, why).items()}


def _pool_score(sample: TauSample) -> tuple[float, int, str]:
    """(mean tau_b over the draws, failed draws, reason) of one method x target on a pool."""
    s = sample.summary()
    return s["tau_mean"], s["n_failed"], s["skip_reason"]


def _pool_chunks(distinct: Sequence[tuple[int, ...]], stack: DrawStack, client: Any):
    """Distinct pools as (P, k) arrays of one size each, in order: as many pools per stack
    as memory allows (:func:`pools_per_stack`), about two stacks per worker on a cluster."""
    # one pool's stack never exceeds the budget: its rows are no larger than the draws' rows
    by_size: dict[int, list[tuple[int, ...]]] = {}
    for pool in distinct:
        by_size.setdefault(len(pool), []).append(pool)
    chunks = []
    for k, group in by_size.items():
        per = max(1, pools_per_stack(stack, k))
        if client is not None:
            per = min(per, -(-len(group) // (2 * worker_count(client))))
        chunks += [np.asarray(group[i:i + per], dtype=np.int64)
                   for i in range(0, len(group), per)]
    return chunks


def _pool_stack_task(
    pools: np.ndarray,
    *,
    data: ResponseData,
    ids: list[str],
    gold: str,
    stack: DrawStack,
    separable: dict[str, tuple[np.ndarray, np.ndarray]],
    full: DrawStack,
    **_: object,  # the draws (the stack's) and the engine (batched) of _pool_task's call
) -> list[dict[tuple[str, str], tuple[float, int, str]]]:
    """:func:`_pool_task` of every pool of ``pools`` (P, k), closed forms ranked in one stack.

    A closed-form rule is ranked on the pool stack; draws where its scores are not finite
    go draw by draw on the pool's own stack (as :func:`rank_stack` sends them), and every
    other rule ranks the pool as :func:`_pool_task` ranks it.  Pools where every draw was
    ranked take their tau_b summaries in one pass; the others through :class:`TauSample`.
    """
    own, own_why = _pool_references(pools, data, ids, gold, full, separable)
    out: list[dict] = [{} for _ in pools]
    per_pool: list[list[str]] = [[] for _ in pools]  # methods each pool ranks draw by draw
    pooled = stack.pools(pools)
    gold_signs = pair_signs(own[gold])
    alone: dict[int, list[ResponseData]] = {}  # each pool's draws, built once if needed
    for m in ids:
        got = _stacked_ranks(pooled, pools, m, separable)
        if got is None:
            for methods in per_pool:
                methods.append(m)
            continue
        ranks, reasons = got
        for p in np.flatnonzero(np.isnan(ranks[:, :, 0]).any(axis=1)):
            if p not in alone:
                pool_stack = stack.pool(pools[p])
                alone[p] = [pool_stack.subset(d) for d in range(stack.D)]
            rows = np.flatnonzero(np.isnan(ranks[p, :, 0]))
            per = _per_draw([alone[p][d] for d in rows], m)
            for d, r, why in zip(rows, per.ranks, per.reasons, strict=True):
                if r is None:
                    reasons[p][d] = why
                else:
                    ranks[p, d] = r
        clean = np.flatnonzero(~np.isnan(ranks[:, :, 0]).any(axis=1))
        signs = pair_signs(ranks[clean])  # (pools, D, pairs)
        for t, target in (("gold", own[gold]), ("self", own[m])):
            why = own_why[gold] if t == "gold" else own_why[m]
            missing = [None if w is None else f"no {t} target: {w}" for w in why]
            target_signs = gold_signs if t == "gold" else pair_signs(np.nan_to_num(target))
            scores = _stacked_pool_scores(signs, target_signs[clean], [missing[p] for p in clean])
            for p, res in zip(clean, scores, strict=True):
                out[p][(m, t)] = res
            for p in np.setdiff1d(np.arange(len(pools)), clean):
                sample = TauSample(target_missing=missing[p])
                sample.add_many([None if np.isnan(r[0]) else r for r in ranks[p]],
                                None if missing[p] else target[p], reasons[p])
                out[p][(m, t)] = _pool_score(sample)
    for p, methods in enumerate(per_pool):
        if methods:
            pool = pools[p]
            cache = {m: separable[m][1][:, pool] for m in methods if m in separable}
            ranked = rank_stack(stack.pool(pool), methods, scores_cache=cache)
            out[p].update(_pool_scores(ranked, *_pool_targets(own, own_why, p, methods, gold)))
    return out


def _pool_references(pools, data, ids, gold, full, separable):
    """Every method's and the gold standard's ranks at full N on every pool, (P, k) with NaN
    rows where it failed, and the reasons (closed forms on one pool stack of the full data, the
    rest pool by pool); raises as :func:`gold_ranks` where the gold standard failed."""
    P, k = pools.shape
    pooled = full.pools(pools)
    subs: dict[int, ResponseData] = {}
    own: dict[str, np.ndarray] = {}
    own_why: dict[str, list[str | None]] = {}
    for m in dict.fromkeys([*ids, gold]):
        own_why[m] = [None] * P
        if m in separable:
            own[m] = competition_ranks(separable[m][0][pools])
            continue
        scores = _pool_stack_scores(pooled, m)
        own[m] = np.full((P, k), np.nan) if scores is None else finite_ranks(scores)
        for p in np.flatnonzero(np.isnan(own[m][:, 0])):
            if p not in subs:
                subs[p] = data.subset(models=pools[p])
            ranks, own_why[m][p], _ = safe_ranks(subs[p], m)
            if ranks is not None:
                own[m][p] = ranks
    bad_gold = np.flatnonzero(np.isnan(own[gold][:, 0]))
    if bad_gold.size:
        gold_ranks(subs[bad_gold[0]], gold)  # raises with the reason
    return own, own_why


def _pool_targets(own, own_why, p: int, methods, gold: str):
    """Targets and their reasons (as :func:`_targets`) of pool ``p`` of :func:`_pool_references`."""
    row = {m: None if np.isnan(own[m][p, 0]) else own[m][p] for m in methods}
    return ({"gold": dict.fromkeys(methods, own[gold][p]), "self": row},
            {"gold": dict.fromkeys(methods), "self": {m: own_why[m][p] for m in methods}})


def _pool_stack_scores(pooled: DrawStack, method: str) -> np.ndarray | None:
    """:func:`batched_scores` on a pool stack; None also for a rule that reads what differs
    between the rows' pools (:class:`PoolStackError`): it is ranked pool by pool."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            scores = batched_scores(pooled, method)
        except PoolStackError:
            return None
    # a rule may also name why it failed on some draws, (scores, reasons): those draws
    # have NaN rows and go draw by draw, where the same reason is found again
    return scores[0] if isinstance(scores, tuple) else scores


def _stacked_ranks(pooled: DrawStack, pools: np.ndarray, method: str, separable):
    """Ranks (P, D, k) of ``method`` on the pool stack of ``pools`` (P, k), NaN rows where
    its scores are not finite, and a reason slot per draw (P lists of D); None when it
    has no closed form here (the pools are then ranked one by one)."""
    P, k = pools.shape
    if method in separable:  # (D, L) on all models -> (P, D, k)
        scores = np.moveaxis(separable[method][1][:, pools], 1, 0)
    else:
        scores = _pool_stack_scores(pooled, method)
        if scores is None:
            return None
        scores = scores.reshape(P, -1, k)
    return finite_ranks(scores), [[None] * scores.shape[1] for _ in range(P)]


def _stacked_pool_scores(signs: np.ndarray, target: np.ndarray, missing: list[str | None]):
    """(mean tau_b, 0 failed draws, reason) of each pool's draws against its target.

    ``signs`` (P, D, pairs) and ``target`` (P, pairs) are :func:`pair_signs` of the draws'
    ranks and of the pool's reference; ``missing[p]`` says why pool p has no reference.
    """
    P, D, n_pairs = signs.shape
    has = np.array([why is None for why in missing], dtype=bool)
    tau = np.full((P, D), np.nan)
    if has.any():
        tau[has] = signs_kendall_tau(signs[has].reshape(-1, n_pairs),
                                     np.repeat(target[has], D, axis=0)).reshape(-1, D)
    undefined = np.isnan(tau).any(axis=1)
    means = tau.mean(axis=1)  # the 1-D mean of each row when every tau is defined
    out = []
    for p in range(P):
        if not has[p]:
            out.append((np.nan, 0, missing[p]))
        elif undefined[p]:
            t = tau[p][~np.isnan(tau[p])]
            out.append((float(t.mean()) if t.size else np.nan, 0, UNDEFINED_TAU))
        else:
            out.append((float(means[p]), 0, ""))
    return out


def _pool_rows(k: int, ids, scores, failed, reasons) -> list[dict]:
    rows = []
    for target in ("gold", "self"):
        table = np.array([scores[(m, target)] for m in ids], dtype=float)  # (methods, pools)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # pools where no method ran
            best = np.nanmax(table, axis=0)
        wins = (table >= best - TAU_TOL) & ~np.isnan(table)
        for i, m in enumerate(ids):
            vals = table[i][~np.isnan(table[i])]
            rows.append({
                "size": k,
                "method": m,
                "target": target,
                "mean": float(vals.mean()) if vals.size else np.nan,
                "std": float(vals.std()) if vals.size else np.nan,
                "win_fraction": float(wins[i].mean()),
                "n_subsets": int(vals.size),
                "n_failed_subsets": int(table.shape[1] - vals.size),
                "n_failed_draws": failed[(m, target)],
                "skip_reason": reasons.get((m, target), ""),
            })
    return rows
