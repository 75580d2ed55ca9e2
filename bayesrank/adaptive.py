"""Adaptive evaluation: is the ranking decision settled, and where should the next trials go?

Under test-time scaling every trial costs compute.  Given a posterior over the
models' scores (:func:`bayesrank.closed_form` for Bayes@N, or an MCMC
:class:`~bayesrank.Posterior` from :func:`bayesrank.fit`), :func:`settled` says
whether a ranking decision already holds at a posterior probability ``level``
and :func:`next_trials` spends a budget of new trials where they are expected to
settle it fastest.  The reasoning, with a worked example, is in docs/adaptive.md.

Targets (the decision to settle):

- ``"top1"``: which model is best.  Pairs: (leader, every other model).
- ``"top_k"``: which ``k`` models form the top set (their order inside it is
  free).  Pairs: (each top-``k`` model, each model outside).
- ``"order"``: the full order.  Pairs: every pair, in the order of the means.

A pair ``(a, b)`` (``a`` ranked above ``b`` by posterior mean) is *separated*
when ``P(theta_a > theta_b | data) >= level``; the decision is settled when all
of its pairs are (a pairwise criterion, as in
:meth:`~bayesrank.Posterior.separated_pairs`).
"""

from __future__ import annotations

import argparse
import heapq
import sys
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from bayesrank.analysis.posterior import closed_form
from bayesrank.checks import category_weights_argument
from bayesrank.data import ResponseData, io
from bayesrank.errors import DataError

__all__ = [
    "TARGETS", "Replay", "Settled", "add_cli", "cell_moments", "cli_main", "next_trials",
    "replay", "settled",
]

Target = Literal["top1", "top_k", "order"]
TARGETS = ("top1", "top_k", "order")


@dataclass(frozen=True)
class Settled:
    """Whether a ranking decision is settled, and the pairs that decide it.

    Attributes
    ----------
    settled : bool
        Every relevant pair is separated at ``level``.
    answer : tuple of str
        The decision under the current posterior: the leader (``top1``), the
        top-``k`` models (``top_k``, best first) or the full order (``order``).
    pairs : DataFrame
        One row per relevant pair: ``upper``, ``lower``, ``p_superior`` =
        P(theta_upper > theta_lower), ``separated``.
    target, k, level
        The question asked.
    """

    settled: bool
    answer: tuple[str, ...]
    pairs: pd.DataFrame
    target: str
    k: int | None
    level: float

    @property
    def unsettled(self) -> pd.DataFrame:
        """The relevant pairs not yet separated."""
        return self.pairs[~self.pairs["separated"]].reset_index(drop=True)

    def __bool__(self) -> bool:
        return self.settled

    def __repr__(self) -> str:
        what = self.target if self.k is None else f"{self.target} (k={self.k})"
        state = "settled" if self.settled else f"{len(self.unsettled)} pair(s) unsettled"
        return f"Settled({what} at level {self.level}: {state}; answer {list(self.answer)})"


def _check_target(target: str, k: int | None, L: int) -> int | None:
    if target not in TARGETS:
        raise ValueError(f"target must be one of {list(TARGETS)}, got {target!r}")
    if target == "top_k":
        if k is None or isinstance(k, bool) or not isinstance(k, int | np.integer):
            raise ValueError("target 'top_k' needs an integer k (the size of the top set)")
        if not 1 <= k < L:
            raise ValueError(f"k={k} must lie in 1..L-1={L - 1} for target 'top_k'")
        return int(k)
    if k is not None and not (target == "top1" and k == 1):
        raise ValueError(f"k applies to target 'top_k' only, not {target!r}")
    return None


def _check_level(level: float) -> float:
    if not 0.5 < level < 1:
        raise ValueError(f"level must lie strictly between 0.5 and 1, got {level!r}")
    return float(level)


def _pair_indices(order: np.ndarray, target: str, k: int | None) -> list[tuple[int, int]]:
    """(upper, lower) model indices of the pairs that decide ``target``; ``order`` best first."""
    if target == "top1":
        return [(int(order[0]), int(j)) for j in order[1:]]
    if target == "top_k":
        return [(int(i), int(j)) for i in order[:k] for j in order[k:]]
    return [(int(order[a]), int(order[b]))
            for a in range(len(order)) for b in range(a + 1, len(order))]


def _order(posterior: Any) -> np.ndarray:
    means = np.asarray(posterior.rank("mean").scores, dtype=float)
    return np.lexsort((np.arange(means.size), -means))  # best first; ties keep input order


