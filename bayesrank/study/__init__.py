"""The paper's evaluation protocol as a reusable study runner.

Reference: "Ranking Reasoning LLMs under Test-Time Scaling", Sec. 2.1 and 4,
appendices "Gold Standard Agreement", "Ranking-Method Stability at N=1",
"Additional Prior Diagnostics" and "Categorical Ranking".  See docs/study.md.

Every protocol is a function of a :class:`~bayesrank.ResponseData` returning a
tidy :class:`pandas.DataFrame`; :func:`run_study` runs several with one seed and
returns a :class:`StudyResult` (``.summary()``, ``.tables()``, ``.to_csv(dir)``).
Draws are ranked in batches (:mod:`bayesrank.study.batched`), optionally on a
Dask cluster (:mod:`bayesrank.study.engine`); the paper's tables come from
:mod:`bayesrank.study.tables`.
"""

from bayesrank.study._core import (
    ENGINES,
    SLOW_METHODS,
    default_budgets,
    resolve_methods,
    trial_draws,
)
from bayesrank.study.categorical import categorical_schemes, categorical_table
from bayesrank.study.priors import (
    greedy_sampling_alignment,
    prior_diagnostics,
    prior_effect,
    std_reduction,
)
from bayesrank.study.protocols import (
    convergence,
    gold_standard_agreement,
    model_pool_bootstrap,
    model_subsets,
    stability,
    summarize_gold_agreement,
)
from bayesrank.study.result import PROTOCOLS, StudyPlan, StudyResult, run_studies, run_study

__all__ = [
    "ENGINES",
    "PROTOCOLS",
    "SLOW_METHODS",
    "StudyPlan",
    "StudyResult",
    "categorical_schemes",
    "categorical_table",
    "convergence",
    "default_budgets",
    "gold_standard_agreement",
    "greedy_sampling_alignment",
    "model_pool_bootstrap",
    "model_subsets",
    "prior_diagnostics",
    "prior_effect",
    "resolve_methods",
    "run_studies",
    "run_study",
    "stability",
    "std_reduction",
    "summarize_gold_agreement",
    "trial_draws",
]
