"""Convergence diagnostics of a fit: R-hat, bulk/tail ESS, divergences, E-BFMI.

:func:`summarize` turns a fit's DataTree into one tidy row per posterior
variable (worst element over its coordinates); :func:`check` warns with a
:class:`SamplingWarning` naming what failed.  Thresholds follow Vehtari et al.
(2021): R-hat <= 1.01, bulk and tail ESS >= 400, no divergent transition,
E-BFMI >= 0.3 per chain.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from bayesrank.datatree import group, has_group

__all__ = ["SamplingWarning", "summarize", "check", "RHAT_MAX", "ESS_MIN", "BFMI_MIN"]

RHAT_MAX = 1.01
ESS_MIN = 400
BFMI_MIN = 0.3


class SamplingWarning(UserWarning):
    """A fit did not pass the convergence checks; its estimates may be unreliable."""


def _worst(ds, reduce) -> dict[str, float]:
    return {name: float(reduce(ds[name].values)) for name in ds.data_vars}


def summarize(
    idata: xr.DataTree, var_names: Sequence[str] | None = None, *, independent: bool = False
) -> pd.DataFrame:
    """Worst-element diagnostics of each posterior variable.

    With ``independent=True`` (exact i.i.d. draws, e.g. the ``"conjugate"``
    sampler) nothing is estimated: draws that are independent by construction
    have an effective sample size equal to their number and an R-hat of 1, so
    the frame states those values (the checks still flag too few draws).

    Returns
    -------
    pandas.DataFrame
        Index: variable.  Columns ``size``, ``r_hat`` (max), ``ess_bulk`` and
        ``ess_tail`` (min), ``passed`` (bool), and as frame attributes
        ``attrs["divergences"]`` (int), ``attrs["bfmi"]`` (per chain),
        ``attrs["draws"]`` (chains x draws).
    """
    post = group(idata, "posterior")
    names = list(post.data_vars) if var_names is None else list(var_names)
    post = post[names]
    if independent:
        return _independent(post, names)
    nan_max = lambda a: np.nanmax(a) if np.size(a) and not np.all(np.isnan(a)) else np.nan  # noqa: E731
    nan_min = lambda a: np.nanmin(a) if np.size(a) and not np.all(np.isnan(a)) else np.nan  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant elements give NaN R-hat
        rhat = _worst(az.rhat(post), nan_max)
        bulk = _worst(az.ess(post, method="bulk"), nan_min)
        tail = _worst(az.ess(post, method="tail"), nan_min)
    frame = pd.DataFrame(
        {
            "size": [int(np.prod([post[n].sizes[d] for d in post[n].dims[2:]])) for n in names],
            "r_hat": [rhat[n] for n in names],
            "ess_bulk": [bulk[n] for n in names],
            "ess_tail": [tail[n] for n in names],
        },
        index=pd.Index(names, name="variable"),
    )
    frame["passed"] = ~(
        (frame["r_hat"] > RHAT_MAX) | (frame["ess_bulk"] < ESS_MIN) | (frame["ess_tail"] < ESS_MIN)
    )
    divergences = 0
    bfmi = np.array([])
    if has_group(idata, "sample_stats"):
        stats = group(idata, "sample_stats")
        if "diverging" in stats:
            divergences = int(stats["diverging"].values.sum())
        if "energy" in stats and stats.sizes.get("draw", 0) > 1:
            bfmi = np.asarray(az.bfmi(stats[["energy"]])["energy"].values)
    frame.attrs["divergences"] = divergences
    frame.attrs["bfmi"] = bfmi.tolist()
    frame.attrs["draws"] = int(post.sizes["chain"] * post.sizes["draw"])
    return frame


def _independent(post: xr.Dataset, names: list[str]) -> pd.DataFrame:
    n_draws = int(post.sizes["chain"] * post.sizes["draw"])
    frame = pd.DataFrame(
        {
            "size": [int(np.prod([post[n].sizes[d] for d in post[n].dims[2:]])) for n in names],
            "r_hat": 1.0,
            "ess_bulk": float(n_draws),
            "ess_tail": float(n_draws),
        },
        index=pd.Index(names, name="variable"),
    )
    frame["passed"] = frame["ess_bulk"] >= ESS_MIN
    frame.attrs.update(divergences=0, bfmi=[], draws=n_draws)
    return frame


def problems(frame: pd.DataFrame) -> list[str]:
    """Human-readable list of failed checks in a :func:`summarize` frame."""
    out = []
    bad_rhat = frame.index[frame["r_hat"] > RHAT_MAX].tolist()
    if bad_rhat:
        out.append(f"R-hat > {RHAT_MAX} for {', '.join(bad_rhat)}")
    low = frame.index[(frame["ess_bulk"] < ESS_MIN) | (frame["ess_tail"] < ESS_MIN)].tolist()
    if low:
        out.append(f"bulk or tail ESS < {ESS_MIN} for {', '.join(low)}")
    if frame.attrs.get("divergences", 0):
        out.append(f"{frame.attrs['divergences']} divergent transitions")
    bfmi = np.asarray(frame.attrs.get("bfmi", []), dtype=float)
    if bfmi.size and np.any(bfmi < BFMI_MIN):
        out.append(f"E-BFMI < {BFMI_MIN} in chain(s) {np.flatnonzero(bfmi < BFMI_MIN).tolist()}")
    return out


def check(frame: pd.DataFrame, *, model: str = "model", stacklevel: int = 3) -> bool:
    """Warn with a :class:`SamplingWarning` when any check fails; return True when all pass."""
    found = problems(frame)
    if found:
        warnings.warn(
            f"{model} fit did not pass the convergence checks: {'; '.join(found)}. "
            "Run more draws/tune (or chains), or raise target_accept for divergences.",
            SamplingWarning,
            stacklevel=stacklevel,
        )
    return not found
