"""A suite of benchmarks: per-benchmark abilities pooled into one skill per model.

Models l = 1..L are the union of the benchmarks' models, matched by name; benchmark b
has the questions Q_b and was run by the models L_b.  With k_lm successes of model l on
question m of benchmark b out of n_lm trials (cells only for l in L_b, m in Q_b):

    skill_l   ~ ZeroSumNormal(ability_scale) over the L models        common skill
    sigma_b   = tau exp(0.5 eps_b),  tau ~ HalfNormal(1),  eps_b ~ Normal(0, 1)
                                                                      spread of benchmark b
    d_.b      ~ ZeroSumNormal(sigma_b) over L_b; d_lb ~ Normal(0, sigma_b) for l not in L_b
    theta_lb  = skill_l + d_lb                                        ability on b
    Rasch:  mu_b ~ Normal(0, ability_scale),  s_b ~ HalfNormal(2.5)
            b_m  ~ Normal(mu_b, s_b)            for m in Q_b          difficulties
            eta_lm = theta_lb - b_m
    2PL:    log a_m ~ ZeroSumNormal(0.5) over b's informed questions, Normal(0, 0.5) else
            mu_beta_b ~ Normal(0, ability_scale),  s_b ~ HalfNormal(2.5)
            beta_m  ~ Normal(mu_beta_b, s_b)    for m in Q_b          intercepts
            eta_lm = a_m theta_lb + beta_m,   difficulty b_m = -beta_m / a_m
    k_lm      ~ Binomial(n_lm, logistic(eta_lm))      l in L_b, m in Q_b

(variables ``skill``, ``spread`` = sigma_b, ``deviation`` = d, ``theta``
(llm, benchmark); ``mu_b``, ``sigma_b``, ``b`` (Rasch) or ``log_a``, ``a``, ``mu_beta``,
``sigma_beta``, ``beta``, ``b`` (2PL) over the suite's ``question`` axis, the
benchmarks' questions one after the other; observed ``k_{name}`` per benchmark.)

Identification, as in the single-benchmark models (:mod:`models.irt`): the likelihood
of benchmark b is unchanged by theta_.b + t with b_m + t (beta_m - a_m t), so the
location sits on the abilities.  The skills sum to zero over all models; each
benchmark's deviations sum to zero over the models that ran it, so the mean ability of
L_b on b is the skill's and the benchmark's own level is its items' location mu_b.  That
location gets the abilities' scale, not the single model's ability_scale / sqrt(L): one
suite holds easy and hard benchmarks (GSM8K's models solve 90% of it, MATH level 5's
about a third), and a common prior on their levels would pull them together.  The 2PL's
log-discriminations sum to zero over each benchmark's informed questions (solved by some
but not all of its models), which fixes the abilities' scale on it.

The spreads share a scale tau: the data inform sigma_b only through the models that ran b
and other benchmarks too, and with two benchmarks only sigma_1^2 + sigma_2^2 (the spread
of a model's difference between them); independent priors left the split between them
to the prior's wide tails (on the shared ZeroEval suite: R-hat 1.08 and a bulk ESS of 38
on the skills, whose draws follow that split), the common scale keeps the ratio of two
spreads within a factor exp(0.5 sqrt(2) 1.96) = 4 a priori (95%).

Sampled as the data inform it (:mod:`models.pooling`): the abilities theta_lb of the cells
run, from their exact marginal given the spreads (skill and deviations integrated out), in
each benchmark's contrasts (centred) and level (given the contrasts, non-centred); the
skills and the abilities on benchmarks not run from their exact conditional given those, by
pathwise conditioning on standard normals.  The data pin each theta_lb down
(hundreds of questions), but with two benchmarks only sigma_1^2 + sigma_2^2 is identified:
sampled as skills and deviations, every skill (the 1 / sigma_b^2-weighted average of a
model's abilities) moved with the poorly identified split of the spread; sampled so, only
the spreads move along it and the skills follow within each draw (docs/suite.md).  In the
Rasch, a benchmark's location mu_b and its centred difficulties are sampled as differences
from the mean ability of its models (shears, Jacobian 1): the direction the likelihood
leaves to the priors, theta_.b + t with b_m + t, is then a move of the abilities alone,
not of every difficulty with them, and mu_b's own coordinate is its offset from them; in
the 2PL likewise beta_m + a_m level_b and mu_beta_b + mean_b(a) level_b (theta_.b + t
with beta_m - a_m t).

A model that did not run b has no cells there: its theta_lb is skill_l plus a deviation
drawn from the spread, a prediction from the hierarchy, never imputed data.  Items are
centred where the benchmark pins them down (:func:`models.irt.informative_items`, and
only informed questions), non-centred elsewhere (:func:`models.transforms.item_effects`).
The cells' likelihoods are the single-benchmark ones, one table per benchmark
(:func:`models.likelihoods.binomial_rasch`, :func:`~models.likelihoods.binomial_2pl`).

:class:`SuiteData` prepares the benchmarks once (and refuses a suite that does not hang
together: a benchmark sharing no model with the others is a one-line DataError);
:func:`rasch` and :func:`two_pl` build the variants, :func:`build` picks one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from bayesrank.data import ResponseData
from bayesrank.errors import DataError

from ._common import check_option, positive_scale, response_data
from .irt import _reflected_zero_sum, informative_items, question_split
from .likelihoods import binomial_2pl, binomial_rasch
from .pooling import pooled_abilities
from .transforms import item_effects

__all__ = ["SuiteData", "build", "rasch", "two_pl", "KINDS"]

KINDS = ("rasch", "2pl")


@dataclass(frozen=True, eq=False)
class Benchmark:
    """One benchmark of the suite: its cells and where they sit in the suite's axes."""

    name: str
    k: np.ndarray  # successes (L_b, M_b)
    n: np.ndarray  # trials (L_b, M_b)
    rows: np.ndarray  # the suite's model index of each of its models (L_b,)
    questions: tuple[str, ...]
    start: int  # its first question on the suite's question axis

    @property
    def columns(self) -> slice:
        """Its questions on the suite's ``question`` axis."""
        return slice(self.start, self.start + self.k.shape[1])

    @property
    def dims(self) -> tuple[str, str]:
        return (f"llm_{self.name}", f"question_{self.name}")


