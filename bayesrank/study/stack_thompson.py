"""Thompson-sampling ranks over a whole :class:`~bayesrank.study.batched.DrawStack`.

:func:`bayesrank.baselines.metrics.thompson` draws each model's posterior samples from a
stream seeded by the seed and the model's own ``(alpha, beta)``, so its score is a sum of
pairwise counts ``C_jl`` (:func:`~bayesrank.baselines.metrics.thompson_pair_counts`) that
do not depend on which other models are ranked.  Here the counts are computed once per
draw on all models of the stack (draws of a posterior made once, however many draws of
the stack share it), and kept in the stack; a pool stack (:meth:`DrawStack.pools`) takes
its rows' counts from the full stack it was cut from, so every pool of the model-pool
bootstrap is scored by summing its members' counts: exactly the scores of ranking the
pool alone (integer sums, then the same division).

Returns None (per-draw path) for non-binary data, options the rule rejects, and
``seed=None`` (each call draws a fresh seed, so each draw alone has its own stream).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from bayesrank.baselines import metrics

if TYPE_CHECKING:
    from bayesrank.study.batched import DrawStack

__all__ = ["RULES"]

#: Posterior draws kept for reuse across the draws of one stack (floats, about 128 MiB).
DRAW_CACHE_ELEMENTS = 2**24


def _pair_counts(stack: DrawStack, n_samples: int, prior_alpha: float, prior_beta: float,
                 entropy: int) -> np.ndarray:
    """``C`` (D, L, L) of every draw of a stack that is not a pool stack, kept in the stack
    (:meth:`~bayesrank.study.batched.DrawStack.once`) for the pool stacks cut from it."""
    def compute() -> np.ndarray:
        trials = np.full(stack.counts.shape[:2], stack.n_trials * stack.data.M, dtype=np.int64)
        a, b = metrics.thompson_posterior(stack.counts[..., 1].sum(axis=2), trials,
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
    rows, m = stack._rows, stack.models
    return metrics.thompson_scores(full[rows[:, :, None], m[:, :, None], m[:, None, :]],
                                   n_samples)


#: Base rule name -> scores (D, L) of every draw of a DrawStack (None: per-draw path).
RULES: dict[str, Callable[..., np.ndarray | None]] = {"thompson": _thompson}
