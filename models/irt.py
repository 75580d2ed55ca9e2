"""Hierarchical item-response models on binomial counts: Rasch (1PL), 2PL and 3PL.

Paper appendix, "Rasch (1PL)" and "2PL and 3PL".  With k_lm successes of model
(examinee) l on question (item) m out of n_lm trials:

    theta    ~ ZeroSumNormal(3)                            abilities, sum_l theta_l = 0
             (the sum over the L_I informed models when some model solves nothing
             or everything; those models: the paper's prior relative to that mean)
    Rasch:   mu_b ~ Normal(0, 3 / sqrt(L_I)),  sigma_b ~ HalfNormal(2.5)
             b_m  ~ Normal(mu_b, sigma_b)                  difficulties
             eta_lm  = theta_l - b_m
    2PL/3PL: log a_m ~ ZeroSumNormal(0.5) over the informed questions,   discriminations
                       Normal(0, 0.5) over the others (solved by no informed model or
                       by all: models solving nothing or everything do not count)
             mu_beta ~ Normal(0, 3 / sqrt(L_I)),  sigma_beta ~ HalfNormal(2.5)
             beta_m  ~ Normal(mu_beta, sigma_beta)         intercepts
             (beta_m ~ Normal(mu_beta, sigma_beta_uninformed) for the questions
             solved by no informed model or by all, of those at least half the informed
             models answered, sigma_beta_uninformed ~ HalfNormal(2.5) when there are at
             least 10 such questions, else sigma_beta; sampled by their distance from
             the data's wall: models.item_effects)
             eta_lm  = a_m theta_l + beta_m,   difficulty b_m = -beta_m / a_m
    3PL:     c_m ~ Beta(1, 19)                             guessing floor in (0, 1)
             (sampled with beta_m by its share of p_m(0): models.transforms.FloorsAndIntercepts)
    p_lm     = c_m + (1 - c_m) logistic(eta_lm)           (c = 0 for Rasch and 2PL)
    k_lm     ~ Binomial(n_lm, p_lm)                       (observed ``k``; Rasch, 2PL)
    or, with ``likelihood="beta_binomial"`` (the 3PL default):
    1 / sqrt(phi) ~ HalfNormal(1)                         over-dispersion
    k_lm     ~ BetaBinomial(n_lm, p_lm phi, (1 - p_lm) phi)

Empirical prior from R0 (opt-in, ``use_R0=True``; :func:`add_prior_runs`).  Prior
outcomes such as one greedy decode per question are modelled as a second, shifted
examinee:

* per-model R0 (L, M, D): k0_lm ~ Binomial(D, p_lm with theta_l + delta_l for theta_l),
  with greedy offsets delta_l = mu_delta + sigma_delta z_l, z_l ~ Normal(0, 1),
  mu_delta ~ Normal(0, 1), sigma_delta ~ HalfNormal(0.5) (non-centred: a few
  prior runs per question inform each offset only weakly).  The prior runs inform
  each model's ability through a learnt, shrunk offset, so a systematic
  greedy-vs-sampling gap is absorbed by mu_delta instead of biasing theta.
* shared R0 (M, D) (one reference examinee): k0_m ~ Binomial(D, p_m with theta_ref),
  theta_ref ~ Normal(0, ability_scale); it informs difficulties only.

The observed prior runs are the variable ``k0`` (beta-binomial, with the same phi, when
``k`` is); the log-likelihood used for model comparison is that of ``k`` only.

One function builds each variant, one line per line above: :func:`rasch`,
:func:`collapsed_rasch`, :func:`two_pl` and :func:`three_pl` (the 2PL with floors), from
the data as :class:`IrtData` prepares them once and the options :class:`IrtOptions`;
:func:`build` checks the options and picks the function.

Why this form (the measurements behind each choice: docs/samplers.md, "The IRT models'
design record (moved from models/irt.py)"):

* Slope-intercept form.  The 2PL/3PL logit a_m (theta_l - b_m) is written a_m theta_l +
  beta_m: the same model, but the intercept does not couple multiplicatively with the
  slope, and NUTS needs about half the leapfrog steps.
* The location sits on the abilities.  The likelihood is unchanged by theta + s with b
  + s (beta - a s) and, for 2PL/3PL, by s theta, a / s.  The paper fixes the location
  by centring the difficulties (sum_m b_m = 0) and draws theta_l ~ N(0, 3) i.i.d.; that
  is the same model as the one above (the abilities' mean moves into the items, whose
  common location carries its N(0, 3 / sqrt(L)) prior).  **Convention: theta is
  reported with mean 0 over the (informed) models**; every contrast, every logit and
  every solve probability is unchanged in meaning.  Why: real benchmarks always have
  questions solved by no model in any trial, or by all, whose difficulties the data
  bound from one side only (the prior's tail); with sum_m b_m = 0 their mean trades off
  against every ability, a slow direction through every reported theta.
* One-sided models.  A model that solves nothing (or everything) is bounded by the data
  from one side only, its ability the prior's tail; in the zero sum every other ability
  would move with it.  So the zero sum runs over the informed models only, the
  one-sided ones get the exact prior of their offset from the informed mean
  (:func:`abilities`), and the 2PL/3PL split the questions, and choose the walls, among
  the informed models; a one-sided model caps the questions it bounds from the other
  side (:func:`models.item_effects.wall_positions`).  The zero sum of the
  log-discriminations (which fixes the abilities' scale) runs over the informed
  questions only, for the same reason.
* Informed difficulties (intercepts) are centred (each has L N trials, so the data
  dominate); one-sided ones non-centred (their posterior is the prior's tail, whose
  width grows with the scale: a funnel when centred) or, in the 2PL/3PL, measured from
  the wall their data put up (:func:`models.item_effects.wall_positions`).
* The abilities' basis is pivoted on the model the data pin down best
  (:func:`ability_pivot`): PyMC's basis makes the last model's ability a dense mixture
  of all free coordinates, which a diagonal mass matrix cannot follow when that model
  is poorly informed.
* Fixed scales.  The abilities get a fixed, weakly informative scale
  (``ability_scale``), the log-discriminations 0.5 (95% of discriminations within a
  factor 2.7 of their geometric mean): learnt ones form funnels on small data, and with
  many trials per model pooling would barely move the abilities.
* Over-dispersion.  Repeated trials of one model on one question share that pair's
  idiosyncrasies, so cell solve rates vary more around any item-response curve than
  binomial noise allows (:mod:`bayesrank.analysis.ppc` flags it on the bundled
  example).  The beta-binomial draws each cell's rate from Beta(p phi, (1 - p) phi):
  mean n p, variance n p (1 - p) (n + phi) / (1 + phi), the binomial as phi ->
  infinity, which the prior on 1 / sqrt(phi) puts at its mode.  It is the 3PL default
  because the binomial 3PL is multimodal on such data (a floor and a slope per question
  can fit each question to its own direction of the model-by-question interaction);
  Rasch and 2PL keep the paper's binomial: they converge with it.
* The one-sided intercepts' own scale (2PL/3PL, from :data:`OWN_SCALE_MIN_QUESTIONS`
  such questions).  Their data bound them from one side only, so each unit of a shared
  scale buys them likelihood; the inflated scale let the 3PL's floors explain an
  informed question's scattered successes with its curve pushed out of the way.  From
  fewer such questions an own scale is set by its prior and funnels, so they share
  sigma_beta.  A question counts as one-sided only when at least half of the informed
  models answered it: with few answers it is one-sided by chance, and a scale learnt
  from those whose answers agreed is selected on its own data and grows to its prior's
  limit (:func:`question_split`).  The 3PL's floors are sampled with their intercepts by
  their share of p_m(0), along the ridge the data leave
  (:class:`models.transforms.FloorsAndIntercepts`).
* The 2PL's informed intercepts are sampled by their logit where the question crosses 1/2, v_m =
  a_m t_m + beta_m, with t_m the ability between the two models the data place there
  (:func:`models.item_effects.crossing_ability`): beta_m itself is tied to the slope by
  beta_m = -a_m b_m wherever b_m lies far from the abilities' mean.
* The binomial Rasch can integrate its one-sided difficulties out of the sampled density
  (:mod:`models.one_sided`, :func:`collapsed_rasch`).
* Which questions and models are informed, which are centred, and the pivots enter the
  graph as data (:class:`IrtData`, :class:`QuestionSplit`), never as shapes: every
  dataset of one shape builds one graph, so the N = 1 subsamples of a benchmark share
  one compiled program and one ``fit_many`` batch.

The counts' likelihoods are :mod:`models.likelihoods` (the fast path: one Op per table
of cells, :mod:`models.fast`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import stats

from bayesrank.data import ResponseData

from ._common import binary_only, check_option, coords_of, positive_scale, response_data
from .item_effects import Walls, cap_models, crossings, pooled, solve_rates, wall_models
from .likelihoods import (
    beta_binomial,
    binomial_2pl,
    binomial_floor,
    binomial_logit,
    binomial_rasch,
    fast_enabled,
    fast_kernels,
)
from .one_sided import COLLAPSE_MIN_QUESTIONS, collapsed_difficulties, collapsible, scoring_twin

__all__ = [
    "build", "rasch", "collapsed_rasch", "two_pl", "three_pl", "add_prior_runs", "IrtData",
    "IrtOptions", "informative_items", "informed_questions", "KINDS", "LIKELIHOODS",
]

KINDS = ("rasch", "2pl", "3pl")
LIKELIHOODS = ("binomial", "beta_binomial")
DEFAULT_LIKELIHOOD = {"rasch": "binomial", "2pl": "binomial", "3pl": "beta_binomial"}
CELL = ("llm", "question")


def informed_questions(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Questions with at least one success and one failure (bool, M).

    A question solved by no model in any trial (or by every model in every
    trial) only bounds its own parameters from one side; the data say nothing
    about where in that half-line they lie.
    """
    total = k.sum(axis=0)
    return (total > 0) & (total < n.sum(axis=0))


