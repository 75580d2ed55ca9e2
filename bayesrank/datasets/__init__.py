"""Bundled example data.

``livecodebench()`` returns REAL results: 15 LLMs x 713 LiveCodeBench problems
x 10 sampled programs (self-repair scenario, leaderboard of 2024-10-22), under
CC BY-SA 4.0 with its attribution in ``LIVECODEBENCH_ATTRIBUTION.md``.

``example()`` returns a SIMULATED benchmark in the shape of the paper's study
(20 LLMs x 30 questions per benchmark x 80 top-p trials, plus one greedy decode
per question as R0).  The outcomes are random draws calibrated to the paper's
published per-model accuracy tables; they are not real model results.  See
``bayesrank/datasets/README.md`` and ``_generate.py`` for how they were made.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from bayesrank.data import ResponseData
from bayesrank.errors import DataError

__all__ = [
    "example", "example_path", "EXAMPLE_KEYS", "livecodebench", "livecodebench_path",
    "LIVECODEBENCH_SOURCE",
]

HERE = Path(__file__).resolve().parent
EXAMPLE_KEYS = ("aime24", "aime25", "hmmt_feb_2025", "brumo_2025", "combined")


def example_path(greedy: bool = False) -> Path:
    """Path of the example archive in the paper's layout (top-p or greedy)."""
    return HERE / ("example_greedy.npz" if greedy else "example.npz")


@lru_cache(maxsize=8)
def example(key: str = "combined", *, greedy_prior: bool = True) -> ResponseData:
    """The simulated example benchmark.

    Parameters
    ----------
    key : {"aime24", "aime25", "hmmt_feb_2025", "brumo_2025", "combined"}
        One benchmark (M = 30) or all four concatenated (M = 120).
    greedy_prior : bool
        Attach the simulated greedy decodes as per-model prior outcomes
        R0 of shape (20, M, 1).
    """
    from bayesrank.data.io import load

    if key not in EXAMPLE_KEYS:
        raise DataError(f"unknown example benchmark {key!r}; choose one of {EXAMPLE_KEYS}")
    models = (HERE / "example_models.txt").read_text().split("\n")[:-1]
    data = load(example_path(), key=key, R0=example_path(greedy=True) if greedy_prior else None,
                models=models)
    n_q = data.M
    questions = [f"{key}_q{m + 1:02d}" for m in range(n_q)] if key != "combined" else [
        f"{k}_q{m + 1:02d}" for k in EXAMPLE_KEYS[:-1] for m in range(30)
    ]
    return ResponseData(data.R, models=data.models, questions=questions, R0=data.R0)


LIVECODEBENCH_SOURCE = (
    "LiveCodeBench self-repair leaderboard 2024-10-22 (real results; CC BY-SA 4.0, "
    "Jain et al., arXiv:2403.07974)"
)


def livecodebench_path() -> Path:
    """Path of the bundled real LiveCodeBench archive (a bayesrank ``.npz``)."""
    return HERE / "livecodebench_repair_2024_10.npz"


@lru_cache(maxsize=1)
def livecodebench() -> ResponseData:
    """REAL benchmark results: 15 LLMs x 713 LiveCodeBench problems x 10 samples.

    The LiveCodeBench leaderboard's self-repair scenario as of 2024-10-22: for
    each (model, problem) the number of 10 sampled programs that pass every
    hidden test (binary R with the count's ones first: the trial order is not
    known, only the counts are).  Licensed CC BY-SA 4.0; attribution and the
    changes made are in ``LIVECODEBENCH_ATTRIBUTION.md`` next to the file.
    About 15% of the problems are solved by no model in any trial.
    """
    from bayesrank.data.io import load

    return load(livecodebench_path())
