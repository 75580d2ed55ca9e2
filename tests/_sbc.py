"""Simulation-based calibration (SBC) of the Bayesian models: a small reusable harness.

Talts, Betancourt, Simpson, Vehtari & Gelman (2018), "Validating Bayesian inference
algorithms with simulation-based calibration", arXiv:1804.06788.  If parameters
theta* are drawn from the prior, data y from the likelihood given theta*, and
S draws theta_1..theta_S from the exact posterior p(theta | y), then the rank

    r = #{s : f(theta_s) < f(theta*)}          in {0, ..., S}

of any test quantity f (a parameter, a contrast, the log-likelihood of y) is
uniform on {0, ..., S}, for every f, whatever the model.  A wrong prior, likelihood,
Jacobian or sampler shows as non-uniform ranks: a U shape (posterior too narrow),
a hump (too wide) or a slope (biased).  Test quantities may depend on the data
(Modrak et al. 2023, "Simulation-based calibration checking for Bayesian
computation: the choice of test quantities shapes sensitivity", Bayesian Analysis):
the log-likelihood of the simulated data is one.

Conditioning on data-dependent structure.  Some models' priors depend on the
data through a discrete structure S(y): the IRT models centre the abilities on the
*informed* models (some success and some failure) and the 2PL/3PL put the zero sum of
log a on the informed questions (``models/irt.py``).  Such a model is a proper
posterior p_S(theta | y) ∝ pi_S(theta) L(y | theta) with S = S(y).  SBC stays exact
if every replication first picks a structure S independently of the parameters it
then uses (here: the structure of a pilot data set drawn from the all-informed prior),
draws (theta*, y) from pi_S x L, and keeps the pair only when S(y) = S (rejection,
:func:`conditional`): the kept pairs have joint density w(S(y)) pi_{S(y)}(theta) L(y |
theta), w a function of the structure alone, so p(theta | y) is the model's posterior.

A replication here is small (a few models and questions), the posterior draws of one
chain are thinned so that they are near-independent (autocorrelated draws give
over-dispersed ranks: false alarms), and the ranks of each quantity are tested for
uniformity by Pearson's chi-square on equal-width bins (:func:`uniformity_p_values`).
The case fails when any p-value is below ``alpha / Q`` (Bonferroni over its Q
quantities): a false-alarm rate of at most ``alpha`` per case.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

__all__ = [
    "Case",
    "Replicate",
    "Result",
    "Settings",
    "conditional",
    "rank_statistics",
    "run",
    "uniformity_p_values",
]

Params = Mapping[str, np.ndarray]


@dataclass(frozen=True)
class Replicate:
    """One simulated data set and the parameters it was drawn from (model coordinates)."""

    data: Any
    truth: Params


@dataclass(frozen=True)
class Settings:
    """Size of an SBC run.

    ``draws`` thinned posterior draws per fit (ranks in 0..draws; ``draws + 1`` must be
    a multiple of ``bins``), every ``thin``-th of ``draws * thin`` after ``tune`` warm-up
    iterations; ``alpha`` the case's false-alarm rate (Bonferroni over its quantities).
    """

    replications: int = 100
    draws: int = 99
    thin: int = 5
    tune: int = 300
    bins: int = 10
    alpha: float = 0.005
    seed: int = 0


@dataclass(frozen=True)
class Case:
    """What to calibrate.

    ``simulate(rng)`` draws one :class:`Replicate`; ``posterior(data, seed, settings)``
    returns thinned posterior draws (name -> array with a leading draw axis) and the
    number of divergent transitions; ``quantities(params, data)`` maps parameters with a
    leading sample axis (length 1 for the truth) to named (S,) test quantities.
    """

    label: str
    simulate: Callable[[np.random.Generator], Replicate]
    posterior: Callable[[Any, int, Settings], tuple[Params, int]]
    quantities: Callable[[Params, Any], dict[str, np.ndarray]]


@dataclass
class Result:
    """Ranks of every quantity over the replications, their p-values and the cost."""

    label: str
    settings: Settings
    names: list[str]
    ranks: np.ndarray  # (replications, Q)
    wall_s: float
    divergences: int = 0
    p_values: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        p = uniformity_p_values(self.ranks, self.settings.draws, self.settings.bins)
        self.p_values = dict(zip(self.names, p.tolist(), strict=True))

    @property
    def threshold(self) -> float:
        return self.settings.alpha / len(self.names)

    @property
    def passed(self) -> bool:
        return min(self.p_values.values()) >= self.threshold

    def failing(self) -> dict[str, float]:
        return {k: p for k, p in self.p_values.items() if p < self.threshold}

    def summary(self) -> str:
        worst = min(self.p_values, key=self.p_values.get)
        return (f"{self.label}: {self.ranks.shape[0]} replications, {len(self.names)} quantities, "
                f"min p {self.p_values[worst]:.3g} ({worst}), Bonferroni threshold "
                f"{self.threshold:.2g}, {self.divergences} divergences, {self.wall_s:.0f} s")


def rank_statistics(truth: Mapping[str, np.ndarray], draws: Mapping[str, np.ndarray],
                    names: list[str]) -> np.ndarray:
    """r_q = #{s : draw_sq < truth_q} for each quantity in ``names``.

    Every quantity here is continuous, so a draw equals the truth with probability 0 and
    ties need no random splitting (repeated draws of a stuck chain are ties among draws,
    which leave r unchanged)."""
    return np.array([int(np.sum(np.asarray(draws[q]) < np.asarray(truth[q]).reshape(-1)[0]))
                     for q in names])


def uniformity_p_values(ranks: np.ndarray, draws: int, bins: int) -> np.ndarray:
    """Pearson chi-square p-value per column of ``ranks`` (values 0..draws), equal bins.

    Bin b holds the ranks b (draws + 1) / bins .. (b + 1) (draws + 1) / bins - 1, so each
    bin has the same probability under uniformity; bins - 1 degrees of freedom.
    """
    if (draws + 1) % bins:
        raise ValueError(f"draws + 1 = {draws + 1} is not a multiple of bins = {bins}")
    ranks = np.asarray(ranks)
    if ranks.min() < 0 or ranks.max() > draws:
        raise ValueError(f"ranks must lie in 0..{draws}")
    binned = ranks * bins // (draws + 1)
    counts = np.stack([np.bincount(col, minlength=bins) for col in binned.T], axis=1)
    return stats.chisquare(counts, axis=0).pvalue


def run(case: Case, settings: Settings, progress: Callable[[str], None] | None = None) -> Result:
    """Run ``settings.replications`` replications of ``case``; one seed stream for all."""
    seeds = np.random.SeedSequence(settings.seed)
    simulation, fitting = seeds.spawn(2)
    rng = np.random.default_rng(simulation)
    fit_seeds = fitting.generate_state(settings.replications)
    ranks, names, divergences = [], None, 0
    start = time.perf_counter()
    for r in range(settings.replications):
        replicate = case.simulate(rng)
        truth = case.quantities({k: np.asarray(v)[None] for k, v in replicate.truth.items()},
                                replicate.data)
        draws, diverging = case.posterior(replicate.data, int(fit_seeds[r]), settings)
        drawn = case.quantities(draws, replicate.data)
        names = list(truth) if names is None else names
        ranks.append(rank_statistics(truth, drawn, names))
        divergences += int(diverging)
        if progress is not None and (r + 1) % 10 == 0:
            progress(f"{case.label}: {r + 1} replications, {time.perf_counter() - start:.0f} s")
    return Result(case.label, settings, names, np.array(ranks), time.perf_counter() - start,
                  divergences)


def conditional(propose: Callable[[np.random.Generator], Any],
                draw: Callable[[np.random.Generator, Any, int], tuple[Params, np.ndarray]],
                structure: Callable[[np.ndarray], Any],
                rng: np.random.Generator, batch: int = 2000, tries: int = 10):
    """(parameters, data) from pi_S x L given S(data) = S, for a structure S from ``propose``.

    ``propose(rng)`` picks S independently of the parameters drawn next; ``draw(rng, S,
    batch)`` draws ``batch`` parameter sets (leading axis) and their data (leading axis);
    ``structure(data_i)`` is S of one data set, comparable with ``==``.  The first draw
    whose data have structure S is returned; after ``tries`` batches without one a new
    S is proposed (the module docstring shows why the kept pairs calibrate exactly).
    Returns (S, parameters of that draw, its data).
    """
    while True:
        target = propose(rng)
        for _ in range(tries):
            params, data = draw(rng, target, batch)
            for i in range(batch):
                if structure(data[i]) == target:
                    return target, {k: v[i] for k, v in params.items()}, data[i]


# ---------------------------------------------------------------------------------------
# bayesrank's models: simulators from the documented priors, posteriors, test quantities
# ---------------------------------------------------------------------------------------


def half_normal(rng: np.random.Generator, scale: float, size) -> np.ndarray:
    return np.abs(rng.normal(0.0, scale, size))


def zero_sum_normal(rng: np.random.Generator, sigma: float, size: tuple[int, ...],
                    over: np.ndarray | None = None) -> np.ndarray:
    """i.i.d. Normal(0, sigma) minus their mean over ``over`` (bool, last axis; all by
    default): ZeroSumNormal(sigma) on those entries, the others offset from their mean."""
    x = rng.normal(0.0, sigma, size)
    over = np.ones(size[-1], bool) if over is None else over
    return x - x[..., over].mean(axis=-1, keepdims=True)


def binary_tensor(k: np.ndarray, trials: int) -> np.ndarray:
    """(L, M, N) 0/1 outcomes with k_lm successes in each cell (IRT models read k only)."""
    return (np.arange(trials)[None, None, :] < k[..., None]).astype(np.int8)


class NutpieFits:
    """Posterior draws of ``bayesrank.models.build(model, data, **options)`` with nutpie:
    one chain, thinned; compiled once per graph (data of one shape share one graph, its
    data swapped in with ``with_data``)."""

    def __init__(self, model: str, **options: Any) -> None:
        self.model, self.options = model, options
        self._compiled: dict[Any, Any] = {}

    def __call__(self, data: Any, seed: int, settings: Settings) -> tuple[Params, int]:
        import nutpie

        from bayesrank import models

        pm_model = models.build(self.model, data, **self.options)
        values = {v.name: v.get_value() for v in pm_model.data_vars}
        key = (tuple((k, np.shape(v), str(np.asarray(v).dtype)) for k, v in values.items()),
               tuple(v.name for v in (*pm_model.free_RVs, *pm_model.deterministics)))
        if key not in self._compiled:
            self._compiled[key] = nutpie.compile_pymc_model(pm_model)
        compiled = self._compiled[key].with_data(**values)
        trace = nutpie.sample(compiled, draws=settings.draws * settings.thin, tune=settings.tune,
                              chains=1, cores=1, seed=seed, progress_bar=False)
        posterior = trace.posterior.isel(chain=0, draw=slice(settings.thin - 1, None,
                                                             settings.thin))
        draws = {k: posterior[k].values for k in posterior.data_vars}
        return draws, int(trace.sample_stats.diverging.sum())


def bayesrank_fits(model: str, **options: Any):
    """Posterior draws from :func:`bayesrank.fit` itself (one chain, thinned): for models
    whose graph differs from data set to data set (Davidson-Luce's event list)."""

    def posterior(data: Any, seed: int, settings: Settings) -> tuple[Params, int]:
        import warnings

        import bayesrank

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # one short chain: R-hat is not defined
            post = bayesrank.fit(data, model, chains=1, draws=settings.draws * settings.thin,
                                 tune=settings.tune, random_seed=seed, progressbar=False,
                                 log_likelihood=False, **options)
        p = post.idata.posterior.isel(chain=0, draw=slice(settings.thin - 1, None, settings.thin))
        diverging = int(post.idata.sample_stats["diverging"].sum())
        return {k: p[k].values for k in p.data_vars}, diverging

    return posterior


# --- Bayes@N ---------------------------------------------------------------------------


def bayes_case(shape=(4, 5, 6), categories: int = 3) -> Case:
    """Bayes@N, uniform prior: p_lm ~ Dirichlet(1), trials categorical(p_lm), theta_l =
    mean_m w . p_lm with w_k = k / C; exact conjugate draws (the model's default sampler)."""
    from bayesrank import ResponseData, models

    L, M, N = shape
    weights = np.arange(categories) / (categories - 1)

    def simulate(rng):
        p = rng.dirichlet(np.ones(categories), size=(L, M))
        cumulative = p.cumsum(axis=-1)
        u = rng.random((L, M, N))
        R = (u[..., None] > cumulative[:, :, None, :]).sum(axis=-1)
        R = np.minimum(R, categories - 1)
        return Replicate(ResponseData(R, n_categories=categories), {"theta": (p @ weights).mean(1)})

    def posterior(data, seed, settings):
        model = models.build("bayes", data)
        drawn = models.MODELS["bayes"].exact_draws(model, draws=settings.draws, chains=1,
                                                   seed=seed, log_likelihood=False)
        return {"theta": np.asarray(drawn["posterior"]["theta"])[0]}, 0

    def quantities(params, data):
        return {f"theta[{l}]": params["theta"][:, l] for l in range(L)}

    return Case("bayes (conjugate)", simulate, posterior, quantities)


# --- IRT: Rasch, 2PL, 3PL ---------------------------------------------------------------


def irt_structure(kind: str, trials: int):
    """S(k) of models/irt.py: the informed models (some success, some failure; all if
    none), and for 2PL/3PL the questions informed among them.  Everything else that the
    model reads from the data (pivots, walls, centring) only reparameterises its prior."""

    def structure(k: np.ndarray) -> tuple[bytes, ...]:
        total = k.sum(axis=1)
        models = (total > 0) & (total < k.shape[1] * trials)
        models = models if models.any() else np.ones_like(models)
        if kind == "rasch":
            return (models.tobytes(),)
        per_question = k[models].sum(axis=0)
        questions = (per_question > 0) & (per_question < models.sum() * trials)
        return (models.tobytes(), questions.tobytes())

    return structure


def _masks(structure: tuple[bytes, ...], L: int, M: int) -> tuple[np.ndarray, np.ndarray]:
    models = np.frombuffer(structure[0], bool) if structure else np.ones(L, bool)
    questions = (np.frombuffer(structure[1], bool) if len(structure) > 1 else np.ones(M, bool))
    return models, questions


def irt_prior(rng: np.random.Generator, kind: str, likelihood: str, L: int, M: int,
              structure: tuple[bytes, ...], size: int,
              ability_sd: float = 3.0) -> dict[str, np.ndarray]:
    """``size`` draws of the prior of models/irt.py given the structure (module docstring
    there), in the model's coordinates: theta ~ N(0, 3) i.i.d. minus the informed models'
    mean; Rasch mu_b ~ N(0, 3 / sqrt(L_I)), sigma_b ~ HalfNormal(2.5), b ~ N(mu_b, sigma_b);
    2PL/3PL log a ~ N(0, 0.5) minus their mean over the informed questions (over all when
    none), mu_beta ~ N(0, 3 / sqrt(L_I)), sigma_beta, sigma_beta_uninformed ~
    HalfNormal(2.5), beta ~ N(mu_beta, sigma_beta) (the one-sided questions' scale
    sigma_beta_uninformed from 10 such questions on); 3PL c ~ Beta(1, 19); beta-binomial
    1 / sqrt(phi) ~ HalfNormal(1).  ``ability_sd`` other than the model's 3 simulates
    from a wrong prior (to measure the power of a run)."""
    models, questions = _masks(structure, L, M)
    location_sd = ability_sd / np.sqrt(models.sum())
    out = {"theta": zero_sum_normal(rng, ability_sd, (size, L), over=models)}
    if kind == "rasch":
        out["mu_b"] = rng.normal(0.0, location_sd, size)
        out["sigma_b"] = half_normal(rng, 2.5, size)
        out["b"] = rng.normal(out["mu_b"][:, None], out["sigma_b"][:, None], (size, M))
    else:
        out["log_a"] = zero_sum_normal(rng, 0.5, (size, M),
                                       over=questions if questions.any() else None)
        out["mu_beta"] = rng.normal(0.0, location_sd, size)
        out["sigma_beta"] = half_normal(rng, 2.5, size)
        out["sigma_beta_uninformed"] = half_normal(rng, 2.5, size)
        own = (~questions).sum() >= 10
        outside = out["sigma_beta_uninformed"] if own else out["sigma_beta"]
        scale = np.where(questions[None, :], out["sigma_beta"][:, None], outside[:, None])
        out["beta"] = rng.normal(out["mu_beta"][:, None], scale)
        if kind == "3pl":
            out["c"] = rng.beta(1.0, 19.0, (size, M))
    if likelihood == "beta_binomial":
        out["inv_sqrt_phi"] = half_normal(rng, 1.0, size)
    return out


def irt_probability(kind: str, params: Params) -> np.ndarray:
    """p_lm = c_m + (1 - c_m) logistic(eta_lm), leading sample axis: (S, L, M)."""
    theta = params["theta"][:, :, None]
    if kind == "rasch":
        eta = theta - params["b"][:, None, :]
    else:
        eta = np.exp(params["log_a"])[:, None, :] * theta + params["beta"][:, None, :]
    p = 1.0 / (1.0 + np.exp(-eta))
    if kind == "3pl":
        c = params["c"][:, None, :]
        p = c + (1.0 - c) * p
    return p


def irt_counts(rng: np.random.Generator, kind: str, likelihood: str, params: Params,
               trials: int) -> np.ndarray:
    p = irt_probability(kind, params)
    if likelihood == "beta_binomial":
        phi = params["inv_sqrt_phi"][:, None, None] ** -2.0
        q = np.clip(p, 1e-12, 1.0 - 1e-12)
        p = rng.beta(np.maximum(q * phi, 1e-300), np.maximum((1.0 - q) * phi, 1e-300))
    return rng.binomial(trials, p)


def irt_log_likelihood(kind: str, likelihood: str, params: Params, k: np.ndarray,
                       n: np.ndarray) -> np.ndarray:
    """log p(k | parameters), summed over cells, per sample (S,)."""
    p = irt_probability(kind, params)
    if likelihood == "beta_binomial":
        phi = params["inv_sqrt_phi"][:, None, None] ** -2.0
        q = np.clip(p, 1e-15, 1.0 - 1e-15)
        cells = stats.betabinom.logpmf(k, n, q * phi, (1.0 - q) * phi)
    else:
        cells = stats.binom.logpmf(k, n, p)
    return cells.sum(axis=(1, 2))


def irt_case(kind: str, likelihood: str, shape=(6, 12, 4), ability_sd: float = 3.0) -> Case:
    """Rasch / 2PL / 3PL with the given likelihood, conditioned on the structure S
    (:func:`irt_structure`, :func:`conditional`).  Quantities: every theta_l, the
    hyper-parameters, question 0's item parameters and the data's log-likelihood.
    ``ability_sd``: the simulator's ability scale (:func:`irt_prior`; the model's is 3)."""
    from bayesrank import ResponseData

    L, M, N = shape
    structure = irt_structure(kind, N)
    everything = structure(np.ones((L, M), int))  # the all-informed structure

    def draw(rng, target, size):
        params = irt_prior(rng, kind, likelihood, L, M, target, size, ability_sd)
        return params, irt_counts(rng, kind, likelihood, params, N)

    def propose(rng):
        _, k = draw(rng, everything, 1)
        return structure(k[0])

    def simulate(rng):
        _, params, k = conditional(propose, draw, structure, rng)
        return Replicate(ResponseData(binary_tensor(k, N)), params)

    items = ("b",) if kind == "rasch" else ("log_a", "beta") + (("c",) if kind == "3pl" else ())
    hyper = (("mu_b", "sigma_b") if kind == "rasch"
             else ("mu_beta", "sigma_beta", "sigma_beta_uninformed"))
    hyper += ("inv_sqrt_phi",) if likelihood == "beta_binomial" else ()

    def quantities(params, data):
        out = {f"theta[{l}]": params["theta"][:, l] for l in range(L)}
        out.update({name: params[name] for name in hyper})
        out.update({f"{name}[0]": params[name][:, 0] for name in items})
        red = data.reductions
        out["log_lik"] = irt_log_likelihood(kind, likelihood, params, red.successes, red.trials)
        return out

    label = f"{kind} ({likelihood})" + ("" if ability_sd == 3.0 else f", ability sd {ability_sd}")
    return Case(label, simulate, NutpieFits(kind, likelihood=likelihood),
                quantities)


# --- Bradley-Terry and Davidson ---------------------------------------------------------


def pairwise_design(L: int, per_pair: int) -> np.ndarray:
    """Mask (L, M, 1) with M = per_pair L (L - 1) / 2 questions, each observed for one pair
    only: the pairwise counts are then exactly the simulated comparisons."""
    i, j = np.triu_indices(L, k=1)
    pair = np.repeat(np.arange(i.size), per_pair)
    mask = np.zeros((L, pair.size, 1), bool)
    mask[i[pair], np.arange(pair.size), 0] = True
    mask[j[pair], np.arange(pair.size), 0] = True
    return mask


def pairwise_case(ties: bool, L: int = 5, per_pair: int = 6) -> Case:
    """Bradley-Terry (``ties=False``) or Davidson: theta ~ ZeroSumNormal(1); each comparison
    of i and j is won by i with probability logistic(theta_i - theta_j), or with Davidson
    ties P(i) : P(j) : P(tie) = pi_i : pi_j : nu sqrt(pi_i pi_j), log nu ~ Normal(0, 2)
    (models/bradley_terry.py).  A tie is a shared 1; quantities: every theta_l, log nu and
    the log-likelihood of the pair counts."""
    from bayesrank import ResponseData

    mask = pairwise_design(L, per_pair)
    first = mask[:, :, 0].argmax(axis=0)  # the pair (i, j), i < j, of each question
    second = L - 1 - mask[::-1, :, 0].argmax(axis=0)

    def simulate(rng):
        truth = {"theta": zero_sum_normal(rng, 1.0, (L,))}
        ti, tj = truth["theta"][first], truth["theta"][second]
        logits = [ti, tj]
        if ties:
            truth["log_nu"] = rng.normal(0.0, 2.0)
            logits.append(truth["log_nu"] + 0.5 * (ti + tj))
        logits = np.stack(logits, axis=-1)
        p = np.exp(logits - logits.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        outcome = (rng.random(p.shape[0])[:, None] > p.cumsum(axis=-1)).sum(axis=-1)
        R = np.zeros(mask.shape, np.int8)
        questions = np.arange(mask.shape[1])
        R[first, questions, 0] = (outcome != 1)  # i wins, or ties
        R[second, questions, 0] = (outcome != 0)  # j wins, or ties
        return Replicate(ResponseData(R, mask=mask), truth)

    def quantities(params, data):
        theta = params["theta"]
        out = {f"theta[{l}]": theta[:, l] for l in range(L)}
        i, j = np.triu_indices(L, k=1)
        W, T = data.reductions.wins, data.reductions.ties
        ti, tj = theta[:, i], theta[:, j]
        if ties:
            out["log_nu"] = params["log_nu"]
            logits = np.stack([ti, tj, params["log_nu"][:, None] + 0.5 * (ti + tj)], axis=-1)
            log_p = logits - np.logaddexp.reduce(logits, axis=-1, keepdims=True)
            counts = np.stack([W[i, j], W[j, i], T[i, j]], axis=-1)
            out["log_lik"] = (counts * log_p).sum(axis=(1, 2))
        else:
            out["log_lik"] = -(W[i, j] * np.logaddexp(0, tj - ti)
                               + W[j, i] * np.logaddexp(0, ti - tj)).sum(axis=1)
        return out

    name = "davidson" if ties else "bradley_terry"
    return Case(name, simulate, NutpieFits(name), quantities)


# --- Davidson-Luce ----------------------------------------------------------------------


def davidson_luce_case(shape=(4, 8, 3)) -> Case:
    """Davidson-Luce on full comparison sets: theta ~ ZeroSumNormal(1), eta_t ~ Normal(0, 3)
    for t = 2..D (D = L - 1), log delta_t = log L - log C(L, t) + eta_t (log delta_1 = 0);
    each question-trial's winner set U (1 <= |U| <= D) has P(U) ∝ delta_|U| (prod_{i in U}
    pi_i)^(1 / |U|) (models/davidson_luce.py), drawn here by enumerating every such U.
    Quantities: every theta_l, every eta_t and the log-likelihood of the events."""
    from scipy.special import gammaln

    from bayesrank import ResponseData

    L, M, N = shape
    D = L - 1
    subsets = np.array([[(s >> i) & 1 for i in range(L)] for s in range(1, 2**L - 1)], bool)
    size = subsets.sum(axis=1)
    log_binom = gammaln(L + 1) - gammaln(size + 1) - gammaln(L - size + 1)

    def log_probabilities(theta, eta):  # (S, L), (S, D - 1) -> (S, subsets)
        log_delta = np.concatenate([np.zeros((theta.shape[0], 1)), eta], axis=1)
        log_delta = log_delta[:, size - 1] + np.where(size > 1, np.log(L) - log_binom, 0.0)
        scores = log_delta + (theta @ subsets.T.astype(float)) / size
        return scores - np.logaddexp.reduce(scores, axis=1, keepdims=True)

    def simulate(rng):
        theta = zero_sum_normal(rng, 1.0, (L,))
        eta = rng.normal(0.0, 3.0, D - 1)
        p = np.exp(log_probabilities(theta[None], eta[None]))[0]
        chosen = rng.choice(subsets.shape[0], size=M * N, p=p / p.sum())
        R = subsets[chosen].T.reshape(L, M, N).astype(np.int8)
        return Replicate(ResponseData(R), {"theta": theta, "eta": eta})

    def quantities(params, data):
        out = {f"theta[{l}]": params["theta"][:, l] for l in range(L)}
        out.update({f"eta[{t + 2}]": params["eta"][:, t] for t in range(D - 1)})
        index = (data.R.reshape(L, -1).T.astype(np.int64) << np.arange(L)).sum(axis=1) - 1
        log_p = log_probabilities(params["theta"], params["eta"])
        out["log_lik"] = log_p[:, index].sum(axis=1)
        return out

    return Case("davidson_luce", simulate, bayesrank_fits("davidson_luce"), quantities)


def cases() -> dict[str, Callable[[], Case]]:
    """Every model and likelihood calibrated by tests/test_sbc.py, by name."""
    from functools import partial

    return {
        "bayes": bayes_case,
        "rasch-binomial": partial(irt_case, "rasch", "binomial"),
        "rasch-beta_binomial": partial(irt_case, "rasch", "beta_binomial"),
        "2pl-binomial": partial(irt_case, "2pl", "binomial"),
        "2pl-beta_binomial": partial(irt_case, "2pl", "beta_binomial"),
        "3pl-beta_binomial": partial(irt_case, "3pl", "beta_binomial"),
        "3pl-binomial": partial(irt_case, "3pl", "binomial"),
        "bradley_terry": partial(pairwise_case, False),
        "davidson": partial(pairwise_case, True),
        "davidson_luce": davidson_luce_case,
    }