class QuestionSplit(NamedTuple):
    """Which questions are informed (:func:`informed_questions`), sampled centred, one-sided.

    ``side``: +1 where no model solved the question, -1 where every model
    solved it in every trial, 0 where it is informed or where fewer than half of the
    models answered it (:func:`question_split`).  A question nobody answered is among
    the latter: its intercept's posterior is its prior, with no wall to measure it from
    (sampled from a wall, the 72 such questions of a 50 x 14,000 table with 90% of its
    cells missing mixed slowly, R-hat up to 1.06: docs/scale.md).
    """

    informed: np.ndarray
    centred: np.ndarray
    side: np.ndarray
    own_scale: bool = True

    @property
    def size(self) -> int:
        return self.informed.size

    def arrays(self) -> dict[str, np.ndarray]:
        """The split as fixed-shape arrays: 0/1 masks and the discriminations' pivot.

        ``log_a_pivot`` is one-hot on the first informed question (the first
        question when none is), ``log_a_free`` the M - 1 other positions
        (:func:`log_discriminations`); ``own_scale`` (one entry, 0 or 1) whether the
        one-sided questions' intercepts have their own scale (:func:`question_split`).
        """
        informed = np.flatnonzero(self.informed)
        pivot = int(informed[0]) if informed.size else 0
        direction = self.informed if informed.size else np.ones(self.size, bool)
        return {
            "informed": self.informed.astype(float),
            "side": self.side.astype(float),
            "centred": self.centred.astype(float),
            "log_a_pivot": (np.arange(self.size) == pivot).astype(float),
            "log_a_free": np.delete(np.arange(self.size), pivot),
            "log_a_direction": direction / np.sqrt(direction.sum()),
            "own_scale": np.array([float(self.own_scale)]),
        }

    def data(self, which: str):
        """One of :meth:`arrays` as ``pm.Data`` of the current model, created where first used.

        As data, not constants: every dataset of one shape builds the same
        graph (:func:`bayesrank.inference.cache.structure_key` keys on data
        shapes and variable names), so a compiled model is reused for, and
        ``fit_many`` batches, datasets whose informed questions differ (the
        N = 1 subsamples of one benchmark).  Only arrays the graph uses become
        data (nutpie swaps only the data its graph reads).
        """
        model = pm.modelcontext(None)
        if which in model.named_vars:
            return model[which]
        return pm.Data(which, self.arrays()[which])


