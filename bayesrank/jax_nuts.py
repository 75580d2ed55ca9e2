"""NUTS in JAX (NumPyro's kernel) on PyMC models, vectorised over chains and datasets.

A PyMC model is turned into pure JAX functions of ``(values..., data...)``:
its ``pm.Data`` containers become function *inputs* instead of baked-in
constants.  Each chain runs NumPyro's functional NUTS kernel (windowed
step-size and diagonal mass-matrix adaptation, then sampling) inside one
``lax.scan``; ``jax.vmap`` stacks chains, and a second ``vmap`` stacks datasets
of the same shape, so a whole batch of fits is one compiled XLA program.  It
runs on a GPU when JAX sees one and on the CPU otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pymc as pm

__all__ = ["JaxModel", "jaxify", "run_nuts"]

STAT_NAMES = ("lp", "energy", "diverging", "n_steps", "step_size", "acceptance_rate")


@dataclass
class JaxModel:
    """JAX functions of one PyMC model, with its data containers as inputs."""

    model: pm.Model
    value_names: list[str]
    data_names: list[str]
    output_names: list[str]
    log_likelihood_names: list[str]
    logp: Any
    outputs: Any
    log_likelihood: Any

    def data_values(self, model: pm.Model | None = None) -> list[np.ndarray]:
        """Current values of the data containers of ``model`` (default: this model)."""
        m = self.model if model is None else model
        return [np.asarray(m[name].get_value()) for name in self.data_names]


def jaxify(model: pm.Model, log_likelihood: Sequence[str] = ()) -> JaxModel:
    """Compile ``model``'s joint log-density, outputs and pointwise log-likelihoods to JAX.

    Parameters
    ----------
    model : pymc.Model
    log_likelihood : sequence of str
        Observed variables whose elementwise log-likelihood is wanted.
    """
    from pymc.sampling.jax import get_jaxified_graph
    from pytensor.graph.replace import clone_replace

    shared = list(model.data_vars)
    symbolic = {var: var.type(name=var.name) for var in shared}
    value_vars = model.value_vars
    outputs = list(pm.util.get_default_varnames(model.unobserved_value_vars, False))
    observed = [model[name] for name in log_likelihood]

    def compile_graph(graphs):
        replaced = clone_replace(list(graphs), replace=symbolic)
        return get_jaxified_graph(inputs=[*value_vars, *symbolic.values()], outputs=replaced)

    return JaxModel(
        model=model,
        value_names=[v.name for v in value_vars],
        data_names=[v.name for v in shared],
        output_names=[v.name for v in outputs],
        log_likelihood_names=list(log_likelihood),
        logp=compile_graph([model.logp()]),
        outputs=compile_graph(outputs),
        log_likelihood=compile_graph(model.logp(vars=observed, sum=False)) if observed else None,
    )


def initial_points(model: pm.Model, n: int, seed: int) -> list[np.ndarray]:
    """``n`` jittered starting points (PyMC's support point + U(-1, 1) on the free scale)."""
    from pymc.initial_point import make_initial_point_fn

    fn = make_initial_point_fn(model=model, jitter_rvs=set(model.free_RVs), return_transformed=True)
    seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=n)
    points = [fn(int(s)) for s in seeds]
    names = [v.name for v in model.value_vars]
    return [np.stack([p[name] for p in points]) for name in names]


