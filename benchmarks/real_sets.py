"""The real binary sets of ``../shared/data`` as ``ResponseData``, for the benchmarks.

Only ``numpy``, ``pandas`` and ``bayesrank.ResponseData``: a child process running the
package at an old git ref (``bench_models_ref.py``) reads the same data.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

import bayesrank

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def load_real_sets(root: Path = DATA) -> dict[str, bayesrank.ResponseData]:
    """The real binary data sets in ``root`` (``../shared/data``), by short name."""
    sets = {}
    z = np.load(root / "real_lcb_repair_2024_10" / "R.npz")
    sets["lcb_repair"] = bayesrank.ResponseData(
        z["repair"], models=list(z["models"]), questions=list(z["questions"])
    )
    z = np.load(root / "real_zeroeval_math_l5" / "R.npz")
    sets["zeroeval_math_l5"] = bayesrank.ResponseData(
        z["math_l5"], models=list(z["models"]), questions=list(z["questions"])
    )
    z = np.load(root / "real_reasoning_gym_hard" / "R.npz")
    sets["reasoning_gym_hard"] = bayesrank.ResponseData(
        z["rg_hard"], models=list(z["models"]), questions=list(z["questions"])
    )
    with open(root / "matharena_aime2025_I" / "counts_correct_of_4.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    counts = np.array([[int(x) for x in row[1:]] for row in rows[1:]])
    sets["matharena_aime2025_I"] = bayesrank.ResponseData(
        (np.arange(4) < counts[..., None]).astype(np.int8),
        models=[row[0] for row in rows[1:]],
        questions=rows[0][1:],
    )
    sets["alpaca_eval_wins"] = alpaca_eval_wins(root)
    return sets


def alpaca_eval_wins(root: Path = DATA) -> bayesrank.ResponseData:
    """AlpacaEval 2.0 (52 x 805 x 1): 1 where the judge preferred the model's output to
    GPT-4 Turbo's (preference > 1.5), 0 for a loss or a tie (its SOURCE.md)."""
    table = pd.read_csv(root / "alpaca_eval2_gpt4turbo_judge"
                        / "preferences_model_by_instruction.csv")
    wins = (table.drop(columns="model").to_numpy() > 1.5).astype(np.int8)
    return bayesrank.ResponseData(wins[..., None], models=table["model"].tolist())


def every_kth_question(data: bayesrank.ResponseData, k: int) -> bayesrank.ResponseData:
    """Questions 0, k, 2k, ... in the data's order (the data themselves for k = 1)."""
    if k == 1:
        return data
    keep = np.arange(0, data.M, k)
    return bayesrank.ResponseData(
        data.R[:, keep], models=list(data.models), questions=list(np.asarray(data.questions)[keep])
    )
