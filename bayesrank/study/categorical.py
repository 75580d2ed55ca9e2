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

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayesrank import schemes as scheme_defs
from bayesrank.data import ResponseData, as_response_data
from bayesrank.data.io import atomic_write
from bayesrank.data.signals import Signals, load_signals
from bayesrank.errors import DataError
from bayesrank.study._core import gold_ranks, rank_draws, safe_ranks, tally, trial_draws
from bayesrank.study.tables import plus_minus

__all__ = ["categorical_schemes", "categorical_table"]

SchemeSpec = ResponseData | scheme_defs.Scheme | str


def _check_scheme(name: str, scheme: ResponseData, correct: ResponseData) -> None:
    if not isinstance(scheme, ResponseData):
        raise TypeError(f"scheme {name!r} must be a ResponseData with its weights, "
                        f"got {type(scheme).__name__}")
    if scheme.shape != correct.shape:
        raise DataError(f"scheme {name!r} has shape {scheme.shape} but the correctness data "
                        f"have {correct.shape}; both must cover the same (L, M, N) completions")
    if scheme.models != correct.models:
        raise DataError(f"scheme {name!r} lists other models than the correctness data")


def _scheme_outcomes(
    schemes: str | Sequence[SchemeSpec] | Mapping[str, SchemeSpec], signals: Signals | None
) -> dict[str, ResponseData]:
    """Each scheme's categorical outcomes, built from ``signals`` where given by name/definition."""
    if isinstance(schemes, Mapping):
        items = dict(schemes)
    else:
        if signals is None:
            raise ValueError("schemes given by name need a signals table (load_signals) "
                             "in place of the correctness data")
        items = dict(scheme_defs.resolve(schemes))
    out = {}
    for name, spec in items.items():
        if isinstance(spec, ResponseData):
            out[name] = spec
        elif signals is None:
            raise ValueError(f"scheme {name!r} is a definition, which needs a signals table "
                             "(load_signals) in place of the correctness data")
        else:
            out[name] = scheme_defs.apply(signals, spec)
    return out


