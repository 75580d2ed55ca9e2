"""Posterior-predictive checks of ranking models on the observed scale.

Replicated data ``y_rep`` are drawn from the fitted generative model (PyMC's
``sample_posterior_predictive`` on a thinned set of posterior draws) and
returned as the ``posterior_predictive`` group of a copy of the posterior's
DataTree, next to ``observed_data``, so :func:`arviz.plot_ppc_dist` works on
it (``PPCResult.idata``).  The posterior itself is never changed.

For cell-count likelihoods -- binomial ``k`` (dims ``llm, question``) or
multinomial ``counts`` (dims ``llm, question, category``) -- the cell score is
``y_lm = sum_k w_k counts_lmk`` (the success count for binary data) and the cell
rate ``y_lm / n_lm``.  Test statistics ``T`` are compared with their replicated
distribution by the Bayesian p-value (Gelman, Meng & Stern 1996)

    p = P(T(y_rep) > T(y) | y) + 1/2 P(T(y_rep) = T(y) | y),

so p near 0 means the data show more of ``T`` than the model predicts and p near
1 less.  Statistics:

``accuracy`` (per model)
    ``sum_m y_lm / sum_m n_lm``.
``solve_rate`` (per question)
    ``sum_l y_lm / sum_l n_lm``.
``question_dispersion`` (per model, and its mean over models as ``all``)
    variance over questions of the model's cell rates.
``model_dispersion`` (per question, and its mean over questions as ``all``)
    variance over models of the question's cell rates.

Item-by-model interaction (a model unusually good or bad at particular
questions, beyond what ``theta_l - b_m`` explains) makes cell rates vary more
than a Rasch model predicts -- over-dispersion relative to the binomial -- which
the dispersion statistics detect with small p-values.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from bayesrank.data.reductions import ObservedCells
from bayesrank.datatree import group, has_group, with_groups
from bayesrank.errors import DataError
from bayesrank.inference.log_likelihood import MAX_BLOCK_VALUES
from bayesrank.models import scoring_model

if TYPE_CHECKING:
    from bayesrank.analysis.posterior import Posterior

__all__ = [
    "PPCResult", "posterior_predictive_check", "bayesian_p_values", "STATISTICS",
    "not_applicable_reason", "suggest_better_model", "better_model_call", "likelihood_of",
]

STATISTICS = ("accuracy", "solve_rate", "question_dispersion", "model_dispersion")
_CELL_DIMS = ("llm", "question")


@dataclass(frozen=True)
class PPCResult:
    """Test statistics of a posterior-predictive check.

    Attributes
    ----------
    statistics : pandas.DataFrame
        One row per (statistic, target): ``observed``, ``replicated_mean``,
        ``replicated_lower`` / ``replicated_upper`` (central 1 - alpha interval
        of ``T(y_rep)``), ``p_value``, ``flagged`` (p < alpha/2 or p > 1 - alpha/2)
        and ``direction`` (``"higher"``: data show more than predicted).
    replicated : dict of str -> xarray.DataArray
        ``T(y_rep)`` for each statistic, dims ``(sample, target)``.
    observed : dict of str -> xarray.DataArray
        ``T(y)`` for each statistic, dim ``target``.
    observed_var : str
        The likelihood variable that was replicated.
    alpha : float
    notes : list of str
        Plain-language findings (also used by the HTML report).
    idata : xarray.DataTree or None
        The posterior's tree with the ``posterior_predictive`` and
        ``observed_data`` groups, for ArviZ plots (``arviz.plot_ppc_dist``).
    """

    statistics: pd.DataFrame
    replicated: dict[str, xr.DataArray]
    observed: dict[str, xr.DataArray]
    observed_var: str
    alpha: float
    notes: list[str] = field(default_factory=list)
    idata: xr.DataTree | None = field(default=None, repr=False)

    @property
    def flagged(self) -> pd.DataFrame:
        """Rows whose p-value is extreme."""
        return self.statistics[self.statistics["flagged"]]

    @property
    def kept_draws(self) -> int:
        """Replicated draws whose cells ``idata`` holds: all of those the statistics read
        unless the data are large (``max_values`` of :func:`posterior_predictive_check`)."""
        if self.idata is None:
            return 0
        sizes = group(self.idata, "posterior_predictive").sizes
        return int(sizes["chain"] * sizes["draw"])

    @property
    def overall(self) -> pd.DataFrame:
        """The dataset-level rows (target ``"all"``)."""
        return self.statistics[self.statistics["target"] == "all"]

    def summary(self) -> pd.DataFrame:
        """Per statistic: number of targets, number flagged, and the overall p-value."""
        rows = []
        for name, rows_of in self.statistics.groupby("statistic", sort=False):
            per_target = rows_of[rows_of["target"] != "all"]
            overall = rows_of[rows_of["target"] == "all"]
            has_overall = len(overall) > 0
            rows.append(
                {
                    "statistic": name,
                    "targets": len(per_target),
                    "flagged": int(per_target["flagged"].sum()),
                    "overall_p_value": overall["p_value"].iloc[0] if has_overall else np.nan,
                    "overall_flagged": bool(overall["flagged"].any()) if has_overall else False,
                }
            )
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        return f"PPCResult({self.observed_var!r})\n{self.summary().to_string(index=False)}"


def bayesian_p_values(replicated: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Mid p-values ``P(T_rep > T_obs) + 1/2 P(T_rep = T_obs)`` along axis 0.

    Targets whose observed statistic is NaN (e.g. unobserved cells) get NaN.
    """
    rep = np.asarray(replicated, dtype=float)
    obs = np.asarray(observed, dtype=float)
    with np.errstate(invalid="ignore"):
        p = (rep > obs).mean(axis=0) + 0.5 * (rep == obs).mean(axis=0)
    return np.where(np.isnan(obs), np.nan, p)


