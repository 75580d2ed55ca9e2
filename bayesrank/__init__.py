"""bayesrank: rank LLMs from repeated-trial benchmark results, with honest uncertainty.

Data flow: :func:`load` -> :class:`ResponseData` (validated) -> ``data.reductions``
(counts, pairwise W/T, setwise events) -> :func:`rank` (deterministic rules) or
:func:`fit` (Bayesian models, returns a :class:`Posterior`) -> analytics -> report.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from bayesrank.conjugate import bayes_at_n
from bayesrank.data import ResponseData
from bayesrank.errors import (
    DataError,
    DisconnectedGraphError,
    LoadError,
    MissingDependencyError,
    NotIdentifiedError,
    UnknownMethodError,
)
from bayesrank.ranking import Ranking, kendall_tau, scores_to_ranks
from bayesrank.registry import methods, rank

__version__ = "0.1.0"

_LAZY = {
    "load": "bayesrank.data.io",
    "save": "bayesrank.data.io",
    "load_benchmarks": "bayesrank.data.io",
    "from_counts": "bayesrank.data.counts",
    "datasets": "bayesrank.datasets",
    "fit": "bayesrank.inference.fitting",
    "fit_many": "bayesrank.inference.fitting",
    "fit_benchmarks": "bayesrank.inference.suite",
    "SamplerOptions": "bayesrank.inference.options",
    "Posterior": "bayesrank.analysis.posterior",
    "NormalPosterior": "bayesrank.analysis.posterior",
    "closed_form": "bayesrank.analysis.posterior",
    "load_posterior": "bayesrank.analysis.persist",
    "compare": "bayesrank.analysis.comparison",
    "prior_predictive": "bayesrank.analysis.prior_check",
    "prior_accuracy": "bayesrank.analysis.prior_check",
    "write_report": "bayesrank.report",
    "run_study": "bayesrank.study",
    "load_signals": "bayesrank.data.signals",
    "schemes": "bayesrank.schemes",
    "adaptive": "bayesrank.adaptive",
    # pairwise comparisons (battles, win/tie counts)
    "PairwiseData": "bayesrank.data.pairwise",
    "from_battles": "bayesrank.data.pairwise",
    "load_battles": "bayesrank.data.pairwise",
}

__all__ = [
    "DataError",
    "DisconnectedGraphError",
    "LoadError",
    "MissingDependencyError",
    "NotIdentifiedError",
    "Ranking",
    "ResponseData",
    "UnknownMethodError",
    "bayes_at_n",
    "kendall_tau",
    "methods",
    "rank",
    "scores_to_ranks",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    # Heavy modules (PyMC, I/O back ends) load on first use, keeping `import bayesrank` fast.
    if name in _LAZY:
        module = import_module(_LAZY[name])
        value = module if module.__name__ == f"bayesrank.{name}" else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'bayesrank' has no attribute {name!r}")


def __dir__() -> list[str]:
    # the lazy names too, so tab completion and dir() show the whole public API
    return sorted({*__all__, "__version__"})
