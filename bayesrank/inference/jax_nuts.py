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

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pymc as pm

from bayesrank.inference.cache import cached
from bayesrank.inference.options import SamplerOptions
from bayesrank.models import scoring_model

__all__ = ["JaxModel", "ProgressBar", "jaxify", "run_nuts"]

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
    scorer = scoring_model(model)
    observed = [scorer[name] for name in log_likelihood]

    def compile_graph(graphs, of=model):
        # inputs by name, so the scoring twin's graphs take the model's values and data
        values = {v.name: v for v in value_vars}
        data = {v.name: symbolic[v] for v in shared}
        replace = {v: values[v.name] for v in of.value_vars}
        replace.update({v: data[v.name] for v in of.data_vars})
        replaced = clone_replace(list(graphs), replace=replace)
        return get_jaxified_graph(inputs=[*value_vars, *symbolic.values()], outputs=replaced)

    return JaxModel(
        model=model,
        value_names=[v.name for v in value_vars],
        data_names=[v.name for v in shared],
        output_names=[v.name for v in outputs],
        log_likelihood_names=list(log_likelihood),
        logp=compile_graph([model.logp()]),
        outputs=compile_graph(outputs),
        log_likelihood=(compile_graph(scorer.logp(vars=observed, sum=False), scorer)
                        if observed else None),
    )


def initial_points(model: pm.Model, n: int, seed: int) -> list[np.ndarray]:
    """``n`` jittered starting points (PyMC's support point + U(-1, 1) on the free scale)."""
    from pymc.initial_point import make_initial_point_fn

    fn = make_initial_point_fn(model=model, jitter_rvs=set(model.free_RVs), return_transformed=True)
    seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=n)
    points = [fn(int(s)) for s in seeds]
    names = [v.name for v in model.value_vars]
    return [np.stack([p[name] for p in points]) for name in names]


class _Relay:
    """Forwards progress reports from a compiled program to the current run's bar.

    A cached program keeps the callback it was compiled with, so the callback
    is this relay and each run points it at its own bar.
    """

    def __init__(self) -> None:
        self.bar: ProgressBar | None = None

    def __call__(self, iteration: Any, divergences: Any) -> None:
        if self.bar is not None:
            self.bar.update(int(iteration), int(divergences))