def categorical_schemes(
    correct: ResponseData | Signals,
    schemes: str | Sequence[SchemeSpec] | Mapping[str, SchemeSpec],
    *,
    draws: int | None = None,
    seed: int = 0,
    method: str = "bayes",
    gold: str = "bayes",
    greedy: str = "bayes_greedy",
    R0: Any = None,
) -> pd.DataFrame:
    """Gold, self and greedy-prior agreement of categorical schemes at N=1.

    Parameters
    ----------
    correct : ResponseData or Signals
        Binary correctness of the same completions (L, M, N), optionally with
        greedy prior outcomes R0 for the ``greedy`` reference; or a signals
        table (:func:`bayesrank.load_signals`), whose ``is_correct`` is the
        correctness and from which schemes given by name are built.
    schemes : "paper", names, Scheme objects, or mapping of name -> ResponseData/Scheme
        Each scheme's categorical outcomes with its utility ``weights``, or a
        scheme (:mod:`bayesrank.schemes`) to apply to the signals.
    R0 : array_like or path, optional
        Greedy prior outcomes for the tau_Greedy reference when ``correct`` is a
        signals table (a ResponseData carries its own).
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
    signals = correct if isinstance(correct, Signals) else None
    if signals is not None:
        correct = signals.outcomes("is_correct", R0=R0)
    elif R0 is not None:
        raise ValueError("R0= applies to a signals table; a ResponseData carries its own R0")
    correct = as_response_data(correct)
    correct.require_binary("the categorical protocol's correctness reference")
    if not schemes:
        raise ValueError("no categorical schemes given")
    schemes = _scheme_outcomes(schemes, signals)
    for name, scheme in schemes.items():
        _check_scheme(name, scheme, correct)
    idx = trial_draws(correct.N, 1, draws, np.random.default_rng(seed))
    gold_target = gold_ranks(correct, gold)
    greedy_ranks, greedy_reason, _ = safe_ranks(correct, greedy)
    rows = []
    for name, scheme in schemes.items():
        own, own_reason, _ = safe_ranks(scheme, method)
        refs = {"gold": (gold_target, None), "self": (own, own_reason),
                "greedy": (greedy_ranks, greedy_reason)}
        samples = tally(rank_draws(idx, data=scheme, methods=[method], engine="reference"),
                        {t: {method: r} for t, (r, _) in refs.items()},
                        {t: {method: why} for t, (_, why) in refs.items()})
        rows += [{"scheme": name, "target": t, **samples[(method, t)].summary()} for t in refs]
    return pd.DataFrame(rows)


#: Paper column of each reference (table "Categorical ranking").
TABLE_COLUMNS = {"gold": "tau_GS", "self": "tau_Self", "greedy": "tau_Greedy"}


def categorical_table(frame: pd.DataFrame, *, digits: int = 3) -> pd.DataFrame:
    """The paper's "Categorical ranking" layout from :func:`categorical_schemes` output.

    One row per scheme, ordered by mean tau_GS (best first), with columns
    ``tau_GS``, ``tau_Self``, ``tau_Greedy`` as ``"mean +- std"`` (std over the
    single-trial draws, ddof=0); a reference that could not be computed shows
    ``"n/a"``.  The numbers are in ``.attrs["mean"]`` and ``.attrs["std"]``.
    """
    need = {"scheme", "target", "tau_mean", "tau_std"}
    if not need <= set(frame.columns):
        raise ValueError(f"expected categorical_schemes() output with columns {sorted(need)}")
    mean = frame.pivot(index="scheme", columns="target", values="tau_mean")
    std = frame.pivot(index="scheme", columns="target", values="tau_std")
    cols = [t for t in TABLE_COLUMNS if t in mean.columns]
    mean, std = mean[cols], std[cols]
    key = mean["gold"] if "gold" in mean else mean[cols[0]]
    ranked = key.sort_values(ascending=False, kind="stable").index
    mean, std = mean.loc[ranked], std.loc[ranked]
    out = pd.DataFrame(
        {TABLE_COLUMNS[t]: [plus_minus(m, s, digits) for m, s in zip(mean[t], std[t], strict=True)]
         for t in cols},
        index=pd.Index(ranked, name="scheme"),
    )
    out.attrs.update(mean=mean.rename(columns=TABLE_COLUMNS),
                     std=std.rename(columns=TABLE_COLUMNS))
    return out


def add_cli_arguments(parser: argparse.ArgumentParser) -> None:
    """``bayesrank study --signals FILE --schemes paper`` options (the categorical protocol)."""
    parser.add_argument("--signals", default=None,
                        help="per-completion signals table (csv/jsonl/parquet: model, question, "
                        "trial, has_box, is_correct, ...); runs the categorical protocol")
    parser.add_argument("--schemes", default="paper",
                        help="with --signals: 'paper' (the eight) or comma-separated scheme "
                        "names, e.g. conservative,format_aware")


def cli_main(args: argparse.Namespace) -> int:
    """Run the categorical protocol from ``--signals``; write categorical(.csv, _table.csv)."""
    signals = load_signals(args.signals)
    try:
        frame = categorical_schemes(signals, args.schemes, draws=args.draws, seed=args.seed,
                                    R0=args.prior)
    except ValueError as exc:
        print(f"bayesrank: error: {exc}", file=sys.stderr)
        return 2
    table = categorical_table(frame)
    out = Path(args.output)
    atomic_write(out / "categorical.csv", lambda p: frame.to_csv(p, index=False))
    atomic_write(out / "categorical_table.csv", lambda p: table.to_csv(p))
    print(f"# categorical ranking on {args.signals}: {signals!r}")
    print(table.to_string())
    print(f"wrote 2 files to {out}")
    return 0