def settled(posterior: Any, target: Target = "top1", k: int | None = None,
            level: float = 0.95) -> Settled:
    """Whether the ``target`` ranking decision is settled at posterior probability ``level``.

    Parameters
    ----------
    posterior : Posterior or NormalPosterior
        From :func:`bayesrank.fit` or :func:`bayesrank.closed_form`.
    target : {"top1", "top_k", "order"}
    k : int, optional
        Size of the top set for ``"top_k"``.
    level : float
        Required ``P(theta_upper > theta_lower)`` for every relevant pair.

    Returns
    -------
    Settled
        Truthy when settled; ``.unsettled`` lists the pairs that are not.
    """
    level = _check_level(level)
    models = tuple(posterior.models)
    k = _check_target(target, k, len(models))
    if len(models) < 2:
        raise DataError("a ranking decision needs at least 2 models")
    order = _order(posterior)
    prob = np.asarray(posterior.superiority()["prob"].values, dtype=float)
    pairs = _pair_indices(order, target, k)
    names = np.asarray(models, dtype=object)
    up = np.array([p[0] for p in pairs])
    low = np.array([p[1] for p in pairs])
    frame = pd.DataFrame({"upper": names[up], "lower": names[low],
                          "p_superior": prob[up, low]})
    frame["separated"] = frame["p_superior"] >= level
    size = {"top1": 1, "top_k": k, "order": len(models)}[target]
    answer = tuple(names[order[:size]])
    return Settled(bool(frame["separated"].all()), answer, frame, target, k, level)


