"""The study's stacked rules: one table, from base rule name to its stacked form.

A stacked form takes a :class:`~bayesrank.study.batched.DrawStack` and the identifier's
options and returns what :func:`~bayesrank.study.batched.stacked_scores` says.  It holds
only what is about stacks: which of the stack's shared reductions the rule reads, and
sharing or blocking work across draws.  The numeric core, its option checks and its
defaults are the rule's own (:mod:`bayesrank.baselines`), called here with the stack as
the batch and by :func:`bayesrank.rank` with a batch of one.

The count rules (avg, inverse difficulty, Bayes@N, Borda, Copeland, win rate, Minimax,
Schulze) and Thompson sampling are defined here; each family's other rules in its
``stack_*`` module.

Thompson's score is a sum of pairwise counts that do not depend on which other models
are ranked (:func:`bayesrank.baselines.metrics.thompson_draws`): they are computed once
per draw on all models of a stack and kept in it, and a pool stack takes its rows' counts
from the full stack it was cut from (integer sums, then the same division: exactly the
scores of ranking the pool alone).  ``seed=None`` gives None (each call draws a fresh
seed).  Rules a record marks ``per_draw`` (:attr:`bayesrank.baselines.MethodSpec.per_draw`)
have no entry (``tests/test_rule_snapshot.py`` checks that the table and the records agree).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from bayesrank.baselines import metrics, voting
from bayesrank.conjugate import bayes_moments
from bayesrank.study import stack_graph, stack_irt, stack_pairwise, stack_seq

if TYPE_CHECKING:
    from bayesrank.study.batched import DrawStack

__all__ = ["BATCHED_RULES", "SEPARABLE_RULES"]

Scores = np.ndarray | tuple[np.ndarray, list[str | None]] | None


def _inverse_difficulty(stack: DrawStack, *, clip_range) -> np.ndarray | None:
    if not stack.data.is_binary:
        return None  # the rule raises a DataError per draw
    return metrics.inverse_difficulty_batch(stack.trials, stack.successes, stack.cell_utility,
                                            clip_range)[0]


def _bayes(stack: DrawStack, *, R0: Any, quantile, weights) -> np.ndarray | None:
    if weights is not None or not (R0 is None or (isinstance(R0, str) and R0 == "data")):
        return None  # other utilities or an explicit prior array: per draw
    nu = stack.counts + 1.0
    if R0 is not None:
        prior = stack.prior_counts
        if prior is None:
            return None  # the rule raises DataError (no prior outcomes); per draw says why
        nu = nu + prior
    return metrics.bayes_score(*bayes_moments(nu, stack.data.weights), quantile)


#: Posterior draws kept for reuse across the draws of one stack (floats, about 128 MiB).
DRAW_CACHE_ELEMENTS = 2**24


def _pair_counts(stack: DrawStack, n_samples: int, prior_alpha: float, prior_beta: float,
                 entropy: int) -> np.ndarray:
    """``C`` (D, L, L) of every draw of a stack that is not a pool stack, kept in the stack
    (:meth:`~bayesrank.study.batched.DrawStack.once`) for the pool stacks cut from it."""
    def compute() -> np.ndarray:
        a, b = metrics.thompson_posterior(stack.successes.sum(axis=2), stack.trials.sum(axis=2),
                                          prior_alpha, prior_beta)
        out = np.empty((stack.D, stack.data.L, stack.data.L), dtype=np.int64)
        seen: dict[tuple[float, float], np.ndarray] = {}
        for d in range(stack.D):
            if len(seen) * n_samples > DRAW_CACHE_ELEMENTS:
                seen.clear()
            draws = metrics.thompson_draws(a[d], b[d], n_samples, entropy, seen)
            out[d] = metrics.thompson_pair_counts(draws)
        out.setflags(write=False)
        return out

    return stack.once(("thompson_pair_counts", n_samples, prior_alpha, prior_beta, entropy),
                      compute)


def _thompson(stack: DrawStack, *, n_samples: int, prior_alpha: float, prior_beta: float,
              seed: Any) -> np.ndarray | None:
    if not stack.data.is_binary or seed is None:
        return None
    options = metrics.thompson_options(n_samples, prior_alpha, prior_beta, seed)
    if stack.models is None:
        return metrics.thompson_scores(_pair_counts(stack, *options), n_samples)
    # a pool stack: row p * D + d is draw d of the full stack on the models of pool p
    full = _pair_counts(stack._parent, *options)
    return metrics.thompson_scores(stack._pairs(full), n_samples)


_COUNTS: dict[str, Callable[..., Scores]] = {
    "avg": lambda stack: metrics.avg_batch(stack.cell_utility),
    "inverse_difficulty": _inverse_difficulty,
    "bayes": _bayes,
    "borda": lambda stack: voting.borda_scores(stack.question_preferences("half")),
    "copeland": lambda stack: voting.copeland_scores(stack.question_preferences("half")),
    "win_rate": lambda stack: voting.win_rate_scores(stack.question_wins),
    "minimax": lambda stack, *, variant, tie_policy: voting.minimax_scores(
        stack.question_preferences(tie_policy), variant),
    # a cycle in some draw's beatpath order raises: per draw, which reports it
    "schulze": lambda stack, *, tie_policy, strength: voting.schulze_levels(
        stack.question_preferences(tie_policy), strength),
    "thompson": _thompson,
}


_PARTS = (_COUNTS, stack_irt.RULES, stack_pairwise.RULES, stack_graph.RULES, stack_seq.RULES)
#: Base rule name -> its stacked form (see the module docstring).
BATCHED_RULES: dict[str, Callable[..., Scores]] = {k: v for p in _PARTS for k, v in p.items()}
if len(BATCHED_RULES) != sum(map(len, _PARTS)):
    raise ImportError("a base rule has two stacked forms")  # each rule once

#: Rules whose score of a model depends on that model's own counts only: their scores on a
#: model pool are the full-pool scores of the pool's members (the bootstrap computes them once).
SEPARABLE_RULES = frozenset({"avg", "bayes"})