#: 2PL/3PL: the one-sided questions' intercepts get their own scale from this many such
#: questions; fewer share the informed questions' scale (module docstring).
OWN_SCALE_MIN_QUESTIONS = 10


def question_split(k: np.ndarray, n: np.ndarray, centered: bool = True,
                   own_scale_min: int = OWN_SCALE_MIN_QUESTIONS) -> QuestionSplit:
    """Split the questions by :func:`informed_questions`; only informed ones can be centred.

    A question is one-sided (``side`` +-1: walled, with the one-sided intercepts' scale)
    when it is uninformed and at least half of the models answered it.  Answered by fewer,
    it is one-sided by chance about as often as by its difficulty (two answers out of 50,
    with 90% of the cells missing), and a scale learnt from the questions whose few answers
    happened to agree is selected on those answers: it grows until its prior stops it
    (sigma_beta_uninformed 15 against its HalfNormal(2.5) prior in a 3PL of 50 x 1,400,
    90% missing, whose one-sided intercepts then mixed slowly, R-hat 1.018;
    docs/scale.md).  Such a question shares the informed questions' scale and is sampled
    non-centred, like one nobody answered.  The one-sided questions get their own
    intercept scale when there are at least ``own_scale_min`` of them.
    """
    informed = informed_questions(k, n)
    answered = (n > 0).sum(axis=0)
    one_sided = ~informed & (2 * answered >= k.shape[0])
    side = np.where(one_sided, np.where(k.sum(axis=0) == 0, 1, -1), 0)
    return QuestionSplit(informed, informed & bool(centered), side,
                         int(one_sided.sum()) >= own_scale_min)


def _reflected_zero_sum(name: str, size: int, pivot, free, direction, scale, sd=1.0):
    """scale * H y: z ~ N(0, sd^2 I_{S-1}) placed around a pivot, reflected onto u's complement.

    ``y`` holds z at the ``free`` positions and 0 at the pivot p (one-hot
    ``pivot``); H = I - 2 w w^T / w^T w with w = e_p - u (``direction`` u, a
    unit vector) is an orthonormal reflection that sends e_p to u and so e_p's
    complement onto u's.  The result is isotropic Normal(0, scale^2) on the
    (S - 1)-dimensional subspace orthogonal to u, a ZeroSumNormal when u is
    1 / sqrt(S).  Every coordinate other than the pivot's is mainly its own z
    (H e_j = e_j + O(1 / sqrt(S)) for j != p); the pivot's is a dense mixture
    of all z.  pivot, free and direction are data, so the graph's shapes do not
    depend on where the pivot is.  ``sd`` (with ``scale`` 1): the same prior with the
    scale in z's own prior, the centred form (:func:`models.suite.skills_and_abilities`).
    """
    z = pm.Normal(f"{name}_z", 0.0, sd, shape=size - 1)
    y = pt.set_subtensor(pt.zeros(size)[free], z)
    w = pivot - direction
    norm = pt.dot(w, w)
    return scale * (y - 2.0 * w * pt.dot(w, y) / pt.where(norm > 0, norm, 1.0))


