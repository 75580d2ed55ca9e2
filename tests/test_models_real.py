"""Every Bayesian model converges with default settings on every real data set in ../shared.

Issue 9: on real LLM benchmark data (questions nobody or everybody solves)
the Rasch and 2PL models of before failed their own checks.  Each fit here
uses the defaults of :func:`bayesrank.fit` (nutpie, 4 chains x (1,000 tune +
1,000 draws), the model's own ``target_accept``; through the benchmark's
``measure``, which samples the model directly) and asserts the checks that
raise ``SamplingWarning``: R-hat <= 1.01 and bulk and tail ESS >= 400 on every
element of every reported variable, and no divergence.

Budget (2 cores): the IRT models are fitted to a deterministic subsample of
at most 120 questions (every k-th question in the data's order, so the share
of never- and always-solved questions is kept), except one full-size fit per
family: Rasch on LiveCodeBench (15 x 713 x 10), and Bradley-Terry, Davidson
and Davidson-Luce on every set at full size (their sufficient statistics do
not grow with the questions, or grow only with the distinct setwise events).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from bayesrank.models import MODELS

import bayesrank

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_models_real import load_real_sets, measure  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]

SETS = ("lcb_repair", "zeroeval_math_l5", "reasoning_gym_hard", "matharena_aime2025_I")
MAX_QUESTIONS = 120
FULL_SIZE = {("rasch", "lcb_repair")} | {
    (model, name) for model in ("bradley_terry", "davidson", "davidson_luce") for name in SETS
}


@pytest.fixture(scope="module")
def real_sets(shared_dir: Path) -> dict[str, bayesrank.ResponseData]:
    return load_real_sets(shared_dir / "data")


def every_kth_question(data: bayesrank.ResponseData, limit: int) -> bayesrank.ResponseData:
    """At most ``limit`` questions: every ceil(M / limit)-th one, in the data's order."""
    step = -(-data.M // limit)
    keep = np.arange(0, data.M, step)
    return bayesrank.ResponseData(
        data.R[:, keep], models=list(data.models), questions=list(np.asarray(data.questions)[keep])
    )


@pytest.mark.parametrize("set_name", SETS)
@pytest.mark.parametrize("model", ["rasch", "2pl", "3pl", "bradley_terry", "davidson",
                                   "davidson_luce"])
def test_default_fit_converges_on_real_data(real_sets, model, set_name):
    data = real_sets[set_name]
    if (model, set_name) not in FULL_SIZE:
        data = every_kth_question(data, MAX_QUESTIONS)
    spec = MODELS[model]
    result = measure(spec.build(data), target_accept=spec.target_accept, draws=1000, seed=0)
    assert result["divergences"] == 0, result
    assert result["r_hat"] <= 1.01, result
    assert result["min_bulk_ess"] >= 400, result
    assert result["min_tail_ess"] >= 400, result
