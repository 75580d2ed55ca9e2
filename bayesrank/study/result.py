"""``run_study``: run several protocols with one seed and keep the tidy frames together."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayesrank.data import ResponseData, as_response_data
from bayesrank.data.io import atomic_write
from bayesrank.study._core import check_budgets, default_budgets, resolve_methods
from bayesrank.study.categorical import categorical_schemes
from bayesrank.study.priors import _require_model_prior, prior_diagnostics, prior_effect
from bayesrank.study.protocols import (
    convergence,
    gold_standard_agreement,
    model_pool_bootstrap,
    stability,
    summarize_gold_agreement,
)

__all__ = ["PROTOCOLS", "StudyResult", "run_study"]

#: Protocol names accepted by :func:`run_study` (and ``bayesrank study --protocol``).
PROTOCOLS = ("gold", "stability", "convergence", "bootstrap", "prior", "categorical")


@dataclass(frozen=True)
class StudyResult:
    """Frames of a study run, with the settings and seed that reproduce it.

    ``frames`` maps a name (``gold``, ``gold_summary``, ``stability``,
    ``convergence``, ``bootstrap``, ``prior_effect``, ``prior_diagnostics``,
    ``categorical``) to a tidy DataFrame; ``result["stability"]`` is a shortcut.
    """

    frames: dict[str, pd.DataFrame]
    settings: dict[str, Any]
    seed: int
    timings: dict[str, float] = field(default_factory=dict)

    def __getitem__(self, name: str) -> pd.DataFrame:
        try:
            return self.frames[name]
        except KeyError:
            raise KeyError(f"no frame {name!r} in this study; it has {list(self.frames)}") from None

    def summary(self) -> pd.DataFrame:
        """One row per method: full-N gold agreement and low-budget gold/self tau_b.

        Sorted by low-budget gold agreement when the stability protocol ran,
        else by full-N gold agreement.
        """
        parts = []
        if "gold" in self.frames:
            parts.append(self.frames["gold"].set_index("method")[["tau_gold", "consensus"]])
        if "stability" in self.frames:
            st = self.frames["stability"].pivot(index="method", columns="target",
                                                values=["tau_mean", "tau_std"])
            st.columns = [f"{t}_{stat.removeprefix('tau_')}" for stat, t in st.columns]
            parts.append(st[[c for c in ("gold_mean", "gold_std", "self_mean", "self_std")
                             if c in st.columns]])
        if not parts:
            return pd.DataFrame()
        table = pd.concat(parts, axis=1)
        key = "gold_mean" if "gold_mean" in table else "tau_gold"
        return table.sort_values(key, ascending=False, kind="stable").reset_index()

    def to_csv(self, directory: str | Path) -> list[Path]:
        """Write every frame as ``<name>.csv`` plus ``summary.csv`` and ``settings.json``.

        Each file is written to a temporary name and renamed on success, so a
        failure never leaves a half-written file.
        """
        out = Path(directory)
        written = []
        named = dict(self.frames)
        summary = self.summary()
        if not summary.empty:
            named["summary"] = summary
        for name, frame in named.items():
            written.append(atomic_write(out / f"{name}.csv",
                                        lambda p, f=frame: f.to_csv(p, index=False)))
        meta = {"seed": self.seed, "settings": self.settings, "timings_s": self.timings}
        written.append(atomic_write(out / "settings.json", lambda p: p.write_text(
            json.dumps(meta, indent=2, default=_jsonable) + "\n")))
        return written

    def __repr__(self) -> str:
        lines = [f"StudyResult(seed={self.seed}, protocols={list(self.settings['protocols'])})"]
        for name, frame in self.frames.items():
            secs = self.timings.get(name)
            took = f", {secs:.1f} s" if secs is not None else ""
            lines.append(f"  {name}: {len(frame)} rows{took}")
        return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, set, np.ndarray)):
        return list(value)
    return str(value)


def _check_plan(data: ResponseData, protocols: Sequence[str], budgets, sizes, schemes) -> None:
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown:
        raise ValueError(f"unknown study protocol(s) {unknown}; choose from {list(PROTOCOLS)}")
    if not protocols:
        raise ValueError(f"no study protocol selected; choose from {list(PROTOCOLS)}")
    if budgets is not None:
        check_budgets(budgets, data.N)
    if "bootstrap" in protocols:
        bad = [k for k in sizes if not 2 <= int(k) <= data.L]
        if bad:
            raise ValueError(f"model-pool size(s) {bad} outside 2..L={data.L} (the data have "
                             f"L={data.L})")
    if "prior" in protocols:
        _require_model_prior(data, "the 'prior' protocol")
    if "categorical" in protocols and not schemes:
        raise ValueError("the 'categorical' protocol needs schemes={name: ResponseData}")


def run_study(
    data: ResponseData,
    protocols: str | Iterable[str] = ("gold", "stability"),
    methods: str | Iterable[str] | None = None,
    *,
    seed: int = 0,
    gold: str = "bayes",
    n_trials: int = 1,
    draws: int | None = None,
    budgets: Sequence[int] | None = None,
    reps: int = 20,
    sizes: Sequence[int] = (5, 10, 15),
    subsets: int = 50,
    prior_reps: int = 50,
    schemes: Mapping[str, ResponseData] | None = None,
) -> StudyResult:
    """Run the paper's evaluation protocols on ``data`` and collect the frames.

    Parameters
    ----------
    protocols : str or iterable of str
        Any of :data:`PROTOCOLS` (comma-separated string accepted): ``gold``
        (:func:`gold_standard_agreement` + summary), ``stability``
        (:func:`stability`, N=1 by default), ``convergence``, ``bootstrap``
        (:func:`model_pool_bootstrap`), ``prior`` (:func:`prior_effect` +
        :func:`prior_diagnostics`; needs per-model R0), ``categorical``
        (:func:`categorical_schemes` with ``data`` as the correctness data).
    methods : iterable of str, optional
        Method identifiers; default the paper's 72.
    seed : int
        One seed for everything random; the same call gives the same frames.
    """
    data = as_response_data(data)
    protocols = [p.strip() for p in protocols.split(",")] if isinstance(protocols, str) else list(
        protocols)
    _check_plan(data, protocols, budgets, sizes, schemes)
    ids = resolve_methods(methods)
    frames: dict[str, pd.DataFrame] = {}
    timings: dict[str, float] = {}

    def timed(name: str, func, *args, **kwargs) -> pd.DataFrame:
        start = time.perf_counter()
        frames[name] = func(*args, **kwargs)
        timings[name] = time.perf_counter() - start
        return frames[name]

    common = {"seed": seed, "gold": gold}
    if "gold" in protocols:
        agreement = timed("gold", gold_standard_agreement, data, ids, gold=gold)
        frames["gold_summary"] = summarize_gold_agreement(agreement, gold)
    if "stability" in protocols:
        timed("stability", stability, data, ids, n_trials=n_trials, draws=draws, **common)
    if "convergence" in protocols:
        timed("convergence", convergence, data, ids, budgets=budgets, reps=reps, **common)
    if "bootstrap" in protocols:
        timed("bootstrap", model_pool_bootstrap, data, ids, sizes=sizes, subsets=subsets,
              n_trials=n_trials, draws=draws, **common)
    if "prior" in protocols:
        timed("prior_effect", prior_effect, data, budgets=budgets, reps=prior_reps, seed=seed,
              gold=gold)
        timed("prior_diagnostics", prior_diagnostics, data, reps=prior_reps, seed=seed)
    if "categorical" in protocols:
        timed("categorical", categorical_schemes, data, schemes, draws=draws, seed=seed,
              gold=gold)
    settings = {
        "protocols": protocols, "methods": ids, "gold": gold, "n_trials": n_trials,
        "draws": draws, "budgets": list(budgets or default_budgets(data.N)), "reps": reps,
        "sizes": list(sizes), "subsets": subsets, "prior_reps": prior_reps,
        "schemes": list(schemes or ()), "data": repr(data),
    }
    return StudyResult(frames, settings, seed, timings)