def log_discriminations(split: QuestionSplit, scale: float = 0.5):
    """log a_m: zero-sum over the informed questions, i.i.d. Normal(0, scale) elsewhere.

    The zero sum fixes the scale of the abilities (theta s, a / s leave the
    likelihood unchanged).  Putting questions nobody (or everybody) solved
    into that sum would tie the scale to discriminations the data do not
    inform, a slow direction through every ability (module docstring).

    That prior is isotropic Normal(0, scale^2) on the (M - 1)-dimensional
    subspace orthogonal to u = 1_informed / sqrt(K), sampled by
    :func:`_reflected_zero_sum` around a pivot (the first informed question):
    the geometry of a ZeroSumNormal over the informed questions next to
    untouched i.i.d. uninformed ones (the reflection moves only the informed
    coordinates), in a graph whose shapes do not depend on K.  With one
    informed question (u = e_p) its log a is 0.
    """
    log_a = _reflected_zero_sum(
        "log_a",
        split.size,
        split.data("log_a_pivot"),
        split.data("log_a_free"),
        split.data("log_a_direction"),
        scale,
    )
    return pm.Deterministic("log_a", log_a, dims="question")


def ability_pivot(k: np.ndarray, n: np.ndarray) -> int:
    """The model whose ability the data pin down best: most binomial information overall.

    Information about a model's ability is about sum_m n_lm p_lm (1 - p_lm);
    with the model's overall solve rate r_l for p that is N_l r_l (1 - r_l), so
    the pivot is the model with the most trials at a rate nearest 1/2 (the
    first such model on ties).
    """
    rate = solve_rates(k, n)
    return int(np.argmax(n.sum(axis=1) * rate * (1.0 - rate)))


