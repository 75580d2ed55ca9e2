"""How far the binomial 2PL's min-ESS/s can go with NUTS on this machine: a ceiling.

Issue 9 asks for >= 10x the pre-issue-9 2PL's min-ESS/s on every real set.  On the
single-trial sets (ZeroEval MATH-L5 38 x 721 x 1, Reasoning Gym hard 10 x 4550 x 1) this
bounds what any implementation of the same posterior can reach with NUTS:

* **gradient floor**: one log-likelihood and its gradient over all L x M cells of
  ``-softplus(s (a_m theta_l + beta_m))`` (s = +-1 by the outcome), in one fused Numba
  loop (vectorised ``exp`` and ``log1p``, :mod:`models._vector_math`) and as a JAX ``jit`` of
  ``value_and_grad``; the priors are left out, so both are below any full model's cost;
* **the model's gradient**: the log-density and gradient of ``bayesrank``'s 2PL as its
  nutpie Numba build compiles it (what the sampler calls);
* **the default fit**: ``bayesrank.fit(data, "2pl", random_seed=0)``: leapfrog steps per
  draw, warm-up and kept draws, min bulk ESS per kept draw, min-ESS/s.

The ceiling assumes the fit's own steps per draw and ESS per draw, no per-step overhead
beyond the floor's gradient, every core busy and **no warm-up**:
``cores x ESS per draw / (steps per draw x floor seconds)``.  It is printed next to
10x the pre-issue-9 2PL's min-ESS/s as given (``--old-ess-per-s``, measured by
``bench_models_real.py --models 2pl`` in the same session).

Run: ``python benchmarks/bench_gradient_floor.py [--sets zeroeval_math_l5,...]
[--old-ess-per-s zeroeval_math_l5=23.5,...]``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from bench_models_real import load_real_sets

import bayesrank
from bayesrank.inference.backends import model_var_names
from bayesrank.inference.nutpie_models import _functions

#: Reads the real sets in ../shared/data: run_all.py skips it where they are absent.
NEEDS_SHARED_DATA = True


def per_call_s(func, *args, repeats: int = 400) -> float:
    """Least mean seconds per call over 3 runs of ``repeats`` calls (after one warm call)."""
    func(*args)
    best = np.inf
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(repeats):
            func(*args)
        best = min(best, (time.perf_counter() - t0) / repeats)
    return best


def numba_floor(y: np.ndarray):
    """The fused log-likelihood + gradient of the binary 2PL cells, and its arguments.

    One pass per model (row) over the questions, with the vectorisable e^x and log1p of
    ``models._vector_math`` (8 cells per instruction where the CPU has AVX-512): per cell
    terms into row buffers, then the row's sums.  With NumPy's scalar ``exp``/``log``
    this loop ran one cell at a time and was no floor (2026-12-01, docs/samplers.md).
    """
    from bayesrank.models.fast._vector_math import KERNEL_OPTIONS, softplus_and_sigmoid
    from numba import njit

    @njit(**KERNEL_OPTIONS)
    def value_and_grad(theta, log_a, beta, sign):
        L, M = sign.shape
        a = np.exp(log_a)
        g_theta, g_log_a, g_beta = np.zeros(L), np.zeros(M), np.zeros(M)
        cells, weighted = np.empty(M), np.empty(M)
        total = 0.0
        for l in range(L):
            t = theta[l]
            for m in range(M):
                x = sign[l, m] * (a[m] * t + beta[m])
                softplus, sigmoid = softplus_and_sigmoid(x)
                r = -sign[l, m] * sigmoid
                cells[m] = softplus
                weighted[m] = r * a[m]
                g_log_a[m] += r * t
                g_beta[m] += r
            total -= cells.sum()
            g_theta[l] = weighted.sum()
        return total, g_theta, g_log_a * a, g_beta

    L, M = y.shape
    rng = np.random.default_rng(0)
    args = (rng.normal(size=L), 0.1 * rng.normal(size=M), rng.normal(size=M), 1.0 - 2.0 * y)
    return value_and_grad, args


def jax_floor(y: np.ndarray):
    """The same cells as a JAX ``jit`` of ``value_and_grad`` (float64), and its argument."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    L, M = y.shape
    sign = jnp.asarray(1.0 - 2.0 * y)

    def loglik(params):
        theta, log_a, beta = params[:L], params[L:L + M], params[L + M:]
        return -jnp.sum(jax.nn.softplus(sign * (theta[:, None] * jnp.exp(log_a) + beta)))

    grad = jax.jit(jax.value_and_grad(loglik))
    params = jnp.asarray(np.random.default_rng(0).normal(size=L + 2 * M) * 0.1)
    return (lambda p: jax.block_until_ready(grad(p))), (params,)


