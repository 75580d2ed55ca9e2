"""Bayesian Davidson-Luce model of setwise events with ties (Firth, Kosmidis & Turner 2019).

Paper appendix, "Davidson--Luce (setwise ties)".  Each question-trial gives a winner set U
(the models that solved it) and a loser set V within the comparison set S = U | V.  With
strengths pi_i = exp(theta_i) and tie prevalences delta_t (delta_1 = 1), t = 1..D:

    theta        ~ ZeroSumNormal(scale)                  log-strengths, sum 0, scale 1
                   (``hierarchical=True``: sigma ~ HalfNormal(scale), theta ~ ZeroSumNormal(sigma))
    eta_t        ~ Normal(0, 3),  t = 2..D               tie effects
    log delta_t  = log L - log C(L, t) + eta_t
    g_t(T)       = (prod_{i in T} pi_i)^(1/t)
    Z(S)         = sum_{t=1}^{min(D, |S| - 1)} delta_t sum_{T in S, |T| = t} g_t(T)
                 = sum_t delta_t e_t(pi_S^(1/t))
    P(U > V | S) = delta_|U| g_|U|(U) / Z(S)             each distinct event e, count_e times
                                                         (observed ``events``)

where e_t(x) is the t-th elementary symmetric polynomial of x_i = pi_i^(1/t), i in S, and
D = L - 1 by default.  The observed variable ``events`` holds the winner indicators of
each distinct (U, V) event (dims ``event``, ``llm``); its log-likelihood is count_e log
P(U_e > V_e | S_e), per group of identical question-trial events.

One function builds the model, one line per line above: :func:`davidson_luce`, from the
events as :class:`SetwiseEvents` prepares them once; :func:`build` checks the options.

Why this form (the measurements behind each choice: docs/samplers.md, "The Davidson-Luce
model's design record (moved from models/davidson_luce.py)"):

* Events in which every compared model ties (U = S) carry no ranking information and are
  discarded from the data (``data.reductions.setwise``), so Z leaves that outcome out and
  the likelihood is conditional on an informative event.  The paper sums to min(D, |S|);
  with no missing trials and the default D = L - 1 the two are identical (|S| = L > D).
  This matches the point estimator ``davidson_luce_map``.  Question-trials that every
  model solves or none does are therefore no events: they add no parameter and no slow
  direction, and the location is fixed on theta itself.
* eta = 0 means "every winner-set size is equally likely" when all L models compete with
  equal strengths.
* Z exactly, without enumerating subsets: e_r(x) is the z^r coefficient of prod_i (1 +
  x_i z), the recurrence e_r <- e_r + x_i e_{r-1} over the members, in one likelihood
  call (:func:`models.likelihoods.tie_size_sums`).  The fast path runs it and its adjoint
  in a kernel, O(L D^2) per set (:mod:`models.fast.tie_sizes`); ``fast=False`` forms the
  same sums in PyTensor, pairwise in a binary tree of batched polynomial products (log2(L)
  graph steps, all orders and sets at once), whose dense products grow like D^3 per
  level: 13-26 ms of log-density and gradient at 100 models against 1.6 ms for the
  kernel (docs/scale.md).  Z depends on S only, so it is computed once per distinct
  comparison set (one set when no trial is missing).  The events, their comparison sets
  and the reference set of the tie effects are ``pm.Data`` (:meth:`SetwiseEvents.data`):
  the graph depends on L, D and the number of comparison sets only, so a compiled model
  serves every data set that shares them, whatever its events.  Shifting every theta by m
  multiplies every g_t by exp(m); the products run on theta - max(theta) and the shift
  is added back, which keeps them in floating-point range.
* The tie effects are sampled as the log-odds of a winner set's size, eta_t + h_t(theta),
  the size-1 count's shared noise factored out, and an order no event has from its wall
  (:func:`_size_log_odds`): eta_t itself moves with every ability through e_t, the
  slowest direction on data with many models and one trial; log-odds against size 1 all
  share the noise of a count that can be small.  The same prior and posterior.
* Grouped events: leave-one-out leaves a whole group of identical question-trials out.
  Posterior predictive draws give every row of ``events`` a fresh winner set drawn from
  P(U | S_e) of its comparison set, exactly (:func:`sample_winner_sets`: the size from
  delta_t e_t / Z, then the members by conditional Poisson sampling); a row stands for
  ``count_e`` identical question-trials, so replicated totals weight each row by its
  count.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import gammaln

from bayesrank.data import ResponseData

from ._common import binary_only, coords_of, log_strengths, positive_scale, response_data
from .likelihoods import tie_size_sums
from .transforms import tie_sizes

__all__ = ["build", "davidson_luce", "SetwiseEvents", "log_tie_normalisers",
           "sample_winner_sets"]


class EventData(NamedTuple):
    """:class:`SetwiseEvents` as data of the model (:meth:`SetwiseEvents.data`)."""

    weights: Any  # count_e (E,)
    sizes: Any  # |U_e| (E,)
    size_index: Any  # |U_e| - 1 (E,)
    set_index: Any  # g of each event (E,)
    sets: Any  # the comparison sets (G, L)
    reference: Any  # one-hot (G,): the reference set of the tie effects (_size_log_odds)
    unseen: Any  # (D - 1,) 0/1: orders the reference set holds but none of its events has
    wall: Any  # -log n_1 on the reference set (scalar)
    coupling: Any  # (D - 1,): the seen orders' coordinates' coupling (size_coupling)


@dataclass(frozen=True, eq=False, repr=False)
class SetwiseEvents:
    """The distinct setwise events as the model reads them, prepared once (:meth:`of`).

    Per-event arrays enter the graph by index (``set_index``, :attr:`size_index`), not as
    (E, G) or (E, D) one-hot matrices: Numba refuses to cache a compiled function holding
    a constant array above 1 MB.
    """

    winners: np.ndarray  # U_e, (E, L) bool
    weights: np.ndarray  # count_e: the question-trials event e stands for, (E,) float
    sets: np.ndarray  # the distinct comparison sets S_g, (G, L) of 0.0 / 1.0
    set_index: np.ndarray  # g of each event's comparison set, (E,) int64
    max_order: int  # D, the largest tie order in Z
    coords: dict[str, list]  # llm, event, comparison_set, tie_order (2..D)

    @classmethod
    def of(cls, data: ResponseData, max_tie_order: int | None = None) -> SetwiseEvents:
        """The events of binary ``data`` (``data.reductions.setwise``); D default L - 1."""
        ev = data.reductions.setwise
        n_events, n_models = ev.winners.shape
        if n_events == 0:
            raise ValueError(
                "no informative setwise event: every question-trial was won by all or by "
                "none of the models"
            )
        largest = int(ev.winners.sum(axis=1).max())
        D = n_models - 1 if max_tie_order is None else int(max_tie_order)
        if D < largest:
            raise ValueError(f"max_tie_order={D} but an event has {largest} tied winners; "
                             f"use max_tie_order >= {largest}")
        sets, set_of_event = np.unique(ev.winners | ev.losers, axis=0, return_inverse=True)
        coords = {"llm": coords_of(data)["llm"], "event": list(range(n_events)),
                  "comparison_set": list(range(sets.shape[0])),
                  "tie_order": [int(t) for t in np.arange(2, D + 1)]}
        return cls(ev.winners, ev.counts.astype(float), sets.astype(float),
                   set_of_event.ravel().astype(np.int64), D, coords)

    @property
    def n_models(self) -> int:
        """L."""
        return self.winners.shape[1]

    @property
    def sizes(self) -> np.ndarray:
        """|U_e| of each event, (E,)."""
        return self.winners.sum(axis=1)

    @property
    def size_index(self) -> np.ndarray:
        """|U_e| - 1 of each event, (E,) int64."""
        return (self.sizes - 1).astype(np.int64)

    @property
    def log_binom(self) -> np.ndarray:
        """log C(L, t), t = 2..D."""
        L, t = self.n_models, np.arange(2, self.max_order + 1)
        return gammaln(L + 1) - gammaln(t + 1) - gammaln(L - t + 1)

    @property
    def reference(self) -> int:
        """The comparison set of most question-trials (:func:`_size_log_odds`)."""
        return int(np.bincount(self.set_index, weights=self.weights).argmax())

    @property
    def size_counts(self) -> np.ndarray:
        """The question-trials with a winner set of each size t = 1..D on :attr:`reference`."""
        on = self.set_index == self.reference
        return np.bincount(self.size_index[on], weights=self.weights[on],
                           minlength=self.max_order)

    @property
    def size_coupling(self) -> np.ndarray:
        """k_t = g n_t, t = 2..D, g = (sqrt(1 + S / n_1) - 1) / S, S = sum_t n_t: the
        counts n_t of each winner-set size on :attr:`reference` (n_1 at least 1/2); zero
        where no event has size t (:class:`models.transforms.TieSizes`)."""
        counts = self.size_counts
        seen, n_1 = counts[1:], max(float(counts[0]), 0.5)
        total = seen.sum()
        return seen * ((np.sqrt(1.0 + total / n_1) - 1.0) / total if total > 0 else 0.0)

    def __repr__(self) -> str:
        return (f"SetwiseEvents({self.winners.shape[0]} events of {self.n_models} models in "
                f"{self.sets.shape[0]} comparison sets, D = {self.max_order})")

    def data(self) -> EventData:
        """The arrays as ``pm.Data`` of the current model.  The events lie along the dim
        ``event``, whose length no graph depends on
        (:data:`bayesrank.inference.cache.DATA_ONLY_DIMS`), so a compiled model serves
        every data set of the same L, D and number of comparison sets G (1 without
        missing trials).  G stays a static shape: with it dynamic, PyTensor's graph of
        the elementary symmetric polynomials cost 2.2-2.6x per gradient on AlpacaEval
        and ZeroEval (docs/samplers.md)."""
        unseen = (np.arange(2, self.max_order + 1) < self.sets[self.reference].sum()) & (
            self.size_counts[1:] == 0)
        return EventData(
            pm.Data("event_weights", self.weights, dims="event"),
            pm.Data("event_sizes", self.sizes.astype(float), dims="event"),
            pm.Data("event_size_index", self.size_index, dims="event"),
            pm.Data("event_set", self.set_index, dims="event"),
            pt.specify_shape(pm.Data("comparison_sets", self.sets,
                                     dims=("comparison_set", "llm")), self.sets.shape),
            pm.Data("reference_set", (np.arange(self.sets.shape[0]) == self.reference) * 1.0,
                    dims="comparison_set"),
            pm.Data("unseen_orders", unseen.astype(float)),
            pm.Data("size_wall", np.array([-np.log(max(float(self.size_counts[0]), 1.0))]))[0],
            pm.Data("size_coupling", self.size_coupling, dims="tie_order"),
        )

    def logp(self, data: EventData, value, theta, log_delta, log_z):
        """count_e log P(U_e > V_e | S_e) for the winner indicators ``value`` (E, L), given
        log Z(S_g) (:func:`log_tie_normalisers`)."""
        # CustomDist hands the parameters over with a leading broadcast batch axis
        theta = pt.reshape(theta, (self.n_models,))
        log_delta = pt.reshape(log_delta, (self.max_order,))
        log_z = pt.reshape(log_z, (self.sets.shape[0],))
        log_g = (value @ theta) / data.sizes
        return data.weights * (log_delta[data.size_index] + log_g - log_z[data.set_index])

    def random(self, theta, log_delta, log_z, rng=None, size=None) -> np.ndarray:
        """One winner set per event from P(U | S_e) (:func:`sample_winner_sets`)."""
        theta = np.reshape(theta, (self.n_models,))
        event_sets = self.sets[self.set_index].astype(bool)
        log_delta = np.reshape(log_delta, (self.max_order,))
        winners = sample_winner_sets(rng, theta, log_delta, event_sets)
        return winners.astype(float).reshape(size + (self.n_models,) if size else winners.shape)


def davidson_luce(events: SetwiseEvents, scale: float = 1.0,
                  hierarchical: bool = False) -> pm.Model:
    """The Davidson-Luce model, line by line (module docstring)::

        theta       ~ ZeroSumNormal(scale)  (hierarchical: sigma ~ HalfNormal(scale))
        eta_t       ~ Normal(0, 3), log delta_t = log L - log C(L, t) + eta_t  (t = 2..D)
        Z(S)        = sum_t delta_t e_t(pi_S^(1/t))
        U_e | S_e   ~ P(U > V | S) = delta_|U| g_|U|(U) / Z(S), count_e times
    """
    with pm.Model(coords=events.coords) as model:
        data = events.data()
        theta = log_strengths(scale, hierarchical)
        log_delta = tie_prevalences(theta, events, data)
        log_z = log_tie_normalisers(theta, log_delta, data.sets, events.max_order)
        winners = pm.Data("event_winners", events.winners.astype(float), dims=("event", "llm"))
        pm.CustomDist("events", theta, log_delta, log_z, logp=partial(events.logp, data),
                      random=events.random, signature="(l),(d),(g)->(l)", observed=winners,
                      dims=("event", "llm"))
    return model


def tie_prevalences(theta, events: SetwiseEvents, data: EventData):
    """log delta_t, t = 1..D: log delta_1 = 0 and, for t >= 2, the deterministic
    ``log_delta`` = log L - log C(L, t) + eta_t (tie_order); no tie effect when D = 1."""
    log_delta = pt.zeros(1)
    if events.max_order >= 2:
        eta = _size_log_odds(theta, events, data)
        log_delta_ties = pm.Deterministic(
            "log_delta", np.log(events.n_models) - events.log_binom + eta, dims="tie_order")
        log_delta = pt.concatenate([log_delta, log_delta_ties])
    return pt.specify_shape(log_delta, (events.max_order,))


def _size_log_odds(theta, events: SetwiseEvents, data: EventData, scale: float = 3.0):
    """eta_t ~ Normal(0, scale) i.i.d., sampled as the log-odds of a winner set's size.

    In a comparison set S the size of the winner set has P(t | S) = delta_t e_t(pi^(1/t))
    / Z(S), so log P(t | S) / P(1 | S) = eta_t + h_t(theta) with

        h_t(theta) = log e_t(pi^(1/t)) - log e_1(pi) - log C(L, t) + log L

    (0 when every strength is equal).  The coordinate is omega_t = eta_t + h_t(theta) on
    ``events.reference`` (the comparison set of most question-trials; h_t = 0 for orders
    that set cannot hold): what the counts of each winner-set size pin down, whatever
    theta is.  eta_t itself moves with every theta through h_t, so with eta free each
    step in theta had to move all D - 1 tie effects along.  For fixed theta eta -> omega
    is a translation, so the prior on eta and the posterior are unchanged: eta is
    declared with its Normal(0, scale) prior and sampled in these coordinates
    (:class:`models.transforms.TieSizes`), the seen orders with the size-1 count's
    common noise factored out (``coupling``): on GSM8K (41 models, 6 winner sets of
    size 1 against 209 of size 40) the omega_t of the common sizes moved together with
    that noise, bulk ESS 119 of 4,000 draws and R-hat 1.029 (docs/samplers.md).

    Orders that the reference set holds but none of its events has (``size_counts`` 0,
    counted per size t = 1..D on that set) are bounded by the data from one side only:
    with n events and n_1 of size 1 in the reference set, omega_t above the wall w = -log
    n_1 would make size t expected at least once.  Below it only the prior acts,
    ``scale`` wide; above it the likelihood falls like -n e^(omega_t - w), one logit
    wide, and the step size suited to the open side overshoots the wall now and then.
    Such an order's free coordinate v is mapped as the IRT models map their one-sided
    intercepts (:func:`models.transforms.wall_map`),

        omega_t = w + v - scale softplus(-v),   d omega_t / dv = 1 + scale logistic(-v)

    about v past the wall and (1 + scale) v on the open side.  The map is strictly
    increasing onto the real line, and its log derivative enters the density, so the
    posterior is the same whatever w is; w only decides where the scales meet.
    """
    max_order, L = events.max_order, events.n_models
    # the same graph as log Z's in the model (one computation): theta as the model holds it
    _, diagonal = tie_size_terms(theta, data.sets, max_order)
    proper = np.arange(2, max_order + 1) < pt.dot(data.reference, data.sets).sum()
    e = pt.dot(diagonal, data.reference)  # e_t(x^(t)) e^(-shift), t = 1..D
    # the inner where keeps log(0) of the orders the set cannot hold out of the gradient
    log_odds_equal = events.log_binom - np.log(L)  # log e_t / e_1 at equal strengths
    h = pt.where(proper, pt.log(pt.where(proper, e[1:], 1.0)) - pt.log(e[0]) - log_odds_equal,
                 0.0)
    eta = tie_sizes("eta", scale, h, data.unseen, data.wall, data.coupling)
    pm.Deterministic("tie_size_log_odds", eta + h, dims="tie_order")
    return eta


def build(
    data: ResponseData | Any,
    *,
    max_tie_order: int | None = None,
    scale: float = 1.0,
    hierarchical: bool = False,
) -> pm.Model:
    """Build the Bayesian Davidson-Luce model of binary ``data``: check the options.

    Parameters
    ----------
    data : ResponseData or array_like (L, M, N), binary
    max_tie_order : int, optional
        Largest tie order D (default L - 1, the largest winner set of a non-degenerate
        event).  Must be at least the largest observed |U|.
    scale : float
        Prior sd of the log-strengths (of their spread when ``hierarchical``).
    hierarchical : bool
        Learn the spread of the log-strengths.

    Returns
    -------
    pymc.Model
        Ranking quantity ``theta`` = log-strengths (llm), zero-sum; tie
        parameters ``log_delta`` (tie_order = 2..D); observed ``events``.
    """
    d = response_data(data)
    binary_only(d, "davidson_luce")
    scale = positive_scale("scale", scale)
    return davidson_luce(SetwiseEvents.of(d, max_tie_order), scale, bool(hierarchical))


# -- the normaliser Z and the winner-set sampler --------------------------------------------

def log_tie_normalisers(theta, log_delta, sets, max_order: int):
    """log Z(S_g) for each comparison set (rows of ``sets``), exact.

    Parameters
    ----------
    theta : tensor (L,)
        Log-strengths.
    log_delta : tensor (D,)
        log delta_t for t = 1..D (log delta_1 = 0).
    sets : array_like or tensor (G, L) of 0/1, static L
        Membership of each comparison set.
    max_order : int
        D.

    Returns
    -------
    tensor (G,)
    """
    shift, diagonal = tie_size_terms(theta, sets, max_order)
    return shift + pt.log(pt.sum(pt.exp(log_delta)[:, None] * diagonal, axis=0))


def tie_size_terms(theta, sets, max_order: int):
    """(s, E): E[t-1, g] = e_t(pi^(1/t)) e^(-s) over the members of set g, t = 1..D.

    s = max(theta) keeps the products in range; E is 0 where t >= |S_g| (those
    winner sets are not events).  Shared by :func:`log_tie_normalisers` and
    :func:`_size_log_odds`, which build it from the same theta, so the compiled
    log-density computes it once.
    """
    order = np.arange(1, max_order + 1, dtype=float)
    shift, diagonal = tie_size_sums(theta, sets, max_order)  # (D, G)
    # winner sets of size |S| (everyone present ties) are discarded from the data, so Z leaves
    # them out: the likelihood is conditional on an informative event
    proper = pt.lt(order[:, None], sets.sum(axis=1)[None, :])
    return shift, diagonal * proper


def _suffix_esp(x: np.ndarray, max_order: int) -> np.ndarray:
    """E[..., i, r] = e_r(x_i, ..., x_{n-1}) for r = 0..max_order (E[..., n, 0] = 1), numpy."""
    n = x.shape[-1]
    out = np.zeros((*x.shape[:-1], n + 1, max_order + 1))
    out[..., n, 0] = 1.0
    for i in range(n - 1, -1, -1):
        out[..., i, :] = out[..., i + 1, :]
        out[..., i, 1:] += x[..., i, None] * out[..., i + 1, :-1]
    return out


def sample_winner_sets(
    rng: np.random.Generator,
    theta: np.ndarray,
    log_delta: np.ndarray,
    sets: np.ndarray,
) -> np.ndarray:
    """One Davidson-Luce winner set per row of ``sets`` (bool, E x L), exactly.

    P(U | S) = delta_|U| g_|U|(U) / Z(S) over proper non-empty subsets U of S
    with |U| <= D.  The size t is drawn from P(t | S) = delta_t e_t(x^(t)) / Z(S),
    x^(t)_i = pi_i^(1/t) for i in S (0 elsewhere); then the members one model
    at a time: i joins with probability x_i e_{r-1}(x_{>i}) / e_r(x_{>=i}), r the
    places still open, which gives each t-subset probability prod_U x / e_t
    (conditional Poisson sampling).
    """
    n_events, L = sets.shape
    D = log_delta.shape[0]
    order = np.arange(1, D + 1)
    x = sets[None, :, :] * np.exp((theta - theta.max())[None, None, :] / order[:, None, None])
    esp = _suffix_esp(x, D)  # (D, E, L + 1, D + 1)
    diagonal = esp[order - 1, :, 0, order].T  # (E, D): e_t(x^(t)) of the whole set
    proper = order[None, :] < sets.sum(axis=1)[:, None]
    weight = np.where(proper, np.exp(log_delta - log_delta.max())[None, :] * diagonal, 0.0)
    cumulative = np.cumsum(weight, axis=1)
    u = rng.random(n_events) * cumulative[:, -1]
    size = (cumulative < u[:, None]).sum(axis=1) + 1  # t in 1..D
    rows = np.arange(n_events)
    table, xt = esp[size - 1, rows], x[size - 1, rows]  # (E, L + 1, D + 1), (E, L)
    winners = np.zeros((n_events, L), dtype=bool)
    remaining = size.copy()
    for i in range(L):
        open_ = remaining > 0
        denominator = table[rows, i, remaining]
        numerator = xt[:, i] * table[rows, i + 1, np.maximum(remaining - 1, 0)]
        p = np.where(open_, numerator / np.where(open_, denominator, 1.0), 0.0)
        joins = rng.random(n_events) < p
        winners[:, i] = joins
        remaining -= joins
    return winners
