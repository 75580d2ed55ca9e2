"""Categorical ranking schemes at N=1 (paper Sec. 4.5, appendix "Categorical Ranking").

A scheme s maps every completion to one of C_s + 1 ordered categories and
carries utility weights w_s; its ranking is the Dirichlet-multinomial Bayes@N
posterior mean of the weighted utility (uniform Dirichlet prior).  The
evaluation protocol ranks each scheme on the single-trial draws and measures
Kendall tau_b against three references computed from all N trials:

- ``gold``: binary Bayes_U@N on correctness (tau_GS);
- ``self``: the scheme's own all-trial ranking, Scheme@N (tau_Self);
- ``greedy``: binary Bayes_R0@N on correctness with the greedy prior (tau_Greedy).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from bayesrank.data import ResponseData, as_response_data
from bayesrank.errors import DataError
from bayesrank.study._core import TauSample, gold_ranks, safe_ranks, trial_draws

__all__ = ["categorical_schemes"]


def _check_scheme(name: str, scheme: ResponseData, correct: ResponseData) -> None:
    if not isinstance(scheme, ResponseData):
        raise TypeError(f"scheme {name!r} must be a ResponseData with its weights, "
                        f"got {type(scheme).__name__}")
    if scheme.shape != correct.shape:
        raise DataError(f"scheme {name!r} has shape {scheme.shape} but the correctness data "
                        f"have {correct.shape}; both must cover the same (L, M, N) completions")
    if scheme.models != correct.models:
        raise DataError(f"scheme {name!r} lists other models than the correctness data")


def categorical_schemes(
    correct: ResponseData,
    schemes: Mapping[str, ResponseData],
    *,
    draws: int | None = None,
    seed: int = 0,
    method: str = "bayes",
    gold: str = "bayes",
    greedy: str = "bayes_greedy",
) -> pd.DataFrame:
    """Gold, self and greedy-prior agreement of categorical schemes at N=1.

    Parameters
    ----------
    correct : ResponseData
        Binary correctness of the same completions (L, M, N), optionally with
        greedy prior outcomes R0 for the ``greedy`` reference.
    schemes : mapping of name -> ResponseData
        Each scheme's categorical outcomes with its utility ``weights``.
    draws : int, optional
        Number of single-trial draws; default all N (draw d keeps trial d).
        The same trials are used for every scheme.
    method : str
        Ranking rule applied to each scheme (default Bayes@N, uniform prior).

    Returns
    -------
    DataFrame
        One row per scheme x target (``gold``, ``self``, ``greedy``) with the
        columns of :func:`bayesrank.study.stability`.  Without R0 the greedy rows
        carry the reason.
    """
    correct = as_response_data(correct)
    correct.require_binary("the categorical protocol's correctness reference")
    if not schemes:
        raise ValueError("no categorical schemes given")
    for name, scheme in schemes.items():
        _check_scheme(name, scheme, correct)
    idx = trial_draws(correct.N, 1, draws, np.random.default_rng(seed))
    references = {"gold": (gold_ranks(correct, gold), None)}
    greedy_ranks, greedy_reason, _ = safe_ranks(correct, greedy)
    references["greedy"] = (greedy_ranks, greedy_reason)
    rows = []
    for name, scheme in schemes.items():
        own, own_reason, _ = safe_ranks(scheme, method)
        refs = {**references, "self": (own, own_reason)}
        samples = {t: TauSample() for t in ("gold", "self", "greedy")}
        for t, s in samples.items():
            if refs[t][0] is None:
                s.target_missing = f"no {t} target: {refs[t][1]}"
        for d in idx:
            ranks, reason, n_warn = safe_ranks(scheme.subset(trials=d), method)
            for t, s in samples.items():
                s.warnings += n_warn
                s.add(ranks, refs[t][0], reason)
        rows += [{"scheme": name, "target": t, **s.summary()} for t, s in samples.items()]
    return pd.DataFrame(rows)