def model_gradient_s(data: bayesrank.ResponseData) -> float:
    """Seconds per log-density + gradient of bayesrank's 2PL, nutpie's Numba build."""
    from bayesrank.models import MODELS

    model = MODELS["2pl"].build(data)
    _, _, logp_fn, _, initial, _, _ = _functions(model, model_var_names(model), "NUMBA",
                                                 join_expanded=True)
    return per_call_s(logp_fn, initial(0))


def default_fit(data: bayesrank.ResponseData) -> dict[str, float]:
    """Steps per draw, draws, ESS per kept draw and min-ESS/s of the default 2PL fit."""
    t0 = time.perf_counter()
    post = bayesrank.fit(data, "2pl", random_seed=0, progressbar=False, log_likelihood=False)
    wall = time.perf_counter() - t0
    stats = post.idata["sample_stats"]
    kept = int(stats.sizes["chain"] * stats.sizes["draw"])
    ess = float(post.diagnostics["ess_bulk"].min())
    return {"wall_s": wall, "steps_per_draw": float(np.asarray(stats["n_steps"]).mean()),
            "kept_draws": kept, "ess_per_draw": ess / kept, "min_ess_per_s": ess / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="zeroeval_math_l5,reasoning_gym_hard")
    parser.add_argument("--old-ess-per-s", default="",
                        help="SET=VALUE,...: the pre-issue-9 2PL's min-ESS/s, same session")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    old = {k: float(v) for k, v in (item.split("=") for item in args.old_ess_per_s.split(",")
                                    if item)}
    cores = os.cpu_count() or 1
    sets = load_real_sets()
    for name in args.sets.split(","):
        data = sets[name]
        if data.N != 1:
            raise SystemExit(f"{name} has {data.N} trials per cell: the floor is for N = 1")
        y = data.R[..., 0].astype(float)
        floor_numba, floor_jax = (per_call_s(func, *func_args) for func, func_args in
                                  (numba_floor(y), jax_floor(y)))
        model_s = model_gradient_s(data)
        fit = default_fit(data)
        floor = min(floor_numba, floor_jax)
        ceiling = cores * fit["ess_per_draw"] / (fit["steps_per_draw"] * floor)
        print(f"{name} ({data.L} x {data.M} cells = {y.size}): gradient floor "
              f"{floor_numba * 1e6:.0f} us (Numba), {floor_jax * 1e6:.0f} us (JAX); "
              f"bayesrank's 2PL {model_s * 1e6:.0f} us")
        print(f"  default fit: {fit['wall_s']:.1f} s, {fit['steps_per_draw']:.1f} leapfrog steps "
              f"per draw, {fit['ess_per_draw']:.3f} min bulk ESS per kept draw, "
              f"{fit['min_ess_per_s']:.1f} min-ESS/s")
        line = (f"  ceiling on {cores} cores (floor gradient, no warm-up, no overhead): "
                f"{ceiling:.0f} min-ESS/s")
        if name in old:
            line += f"; 10x the pre-issue-9 2PL: {10 * old[name]:.0f} min-ESS/s"
        print(line, flush=True)


if __name__ == "__main__":
    main()