@dataclass(frozen=True, eq=False)
class SuiteData:
    """The benchmarks as the suite models read them, prepared and checked once (:meth:`of`)."""

    models: tuple[str, ...]  # the union, in order of first appearance
    benchmarks: tuple[Benchmark, ...]
    data: Mapping[str, ResponseData]

    @classmethod
    def of(cls, benchmarks: Mapping[str, Any]) -> SuiteData:
        """Validate ``{name: ResponseData}``: binary, two or more, one connected suite."""
        if not isinstance(benchmarks, Mapping) or len(benchmarks) < 2:
            raise DataError("a suite needs a mapping of at least two benchmarks "
                            "{name: ResponseData}; fit a single benchmark with bayesrank.fit")
        data = {str(name): response_data(d) for name, d in benchmarks.items()}
        for name, d in data.items():
            _binary_benchmark(name, d)
            d.require_models(f"fit_benchmarks (benchmark {name!r})")
        models = tuple(dict.fromkeys(m for d in data.values() for m in d.models))
        _require_connected(data)
        index = {m: i for i, m in enumerate(models)}
        parts, start = [], 0
        for name, d in data.items():
            red = d.reductions
            rows = np.array([index[m] for m in d.models])
            parts.append(Benchmark(name, red.successes, red.trials, rows, d.questions, start))
            start += d.M
        return cls(models, tuple(parts), data)

    @property
    def names(self) -> list[str]:
        return [b.name for b in self.benchmarks]

    @property
    def coords(self) -> dict[str, list]:
        coords = {"llm": list(self.models), "benchmark": self.names,
                  "question": [f"{b.name}/{q}" for b in self.benchmarks for q in b.questions]}
        for b in self.benchmarks:
            coords[b.dims[0]] = [self.models[i] for i in b.rows]
            coords[b.dims[1]] = list(b.questions)
        return coords

    def ran(self) -> np.ndarray:
        """(L, B) bool: which model ran which benchmark."""
        out = np.zeros((len(self.models), len(self.benchmarks)), bool)
        for j, b in enumerate(self.benchmarks):
            out[b.rows, j] = True
        return out

    def question_benchmark(self) -> np.ndarray:
        """The benchmark index of each question on the suite's axis."""
        return np.concatenate([np.full(b.k.shape[1], j) for j, b in enumerate(self.benchmarks)])


