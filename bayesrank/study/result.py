"""``run_study``: run several protocols with one seed and keep the tidy frames together."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bayesrank.data import ResponseData, as_response_data
from bayesrank.data.io import atomic_write
from bayesrank.study import tables as paper_tables
from bayesrank.study._core import check_budgets, check_engine, default_budgets, resolve_methods
from bayesrank.study.categorical import categorical_schemes
from bayesrank.study.checkpoint import Checkpoint, data_digest, open_checkpoint, run_block
from bayesrank.study.engine import connect
from bayesrank.study.priors import _require_model_prior, prior_diagnostics, prior_effect
from bayesrank.study.progress import Progress
from bayesrank.study.protocols import (
    check_pool_sizes,
    convergence,
    gold_standard_agreement,
    model_pool_bootstrap,
    stability,
    summarize_gold_agreement,
)

__all__ = ["PROTOCOLS", "StudyResult", "run_studies", "run_study"]

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

        ``n_failed`` counts the low-budget draws a method could not rank and
        ``reason`` says why a value is missing or draws failed (the first
        reason met), so a NaN never stands unexplained.  Sorted by low-budget
        gold agreement when the stability protocol ran, else by full-N gold
        agreement.
        """
        parts = []
        reasons = []
        if "gold" in self.frames:
            gold = self.frames["gold"].set_index("method")
            parts.append(gold[["tau_gold", "consensus"]])
            reasons.append(gold["skip_reason"])
        if "stability" in self.frames:
            frame = self.frames["stability"]
            st = frame.pivot(index="method", columns="target", values=["tau_mean", "tau_std"])
            st.columns = [f"{t}_{stat.removeprefix('tau_')}" for stat, t in st.columns]
            parts.append(st[[c for c in ("gold_mean", "gold_std", "self_mean", "self_std")
                             if c in st.columns]])
            by_method = frame.groupby("method", sort=False)
            parts.append(by_method["n_failed"].max().rename("n_failed").to_frame())
            reasons.append(by_method["skip_reason"].agg(_first_reason))
        if not parts:
            return pd.DataFrame()
        table = pd.concat(parts, axis=1)
        table["reason"] = pd.concat(reasons, axis=1).apply(_first_reason, axis=1)
        key = "gold_mean" if "gold_mean" in table else "tau_gold"
        return table.sort_values(key, ascending=False, kind="stable").reset_index()

    def tables(self) -> dict[str, pd.DataFrame]:
        """The paper's tables this study can fill (see :mod:`bayesrank.study.tables`).

        ``gold`` (Table 1) needs the gold protocol, ``n1_winners`` (Table 2) the
        stability protocol, ``bootstrap`` (Table 3) the bootstrap and ``prior``
        (Table 4) the prior protocol.  One row, named ``settings["name"]``; put
        several benchmarks side by side with ``tables.gold_table({name: result, ...})``.
        """
        need = {"gold": "gold_summary", "n1_winners": "stability", "bootstrap": "bootstrap",
                "prior": "prior_diagnostics"}
        return {name: paper_tables.TABLES[name][0](self) for name, frame in need.items()
                if frame in self.frames}

    def table(self, name: str, fmt: str = "frame") -> pd.DataFrame | str:
        """One paper table: ``fmt="frame"`` (numbers), ``"markdown"`` or ``"latex"``."""
        if name not in paper_tables.TABLES:
            raise ValueError(f"unknown table {name!r}; choose from {list(paper_tables.TABLES)}")
        frame = paper_tables.TABLES[name][0](self)
        return frame if fmt == "frame" else paper_tables.render(name, frame, fmt)

    def to_csv(self, directory: str | Path) -> list[Path]:
        """Write every frame as ``<name>.csv`` plus ``summary.csv`` and ``settings.json``.

        The paper tables the study fills (:meth:`tables`) go to ``tables.md`` and
        ``tables.tex``.

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
        tables = self.tables()
        for fmt, ext in (("markdown", "md"), ("latex", "tex")) if tables else ():
            text = "\n".join(f"{'##' if ext == 'md' else '%%'} {name}\n\n"
                             f"{paper_tables.render(name, frame, fmt)}"
                             for name, frame in tables.items())
            written.append(atomic_write(out / f"tables.{ext}", lambda p, t=text: p.write_text(t)))
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
        check_pool_sizes(sizes, data.L)
    if "prior" in protocols:
        _require_model_prior(data, "the 'prior' protocol")
    if "categorical" in protocols and not schemes:
        raise ValueError("the 'categorical' protocol needs schemes={name: ResponseData}")


@dataclass(frozen=True)
class StudyPlan:
    """How much of each protocol to run (the paper's settings by default).

    Attributes
    ----------
    gold : str
        Identifier of the gold standard (Bayes_U@N, ``"bayes"``).
    n_trials : int
        Trials per low-budget draw (N = 1 in the paper).
    draws : int, optional
        Low-budget draws (default: all N single-trial draws).
    budgets : sequence of int, optional
        Trial budgets for convergence and the prior effect (default:
        :func:`default_budgets`).
    reps : int
        Convergence draws per budget.
    sizes : sequence of int
        Model-pool sizes of the bootstrap.
    subsets : int
        Model pools per size.
    prior_reps : int
        Prior-effect draws per budget.
    schemes : mapping of str -> ResponseData, optional
        Categorical schemes for the ``categorical`` protocol.
    """

    gold: str = "bayes"
    n_trials: int = 1
    draws: int | None = None
    budgets: Sequence[int] | None = None
    reps: int = 20
    sizes: Sequence[int] = (5, 10, 15)
    subsets: int = 50
    prior_reps: int = 50
    schemes: Mapping[str, ResponseData] | None = None


def _first_reason(values: pd.Series) -> str:
    found = [str(v) for v in values if isinstance(v, str) and v]
    return found[0] if found else ""


def run_study(
    data: ResponseData,
    protocols: str | Iterable[str] = ("gold", "stability"),
    methods: str | Iterable[str] | None = None,
    *,
    seed: int = 0,
    plan: StudyPlan | None = None,
    engine: str = "batched",
    client: Any = None,
    scheduler: str | None = None,
    quiet: bool | None = None,
    name: str | None = None,
    checkpoint: str | os.PathLike | None = None,
    fresh: bool = False,
    **plan_fields: Any,
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
    plan : StudyPlan, optional
        How much of each protocol to run; fields can also be given directly
        (``run_study(data, sizes=(5,), subsets=1000)``).
    engine : {"batched", "reference"}
        ``"batched"`` (default) reduces all draws of a protocol at once and runs
        closed-form rules over the stack; ``"reference"`` is the per-draw loop.
        Same frames (up to the ``seconds`` columns).
    client : distributed.Client, optional
        Run draw blocks, budgets and model pools as tasks on this Dask cluster.
        Draws and pools are drawn here first, so the frames equal the serial run's.
    scheduler : str, optional
        Address of a Dask scheduler (``tcp://host:8786``) to connect to instead
        of passing ``client``.
    quiet : bool, optional
        Progress with time left on stderr: shown when stderr is a terminal
        (None), never (True) or always (False).
    name : str, optional
        Benchmark name for the paper tables (``StudyResult.tables()``).
    checkpoint : path, optional
        Keep every finished block (task results, protocol frames) in this directory as
        it completes; the same call run again loads them and computes only the rest,
        with the frames of an uninterrupted run (:mod:`bayesrank.study.checkpoint`).
        A checkpoint of another call (data, protocols, methods, plan, seed or engine)
        raises :class:`~bayesrank.study.checkpoint.CheckpointMismatch`.
    fresh : bool
        Discard what ``checkpoint`` holds and start over.
    """
    data = as_response_data(data)
    unknown = sorted(set(plan_fields) - {f.name for f in fields(StudyPlan)})
    if unknown:
        raise TypeError(f"run_study got unknown option(s) {', '.join(unknown)}; the plan's "
                        f"fields are {', '.join(f.name for f in fields(StudyPlan))}")
    plan = replace(plan or StudyPlan(), **plan_fields)
    protocols = [p.strip() for p in protocols.split(",")] if isinstance(protocols, str) else list(
        protocols)
    _check_plan(data, protocols, plan.budgets, plan.sizes, plan.schemes)
    ids = resolve_methods(methods)
    check_engine(engine)
    if client is not None and scheduler is not None:
        raise ValueError("pass either client= or scheduler=, not both")
    saved = None if checkpoint is None else open_checkpoint(
        checkpoint, _call(data, protocols, ids, plan, seed, engine), fresh=fresh)
    own_client = connect(scheduler) if scheduler is not None else None
    try:
        frames, timings = _run(data, protocols, ids, own_client or client, engine,
                               Progress(quiet), plan, seed, saved)
    finally:
        if own_client is not None:
            own_client.close()
    settings = {"protocols": protocols, "methods": ids, **vars(plan),  # the plan's fields
                "budgets": list(plan.budgets or default_budgets(data.N)), "sizes": list(plan.sizes),
                "schemes": list(plan.schemes or ()), "data": repr(data), "engine": engine,
                "name": name or "benchmark"}
    return StudyResult(frames, settings, seed, timings)


def run_studies(
    datasets: Mapping[str, ResponseData], *, seed: int = 0, **options: Any
) -> dict[str, StudyResult]:
    """:func:`run_study` on several benchmarks with the same plan, keyed by name.

    Each benchmark gets the same ``seed`` (as the paper's per-benchmark runs) and
    ``name``; with ``client=`` every benchmark's tasks run on that cluster in turn.
    ``bayesrank.study.tables.gold_table(results)`` (and the other tables) then put
    the benchmarks side by side, one row each.
    """
    if "name" in options:
        raise TypeError("run_studies names each study by its key in datasets")
    if not datasets:
        raise ValueError("no datasets given")
    return {name: run_study(data, seed=seed, name=name, **options)
            for name, data in datasets.items()}


def _call(data, protocols, ids, plan: StudyPlan, seed: int, engine: str) -> dict[str, Any]:
    """What makes a study's frames, for its checkpoint's manifest (JSON)."""
    settings = dict(vars(plan))
    settings["schemes"] = {k: data_digest(v) for k, v in (plan.schemes or {}).items()}
    call = {"data": data_digest(data), "protocols": list(protocols), "methods": list(ids),
            "plan": settings, "seed": int(seed), "engine": engine}
    return json.loads(json.dumps(call, default=_jsonable))  # as the manifest reads back


def _run(data, protocols, ids, client, engine, progress, plan: StudyPlan, seed: int,
         saved: Checkpoint | None = None):
    frames: dict[str, pd.DataFrame] = {}
    timings: dict[str, float] = {}

    def timed(name: str, func, *args, **kwargs) -> pd.DataFrame:
        frames[name], timings[name] = run_block(saved, name, func, *args, **kwargs)
        return frames[name]

    gold, n_trials, draws, budgets = plan.gold, plan.n_trials, plan.draws, plan.budgets
    common = {"seed": seed, "gold": gold}
    run = {"engine": engine, "client": client, "progress": progress}
    if "gold" in protocols:
        agreement = timed("gold", gold_standard_agreement, data, ids, gold=gold)
        frames["gold_summary"] = summarize_gold_agreement(agreement, gold)
    if "stability" in protocols:
        timed("stability", stability, data, ids, n_trials=n_trials, draws=draws, **common, **run)
    if "convergence" in protocols:
        timed("convergence", convergence, data, ids, budgets=budgets, reps=plan.reps, **common,
              **run)
    if "bootstrap" in protocols:
        timed("bootstrap", model_pool_bootstrap, data, ids, sizes=plan.sizes,
              subsets=plan.subsets, n_trials=n_trials, draws=draws, **common, **run)
    if "prior" in protocols:
        timed("prior_effect", prior_effect, data, budgets=budgets, reps=plan.prior_reps,
              seed=seed, gold=gold, **run)
        timed("prior_diagnostics", prior_diagnostics, data, reps=plan.prior_reps, seed=seed,
              engine=engine)
    if "categorical" in protocols:
        timed("categorical", categorical_schemes, data, plan.schemes, draws=draws, seed=seed,
              gold=gold)
    return frames, timings