class ProgressBar:
    """One bar for a whole batch of chains: iterations, phase, divergences, elapsed time.

    Drawn with ``rich`` (a PyMC dependency) when importable, else as one
    carriage-return line; always on stderr.
    """

    def __init__(self, *, tune: int, draws: int, label: str) -> None:
        self.tune, self.total, self.label = tune, tune + draws, label
        self._start = time.perf_counter()
        self._progress = self._task = None
        try:
            from rich.console import Console
        except ImportError:  # rich comes with PyMC; a plain line otherwise
            self._console = None
        else:
            self._console = Console(stderr=True)

    def message(self, text: str) -> None:
        """One line of text (e.g. "compiling...") before the bar starts."""
        if self._console is not None:
            self._console.print(text, highlight=False)
        else:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    def start(self) -> None:
        self._start = time.perf_counter()
        if self._console is None:
            return
        from rich import progress as rp

        self._progress = rp.Progress(
            rp.TextColumn("{task.description}"),
            rp.BarColumn(bar_width=max(8, 36 - len(self._describe(0)))),  # fits 80 columns
            rp.MofNCompleteColumn(),
            rp.TextColumn("{task.fields[divergences]} divergences"),
            rp.TimeElapsedColumn(),
            rp.TimeRemainingColumn(),
            console=self._console,
        )
        self._task = self._progress.add_task(self._describe(0), total=self.total, divergences=0)
        self._progress.start()

    def _describe(self, iteration: int) -> str:
        phase = "warm-up" if iteration < self.tune else "sampling"
        return f"{phase:<8} {self.label}"

    def update(self, iteration: int, divergences: int) -> None:
        if self._progress is not None:
            self._progress.update(
                self._task,
                completed=iteration,
                description=self._describe(iteration),
                divergences=divergences,
            )
            return
        elapsed = time.perf_counter() - self._start
        sys.stderr.write(
            f"\r{self._describe(iteration)} {iteration}/{self.total} iterations, "
            f"{divergences} divergences, {elapsed:.1f} s"
        )
        sys.stderr.flush()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
        elif self._console is None:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _chain_sampler(
    jm: JaxModel,
    *,
    tune: int,
    draws: int,
    target_accept: float,
    max_tree_depth: int,
    report: _Relay | None = None,
):
    """The jitted program ``(keys, z0, data) -> (values, loglik, stats)`` for a batch.

    One ``lax.scan`` over warm-up and sampling iterations advances every chain
    of every dataset (the NUTS step vmapped over the flattened dataset x chain
    axis, each chain with its own copy of its dataset's statistics).  Tracing
    and compiling one NUTS step under one vmap, instead of two scans under two
    nested vmaps, took the tiny Rasch's program from 22 s to 12 s (2-core CPU,
    jax 0.12), with the same draws.  The scan sits outside the vmap so that
    ``report`` (a host callback, when given) is called once per reported
    iteration for the whole batch, every ~1% of iterations and on the last; the
    draws do not depend on it.
    """
    import jax
    import jax.numpy as jnp
    from numpyro.infer.hmc import hmc

    # jitted: NUTS evaluates the potential at several places in its program, and each
    # then reuses one trace of the PyMC graph
    negative_logp = jax.jit(lambda z, data: -jm.logp(*z, *data)[0])

    def potential_gen(*data):
        def potential(z):
            return negative_logp(z, data)

        return potential

    init_kernel, sample_kernel = hmc(potential_fn_gen=potential_gen, algo="NUTS")

    def init_one(key, z0, data):
        return init_kernel(
            tuple(z0),
            num_warmup=tune,
            target_accept_prob=target_accept,
            max_tree_depth=max_tree_depth,
            model_args=tuple(data),
            rng_key=key,
        )

    def step_one(state, data):
        s = sample_kernel(state, model_args=tuple(data))
        stats = (
            -s.potential_energy,
            s.energy,
            s.diverging,
            s.num_steps,
            s.adapt_state.step_size,
            s.accept_prob,
        )
        return s, (s.z, stats)

    # one vmap over every (dataset, chain) pair, each with its own copy of the data:
    # batching NUTS's nested while loops under two vmaps took twice the trace time
    init_all = jax.vmap(init_one)
    # jitted so that its shape probe and the scan body share one trace
    step_all = jax.jit(jax.vmap(step_one))
    total = tune + draws
    every = max(1, total // 100)

    def progress(iteration, divergences):
        if report is None:
            return
        jax.lax.cond(
            (iteration % every == 0) | (iteration == total),
            lambda: jax.debug.callback(report, iteration, divergences, ordered=True),
            lambda: None,
        )

    def program(keys, z0, data):
        n_sets, chains = keys.shape
        data = [jnp.repeat(d, chains, axis=0) for d in data]
        state = init_all(keys.reshape(-1), [z.reshape(-1, *z.shape[2:]) for z in z0], data)
        # One scan over warm-up and sampling traces and compiles the NUTS step once
        # (two scans took twice the compile time); warm-up iterations write into
        # slot 0 of the draw buffers, which the first kept draw then overwrites.
        z_like, stats_like = jax.eval_shape(lambda s: step_all(s, data)[1], state)
        buffers = jax.tree.map(
            lambda a: jnp.zeros((draws, *a.shape), a.dtype), (z_like, stats_like)
        )

        def iterate(carry, i):
            state, divergences, buffers = carry
            state, out = step_all(state, data)
            kept = i >= tune
            divergences = divergences + jnp.where(kept, jnp.sum(out[1][2]), 0)
            slot = jnp.maximum(i - tune, 0)
            buffers = jax.tree.map(
                lambda buf, new: jax.lax.dynamic_update_index_in_dim(buf, new, slot, 0),
                buffers, out,
            )
            progress(i + 1, divergences)
            return (state, divergences, buffers), None

        carry = (state, jnp.zeros((), dtype=jnp.int64), buffers)
        (_, _, (z, stats)), _ = jax.lax.scan(iterate, carry, jnp.arange(total))
        # buffers are (draw, dataset x chain, ...) -> (dataset x chain, draw, ...)
        z, stats = jax.tree.map(lambda a: jnp.moveaxis(a, 0, 1), (z, stats))

        def per_chain(f):
            per_draw = jax.vmap(lambda zz, d: f(*zz, *d), in_axes=(0, None))
            return jax.vmap(per_draw)

        values = per_chain(jm.outputs)(z, data)
        loglik = () if jm.log_likelihood is None else per_chain(jm.log_likelihood)(z, data)
        return jax.tree.map(
            lambda a: a.reshape(n_sets, chains, *a.shape[1:]), (values, loglik, stats)
        )

    return jax.jit(program)


def _run_nuts(
    jm: JaxModel,
    datasets: Sequence[Sequence[np.ndarray]],
    run: SamplerOptions,
    *,
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
    run : SamplerOptions
        Resolved options: chains, draws, tune, random_seed, target_accept and
        ``progressbar``, one bar on stderr for the whole batch (iterations of warm-up then
        sampling, divergences so far, elapsed time), updated from inside the
        compiled program every ~1% of iterations; "compiling..." is printed
        first when the program is compiled.  Same seed, same draws, with or
        without it (a program with the bar is compiled and cached separately).
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

    n_sets = len(datasets)
    t0 = time.perf_counter()
    import jax.numpy as jnp

    chains, draws, tune, seed = run.chains, run.draws, run.tune, run.random_seed
    target_accept, progressbar = run.target_accept, bool(run.progressbar)
    bar = None
    if progressbar:
        label = f"{chains} chain{'s' * (chains != 1)}"
        if n_sets > 1:
            label = f"{n_sets} datasets x {label}"
        bar = ProgressBar(tune=tune, draws=draws, label=label)
    keys = jax.random.split(jax.random.key(seed), n_sets * chains).reshape(n_sets, chains)
    starts = initial_points(jm.model if model is None else model, n_sets * chains, seed)
    z0 = [jnp.asarray(s.reshape(n_sets, chains, *s.shape[1:])) for s in starts]
    stacked = [jnp.asarray(np.stack(column)) for column in zip(*datasets, strict=True)]

    def make():
        if bar is not None:
            bar.message(f"Compiling NUTS ({bar.label}) ...")
        relay = _Relay() if progressbar else None
        program = _chain_sampler(
            jm,
            tune=tune,
            draws=draws,
            target_accept=target_accept,
            max_tree_depth=max_tree_depth,
            report=relay,
        )
        return program.lower(keys, z0, stacked).compile(), relay

    settings = (n_sets, chains, draws, tune, target_accept, max_tree_depth, progressbar)
    (compiled, relay), _ = cached(
        None if cache_key is None else ("nuts", cache_key, settings), make
    )
    t1 = time.perf_counter()
    if bar is not None:
        relay.bar = bar
        bar.start()
    try:
        values, loglik, stats = jax.block_until_ready(compiled(keys, z0, stacked))
        if bar is not None:
            jax.effects_barrier()  # every report has reached the bar
    finally:
        if bar is not None:
            relay.bar = None
            bar.close()
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


def run_nuts(jm: JaxModel, datasets: Sequence[list[np.ndarray]], run: SamplerOptions,
             **options: Any) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Sample every dataset in one vectorised program (see :func:`_run_nuts` for options).

    PyMC graphs are float64: JAX runs with 64-bit types inside this call only
    (``jax.enable_x64`` as a context), leaving the process-wide setting alone.
    """
    import jax

    with jax.enable_x64(True):
        return _run_nuts(jm, datasets, run, **options)