def _scores(table: np.ndarray, weights: np.ndarray, categories: bool, cells: ObservedCells
            ) -> np.ndarray:
    """The observed cells' scores (..., cells) of counts ``table`` (..., L x M) over every
    cell, row by row, or of category counts (..., L x M, category) scored ``sum_k w_k
    counts_k``."""
    if not cells.every_cell:
        table = np.take(table, cells.flat, axis=-2 if categories else -1)
    return table @ weights if categories else table.astype(float)


def _statistics(score: np.ndarray, trials: np.ndarray, cells: ObservedCells
                ) -> dict[str, np.ndarray]:
    """All test statistics for the observed cells' scores ``score`` (..., cells) of their
    ``trials`` (cells,); a model or question with no observed cell gets NaN."""
    rate = score / trials

    def variance(total, spread, count: np.ndarray) -> np.ndarray:
        # two passes, as numpy's var: the mean of each model's (question's) rates, then the
        # mean squared deviation from it
        deviation = rate - spread(total(rate) / count)
        deviation *= deviation
        return total(deviation) / count

    with np.errstate(invalid="ignore", divide="ignore"):  # 0 / 0: nothing observed, NaN
        accuracy = cells.by_model(score) / cells.by_model(trials)
        solve_rate = cells.by_question(score) / cells.by_question(trials)
        question_dispersion = variance(cells.by_model, cells.of_model, cells.per_model)
        model_dispersion = variance(cells.by_question, cells.of_question, cells.per_question)
    with warnings.catch_warnings():  # a mean over all-NaN targets: nothing observed
        warnings.simplefilter("ignore", RuntimeWarning)
        qd_all = np.nanmean(question_dispersion, axis=-1)
        md_all = np.nanmean(model_dispersion, axis=-1)
    return {
        "accuracy": accuracy,
        "solve_rate": solve_rate,
        "question_dispersion": np.concatenate([question_dispersion, qd_all[..., None]], axis=-1),
        "model_dispersion": np.concatenate([model_dispersion, md_all[..., None]], axis=-1),
    }