def informed_models(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Models the data bound from both sides: some success and some failure, (L,) bool.

    A model that solves nothing (or everything) has an ability bounded by the
    data from one side only; its posterior is the prior's tail.  When every
    model is one-sided, all count as informed (nothing better to centre on).
    """
    total, trials = k.sum(axis=1), n.sum(axis=1)
    informed = (total > 0) & (total < trials)
    return informed if informed.any() else np.ones_like(informed)


def informative_items(k: np.ndarray, n: np.ndarray) -> bool:
    """Whether the data pin each question down more tightly than questions differ.

    Compares the typical likelihood sd of a difficulty, 1 / sqrt(sum_l n q (1 - q))
    with smoothed cell rates q = (k + 1/2) / (n + 1), with the spread of the
    questions' difficulties: the sd of their empirical logits with that
    sampling noise removed (method of moments), taken at its 5% lower confidence
    bound (the variance times chi2_{0.05}(M - 1) / (M - 1)).  Centred difficulties mix
    well when the ratio is below 1 (e.g. 20 x 120 x 80: about 0.05); non-centred ones
    when it is above (few models or trials and similar questions, e.g. 20 x 30 x 1 with
    a narrow spread, where centred sampling reached a min ESS of 4 against 400).  The
    lower bound: with few questions the posterior allows spreads well below the
    estimate, where a centred question's funnel opens (120 prior draws of 4 x 6 x 5,
    centred at the estimate itself: 24-63 divergences a batch over seven seeds, 165 in a
    CI run; non-centred: 11-12, docs/samplers.md).  With 700 questions the bound is
    0.96 of the estimate, and no real set in ../shared changes parameterisation.
    """
    q = (k + 0.5) / (n + 1.0)
    sd = 1.0 / np.sqrt(np.maximum((n * q * (1 - q)).sum(axis=0), 1e-12))
    rate = (k.sum(axis=0) + 0.5) / (n.sum(axis=0) + 1.0)
    observed = np.var(np.log(rate / (1 - rate)))
    variance = max(observed - np.mean(sd**2), 0.0)  # noise removed (moments)
    dof = max(k.shape[1] - 1, 1)
    low = variance * stats.chi2.ppf(0.05, dof) / dof
    return bool(np.median(sd) < np.sqrt(low))


@dataclass(frozen=True, eq=False, repr=False)
class IrtData:
    """The data as the IRT models read them, prepared once (:meth:`of`).

    Which models and questions are one-sided, the abilities' pivot and the intercepts'
    walls are arrays here; a model reads each as ``pm.Data`` (:meth:`data`), so they are
    data of the graph, never its shapes (module docstring).
    """

    k: np.ndarray  # successes k_lm (L, M)
    n: np.ndarray  # trials n_lm (L, M)
    coords: dict[str, list]
    informed: np.ndarray  # the informed models (L,) bool, :func:`informed_models`
    split: QuestionSplit  # the questions among the models that count (:meth:`of`)
    wall_models: np.ndarray  # (2, M): each question's walls' models, wall_models()
    cap_models: tuple[np.ndarray, np.ndarray]  # (2, L), (2, M): the caps, cap_models()
    crossings: np.ndarray  # (3, M): where the questions cross 1/2, crossings()
    arrays: Mapping[str, tuple[np.ndarray, Any]]  # name: (values, dims) for :meth:`data`
    k0: np.ndarray | None = None  # prior runs' successes, (L, M) per model or (M,) shared
    n0: int = 0  # prior runs per question (D)

    @classmethod
    def of(cls, data: ResponseData | Any, kind: str, *, centered: bool | None = None,
           use_R0: bool = False, own_scale_min: int = OWN_SCALE_MIN_QUESTIONS) -> IrtData:
        """Prepare ``data`` for model ``kind``; ``centered`` None: :func:`informative_items`.

        The 2PL/3PL split the questions (and pick the walls) among the informed models: a
        question every informed model solves is one-sided even when a model that solves
        nothing fails it (that model caps it: :func:`models.item_effects.wall_positions`).
        The Rasch's collapsed integrals need every model's cells one-sided, so its split
        counts every model.
        """
        d = response_data(data)
        red = d.reductions
        k, n = red.successes, red.trials
        informed = informed_models(k, n)
        rows = informed if kind != "rasch" else np.ones(k.shape[0], bool)
        centered = informative_items(k, n) if centered is None else centered
        split = question_split(k[rows], n[rows], centered, own_scale_min)
        k0, n0 = (red.prior_successes, int(d.R0.shape[-1])) if use_R0 else (None, 0)
        return cls(k, n, coords_of(d), informed, split, wall_models(k, n, rows),
                   cap_models(k, n, rows), crossings(k, n, rows),
                   _arrays(k, n, informed, k0, n0), k0, n0)

    @property
    def size(self) -> int:
        """The number of questions M."""
        return self.k.shape[1]

    def __repr__(self) -> str:
        L, M = self.k.shape
        return (f"IrtData({L} models ({int(self.informed.sum())} informed) x {M} questions "
                f"({int(self.split.informed.sum())} informed), prior runs: {self.k0 is not None})")

    def data(self, name: str):
        """The array ``name`` as ``pm.Data`` of the current model, created where first read.

        Only arrays the graph reads become data (nutpie swaps only those).
        """
        model = pm.modelcontext(None)
        if name in model.named_vars:
            return model[name]
        values, dims = self.arrays[name]
        return pm.Data(name, values, dims=dims)

    def location_sd(self, ability_scale: float):
        """The items' common location's prior sd, ability_scale / sqrt(L_I), as data.

        Data, so datasets of one shape share a graph; a vector because Numba could not
        type the Normal's parameter check on a 0-d data sigma.
        """
        sd = np.array([ability_scale / np.sqrt(self.informed.sum())])
        return pm.Data("location_sd", sd)[0]


def _arrays(k, n, informed, k0, n0) -> dict[str, tuple[np.ndarray, Any]]:
    """The arrays :class:`IrtData` gives the models as data, with their dims.

    The abilities' basis (:func:`abilities`): one-hot ``theta_pivot`` on
    :func:`ability_pivot`, the L - 1 other positions ``theta_free``, the informed models'
    unit direction, the one-sided models' mask and the shift of their offsets.
    """
    L, pivot = k.shape[0], ability_pivot(k, n)
    one_sided, n_informed = (~informed).astype(float), informed.sum()
    K = one_sided.sum()
    arrays = {
        "successes": (k, CELL),
        "trials": (n, CELL),
        "theta_pivot": ((np.arange(L) == pivot).astype(float), None),
        "theta_free": (np.delete(np.arange(L), pivot), None),
        "theta_direction": (informed / np.sqrt(n_informed), None),
        "theta_one_sided": (one_sided, None),
        "theta_one_sided_shift": ((np.sqrt(1 + K / n_informed) - 1) / max(K, 1), None),
    }
    if k0 is not None:
        dims = CELL if k0.ndim == 2 else "question"
        arrays["prior_successes"] = (k0, dims)
        arrays["prior_trials"] = (np.full(k0.shape, n0), dims)
    return arrays


@dataclass(frozen=True)
class IrtOptions:
    """The IRT models' prior and likelihood options (:func:`build` documents them)."""

    ability_scale: float = 3.0
    guessing: tuple[float, float] = (1.0, 19.0)  # the 3PL floors' Beta(alpha, beta)
    fix_guessing: float | None = None  # the 3PL: every floor c_m = this, known
    likelihood: str = "binomial"
    walls: bool = True  # 2PL/3PL: one-sided intercepts from their walls (else non-centred)


