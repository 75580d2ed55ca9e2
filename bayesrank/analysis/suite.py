"""A suite fit's answers: one overall leaderboard, one per benchmark, the spreads, predictions.

From the draws of :func:`bayesrank.fit_benchmarks` (:mod:`models.suite`):

- the overall leaderboard ranks the common ``skill`` of every model of the suite with
  the single-benchmark analytics (credible interval, LCB rank, P(best), top set:
  :class:`~bayesrank.analysis.posterior.Posterior` given the skill's draws);
- a benchmark's leaderboard ranks theta_lb of *every* model of the suite, with its
  expected accuracy on that benchmark's questions and the posterior predictive interval
  of its benchmark accuracy, in the columns of a single-benchmark leaderboard; a model
  that did not run the benchmark is predicted there from the hierarchy (``ran`` False,
  no ``observed``), its replicate with the benchmark's typical trials per question;
- ``spread()``: sigma_b per benchmark, how far a benchmark's abilities stray from the
  common skill (logit scale).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from bayesrank.analysis.accuracy import predictive_accuracy_draws
from bayesrank.analysis.posterior import Posterior
from bayesrank.checks import check_probability
from bayesrank.datatree import from_arrays, group
from bayesrank.errors import DataError

__all__ = ["SuitePosterior", "BenchmarkPosterior"]

SKILL_NOTE = ("No accuracy column: the overall skill is on the logit scale of no single "
              "benchmark; each benchmark's leaderboard (leaderboard(benchmark=name)) gives "
              "expected accuracy there.")


class BenchmarkPosterior(Posterior):
    """One benchmark's abilities of every model of a suite, as a single-benchmark posterior.

    Its predictive accuracy replicates ``trials`` (L, M) instead of the data's: the
    models' own trials where they ran the benchmark, its typical ones where they did not.
    """

    def __init__(self, idata: xr.DataTree, model: str, trials: np.ndarray, **kwargs: Any):
        super().__init__(idata, None, model, **kwargs)  # type: ignore[arg-type]
        self.trials = trials

    @cached_property
    def _predictive_draws(self) -> xr.DataArray | None:
        return predictive_accuracy_draws(self.idata, None, trials=self.trials)


class SuitePosterior:
    """Posterior of a suite model (:func:`bayesrank.fit_benchmarks`).

    Attributes
    ----------
    idata : xarray.DataTree
        ``posterior`` with ``skill`` (llm), ``theta`` and ``deviation`` (llm, benchmark),
        ``spread`` (benchmark) and the items (question: every benchmark's questions, named
        ``benchmark/question``); ``observed_data`` ``k_{name}`` per benchmark.
    suite : models.suite.SuiteData
        The benchmarks as fitted (``suite.data``: name to ResponseData).
    model : str
        ``"rasch"`` or ``"2pl"``.
    diagnostics : pandas.DataFrame
        R-hat, ESS, divergences and E-BFMI of every reported variable.
    """

    def __init__(self, idata: xr.DataTree, suite: Any, model: str, *, sampler: str | None = None,
                 pymc_model: Any = None, diagnostics: Any = None,
                 timings: dict[str, float] | None = None) -> None:
        self.idata = idata
        self.suite = suite
        self.model = model
        self.sampler = sampler
        self.pymc_model = pymc_model
        self.diagnostics = diagnostics
        self.timings = dict(timings or {})

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(self.suite.models)

    @property
    def benchmarks(self) -> list[str]:
        return list(self.suite.names)

    def ran(self) -> pd.DataFrame:
        """(llm x benchmark) bool: which model ran which benchmark."""
        return pd.DataFrame(self.suite.ran(), index=pd.Index(self.models, name="llm"),
                            columns=pd.Index(self.benchmarks, name="benchmark"))

    @cached_property
    def overall(self) -> Posterior:
        """The skills as a :class:`Posterior` (its ``theta`` is ``skill``): every ranking
        analytic of a single benchmark."""
        skill = group(self.idata, "posterior")["skill"]
        tree = from_arrays({"posterior": {"theta": skill.transpose("chain", "draw", "llm").values}},
                           coords={"llm": list(self.models)}, dims={"theta": ["llm"]})
        return Posterior(tree, None, f"suite_{self.model}",  # type: ignore[arg-type]
                         sampler=self.sampler)

    def on(self, benchmark: str) -> BenchmarkPosterior:
        """Benchmark ``benchmark``'s abilities theta_lb of every model as a posterior."""
        return self._on[self._index(benchmark)]

    @cached_property
    def _on(self) -> list[BenchmarkPosterior]:
        return [self._benchmark_posterior(j) for j in range(len(self.benchmarks))]

    def _index(self, benchmark: str) -> int:
        if benchmark not in self.benchmarks:
            raise DataError(f"no benchmark {benchmark!r} in this suite; choose one of "
                            f"{', '.join(map(repr, self.benchmarks))}")
        return self.benchmarks.index(benchmark)

    def _benchmark_posterior(self, j: int) -> BenchmarkPosterior:
        bench = self.suite.benchmarks[j]
        post = group(self.idata, "posterior")
        items = {name: post[name].isel(question=bench.columns).values
                 for name in ("b", "a") if name in post}
        arrays = {"theta": post["theta"].isel(benchmark=j).transpose("chain", "draw", "llm")
                  .values, **items}
        tree = from_arrays({"posterior": arrays},
                           coords={"llm": list(self.models), "question": list(bench.questions)},
                           dims={"theta": ["llm"], **{name: ["question"] for name in items}})
        return BenchmarkPosterior(tree, self.model, self._trials(j), sampler=self.sampler)

    def _trials(self, j: int) -> np.ndarray:
        """(L, M_b): each model's trials on benchmark j; the benchmark's median trials per
        question for a model that did not run it (what a run of it would be)."""
        bench = self.suite.benchmarks[j]
        typical = np.ceil(np.median(bench.n, axis=0))
        trials = np.tile(typical, (len(self.models), 1))
        trials[bench.rows] = bench.n
        return trials.astype(np.int64)

    def leaderboard(self, benchmark: str | None = None, **kwargs: Any) -> pd.DataFrame:
        """The overall leaderboard (``benchmark`` None) or one benchmark's, best first.

        Overall: the columns of :meth:`Posterior.leaderboard` for the skill (``mean``,
        ``sd``, ``lower``/``upper``, ``lcb``, ``lcb_rank``, ranks, ``p_best``,
        ``in_top_set``, ...) and ``benchmarks``, how many benchmarks each model ran.  On a
        benchmark: every model of the suite, with theta_lb in those columns, ``accuracy``
        (its expected accuracy on the benchmark's questions) and
        ``accuracy_lower``/``accuracy_upper`` (the posterior predictive interval of its
        benchmark accuracy), ``observed`` (NaN where it did not run the benchmark) and
        ``ran``: False where the row is a prediction from the hierarchy.  Keywords:
        those of :meth:`Posterior.leaderboard` (``by``, ``prob``, ``q``, ``alpha``,
        ``level``).
        """
        if benchmark is None:
            frame = self.overall.leaderboard(**kwargs)
            frame.insert(0, "benchmarks", self.ran().sum(axis=1).reindex(frame.index))
            frame.attrs["accuracy_note"] = SKILL_NOTE
            return frame
        j = self._index(benchmark)
        frame = self.on(benchmark).leaderboard(**kwargs)
        bench = self.suite.benchmarks[j]
        observed = pd.Series(self.suite.data[benchmark].reductions.observed_score,
                             index=[self.models[i] for i in bench.rows])
        frame.insert(0, "observed", observed.reindex(frame.index).to_numpy())
        frame.insert(0, "ran", self.ran()[benchmark].reindex(frame.index).to_numpy())
        frame.attrs.update(benchmark=benchmark, observed_label="observed accuracy")
        return frame

    def predict(self, model: str, benchmark: str, prob: float = 0.9) -> pd.Series:
        """``model``'s accuracy on ``benchmark``: ``accuracy`` (expected, on its questions),
        the central ``prob`` predictive interval ``accuracy_lower``/``accuracy_upper``,
        ``ran`` and ``observed`` (NaN when it did not run it)."""
        if model not in self.models:
            raise DataError(f"no model {model!r} in this suite")
        row = self.leaderboard(benchmark, prob=prob).loc[model]
        return row[["accuracy", "accuracy_lower", "accuracy_upper", "ran", "observed"]]

    def spread(self, prob: float = 0.9) -> pd.DataFrame:
        """sigma_b per benchmark (logit scale): posterior ``mean`` and central ``prob``
        interval ``lower``/``upper``; how far a benchmark's abilities stray from the skill."""
        prob = check_probability("prob", prob)
        draws = group(self.idata, "posterior")["spread"].transpose("chain", "draw", "benchmark")
        x = draws.values.reshape(-1, draws.sizes["benchmark"])
        tail = (1 - prob) / 2
        lower, upper = np.quantile(x, [tail, 1 - tail], axis=0)
        frame = pd.DataFrame({"mean": x.mean(axis=0), "lower": lower, "upper": upper},
                             index=pd.Index(self.benchmarks, name="benchmark"))
        frame.attrs["prob"] = prob
        return frame

    def __repr__(self) -> str:
        post = group(self.idata, "posterior")
        return (f"SuitePosterior(model={self.model!r}, {len(self.benchmarks)} benchmarks, "
                f"L={len(self.models)}, {post.sizes['chain']} chains x {post.sizes['draw']} "
                "draws)")