def _pair_variances(posterior: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per-model posterior variance and the (L, L) variance of theta_i - theta_j."""
    if hasattr(posterior, "theta_draws"):
        draws = np.asarray(posterior.theta_draws(), dtype=float)
        cov = np.atleast_2d(np.cov(draws, rowvar=False))
    else:  # a normal approximation with independent models (closed-form Bayes@N)
        cov = np.diag(np.asarray(posterior.sigma, dtype=float) ** 2)
    var = np.diag(cov).copy()
    diff = var[:, None] + var[None, :] - 2 * cov
    return var, diff


def cell_moments(data: ResponseData) -> tuple[np.ndarray, np.ndarray]:
    """Posterior variance ``v_lm`` of each cell's weighted score and its total ``T_lm``.

    Cell (l, m) with category counts ``n_lmk`` has a Dirichlet(1 + n_lm) posterior
    (uniform prior, as Bayes_U@N); with ``T = C + 1 + n_lm`` and ``p_k = nu_k / T``
    the weighted score ``sum_k w_k theta_k`` has variance
    ``v = (sum_k p_k w_k^2 - (sum_k p_k w_k)^2) / (T + 1)`` (paper appendix "Bayes@N").
    """
    observed = np.ones(data.shape, bool) if data.mask is None else np.asarray(data.mask)
    R = np.asarray(data.R)
    counts = np.stack([((R == c) & observed).sum(axis=2) for c in range(data.n_categories)],
                      axis=-1).astype(float)
    nu = counts + 1.0
    T = nu.sum(axis=-1)
    w = np.asarray(data.weights, dtype=float)
    w = w - w[0]
    mean = (nu @ w) / T
    second = (nu @ w**2) / T
    return np.maximum(second - mean**2, 0.0) / (T + 1.0), T


def _model_weights(posterior: Any, target: str, k: int | None, level: float
                   ) -> tuple[np.ndarray, Settled]:
    """``G_l = sum over unsettled pairs (l, j) of 1 / Var(theta_l - theta_j)``."""
    state = settled(posterior, target, k, level)
    index = {m: i for i, m in enumerate(posterior.models)}
    pairs = state.unsettled if not state.settled else state.pairs
    _, diff = _pair_variances(posterior)
    G = np.zeros(len(index))
    for a, b in zip(pairs["upper"], pairs["lower"], strict=True):
        i, j = index[a], index[b]
        share = 1.0 / diff[i, j] if diff[i, j] > 0 else 0.0
        G[i] += share
        G[j] += share
    return G, state


def next_trials(
    posterior: Any,
    budget: int,
    target: Target = "top1",
    k: int | None = None,
    *,
    level: float = 0.95,
    data: ResponseData | None = None,
    available: Any = None,
) -> pd.DataFrame:
    """Allocate ``budget`` new trials to (model, question) cells to settle ``target`` fastest.

    The rule (docs/adaptive.md): a pair (i, j) is separated once
    ``|mu_i - mu_j| / s_ij`` reaches ``Phi^{-1}(level)``, with
    ``s_ij^2 = Var(theta_i - theta_j)``; with the means fixed, what moves a pair
    towards that is the relative reduction of ``s_ij^2``.  The expected value of
    one more trial in cell (l, m) is therefore

        gain_lm(t) = G_l * Var(theta_l) * dV_lm(t) / V_l

    where ``G_l = sum_{unsettled pairs (l, j)} 1 / s_lj^2`` weights the model by
    the unsettled pairs it is in, ``V_l = sum_m v_lm`` is the model's summed cell
    variance (:func:`cell_moments`) and ``dV_lm(t) = v_lm T/(T+t-1) - v_lm T/(T+t)``
    is the preposterior (expected) variance reduction of the cell's t-th new trial
    under its Dirichlet-multinomial predictive: after ``t`` trials the expected
    posterior variance is ``v_lm T / (T + t)``.  For closed-form Bayes@N
    (``Var(theta_l) = V_l / M^2``) this is exact; for an MCMC posterior
    ``Var(theta_l)`` and ``s_ij^2`` come from the draws and the cells' relative
    reductions from the posterior predictive of each cell.  Gains shrink with
    ``t``, so taking the ``budget`` largest (greedy) is optimal for this separable
    objective.  When the target is already settled, its pairs are all used (to
    confirm the decision).

    Parameters
    ----------
    posterior : Posterior or NormalPosterior
    budget : int
        Number of new trials to allocate (exactly this many).
    target, k, level
        As in :func:`settled`.
    data : ResponseData, optional
        The observed trials; default ``posterior.data``.
    available : int or array_like (L, M), optional
        How many more trials each cell can take (e.g. 0 for a cell that cannot
        be rerun); default unlimited.

    Returns
    -------
    DataFrame
        Columns ``model``, ``question``, ``trials`` (> 0), in data order;
        ``trials`` sums to ``budget``.  ``.attrs`` holds the target and the
        unsettled pairs.
    """
    if isinstance(budget, bool) or not isinstance(budget, int | np.integer) or budget < 1:
        raise ValueError(f"budget must be a positive integer, got {budget!r}")
    level = _check_level(level)
    data = posterior.data if data is None else data
    if not isinstance(data, ResponseData):
        raise DataError("next_trials needs the observed data: the posterior carries none, "
                        "pass data=...")
    if tuple(data.models) != tuple(posterior.models):
        raise DataError("data and posterior list different models")
    cap = _capacity(available, data.L, data.M, budget)
    G, state = _model_weights(posterior, target, k, level)
    var, _ = _pair_variances(posterior)
    v, T = cell_moments(data)
    V = v.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(V > 0, G * var / V, 0.0)

    def gain(l: int, m: int, t: int) -> tuple[float, float]:
        step = v[l, m] * T[l, m] * (1.0 / (T[l, m] + t - 1) - 1.0 / (T[l, m] + t))
        return scale[l] * step, step  # ties in gain: the larger raw reduction first

    # Cells of models in no deciding pair have zero gain: leave them out unless the
    # others cannot absorb the budget.
    models = np.flatnonzero(scale > 0)
    if cap[models].sum() < budget:
        models = np.arange(data.L)
    heap = [(-g, -s, int(l), m) for l in models for m in range(data.M) if cap[l, m] > 0
            for g, s in [gain(l, m, 1)]]
    heapq.heapify(heap)
    alloc = np.zeros((data.L, data.M), dtype=np.int64)
    for _ in range(budget):
        _, _, l, m = heapq.heappop(heap)
        alloc[l, m] += 1
        if alloc[l, m] < cap[l, m]:
            g, s = gain(l, m, int(alloc[l, m]) + 1)
            heapq.heappush(heap, (-g, -s, l, m))
    li, mi = np.nonzero(alloc)
    plan = pd.DataFrame({"model": np.asarray(data.models, dtype=object)[li],
                         "question": np.asarray(data.questions, dtype=object)[mi],
                         "trials": alloc[li, mi]})
    plan.attrs.update(target=target, k=k, level=level, settled=state.settled,
                      unsettled=state.unsettled)
    return plan


def _capacity(available: Any, L: int, M: int, budget: int) -> np.ndarray:
    if available is None:
        return np.full((L, M), budget, dtype=np.int64)
    cap = np.broadcast_to(np.asarray(available), (L, M))
    if not np.issubdtype(cap.dtype, np.integer) or (cap < 0).any():
        raise ValueError("available must hold non-negative integers (trials per cell)")
    if int(cap.sum()) < budget:
        raise ValueError(f"budget {budget} exceeds the {int(cap.sum())} trials available")
    return cap.astype(np.int64)


@dataclass(frozen=True)
class Replay:
    """Outcome of :func:`replay`: trials spent until settled (or the data ran out)."""

    policy: str
    trials: int
    rounds: int
    settled: bool
    answer: tuple[str, ...]


def replay(
    data: ResponseData,
    target: Target = "top1",
    k: int | None = None,
    *,
    policy: Literal["adaptive", "uniform"] = "adaptive",
    batch: int = 100,
    start: int = 1,
    level: float = 0.95,
    seed: int = 0,
) -> Replay:
    """Replay an evaluation on recorded trials: how many trials until ``target`` is settled?

    Each cell's recorded outcomes are shuffled (``seed``) and revealed one at a
    time, so new trials are drawn from the cell's observed outcomes without
    replacement.  The run starts from ``start`` trials per cell and adds
    ``batch`` trials per round, by :func:`next_trials` (``"adaptive"``) or to the
    cells with the fewest trials, ties at random (``"uniform"``), until the
    closed-form Bayes_U@N posterior settles the target or every recorded trial
    is used.
    """
    if policy not in ("adaptive", "uniform"):
        raise ValueError(f"policy must be 'adaptive' or 'uniform', got {policy!r}")
    data.require_complete("replay")
    L, M, N = data.shape
    if not 1 <= start <= N:
        raise ValueError(f"start={start} must lie in 1..N={N}")
    rng = np.random.default_rng(seed)
    shuffled = np.take_along_axis(np.asarray(data.R), rng.random(data.shape).argsort(axis=2),
                                  axis=2)
    n = np.full((L, M), start, dtype=np.int64)
    rounds = 0
    while True:
        seen = ResponseData(shuffled, models=data.models, questions=data.questions,
                               weights=data.weights, mask=np.arange(N) < n[:, :, None])
        post = closed_form(seen, R0=None)
        state = settled(post, target, k, level)
        left = int(L * M * N - n.sum())
        if state.settled or left == 0:
            return Replay(policy, int(n.sum()), rounds, state.settled, state.answer)
        b = min(batch, left)
        if policy == "adaptive":
            plan = next_trials(post, b, target, k, level=level, data=seen, available=N - n)
            li = pd.Index(data.models).get_indexer(plan["model"])
            qi = pd.Index(data.questions).get_indexer(plan["question"])
            np.add.at(n, (li, qi), plan["trials"].to_numpy())
        else:
            _add_uniform(n, N, b, rng)
        rounds += 1


def _add_uniform(n: np.ndarray, N: int, budget: int, rng: np.random.Generator) -> None:
    """Add ``budget`` trials one per cell, fewest-trials cells first (random ties), in place."""
    flat = n.reshape(-1)
    while budget > 0:
        open_cells = np.flatnonzero(flat < N)
        order = open_cells[np.lexsort((rng.random(open_cells.size), flat[open_cells]))]
        take = order[:budget]
        flat[take] += 1
        budget -= take.size


# -- command line -------------------------------------------------------------------------
def add_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``bayesrank plan DATA --budget B --target top1 [-k K] -o plan.csv``."""
    p = subparsers.add_parser(
        "plan", help="where should the next trials go? (closed-form Bayes@N; writes a CSV)")
    p.add_argument("data", help="data file (.npz/.npy/.csv/.jsonl/.parquet/.nc)")
    p.add_argument("--key", help="benchmark key inside a multi-benchmark .npz")
    p.add_argument("--columns", type=io.columns_argument, metavar="OURS=YOURS,...", default=None,
                   help="rename a long table's columns, e.g. trial=sample_idx,outcome=correct")
    p.add_argument("--trials", type=int, metavar="N", default=None,
                   help="DATA is a wide table of success counts, each out of N trials")
    p.add_argument("--weights", type=category_weights_argument, metavar="W0,W1,...",
                   default=None, help="categorical outcomes 0..C: the score of each, e.g. "
                   "0,0.5,1 (outcomes above 1 are refused without it)")
    p.add_argument("--budget", type=int, required=True, help="number of new trials to plan")
    p.add_argument("--target", default="top1", choices=list(TARGETS))
    p.add_argument("-k", type=int, default=None, help="size of the top set for --target top_k")
    p.add_argument("--level", type=float, default=0.95,
                   help="posterior probability that settles a pair (default 0.95)")
    p.add_argument("-o", "--output", default="plan.csv", help="CSV: model, question, trials")
    p.set_defaults(func=cli_main)
    return p



def cli_main(args: argparse.Namespace) -> int:
    """Plan the next ``--budget`` trials and write them to ``--output`` (nothing on error)."""
    data = io.load(args.data, key=args.key, columns=args.columns, trials=args.trials,
                   weights=args.weights)
    try:
        post = closed_form(data, R0=None)
        state = settled(post, args.target, args.k, args.level)
        plan = next_trials(post, args.budget, args.target, args.k, level=args.level)
    except ValueError as exc:
        print(f"bayesrank: error: {exc}", file=sys.stderr)
        return 2
    io.atomic_write(args.output, lambda p: plan.to_csv(p, index=False))
    print(f"# {state!r}")
    if not state.settled:
        print(state.unsettled.to_string(index=False, float_format="%.4f"))
    print(f"wrote {len(plan)} cells ({int(plan['trials'].sum())} trials) to {args.output}")
    return 0