def abilities(data: IrtData, scale: float):
    """theta_l ~ N(0, scale) i.i.d.: its informed models' mean moves to the items.

    Returns theta, with mean 0 over the informed models (:func:`informed_models`), and
    the items' common location's prior sd, scale / sqrt(L_I) (:meth:`IrtData.location_sd`).

    The informed models' abilities are ZeroSumNormal(scale) over those models: the same
    prior as ``pm.ZeroSumNormal`` in another orthonormal basis (:func:`_reflected_zero_sum`
    with u = 1_informed / sqrt(L_I)), pivoted on the model the data pin down best
    (:func:`ability_pivot`).  PyMC's basis makes the *last* model's ability the dense
    mixture of all free coordinates; when that model is the least informed one, its wide
    posterior lies along a direction no diagonal mass matrix follows.

    A model that solves nothing (or everything) stays out of the zero sum: its ability
    is the prior's tail beyond the data's wall, and in the sum every other ability would
    move with that tail.  Under the paper's i.i.d. prior, with t the informed models'
    mean, the one-sided models' theta_u - t are Normal with covariance scale^2 (I + 1 1^T
    / L_I), independent of the informed deviations: sampled as scale (z + c 1 1^T z), c =
    (sqrt(1 + K / L_I) - 1) / K for K one-sided models.  So every contrast keeps the
    paper's prior.  The pivot, the direction and the one-sided mask are data
    (``theta_pivot``, ``theta_free``, ``theta_direction``, ``theta_one_sided``).
    """
    pivot, free = data.data("theta_pivot"), data.data("theta_free")
    direction = data.data("theta_direction")
    theta = _reflected_zero_sum("theta", data.k.shape[0], pivot, free, direction, scale)
    one_sided, c = data.data("theta_one_sided"), data.data("theta_one_sided_shift")
    theta = theta + c * one_sided * pt.dot(one_sided, theta)
    return pm.Deterministic("theta", theta, dims="llm"), data.location_sd(scale)


class Curve(NamedTuple):
    """A variant's response curve p_lm = c_m + (1 - c_m) logistic(eta_lm).

    eta_lm = theta_l - b_m (the Rasch: ``a`` None) or a_m theta_l + beta_m; ``c`` None:
    no floor.  ``size``: the number of questions M.
    """

    size: int
    b: Any = None
    a: Any = None
    beta: Any = None
    c: Any = None

    def logit(self, ability):
        """eta at ``ability`` ((L, 1) for the cells, a scalar for a shared examinee)."""
        return ability - self.b if self.a is None else self.a * ability + self.beta

    def slope_and_intercept(self):
        """(a, beta) with eta = a theta + beta: (1, -b) for the Rasch."""
        return (pt.ones_like(self.b), -self.b) if self.a is None else (self.a, self.beta)


def binomial_counts(curve: Curve, name, ability, observed, trials, dims, weight=None):
    """k ~ Binomial(n, p): each table of (L, M) cells by its variant's kernel
    (:mod:`models.likelihoods`); ``weight``: the collapsed Rasch's cells."""
    if dims == CELL and curve.a is None:
        return binomial_rasch(name, trials, ability, curve.b, observed, dims, weight)
    if dims == CELL and curve.c is None:
        return binomial_2pl(name, trials, ability, curve.a, curve.beta, observed, dims)
    if curve.c is None:
        return binomial_logit(name, trials, curve.logit(ability), observed, dims)
    return binomial_floor(name, trials, curve.logit(ability), curve.c, observed, dims)


def beta_binomial_counts(curve: Curve, log_delta, name, ability, observed, trials, dims):
    """k ~ BetaBinomial(n, p phi, (1 - p) phi), ``log_delta`` = log(1 / phi)."""
    floor = pt.broadcast_to(0.0 if curve.c is None else curve.c, (curve.size,))
    a, beta = curve.slope_and_intercept()
    return beta_binomial(name, trials, ability, a, beta, floor, log_delta, observed, dims)


def likelihood_for(kind: str, curve: Curve):
    """The counts given ``curve`` as ``observe(name, ability, k, n, dims)``: ``kind``
    "binomial", or "beta_binomial" with 1 / sqrt(phi) ~ HalfNormal(1) (module docstring)."""
    if kind == "binomial":
        return partial(binomial_counts, curve)
    inv_sqrt_phi = pm.HalfNormal("inv_sqrt_phi", 1.0)
    pm.Deterministic("phi", inv_sqrt_phi**-2)
    return partial(beta_binomial_counts, curve, 2.0 * pt.log(inv_sqrt_phi))  # log(1 / phi)


