"""What every IRT estimator shares: the count checks, informative items, the fit record.

:func:`informative_mask` selects the items that carry information about abilities (see the
package docstring) and :func:`boundary_difficulty` gives the others their limit difficulty.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from bayesrank.data import ResponseData
from bayesrank.errors import DataError

__all__ = [
    "IrtFit",
    "IrtModel",
    "binary_counts",
    "binomial_counts",
    "boundary_difficulty",
    "informative_mask",
    "initial_location",
    "logit",
    "over_problems",
]

IrtModel = Literal["1pl", "2pl", "3pl"]


@dataclass(frozen=True)
class IrtFit:
    """Point estimates of an IRT model.

    Attributes
    ----------
    ability : (L,) abilities ``theta`` (larger = better).
    difficulty : (M,) difficulties ``b`` (centred over informative items;
        ``-inf`` / ``+inf`` for items all models solved / failed under JML).
    discrimination : (M,) ``a`` or None (1PL).
    guessing : (M,) ``c`` or None (1PL, 2PL).
    objective : negative log-likelihood plus penalties at the optimum.
    n_iter : optimizer iterations.
    extra : model-specific arrays (e.g. slopes of the growth model).
    """

    ability: np.ndarray
    difficulty: np.ndarray
    discrimination: np.ndarray | None = None
    guessing: np.ndarray | None = None
    objective: float = np.nan
    n_iter: int = 0
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def item_params(self) -> dict[str, np.ndarray]:
        """Item parameters as a dict (difficulty, and discrimination/guessing if fitted)."""
        out = {"difficulty": self.difficulty}
        if self.discrimination is not None:
            out["discrimination"] = self.discrimination
        if self.guessing is not None:
            out["guessing"] = self.guessing
        return out


def binomial_counts(successes, trials) -> tuple[np.ndarray, np.ndarray]:
    """``(k, n)`` as float (L, M) arrays of integer counts with ``0 <= k <= n`` (else DataError).

    ``trials`` may be a scalar (every cell has that many trials).
    """
    k = np.asarray(successes, dtype=float)
    n = np.broadcast_to(np.asarray(trials, dtype=float), k.shape).astype(float)
    if k.ndim != 2:
        raise DataError(f"successes must be an (L, M) matrix, got shape {k.shape}")
    if not (np.all(np.isfinite(k)) and np.all(np.isfinite(n))):
        raise DataError("successes and trials must be finite")
    if np.any(k < 0) or np.any(k > n) or np.any(k != np.round(k)) or np.any(n != np.round(n)):
        raise DataError("need integer counts with 0 <= successes <= trials")
    return k, n


def binary_counts(data: ResponseData, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Success and trial counts of binary data (DataError naming ``what`` otherwise)."""
    data.require_binary(what)
    red = data.reductions
    return red.successes, red.trials


def informative_mask(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Boolean mask (M,) of the items with at least one observed success and one failure."""
    return (k.sum(axis=0) > 0) & ((n - k).sum(axis=0) > 0)


def boundary_difficulty(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """JML difficulty of uninformative items: -inf if always solved, +inf if never, NaN unseen."""
    solved, failed = k.sum(axis=0), (n - k).sum(axis=0)
    return np.where(solved + failed == 0, np.nan, np.where(failed == 0, -np.inf, np.inf))


def logit(p: np.ndarray) -> np.ndarray:
    """``log(p / (1 - p))``."""
    return np.log(p) - np.log1p(-p)


def initial_location(k: np.ndarray, n: np.ndarray,
                     keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """theta from smoothed model accuracy, b from smoothed item solve rate (paper, Alg. xPL),
    of B problems (B, L, M), centred on each one's informative items ``keep`` (B, M)."""
    theta = logit((k.sum(axis=2) + 0.5) / (n.sum(axis=2) + 1.0))
    b = -logit((k.sum(axis=1) + 0.5) / (n.sum(axis=1) + 1.0))
    centre = np.where(keep, b, 0.0).sum(axis=1) / np.maximum(keep.sum(axis=1), 1)
    return theta - centre[:, None], np.where(keep, b - centre[:, None], 0.0)


def over_problems(run: Callable[[np.ndarray], Any], B: int, per_thread: int,
                  threads: int) -> list:
    """``run(rows)`` over blocks of ``per_thread`` of the B problems, results in block order.

    Up to ``threads`` threads (one per ``per_thread`` problems) take the blocks as they
    become free: problems differ many-fold in iterations, and the compiled kernels release
    the GIL.  A problem's result does not depend on its block or thread.
    """
    workers = min(threads, max(1, B // per_thread))
    if workers == 1:
        return [run(np.arange(B))]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(run, np.array_split(np.arange(B), -(-B // per_thread))))