def _cell_table(values: xr.DataArray, weights: np.ndarray) -> tuple[np.ndarray, bool]:
    """Counts ``k`` (..., llm, question) or category counts (..., llm, question, category)
    as an array (..., cells[, category]) over the table's L x M cells, row by row, and
    whether it has categories."""
    extra = [d for d in values.dims if d not in ("chain", "draw", *_CELL_DIMS)]
    lead = [d for d in ("chain", "draw") if d in values.dims]
    if len(extra) > 1 or (extra and values.sizes[extra[0]] != weights.size):
        raise DataError(
            f"cannot read cell scores from dims {values.dims}: expected (llm, question) counts "
            f"or (llm, question, category) with {weights.size} categories"
        )
    table = values.transpose(*lead, *_CELL_DIMS, *extra).values
    return table.reshape(*table.shape[:len(lead)], -1, *table.shape[len(lead) + 2:]), bool(extra)


def _cell_scores(values: xr.DataArray, weights: np.ndarray, cells: ObservedCells
                 ) -> np.ndarray:
    """The observed cells' scores (..., cells): ``sum_k w_k counts_lmk``, or ``k_lm``."""
    table, categories = _cell_table(values, weights)
    return _scores(table, weights, categories, cells)


#: Replicated cells whose statistics are computed at once: the statistics' temporaries
#: then stay in the cache (blocks of 2^25 values took twice the time, in page faults).
_CHUNK_VALUES = 2**20


def _draws_statistics(values: xr.DataArray, weights: np.ndarray, trials: np.ndarray,
                      cells: ObservedCells) -> dict[str, np.ndarray]:
    """The statistics (chain, draw, target) of replicated counts (chain, draw, llm,
    question[, category]), a few draws at a time."""
    table, categories = _cell_table(values, weights)
    lead = table.shape[:2]
    draws = table.reshape(-1, *table.shape[2:])
    step = max(1, _CHUNK_VALUES // max(1, table.shape[2]))
    chunks = [_statistics(_scores(draws[i:i + step], weights, categories, cells), trials,
                          cells) for i in range(0, len(draws), step)]
    return {name: np.concatenate([c[name] for c in chunks]).reshape(*lead, -1)
            for name in STATISTICS}


def _thinned_posterior(posterior: Posterior, num_draws: int | None) -> xr.Dataset:
    post = group(posterior.idata, "posterior")
    if num_draws is None:
        return post
    if num_draws < 1:
        raise ValueError(f"num_draws must be positive, got {num_draws}")
    total = post.sizes["chain"] * post.sizes["draw"]
    step = max(1, math.ceil(total / num_draws))
    return post.isel(draw=slice(None, None, step))


def _observed_values(posterior: Posterior, var: str) -> xr.DataArray:
    idata = posterior.idata
    if has_group(idata, "observed_data") and var in idata["observed_data"]:
        return idata["observed_data"][var]
    model = posterior.pymc_model
    value = model.rvs_to_values[model[var]]
    array = value.get_value() if hasattr(value, "get_value") else value.eval()
    return xr.DataArray(np.asarray(array), dims=model.named_vars_to_dims.get(var), name=var)


@contextmanager
def _without_pymc_info() -> Iterator[None]:
    """Hold back, here only, PyMC's "Sampling: [k]" INFO line for every predictive draw,
    PyTensor's note that a custom likelihood's random draws run in Numba's object mode (a
    speed remark about a few thousand draws, not a problem), and PyMC's warning that
    Potentials are ignored: the one Potential of bayesrank's models (the collapsed Rasch's
    integral over its one-sided difficulties) is a density of the parameters alone, its
    scoring twin, which replicates, has none, and the replicated data are drawn given frozen
    posterior draws, which already carry it, so ignoring it there is exact."""
    logger = logging.getLogger("pymc")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Numba will use object mode",
                                    category=UserWarning)
            warnings.filterwarnings("ignore", message="The effect of Potentials on other "
                                    "parameters is ignored", category=UserWarning)
            yield
    finally:
        logger.setLevel(level)


