"""Sequential ratings (and their stochastic and count-based neighbours) over a whole DrawStack.

Elo, Glicko and TrueSkill: the D draws' match streams (trial-major, paper App.
"Sequential Rating Systems"), read from the stack's outcomes (so pool stacks run them
too), go to the batched kernels of :mod:`bayesrank.baselines.ratings` in one call.

Bayesian Bradley-Terry by MCMC (``bayesian_mcmc``): with a fixed seed every draw's chain
uses the same random stream, which
:func:`bayesrank.baselines.paired.bt_posterior_means_batch` draws once for a block of
draws (any other seed: per-draw path).

Ranked Pairs, Nanson, Baldwin and Majority Judgment (questions as voters) run through
the lockstep rules of :mod:`bayesrank.baselines.voting_batch`; Kemeny-Young row by row.

Pass@k, Pass-hat@k and mG-Pass@k: :func:`bayesrank.baselines.metrics.pass_scores` of the
draws' success counts; draws of fewer than ``k`` trials take the per-draw path.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

from bayesrank.baselines import metrics, paired, pairwise_batch, ratings, voting, voting_batch
from bayesrank.checks import check_int
from bayesrank.ranking import exchangeable_pairs
from bayesrank.threads import worker_threads

if TYPE_CHECKING:
    from bayesrank.study.batched import DrawStack

__all__ = ["RULES"]


def _rating_rule(
    final_scores: Callable[[DrawStack, tuple[np.ndarray, np.ndarray], dict], np.ndarray],
) -> Callable[..., np.ndarray | None]:
    """A stack rule that feeds every draw's match stream (D, n M, L) to ``final_scores``."""

    def rule(stack: DrawStack, **options: Any) -> np.ndarray | None:
        if not stack.data.is_binary:
            return None  # the rule raises DataError; the per-draw path reports it
        return final_scores(stack, ratings.event_streams(stack.outcomes), options)

    return rule


_elo = _rating_rule(lambda stack, streams, options: ratings.elo_ratings(*streams, **options))
_glicko = _rating_rule(
    lambda stack, streams, options: ratings.glicko_ratings(*streams, **options)[0])
_trueskill = _rating_rule(lambda stack, streams, options: ratings.trueskill_ratings(
    *streams, stack.data.M, **options)[0])


#: Draws per call of the batched sampler: (block, n_samples, L) floats in memory.
MCMC_BLOCK = 16


def _bayesian_mcmc(stack: DrawStack, *, seed: int | None, **options: Any):
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        return None  # None or a Generator: each draw's chain gets a different stream
    scores = np.empty((stack.D, stack.data.L))

    def block(start: int) -> None:
        Ws = stack.wins[start:start + MCMC_BLOCK]
        means, _ = paired.bt_posterior_means_batch(Ws, seed=seed, **options)
        # bt_posterior_mean of every chain: the same sums in the same order
        scores[start:start + len(Ws)] = pairwise_batch.average_exchangeable(
            means, exchangeable_pairs(Ws))

    starts = range(0, stack.D, MCMC_BLOCK)
    # a chain does not depend on its block or thread; the compiled sampler drops the GIL
    with ThreadPoolExecutor(max(1, min(worker_threads(), len(starts)))) as pool:
        list(pool.map(block, starts))
    return scores


def _ranked_pairs(stack: DrawStack, *, strength: str, tie_policy: str):
    locked = voting_batch.ranked_pairs_locked_batch(stack.question_preferences(tie_policy),
                                                    strength)
    return voting_batch.dag_levels_batch(locked)


def _kemeny_young(stack: DrawStack, *, tie_policy: str, time_limit,
                  tie_aware: bool) -> np.ndarray | None:
    """Exact Kemeny-Young of every draw (:func:`~bayesrank.baselines.voting.kemeny_young_scores`
    row by row, without building each draw's data).

    Its scores depend on the margins ``P - P^T`` only, which both tie policies give alike
    (``W + T/2`` and ``W`` differ by the symmetric ``T/2``): the rows are solved once per
    stack and margins (:meth:`~bayesrank.study.batched.DrawStack.once`, keyed by a digest
    of the margins), and both identifiers of the paper read that solve.
    """
    P = stack.question_preferences(tie_policy)
    if time_limit is not None or not isinstance(tie_aware, bool):
        return None  # a time budget is a per-call wall clock: the per-draw path keeps it
    margin = P - np.swapaxes(P, 1, 2)
    solve = lambda: np.stack([voting.kemeny_young_scores(p, tie_aware=tie_aware)[0]  # noqa: E731
                              for p in P])
    digest = hashlib.sha256(margin.tobytes()).hexdigest()
    return stack.once(("kemeny_young", tie_aware, digest), solve).copy()


def _borda_elimination(rule: str) -> Callable[..., np.ndarray | None]:
    def scores(stack: DrawStack, *, rank_ties: str) -> np.ndarray | None:
        points = voting.borda_points(stack.question_wins, stack.question_ties, rank_ties)
        return voting_batch.borda_elimination_batch(points, rule)

    return scores


def _pass_family(metric: str) -> Callable[..., np.ndarray | None]:
    def scores(stack: DrawStack, *, k: int) -> np.ndarray | None:
        k = check_int("k", k)
        if not stack.data.is_binary or stack.n_trials < k:
            return None
        return metrics.pass_scores(metrics.cell_success_pmf(stack.trials, stack.successes, k),
                                   metric)

    return scores


#: Base rule name -> scores (D, L) of every draw of a DrawStack (None: use the per-draw path).
RULES: dict[str, Callable[..., np.ndarray | None]] = {
    "elo": _elo,
    "glicko": _glicko,
    "trueskill": _trueskill,
    "bayesian_mcmc": _bayesian_mcmc,
    "ranked_pairs": _ranked_pairs,
    "kemeny_young": _kemeny_young,
    "nanson": _borda_elimination("nanson"),
    "baldwin": _borda_elimination("baldwin"),
    "majority_judgment": lambda stack: voting_batch.majority_judgment_batch(stack.cell_grades),
    "pass_at_k": _pass_family("pass_at_k"),
    "pass_hat_k": _pass_family("pass_hat_k"),
    "mg_pass_at_k": _pass_family("mg_pass_at_k"),
}