def add_prior_runs(observe, theta, data: IrtData, ability_scale: float) -> None:
    """The prior runs R0 (``data.k0``, if any) as a second, shifted examinee (module
    docstring): per model, k0_lm at theta_l + delta_l; shared, k0_m at theta_ref."""
    if data.k0 is None:
        return
    k0, n0 = data.data("prior_successes"), data.data("prior_trials")
    if data.k0.ndim == 2:
        mu_delta = pm.Normal("mu_delta", 0.0, 1.0)
        sigma_delta = pm.HalfNormal("sigma_delta", 0.5)
        delta_z = pm.Normal("delta_z", 0.0, 1.0, dims="llm")
        delta = pm.Deterministic("delta", mu_delta + sigma_delta * delta_z, dims="llm")
        observe("k0", (theta + delta)[:, None], k0, n0, CELL)
    else:
        theta_ref = pm.Normal("theta_ref", 0.0, ability_scale)
        observe("k0", theta_ref, k0, n0, "question")


def rasch(data: IrtData, opts: IrtOptions) -> pm.Model:
    """The Rasch (1PL), line by line (module docstring)::

        theta   ~ ZeroSumNormal(ability_scale) over the informed models   (abilities)
        mu_b    ~ Normal(0, ability_scale / sqrt(L_I))
        b_m     ~ Normal(mu_b, sigma_b),  sigma_b ~ HalfNormal(2.5)        (pooled)
        k_lm    ~ Binomial(n_lm, logistic(theta_l - b_m))  or BetaBinomial (likelihood_for)
        k0      : the prior runs, if any                                   (add_prior_runs)
    """
    with pm.Model(coords=data.coords) as model:
        k, n = data.data("successes"), data.data("trials")
        theta, location_sd = abilities(data, opts.ability_scale)
        mu_b = pm.Normal("mu_b", 0.0, location_sd)
        b = pooled("b", mu_b, "sigma_b", data.split)
        observe = likelihood_for(opts.likelihood, Curve(data.size, b=b))
        observe("k", theta[:, None], k, n, CELL)
        add_prior_runs(observe, theta, data, opts.ability_scale)
    return model


def collapsed_rasch(data: IrtData, opts: IrtOptions, score_every_cell: bool = False):
    """The binomial Rasch with its one-sided difficulties integrated out (:mod:`.one_sided`).

    The same model as :func:`rasch`; its sampled density weighs the one-sided questions'
    cells 0 and adds their difficulties' integrals as a Potential, and reports those
    difficulties as exact conditional draws.  ``model.scoring_twin()`` is its twin
    (``score_every_cell``), which scores every cell at the reported difficulties:
    log-likelihood and predictive draws.
    """
    with pm.Model(coords=data.coords) as model:
        k, n = data.data("successes"), data.data("trials")
        theta, location_sd = abilities(data, opts.ability_scale)
        mu_b = pm.Normal("mu_b", 0.0, location_sd)
        difficulties, collapse, potential = collapsed_difficulties(theta, data.k, data.n)
        b, weight = collapse(*pooled("b", mu_b, "sigma_b", data.split, uninformed=difficulties),
                             score_every_cell)
        if not score_every_cell:
            potential()
            twin = partial(collapsed_rasch, data, opts, score_every_cell=True)
            model.scoring_twin = partial(scoring_twin, model,
                                         partial(_built_as, fast_enabled(), twin))
        binomial_counts(Curve(data.size, b=b), "k", theta[:, None], k, n, CELL, weight)
    return model


def _built_as(fast: bool, build):
    """``build()`` with the fast kernels on or off, as the model it belongs to was built."""
    with fast_kernels(fast):
        return build()


def two_pl(data: IrtData, opts: IrtOptions, floors=None) -> pm.Model:
    """The 2PL (and, with ``floors``, the 3PL), line by line (module docstring)::

        theta   ~ ZeroSumNormal(ability_scale) over the informed models   (abilities)
        log a_m ~ ZeroSumNormal(0.5) over the informed questions, else Normal(0, 0.5)
        mu_beta ~ Normal(0, ability_scale / sqrt(L_I))
        beta_m  ~ Normal(mu_beta, sigma_beta), one-sided ones from their walls
        c_m     : none (the 2PL), or the 3PL's floors                       (intercepts)
        b_m     = -beta_m / a_m
        k_lm    ~ Binomial(n_lm, p_lm)  or BetaBinomial(n_lm, p_lm phi, (1 - p_lm) phi),
                  p_lm = c_m + (1 - c_m) logistic(a_m theta_l + beta_m)   (likelihood_for)
        k0      : the prior runs, if any                                   (add_prior_runs)
    """
    with pm.Model(coords=data.coords) as model:
        k, n = data.data("successes"), data.data("trials")
        theta, location_sd = abilities(data, opts.ability_scale)
        a = pm.Deterministic("a", pt.exp(log_discriminations(data.split)), dims="question")
        mu_beta = pm.Normal("mu_beta", 0.0, location_sd)
        walls = (Walls(a, theta, data.wall_models, *data.cap_models, data.crossings)
                 if opts.walls else None)
        beta, c = intercepts(mu_beta, data.split, walls, floors)
        pm.Deterministic("b", -beta / a, dims="question")
        observe = likelihood_for(opts.likelihood, Curve(data.size, a=a, beta=beta, c=c))
        observe("k", theta[:, None], k, n, CELL)
        add_prior_runs(observe, theta, data, opts.ability_scale)
    return model


