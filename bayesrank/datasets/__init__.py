"""Bundled example data.

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

__all__ = ["example", "example_path", "EXAMPLE_KEYS"]

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