def _binary_benchmark(name: str, data: ResponseData) -> None:
    """A one-line DataError for a categorical benchmark, with the way out."""
    if data.is_binary:
        return
    what = (f"benchmark {name!r} has {data.n_categories} outcome categories (0..{data.C}), but "
            "the suite models read binary outcomes (0/1)")
    exc = DataError(f"{what}: reduce it first (data.binarize(), success = the top category) "
                    "or fit it alone with bayesrank.fit(data, 'bayes')")
    exc.cli_message = (f"{what}: store it as 0/1 (success = the top category), or report "  # type: ignore[attr-defined]
                       "it alone (bayesrank report FILE)")
    raise exc


def _require_connected(data: Mapping[str, ResponseData]) -> None:
    """A one-line DataError naming the benchmarks that share no model with the rest."""
    names = list(data)
    reached, frontier = {names[0]}, [names[0]]
    while frontier:
        models = set(data[frontier.pop()].models)
        for other in names:
            if other not in reached and models & set(data[other].models):
                reached.add(other)
                frontier.append(other)
    apart = [n for n in names if n not in reached]
    if apart:
        what = (f"benchmark(s) {', '.join(map(repr, apart))} share no model with "
                f"{', '.join(map(repr, sorted(reached)))}; a suite compares models through the "
                "models its benchmarks have in common: match the model names")
        exc = DataError(f"{what}, or fit the benchmarks apart with bayesrank.fit")
        exc.cli_message = f"{what}, or report each benchmark alone (bayesrank report FILE)"  # type: ignore[attr-defined]
        raise exc


#: sd of a benchmark's log-spread around the suite's (module docstring)
SPREAD_SD = 0.5


def spreads(size: int):
    """sigma_b = tau exp(SPREAD_SD eps_b): tau ~ HalfNormal(1), eps_b ~ Normal(0, 1)."""
    tau = pm.HalfNormal("spread_scale", 1.0)
    eps = pm.Normal("spread_z", 0.0, 1.0, shape=size)
    return pm.Deterministic("spread", tau * pt.exp(SPREAD_SD * eps), dims="benchmark")


def skills_and_abilities(suite: SuiteData, ability_scale: float):
    """skill (llm), spread sigma_b (benchmark) and theta_lb = skill_l + d_lb, sampled as the
    abilities of the cells run and the rest drawn given them (:mod:`models.pooling`); and
    each benchmark's level, the mean ability of its models."""
    spread = spreads(len(suite.benchmarks))
    skill, theta, level = pooled_abilities(suite.ran(), ability_scale, spread)
    skill = pm.Deterministic("skill", skill, dims="llm")
    theta = pm.Deterministic("theta", theta, dims=("llm", "benchmark"))
    pm.Deterministic("deviation", theta - skill[:, None], dims=("llm", "benchmark"))
    return skill, theta, level


def pooled_items(name: str, scale_name: str, suite: SuiteData, location_scale: float,
                 level=None, slope=None):
    """e_m ~ Normal(location_b, scale_b) for m in Q_b: a location ~ Normal(0, location_scale)
    and scale ~ HalfNormal(2.5) per benchmark; centred where the benchmark pins its
    informed questions down (:func:`models.irt.informative_items`), non-centred elsewhere.

    With ``level`` (B,), the mean ability of each benchmark's models, the location and the
    centred effects are sampled as their differences from how they move with level_b
    (shears, Jacobian 1): the Rasch's difficulties by +level_b, the 2PL's intercepts
    beta_m = -a_m b_m by -a_m level_b (``slope`` = a, (M,)) and their location by the mean
    of those, -mean_b(a) level_b.
    A benchmark's abilities, location and effects then move together in one step, the
    direction the likelihood leaves to the priors (module docstring), and the location's
    free coordinate is its own (from the effects' mean, not with every effect)."""
    which = suite.question_benchmark()
    size = len(suite.benchmarks)
    no_walls = {"wall": pt.zeros(size), "side": pt.zeros(size), "width": pt.zeros(size),
                "walls": False}
    zeros = pt.zeros(which.size)
    if level is None:
        location_shift, shift = pt.zeros(size), zeros
    elif slope is None:  # e = v + level_b
        location_shift, shift = -level, -level[which]
    else:  # e = v - a_m level_b, location = v - mean_b(a) level_b
        mean_slope = pt.zeros(size)[which].inc(slope) / np.bincount(which, minlength=size)
        location_shift, shift = mean_slope * level, slope * level[which]
    location = item_effects(f"mu_{name}", pt.zeros(size), location_scale, location_scale,
                            centred=np.ones(size), shift=location_shift, dims="benchmark",
                            **no_walls)
    scale = pm.HalfNormal(scale_name, 2.5, dims="benchmark")
    centred = np.concatenate([question_split(b.k, b.n, informative_items(b.k, b.n)).centred
                              for b in suite.benchmarks]).astype(float)
    return item_effects(name, location[which], scale[which], scale[which], centred=centred,
                        shift=shift, wall=zeros, side=zeros, width=zeros, walls=False)


