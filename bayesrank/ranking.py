"""The result type of every ranking rule, and the decorator that produces it."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from bayesrank.data import ResponseData, as_response_data
from bayesrank.ranks import TieMethod, scores_to_ranks

__all__ = ["Ranking", "ranking_method"]


@dataclass(frozen=True)
class Ranking:
    """Scores and ranks of L models under one method.

    Attributes
    ----------
    scores : numpy.ndarray, shape (L,)
        Larger is better.
    method : str
        Identifier of the rule that produced it.
    models : tuple of str
        Model names aligned with ``scores``.
    ranks : numpy.ndarray, shape (L,)
        1 = best; derived from ``scores`` with the ``ties`` convention unless
        the method defines ranks itself (e.g. an elimination order).
    ties : str
        Tie convention used for ``ranks``.
    details : dict
        Method-specific extras (standard deviations, item parameters, ...).
    """

    scores: np.ndarray
    method: str
    models: tuple[str, ...]
    ranks: np.ndarray = None  # type: ignore[assignment]
    ties: str = "competition"
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        scores = np.asarray(self.scores, dtype=float)
        if scores.shape != (len(self.models),):
            raise ValueError(f"{len(self.models)} models but scores of shape {scores.shape}")
        scores.setflags(write=False)
        object.__setattr__(self, "scores", scores)
        ranks = self.ranks
        if ranks is None:
            ranks = scores_to_ranks(scores, self.ties)  # type: ignore[arg-type]
        ranks = np.asarray(ranks)
        ranks.setflags(write=False)
        object.__setattr__(self, "ranks", ranks)

    def with_ties(self, ties: TieMethod) -> Ranking:
        """The same scores ranked with another tie convention."""
        return Ranking(self.scores, self.method, self.models, ties=ties, details=self.details)

    def to_frame(self) -> pd.DataFrame:
        """Leaderboard sorted best first: columns rank, model, score."""
        order = np.lexsort((np.arange(len(self.models)), self.ranks))
        return pd.DataFrame(
            {
                "rank": self.ranks[order],
                "model": np.asarray(self.models, dtype=object)[order],
                "score": self.scores[order],
            }
        ).reset_index(drop=True)

    def __len__(self) -> int:
        return len(self.models)

    def __repr__(self) -> str:
        return f"Ranking(method={self.method!r})\n{self.to_frame().to_string(index=False)}"


def ranking_method(func: Callable[..., Any]) -> Callable[..., Ranking]:
    """Turn ``func(data: ResponseData, **options) -> scores | (scores, details)`` into a rule.

    The wrapped function accepts a :class:`ResponseData` or a raw array as its
    first argument and returns a :class:`Ranking` named after the function.
    Explicit ranks may be returned under ``details["ranks"]``.
    """

    @functools.wraps(func)
    def wrapper(data: ResponseData | np.ndarray, /, **options: Any) -> Ranking:
        d = as_response_data(data)
        out = func(d, **options)
        scores, details = out if isinstance(out, tuple) else (out, {})
        details = dict(details)
        ranks = details.pop("ranks", None)
        return Ranking(scores, func.__name__, d.models, ranks=ranks, details=details)

    wrapper.__wrapped_rule__ = func  # type: ignore[attr-defined]
    return wrapper
