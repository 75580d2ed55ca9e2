"""Response data from success counts: k_lm successes out of n_lm trials per cell.

:func:`from_counts` is what :func:`bayesrank.data.io.load` builds a wide table of counts
with (``trials=N``), and the constructor for counts held as arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bayesrank.errors import DataError

from .response import ResponseData

__all__ = ["from_counts"]


def from_counts(
    successes: Any,
    trials: Any,
    *,
    models: Sequence[str] | None = None,
    questions: Sequence[str] | None = None,
    R0: Any = None,
) -> ResponseData:
    """ResponseData from success counts ``k_lm`` out of ``n_lm`` trials (no trial order).

    Cell (l, m) gets ``k_lm`` successes followed by ``n_lm - k_lm`` failures over the
    first ``n_lm`` trial positions; positions beyond ``n_lm`` (cells with fewer trials
    than the most) are missing (a mask), never zeros.  Everything that reads counts
    (avg, Bayes@N, pass@k estimators, the IRT and beta-binomial models) is exact; rules
    that pair trial t of one model with trial t of another (trial-level wins W/T,
    rating streams) see this arbitrary order, as with any counts-only source.

    Parameters
    ----------
    successes : array_like (L, M)
        Non-negative integer counts.
    trials : int or array_like (L, M)
        Trials per cell, at least 1 and at least the successes.
    """
    k = np.asarray(successes)
    if k.ndim != 2 or k.size == 0:
        raise DataError(f"successes must be a non-empty (L, M) array, got shape {k.shape}")
    try:
        n = np.broadcast_to(np.asarray(trials), k.shape)
    except ValueError:
        raise DataError(f"trials must be one number or an array of the successes' shape "
                        f"{k.shape}, got shape {np.shape(trials)}") from None

    def cell(where: tuple[int, ...]) -> str:
        if models is None or questions is None:
            return f"cell {where}"
        return f"model {models[where[0]]!r}, question {questions[where[1]]!r}"

    for name, a in (("successes", k), ("trials", n)):
        if a.dtype.kind not in "biuf":
            raise DataError(f"{name} must be numbers, got dtype {a.dtype}")
        bad = ~np.isfinite(a) | (a != np.round(a)) | (a < (0 if name == "successes" else 1))
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            need = "non-negative integers" if name == "successes" else "integers >= 1"
            raise DataError(f"{name} must be {need}; found {a[where].item():g} at {cell(where)}")
    over = k > n
    if over.any():
        where = tuple(int(i) for i in np.argwhere(over)[0])
        raise DataError(f"{cell(where)} has {int(k[where])} successes out of only "
                        f"{int(n[where])} trials")
    k, n = k.astype(np.int64), n.astype(np.int64)
    position = np.arange(int(n.max()))
    R = (position < k[..., None]).astype(np.int8)
    mask = None if bool((n == n.max()).all()) else position < n[..., None]
    return ResponseData(R, models=models, questions=questions, R0=R0, mask=mask)