def _chain_sampler(
    jm: JaxModel, *, tune: int, draws: int, target_accept: float, max_tree_depth: int
):
    import jax
    from numpyro.infer.hmc import hmc

    def potential_gen(*data):
        def potential(z):
            return -jm.logp(*z, *data)[0]

        return potential

    init_kernel, sample_kernel = hmc(potential_fn_gen=potential_gen, algo="NUTS")

    def one_chain(key, z0, data):
        state = init_kernel(
            tuple(z0),
            num_warmup=tune,
            target_accept_prob=target_accept,
            max_tree_depth=max_tree_depth,
            model_args=tuple(data),
            rng_key=key,
        )

        def step(s, _):
            s = sample_kernel(s, model_args=tuple(data))
            stats = (
                -s.potential_energy,
                s.energy,
                s.diverging,
                s.num_steps,
                s.adapt_state.step_size,
                s.accept_prob,
            )
            return s, (s.z, stats)

        state, _ = jax.lax.scan(lambda s, x: (step(s, x)[0], None), state, None, length=tune)
        _, (z, stats) = jax.lax.scan(step, state, None, length=draws)
        values = jax.vmap(lambda zz: jm.outputs(*zz, *data))(z)
        loglik = ()
        if jm.log_likelihood is not None:
            loglik = jax.vmap(lambda zz: jm.log_likelihood(*zz, *data))(z)
        return values, loglik, stats

    by_chain = jax.vmap(one_chain, in_axes=(0, 0, None))
    by_dataset = jax.vmap(by_chain, in_axes=(0, 0, 0))
    return jax.jit(by_dataset)


def run_nuts(
    jm: JaxModel,
    datasets: Sequence[Sequence[np.ndarray]],
    *,
    chains: int,
    draws: int,
    tune: int,
    seed: int,
    target_accept: float = 0.8,
    max_tree_depth: int = 10,
    cache_key: Any = None,
    model: pm.Model | None = None,
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Sample every dataset in one vectorised program.

    Parameters
    ----------
    jm : JaxModel
    datasets : sequence of data-value lists
        One list per dataset, aligned with ``jm.data_names``; all of equal shapes.
    cache_key : hashable, optional
        Reuse the program compiled under this key (with the same sizes).
    model : pymc.Model, optional
        Model whose prior gives the starting points (default ``jm.model``).

    Returns
    -------
    results : list of dict
        Per dataset: ``posterior`` {name: (chain, draw, ...)}, ``log_likelihood``
        {name: (chain, draw, ...)} and ``sample_stats`` {name: (chain, draw)}.
    timings : dict
        ``compile`` and ``sample`` wall-clock seconds.
    """
    import jax

    jax.config.update("jax_enable_x64", True)  # PyMC graphs are float64
    n_sets = len(datasets)
    t0 = time.perf_counter()
    import jax.numpy as jnp

    from bayesrank.sampling import cached

    keys = jax.random.split(jax.random.key(seed), n_sets * chains).reshape(n_sets, chains)
    starts = initial_points(jm.model if model is None else model, n_sets * chains, seed)
    z0 = [jnp.asarray(s.reshape(n_sets, chains, *s.shape[1:])) for s in starts]
    stacked = [jnp.asarray(np.stack(column)) for column in zip(*datasets, strict=True)]

    def make():
        program = _chain_sampler(
            jm, tune=tune, draws=draws, target_accept=target_accept, max_tree_depth=max_tree_depth
        )
        return program.lower(keys, z0, stacked).compile()

    settings = (n_sets, chains, draws, tune, target_accept, max_tree_depth)
    compiled, _ = cached(None if cache_key is None else ("nuts", cache_key, settings), make)
    t1 = time.perf_counter()
    values, loglik, stats = jax.block_until_ready(compiled(keys, z0, stacked))
    t2 = time.perf_counter()
    values = [np.asarray(v) for v in values]
    loglik = [np.asarray(v) for v in loglik]
    stats = [np.asarray(s) for s in stats]
    results = []
    for b in range(n_sets):
        results.append(
            {
                "posterior": {n: v[b] for n, v in zip(jm.output_names, values, strict=True)},
                "log_likelihood": {
                    n: v[b] for n, v in zip(jm.log_likelihood_names, loglik, strict=True)
                },
                "sample_stats": {
                    **{n: s[b] for n, s in zip(STAT_NAMES, stats, strict=True)},
                    "tree_depth": np.floor(np.log2(np.maximum(stats[3][b], 1))).astype(int) + 1,
                },
            }
        )
    return results, {"compile": t1 - t0, "sample": t2 - t1}
