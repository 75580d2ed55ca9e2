"""Write ``slow_rules.npz``: inputs and outputs of the two slow study rules' numeric cores.

Run once against the engine *before* issue 51's item 4 (main at ab339b3) to freeze
its outputs; ``tests/test_slow_rules_snapshot.py`` checks today's cores against them::

    PYTHONPATH=/path/to/old/checkout python tests/snapshots/make_slow_rules.py OUT.npz

Inputs (kept in the archive, so the test does not depend on how stacks are built):

- ``ex{5,10,15}``: the bundled aime24 example (20 x 30 x 80), 24 N=1 draws (trial d of
  every cell) restricted to one pool of 5, 10 and 15 models (numpy seed 0);
- ``real``: 12 models of the shared ``real_zeroeval_gsm8k`` set (N=1) on 8 windows of
  30 questions, one problem per window.

Outputs per input set: the 3PL MAP, 3PL joint-ML and 2PL MAP fits of
:func:`bayesrank.baselines.irt.xpl_batch.fit_xpl_batch` (abilities, item parameters,
objective, iterations, unconverged stages, failed problems) and the Bayesian
Bradley-Terry sampler (:func:`bayesrank.baselines.paired.bt_posterior_draws_batch`, seed
42, the paper's 5,000 + 1,000 steps): per chain the mean of its draws, its acceptance
rate and a SHA-256 of its draws' bytes.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np

import bayesrank as br
from bayesrank.baselines import paired
from bayesrank.baselines.irt.xpl_batch import Layout, fit_xpl_batch

SHARED = Path(__file__).resolve().parents[3] / "shared"
#: name -> xPL layout (the paper's defaults: reg_a 0.01, reg_c 0.1, upper 0.5).
LAYOUTS = {
    "3pl_map": Layout("3pl", 1.0, 0.01, 0.1, 0.5, None),
    "3pl_jml": Layout("3pl", None, 0.01, 0.1, 0.5, None),
    "2pl_map": Layout("2pl", 1.0, 0.01, 0.1, 0.5, None),
}


def wins(X: np.ndarray) -> np.ndarray:
    """Decisive wins ``W_ij = sum_m x_im (1 - x_jm)`` of binary outcomes X (B, L, M)."""
    return np.einsum("blm,bkm->blk", X, 1.0 - X)


def inputs() -> dict[str, np.ndarray]:
    """Binary outcome stacks (B, L, M) of every input set."""
    data = br.datasets.example("aime24")
    rng = np.random.default_rng(0)
    sets = {}
    for size in (5, 10, 15):
        pool = np.sort(rng.choice(data.L, size, replace=False))
        sets[f"ex{size}"] = np.stack([data.R[pool, :, d] for d in range(24)]).astype(float)
    z = np.load(SHARED / "data" / "real_zeroeval_gsm8k" / "R.npz", allow_pickle=False)
    R = z["gsm8k"][:12, :240, 0].astype(float)
    sets["real"] = np.stack([R[:, 30 * w:30 * (w + 1)] for w in range(8)])
    return sets


def outputs(sets: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    out = {}
    for name, X in sets.items():
        out[f"{name}/X"] = X
        for lay_name, lay in LAYOUTS.items():
            fit = fit_xpl_batch(X, np.ones_like(X), lay, 500)
            key = f"{name}/{lay_name}"
            out[f"{key}/theta"], out[f"{key}/v"] = fit.theta, fit.v
            out[f"{key}/objective"], out[f"{key}/n_iter"] = fit.objective, fit.n_iter
            out[f"{key}/unconverged"] = fit.unconverged
            out[f"{key}/failed"] = np.array([e is not None for e in fit.errors])
        draws, rates = paired.bt_posterior_draws_batch(wins(X), seed=42)
        out[f"{name}/mcmc/mean"] = draws.mean(axis=1)
        out[f"{name}/mcmc/rate"] = rates
        out[f"{name}/mcmc/sha256"] = np.array([hashlib.sha256(d.tobytes()).hexdigest()
                                               for d in draws])
    return out


if __name__ == "__main__":
    np.savez_compressed(sys.argv[1], **outputs(inputs()))