def log_discriminations(suite: SuiteData, scale: float = 0.5):
    """log a_m: zero sum over each benchmark's informed questions, Normal(0, scale) elsewhere
    (:func:`models.irt.log_discriminations`, one benchmark at a time)."""
    parts = []
    for j, b in enumerate(suite.benchmarks):
        split = question_split(b.k, b.n).arrays()
        parts.append(_reflected_zero_sum(f"log_a_{j}", b.k.shape[1], split["log_a_pivot"],
                                         split["log_a_free"], split["log_a_direction"], scale))
    return pm.Deterministic("log_a", pt.concatenate(parts), dims="question")


def _cells(b: Benchmark):
    """A benchmark's successes and trials as data of the current model."""
    return (pm.Data(f"successes_{b.name}", b.k, dims=b.dims),
            pm.Data(f"trials_{b.name}", b.n, dims=b.dims))


def rasch(suite: SuiteData, ability_scale: float = 3.0) -> pm.Model:
    """The suite's Rasch, line by line (module docstring)::

        skill, sigma_b, theta_lb = skill_l + d_lb              (skills_and_abilities)
        b_m     ~ Normal(mu_b, s_b)                             (pooled_items)
        k_lm    ~ Binomial(n_lm, logistic(theta_lb - b_m))     per benchmark
    """
    with pm.Model(coords=suite.coords) as model:
        _, theta, level = skills_and_abilities(suite, ability_scale)
        b = pooled_items("b", "sigma_b", suite, ability_scale, level=level)
        for j, bench in enumerate(suite.benchmarks):
            k, n = _cells(bench)
            binomial_rasch(f"k_{bench.name}", n, theta[bench.rows, j][:, None],
                           b[bench.columns], k, bench.dims)
    return model


def two_pl(suite: SuiteData, ability_scale: float = 3.0) -> pm.Model:
    """The suite's 2PL, line by line (module docstring)::

        skill, sigma_b, theta_lb = skill_l + d_lb              (skills_and_abilities)
        log a_m ~ ZeroSumNormal(0.5) over b's informed questions (log_discriminations)
        beta_m  ~ Normal(mu_beta_b, s_b)                        (pooled_items)
        b_m     = -beta_m / a_m
        k_lm    ~ Binomial(n_lm, logistic(a_m theta_lb + beta_m))   per benchmark
    """
    with pm.Model(coords=suite.coords) as model:
        _, theta, level = skills_and_abilities(suite, ability_scale)
        a = pm.Deterministic("a", pt.exp(log_discriminations(suite)), dims="question")
        beta = pooled_items("beta", "sigma_beta", suite, ability_scale, level=level, slope=a)
        pm.Deterministic("b", -beta / a, dims="question")
        for j, bench in enumerate(suite.benchmarks):
            k, n = _cells(bench)
            binomial_2pl(f"k_{bench.name}", n, theta[bench.rows, j][:, None],
                         a[bench.columns], beta[bench.columns], k, bench.dims)
    return model


def build(benchmarks: Mapping[str, Any] | SuiteData, *, kind: str = "rasch",
          ability_scale: float = 3.0) -> pm.Model:
    """The suite model of ``benchmarks`` ({name: ResponseData}, binary): pick the variant.

    Parameters
    ----------
    benchmarks : mapping of str to ResponseData (or array_like), or SuiteData
        Two or more benchmarks, models matched by name; every benchmark must share a
        model with the others (else DataError).
    kind : {"rasch", "2pl"}
    ability_scale : float
        Prior sd of the skills and of the benchmarks' item locations (logit scale).

    Returns
    -------
    pymc.Model
        ``skill`` (llm), mean 0; ``theta`` (llm, benchmark); ``spread`` (benchmark);
        observed ``k_{name}`` per benchmark.
    """
    check_option("kind", kind, KINDS)
    scale = positive_scale("ability_scale", ability_scale)
    suite = benchmarks if isinstance(benchmarks, SuiteData) else SuiteData.of(benchmarks)
    return {"rasch": rasch, "2pl": two_pl}[kind](suite, scale)