def replicate(
    posterior: Posterior, *, num_draws: int | None = 500, random_seed: int | None = 0,
    max_values: int = MAX_BLOCK_VALUES,
) -> xr.DataTree:
    """Replicated data from the posterior's generative model, as a new DataTree.

    Uses the posterior's ``pymc_model`` on a thinned posterior (every k-th draw
    of every chain, about ``num_draws`` in total).  Returns a copy of
    ``posterior.idata`` with a ``posterior_predictive`` group and an
    ``observed_data`` group holding the observed variable, ready for
    :func:`arviz.plot_ppc_dist`; the posterior itself is left unchanged.  It holds
    every replicated cell of every draw: :func:`replicated_blocks` makes the same
    draws a block at a time (``max_values`` values per block).
    """
    blocks = list(replicated_blocks(posterior, num_draws=num_draws, random_seed=random_seed,
                                    max_values=max_values))
    return _with_replicates(posterior, xr.concat(blocks, dim="draw"))


def _with_replicates(posterior: Posterior, predictive: xr.Dataset) -> xr.DataTree:
    """A copy of the posterior's tree with ``predictive`` and the observed data."""
    var = posterior.observed_var
    groups = {"posterior_predictive": predictive}
    if not has_group(posterior.idata, "observed_data") or var not in posterior.idata[
        "observed_data"
    ]:
        groups["observed_data"] = _observed_values(posterior, var).to_dataset(name=var)
    return with_groups(posterior.idata, **groups)


#: How the forward (replicating) functions are compiled, here and in the prior check:
#: they are random methods (NumPy) after a few elementwise ops, so the Python linker runs
#: them as fast as a compiled one, and compiles in milliseconds where the default Numba
#: linker took about 0.9 s for every block (11 of 35 s of a PPC at 50 x 14,000); the
#: draws are the same (docs/scale.md).
FORWARD_COMPILE = {"mode": "FAST_COMPILE"}


