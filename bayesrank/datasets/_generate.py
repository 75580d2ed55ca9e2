"""Generate the bundled SIMULATED example benchmark (deterministic).

The example imitates the paper's setting (20 reasoning LLMs, four math
benchmarks of M = 30 questions, N = 80 top-p trials and one greedy decode per
question) but every outcome is simulated.  Calibration targets are the paper's
published per-model accuracy table (``paper_accuracy.tsv``: greedy accuracy and
the mean and standard deviation across trials of top-p accuracy).

Generative process, per benchmark:

- question difficulty ``b_m ~ Normal(0, s_b^2)`` and a model-by-question
  interaction ``e_lm ~ Normal(0, 0.6^2)``;
- top-p success probability ``p_lm = logistic(a_l - b_m + e_lm)`` where the
  ability ``a_l`` is solved so that mean_m p_lm equals the model's published
  top-p mean accuracy;
- ``s_b`` is chosen by bisection so that the average across models of the
  per-trial accuracy standard deviation, ``sqrt(sum_m p(1 - p)) / M``, matches the
  published average ``top_p_std`` (difficulty spread makes per-trial accuracy
  less variable than i.i.d. coin flips);
- ``R_lmn ~ Bernoulli(p_lm)`` for n = 1..80;
- greedy decode ``R0_lm ~ Bernoulli(logistic(a_l + g_l - b_m + e_lm + d_lm))``
  with its own disagreement noise ``d_lm ~ Normal(0, 1.2^2)`` and an offset
  ``g_l`` solved to match the published greedy accuracy, so greedy and sampling
  disagree the way the paper describes.

Run ``python -m bayesrank.datasets._generate`` to rewrite ``example.npz`` and
``example_greedy.npz``; a test checks the committed files equal a fresh run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize, special

HERE = Path(__file__).resolve().parent
SEED = 20251126
N_TRIALS = 80
N_QUESTIONS = 30
BENCHMARKS = {  # paper table name -> key in the paper authors' archive layout
    "AIME24": "aime24",
    "AIME25": "aime25",
    "HMMT25": "hmmt_feb_2025",
    "BrUMO25": "brumo_2025",
}
INTERACTION_SD = 0.6
GREEDY_NOISE_SD = 1.2


def calibration_table() -> pd.DataFrame:
    """The paper's per-model accuracy table (benchmark, model, greedy and top-p stats)."""
    return pd.read_csv(HERE / "paper_accuracy.tsv", sep="\t")


def _solve_offset(logits: np.ndarray, target: float) -> float:
    """Offset c with mean(logistic(logits + c)) == target."""
    target = float(np.clip(target, 1e-3, 1 - 1e-3))
    return optimize.brentq(lambda c: special.expit(logits + c).mean() - target, -30, 30)


def _probabilities(means: np.ndarray, base: np.ndarray, spread: float) -> np.ndarray:
    logits = spread * base
    return np.stack([special.expit(row + _solve_offset(row, m)) for row, m in zip(logits, means,
                                                                                   strict=True)])


def _simulate_benchmark(table: pd.DataFrame, rng: np.random.Generator):
    L, M = len(table), N_QUESTIONS
    means = table["top_p_mean"].to_numpy()
    target_sd = float(table["top_p_std"].mean())
    # Standardised difficulty + interaction; the spread multiplies both.
    z_b = rng.standard_normal(M)
    z_e = rng.standard_normal((L, M)) * INTERACTION_SD
    base = -z_b[None, :] + z_e

    def trial_sd_gap(spread: float) -> float:
        p = _probabilities(means, base, spread)
        return float(np.mean(np.sqrt((p * (1 - p)).sum(axis=1)) / M) - target_sd)

    spread = optimize.brentq(trial_sd_gap, 0.05, 10.0, xtol=1e-6)
    p = _probabilities(means, base, spread)
    R = (rng.random((L, M, N_TRIALS)) < p[..., None]).astype(np.int8)
    greedy_logits = special.logit(np.clip(p, 1e-9, 1 - 1e-9)) + rng.standard_normal((L, M)) * (
        GREEDY_NOISE_SD
    )
    greedy_p = np.stack(
        [
            special.expit(row + _solve_offset(row, g))
            for row, g in zip(greedy_logits, table["greedy_acc"].to_numpy(), strict=True)
        ]
    )
    R0 = (rng.random((L, M)) < greedy_p).astype(np.int8)[..., None]
    return R, R0


def generate() -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[str]]:
    """Return (top-p tensors by key, greedy tensors by key, model names)."""
    table = calibration_table()
    rng = np.random.default_rng(SEED)
    models: list[str] | None = None
    topp: dict[str, np.ndarray] = {}
    greedy: dict[str, np.ndarray] = {}
    for name, key in BENCHMARKS.items():
        rows = table[table["benchmark"] == name].reset_index(drop=True)
        names = rows["model"].tolist()
        if models is None:
            models = names
        elif names != models:
            raise RuntimeError(f"model order differs in {name}")
        topp[key], greedy[key] = _simulate_benchmark(rows, rng)
    topp["combined"] = np.concatenate([topp[k] for k in BENCHMARKS.values()], axis=1)
    greedy["combined"] = np.concatenate([greedy[k] for k in BENCHMARKS.values()], axis=1)
    assert models is not None
    return topp, greedy, models


def main() -> None:
    topp, greedy, models = generate()
    np.savez_compressed(HERE / "example.npz", **topp)
    np.savez_compressed(HERE / "example_greedy.npz", **greedy)
    (HERE / "example_models.txt").write_text("\n".join(models) + "\n")
    for key, R in topp.items():
        acc = R.mean(axis=(1, 2))
        print(f"{key:14s} shape={R.shape} accuracy {acc.min():.3f}..{acc.max():.3f}")


if __name__ == "__main__":
    main()