def three_pl(data: IrtData, opts: IrtOptions) -> pm.Model:
    """The 3PL: the 2PL with guessing floors, c_m ~ Beta(guessing) i.i.d. (sampled with
    the intercepts, :class:`models.transforms.FloorsAndIntercepts`), or every c_m = c
    known (``fix_guessing``)."""
    known = opts.fix_guessing is not None
    return two_pl(data, opts, floors=float(opts.fix_guessing) if known else opts.guessing)


def intercepts(mu_beta, split: QuestionSplit, walls: Walls | None, floors=None):
    """(beta, c): beta_m ~ Normal(mu_beta, sigma_beta) (:func:`models.item_effects.pooled`)
    and the floors c_m: none (``floors`` None), a known c (a number), or c_m ~
    Beta(*floors), sampled with beta_m."""
    if floors is None or isinstance(floors, float):
        beta = pooled("beta", mu_beta, "sigma_beta", split, True, walls=walls)
        return beta, None if floors is None else pt.as_tensor(floors)
    return pooled("beta", mu_beta, "sigma_beta", split, True, walls=walls, guessing=floors)


def build(
    data: ResponseData | Any,
    *,
    kind: str = "rasch",
    use_R0: bool = False,
    guessing: tuple[float, float] = (1.0, 19.0),
    fix_guessing: float | None = None,
    ability_scale: float = 3.0,
    centered: bool | None = None,
    likelihood: str | None = None,
    collapse_uninformed: bool | None = None,
) -> pm.Model:
    """Build a hierarchical IRT model of binary ``data``: check the options, pick the variant.

    Parameters
    ----------
    data : ResponseData or array_like (L, M, N), binary
    kind : {"rasch", "2pl", "3pl"}
    use_R0 : bool
        Add the data's prior outcomes R0 as a shifted examinee (module docstring).
    guessing : (alpha, beta)
        Beta prior of the 3PL guessing floor (mean alpha / (alpha + beta)).
    fix_guessing : float in [0, 1), optional
        Fix the 3PL guessing floor (e.g. a known chance level).
    ability_scale : float
        Prior sd of the abilities (logit scale).
    centered : bool, optional
        Parameterisation of the pooled difficulties (intercepts); the prior is
        the same either way.  Default: centred when :func:`informative_items`
        says the data pin questions down well, non-centred otherwise.
    likelihood : {"binomial", "beta_binomial"}, optional
        Binomial cell counts (the paper's model), or beta-binomial ones with a
        learnt over-dispersion ``phi`` (module docstring).  Default: binomial
        for Rasch and 2PL, beta-binomial for 3PL, whose binomial posterior is
        multimodal on data with model-by-question interaction.
    collapse_uninformed : bool, optional
        Binomial Rasch: integrate the difficulties of questions solved by no
        model or by all out of the sampled density (the same posterior; they
        are reported as draws from their exact conditional posterior,
        :func:`models.one_sided.collapsed_difficulties`).  Applies when every question has the
        same trials per model and R0 is not used.  Default: when at least
        :data:`COLLAPSE_MIN_QUESTIONS` questions are one-sided: it costs a fixed amount
        per gradient, which pays where thousands of one-sided difficulties are sampled
        and not on a few hundred (docs/samplers.md).

    Returns
    -------
    pymc.Model
        Ranking quantity ``theta`` (llm), mean 0 over the informed models; observed ``k``
        (llm, question).
    """
    check_option("kind", kind, KINDS)
    likelihood = DEFAULT_LIKELIHOOD[kind] if likelihood is None else likelihood
    check_option("likelihood", likelihood, LIKELIHOODS)
    d = response_data(data)
    binary_only(d, kind)
    if fix_guessing is not None and not 0.0 <= float(fix_guessing) < 1.0:
        raise ValueError(f"fix_guessing must lie in [0, 1), got {fix_guessing!r}")
    if len(guessing) != 2 or min(guessing) <= 0:
        raise ValueError(f"guessing must be two positive Beta parameters, got {guessing!r}")
    if use_R0 and d.R0 is None:
        raise ValueError("use_R0=True but the data carry no prior outcomes R0")
    opts = IrtOptions(positive_scale("ability_scale", ability_scale),
                      tuple(float(g) for g in guessing), fix_guessing, likelihood)
    prepared = IrtData.of(d, kind, centered=centered, use_R0=use_R0)
    if collapse_uninformed is None:
        one_sided = ~informed_questions(prepared.k, prepared.n)
        collapse_uninformed = int(one_sided.sum()) >= COLLAPSE_MIN_QUESTIONS
    if (kind == "rasch" and collapse_uninformed and likelihood == "binomial"
            and prepared.k0 is None and collapsible(prepared.n)):
        return collapsed_rasch(prepared, opts)
    return {"rasch": rasch, "2pl": two_pl, "3pl": three_pl}[kind](prepared, opts)