def replicated_blocks(
    posterior: Posterior, *, num_draws: int | None = 500, random_seed: int | None = 0,
    max_values: int = MAX_BLOCK_VALUES,
) -> Iterator[xr.Dataset]:
    """The ``posterior_predictive`` group of :func:`replicate`, a block of draws at a time.

    The thinned draws (every k-th of every chain, about ``num_draws``) are cut into blocks
    of whole draws of every chain, each of at most about ``max_values`` replicated values
    (at least one draw), and each block is replicated from its own child of
    ``SeedSequence(random_seed)``: the same seed and ``max_values`` give the same draws,
    which :func:`replicate` concatenates.  Replicated from the posterior's generative model
    (``pymc.sample_posterior_predictive`` at the block's posterior draws), except for the
    exact Bayes@N posterior, whose cells are replicated at new exact draws of ``p``
    (:meth:`bayesrank.conjugate.ExactDraws.fresh_counts`: the same predictive
    distribution, at the block's cost instead of a pass over every stored draw).
    """
    import pymc as pm

    var = _observed_var(posterior)
    thinned = _thinned_posterior(posterior, num_draws)
    model = scoring_model(posterior.pymc_model)
    values_per_draw = thinned.sizes["chain"] * _observed_values(posterior, var).size
    step = max(1, max_values // max(1, values_per_draw))
    starts = range(0, thinned.sizes["draw"], step)
    seeds = np.random.SeedSequence(random_seed).spawn(len(starts))
    exact = posterior._exact_sampler()
    for start, seed in zip(starts, seeds, strict=True):
        block = thinned.isel(draw=slice(start, start + step))
        if exact is not None:
            yield _fresh_block(posterior, exact, block, np.random.default_rng(seed))
            continue
        with _without_pymc_info():
            predictive = pm.sample_posterior_predictive(
                xr.DataTree.from_dict({"posterior": block}),
                model=model,
                var_names=[var],
                # the posterior draws are what is replicated from: keep them, never resample
                freeze_vars=[rv.name for rv in model.free_RVs if rv.name in block],
                random_seed=int(seed.generate_state(1)[0]),
                progressbar=False,
                extend_inferencedata=False,
                compile_kwargs=FORWARD_COMPILE,
            )
        yield group(predictive, "posterior_predictive")


def _observed_var(posterior: Posterior) -> str:
    """The observed variable's name; a one-line error when there is no generative model."""
    if posterior.pymc_model is None or posterior.observed_var is None:
        raise ValueError(
            "posterior-predictive checks need the generative model: this Posterior has no "
            "pymc_model/observed_var (fit it with bayesrank.fit, or pass them to Posterior)"
        )
    return posterior.observed_var


def _fresh_block(posterior: Posterior, exact, block: xr.Dataset, rng) -> xr.Dataset:
    """Bayes@N's replicated category counts for ``block``'s chains and draws."""
    chains, draws = block.sizes["chain"], block.sizes["draw"]
    counts = exact.fresh_counts(posterior.data.reductions.trials, chains * draws, rng)
    var = posterior.observed_var
    dims = ("chain", "draw", *posterior.pymc_model.named_vars_to_dims[var])
    coords = {d: block[d].values for d in ("chain", "draw")}
    return xr.Dataset({var: (dims, counts.reshape(chains, draws, *counts.shape[1:]))},
                      coords=coords)


_OBSERVATION_KINDS = {
    "davidson_luce": "setwise events (for each question and trial, which of the models that "
                     "answered were among the winners)",
    "bradley_terry": "pairwise win counts between models",
    "davidson": "pairwise win and tie counts between models",
}


# What to fit instead when a model's dispersion checks fail (docs/report.md, measured on
# the real sets in ../shared/data): the beta-binomial absorbs cell-level over-dispersion,
# and 2PL adds per-question discrimination on top.
_BETTER_FIT = {
    ("bayes", "multinomial"): ("2pl", "beta_binomial"),
    ("rasch", "binomial"): ("rasch", "beta_binomial"),
    ("2pl", "binomial"): ("2pl", "beta_binomial"),
    ("rasch", "beta_binomial"): ("2pl", "beta_binomial"),
    ("3pl", "binomial"): ("3pl", "beta_binomial"),
}
# With one trial per cell the beta-binomial is the Bernoulli and cannot fit better; the 2PL's
# discriminations can (PSIS-LOO on the real one-trial sets, docs/report.md).
_BETTER_FIT_ONE_TRIAL = {
    ("bayes", "multinomial"): ("2pl", "binomial"),
    ("rasch", "binomial"): ("2pl", "binomial"),
}


def one_trial_per_cell(data) -> bool:
    """True when no model-question cell has more than one observed trial."""
    if data is None or not hasattr(data.reductions, "trials"):  # pairwise data: no cells
        return False
    return int(data.reductions.trials.max(initial=0)) <= 1


def likelihood_of(posterior: Posterior) -> str:
    """``"beta_binomial"``, ``"binomial"`` or ``"multinomial"`` (Bayes@N), read from the tree."""
    names = set(posterior.idata["posterior"].data_vars)
    if "phi" in names or "inv_sqrt_phi" in names:
        return "beta_binomial"
    if posterior.model in ("bayes", "bayes_greedy"):
        return "multinomial"
    return "binomial"


def suggest_better_model(posterior: Posterior, result: PPCResult) -> str | None:
    """A model that would fit better when the overall dispersion checks fail, else None.

    Returned as the call that fits it, e.g. ``fit(data, "2pl", likelihood="beta_binomial")``;
    on categorical data, where only Bayes@N reads categories, the call fits the binary
    outcomes (``data.binarize()``, the top category a success).  With one trial per cell
    the beta-binomial is the Bernoulli, so it is never the advice there.
    """
    if not bool(result.overall["flagged"].any()):
        return None
    return better_model_call(posterior)


def better_model_call(posterior: Posterior) -> str | None:
    """The call that fits the model PSIS-LOO prefers to ``posterior``'s on the real
    benchmarks (docs/report.md), or None when none of those tried does better.  A
    closed-form Bayes@N (no draws) is read as the Dirichlet-multinomial it is."""
    data = getattr(posterior, "data", None)
    table = _BETTER_FIT_ONE_TRIAL if one_trial_per_cell(data) else _BETTER_FIT
    likelihood = likelihood_of(posterior) if hasattr(posterior, "idata") else "multinomial"
    better = table.get((posterior.model.replace("bayes_greedy", "bayes"), likelihood))
    if better is None:
        return None
    kind, likelihood = better
    # the item-response models read 0/1 only
    target = "data.binarize()" if data is not None and not data.is_binary else "data"
    option = "" if likelihood == "binomial" else f', likelihood="{likelihood}"'
    return f'fit({target}, "{kind}"{option})'


def not_applicable_reason(posterior: Posterior) -> str | None:
    """Why the cell-count statistics cannot be computed for ``posterior``, or None.

    The statistics compare replicated and observed counts per model-question
    cell, so they need a likelihood observed on dims (llm, question).  Pairwise
    (Bradley-Terry, Davidson) and setwise (Davidson-Luce) models observe other
    units; this is decided from the model's dims, before any replication.
    """
    model, var = posterior.pymc_model, posterior.observed_var
    if model is None or var is None:
        return None
    dims = tuple(model.named_vars_to_dims.get(var, ()) or ())
    if set(_CELL_DIMS) <= set(dims):
        return None
    what = _OBSERVATION_KINDS.get(posterior.model, f"{var!r} with dims {dims or '(none)'}")
    return (
        f"The posterior-predictive check does not apply to the {posterior.model} model: its "
        "statistics compare replicated and observed success counts per model-question cell, "
        f"but this model observes {what}, not cell counts, so there is no cell to compare. "
        "Its data can still be replicated with bayesrank.analysis.ppc.replicate(posterior) "
        "and inspected with ArviZ's plots."
    )


def posterior_predictive_check(
    posterior: Posterior,
    *,
    num_draws: int | None = 500,
    random_seed: int | None = 0,
    alpha: float = 0.05,
    max_values: int = MAX_BLOCK_VALUES,
) -> PPCResult:
    """Replicate the data from the posterior and compute test statistics with p-values.

    Parameters
    ----------
    posterior : Posterior
        Needs ``pymc_model`` and ``observed_var``; the observed variable must be
        cell counts (dims ``llm, question`` or ``llm, question, category``).
    num_draws : int or None
        Approximate number of posterior draws to replicate from (thinned evenly);
        ``None`` uses all.  500 gives p-values with MC error below 0.025.
    random_seed : int, optional
    alpha : float
        A p-value below ``alpha/2`` or above ``1 - alpha/2`` is flagged.
    max_values : int
        Replicated values held at once: the draws are replicated and reduced to their
        statistics a block at a time (:func:`replicated_blocks`), so memory grows with
        the cells, not with cells x draws.  ``result.idata`` keeps the replicated cells
        of the first blocks, as many draws as fit in ``max_values`` (all of them unless
        the data are large: ``result.kept_draws`` says how many).

    Returns
    -------
    PPCResult
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    reason = not_applicable_reason(posterior)
    if reason is not None:
        raise DataError(reason)
    data, var = posterior.data, _observed_var(posterior)
    weights, trials = data.weights, data.reductions.trials
    observed_values = _observed_values(posterior, var)
    shape = tuple(observed_values.sizes.get(dim) for dim in _CELL_DIMS)
    if shape != trials.shape:
        raise DataError(f"observed {var!r} has {shape} cells but the data have {trials.shape}")
    cells = data.reductions.observed_cells
    cell_trials = cells.gather(trials).astype(float)
    obs_score = _cell_scores(observed_values, weights, cells)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in STATISTICS}
    kept: list[xr.Dataset] = []
    room = max_values
    for block in replicated_blocks(posterior, num_draws=num_draws, random_seed=random_seed,
                                   max_values=max_values):
        rep_values = block[var]
        if not set(_CELL_DIMS) <= set(rep_values.dims):
            raise DataError(
                f"posterior-predictive statistics need cell counts with dims (llm, question); "
                f"{posterior.model!r} observes {var!r} with dims {rep_values.dims}; inspect "
                "the replicated data (bayesrank.analysis.ppc.replicate(posterior)) with "
                "ArviZ's plots."
            )
        for name, values in _draws_statistics(rep_values, weights, cell_trials, cells).items():
            parts[name].append(values)
        if rep_values.size <= room or not kept:  # the first blocks, for ArviZ's plots
            kept.append(block)
            room -= rep_values.size
    rep_stats = {name: np.concatenate(values, axis=1).reshape(-1, values[0].shape[-1])
                 for name, values in parts.items()}  # the samples chain by chain
    table, replicated, observed = _statistics_table(
        rep_stats, _statistics(obs_score, cell_trials, cells), data, alpha)
    tree = _with_replicates(posterior, xr.concat(kept, dim="draw"))
    notes = _notes(table, alpha, posterior.model)
    return PPCResult(table, replicated, observed, var, alpha, notes, tree)


def _statistics_table(rep_stats: dict[str, np.ndarray], obs_stats: dict[str, np.ndarray],
                      data, alpha: float):
    """The rows of :attr:`PPCResult.statistics` and the statistics as DataArrays."""
    targets = {
        "accuracy": list(data.models),
        "solve_rate": list(data.questions),
        "question_dispersion": [*data.models, "all"],
        "model_dispersion": [*data.questions, "all"],
    }
    rows = []
    replicated, observed = {}, {}
    for name in STATISTICS:
        rep, obs = rep_stats[name], obs_stats[name]
        p = bayesian_p_values(rep, obs)
        lo, hi = np.nanquantile(rep, [alpha / 2, 1 - alpha / 2], axis=0)
        replicated[name] = xr.DataArray(rep, dims=("sample", "target"),
                                        coords={"target": targets[name]}, name=name)
        observed[name] = xr.DataArray(obs, dims=("target",), coords={"target": targets[name]},
                                      name=name)
        rows.append(
            pd.DataFrame(
                {
                    "statistic": name,
                    "target": targets[name],
                    "observed": obs,
                    "replicated_mean": np.nanmean(rep, axis=0),
                    "replicated_lower": lo,
                    "replicated_upper": hi,
                    "p_value": p,
                }
            )
        )
    table = pd.concat(rows, ignore_index=True)
    table["flagged"] = (table["p_value"] < alpha / 2) | (table["p_value"] > 1 - alpha / 2)
    table["direction"] = np.where(table["p_value"] < 0.5, "higher", "lower")
    return table, replicated, observed


def _notes(table: pd.DataFrame, alpha: float, model: str) -> list[str]:
    notes = []
    for name, label in (("question_dispersion", "across questions within a model"),
                        ("model_dispersion", "across models within a question")):
        row = table[(table["statistic"] == name) & (table["target"] == "all")].iloc[0]
        if row["p_value"] < alpha / 2:
            notes.append(
                f"Over-dispersion: cell solve rates vary more {label} than the {model} model "
                f"predicts (p = {row['p_value']:.3f}). Some models are unusually strong or weak "
                "on particular questions, beyond binomial noise; a likelihood with per-cell "
                "over-dispersion (likelihood=\"beta_binomial\") fits such data (a 2PL alone "
                "did not on real benchmarks, docs/report.md), and intervals from this model "
                "may be too narrow."
            )
        elif row["p_value"] > 1 - alpha / 2:
            notes.append(
                f"Under-dispersion: cell solve rates vary less {label} than the {model} model "
                f"predicts (p = {row['p_value']:.3f})."
            )
    for name, what in (("accuracy", "models"), ("solve_rate", "questions")):
        article = "an" if name[0] in "aeiou" else "a"
        sub = table[(table["statistic"] == name) & table["p_value"].notna()]
        n_flag = int(sub["flagged"].sum())
        if n_flag:
            notes.append(
                f"{n_flag} of {len(sub)} {what} have {article} {name.replace('_', ' ')} "
                f"outside the central {1 - alpha:.0%} of its posterior-predictive distribution."
            )
    if not notes:
        notes.append(
            f"No misfit detected: every overall statistic lies inside the central "
            f"{1 - alpha:.0%} of its posterior-predictive distribution."
        )
    return notes
