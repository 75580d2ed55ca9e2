"""Per-question effects of the item-response models, pooled across questions.

:func:`pooled` draws difficulties (Rasch) or intercepts (2PL, 3PL) i.i.d. from
Normal(location, scale): informed questions centred, one-sided ones (solved by
no model, or by every model in every trial) non-centred, or, for the 2PL and
3PL, measured from the wall their data put up (:func:`wall_positions`).  Used by
the models of :mod:`models.irt`; the one-sided Rasch difficulties can also be
integrated out (:mod:`models.one_sided`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from pytensor.tensor.variable import TensorVariable

from .transforms import floors_and_intercepts, item_effects

__all__ = ["Walls", "cap_models", "crossing_ability", "crossings", "pooled", "solve_rates",
           "wall_models", "wall_positions"]


class Walls(NamedTuple):
    """What a 2PL/3PL intercept's coordinates depend on: slopes a (M,), abilities (L,), the
    models that put up the one-sided questions' walls (:func:`wall_models`) and caps
    (:func:`cap_models`), and where the informed questions cross (:func:`crossings`; the
    2PL's only)."""

    slope: TensorVariable
    ability: TensorVariable
    models: np.ndarray  # (2, M) model indices, :func:`wall_models`
    caps: np.ndarray  # (2, L) one-hot rows, :func:`cap_models`
    capped: np.ndarray  # (2, M) 0/1: which questions each cap bounds, :func:`cap_models`
    crossings: np.ndarray  # (3, M): :func:`crossings`


def solve_rates(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Each model's overall solve rate sum_m k_lm / sum_m n_lm (0 for a model without trials)."""
    return k.sum(axis=1) / np.maximum(n.sum(axis=1), 1)


def wall_models(k: np.ndarray, n: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
    """(2, M): the models whose abilities put up each question's walls (:func:`wall_positions`),
    as indices (floats, as :func:`crossings`' rows).

    Row 0: of the models in ``among`` (bool, L; default every model) that answered the
    question, the one with the highest overall solve rate (the wall of a question none of
    them solves); row 1: the lowest (of a question all of them solve).  With every cell
    observed that is one model for every question.  With cells missing it is not: a
    question that its five answering models all fail is bounded by the best of those five,
    not by a model that never saw it, whose wall sat a fixed distance from the data's and
    tied every such question to that model's ability (the 2PL at 50 x 14,000 with 90% of
    the cells missing failed R-hat on theta and beta; docs/scale.md).  A question none of
    them answered takes the best and worst of them all.
    """
    L = k.shape[0]
    among = np.ones(L, bool) if among is None else among
    rate = np.where(among, solve_rates(k, n), np.nan)
    answered = (n > 0) & among[:, None]
    rates = np.where(answered, rate[:, None], np.nan)
    none = ~answered.any(axis=0)
    rates[:, none] = rate[:, None]
    return np.stack([np.nanargmax(rates, axis=0), np.nanargmin(rates, axis=0)]).astype(float)


def cap_models(k: np.ndarray, n: np.ndarray,
               among: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The caps' models (:func:`wall_positions`): one-hot rows (2, L), and which questions
    each bounds (2, M, 0/1: those it answered).

    Row 0: a model outside ``among`` (bool, L; default every model) that solves every
    question it answered in every trial; row 1: one that solves none (zero rows where there
    is none); of several, the one with the fewest trials, whose ability the data push least
    far into the prior's tail, so whose cap binds.
    """
    L = k.shape[0]
    among = np.ones(L, bool) if among is None else among
    trials = n.sum(axis=1)
    rows = []
    for solved in (k.sum(axis=1) == trials, k.sum(axis=1) == 0):
        capping = solved & ~among & (trials > 0)
        rows.append(np.arange(L) == (np.argmin(np.where(capping, trials, np.inf))
                                     if capping.any() else -1))
    models = np.stack(rows)
    return models.astype(float), (models.astype(float) @ (n > 0)).astype(float)


def crossings(k: np.ndarray, n: np.ndarray, among: np.ndarray | None = None) -> np.ndarray:
    """(3, M): the two models between which each question's solve rate crosses 1/2, and
    the weight of the second: rows (low, high, weight), :func:`crossing_ability`.

    The models in ``among`` (bool, L; default every model) ranked by solve rate, a
    question with cell rates summing to s over them is solved by about the s best: its
    curve crosses 1/2 between the s-th and (s + 1)-th best, at position s - 1/2 (from
    0) along that ranking, interpolated linearly.  Cells without trials count at the
    question's mean rate.
    """
    L = k.shape[0]
    among = np.ones(L, bool) if among is None else among
    order = np.flatnonzero(among)[np.argsort(-solve_rates(k, n)[among], kind="stable")]
    observed = n[order] > 0
    rates = np.divide(k[order], n[order], out=np.zeros(observed.shape), where=observed)
    solvers = rates.sum(axis=0) / np.maximum(observed.sum(axis=0), 1) * order.size
    position = np.clip(solvers - 0.5, 0.0, order.size - 1.0)
    low = np.floor(position).astype(int)
    high = np.minimum(low + 1, order.size - 1)
    return np.stack([order[low], order[high], position - low]).astype(float)


def crossing_ability(walls: Walls):
    """t_m, the ability at which question m's curve crosses 1/2 by :func:`crossings`:
    (1 - w_m) theta_low(m) + w_m theta_high(m), (M,), from the sampled abilities.

    An informed 2PL intercept is sampled as v_m = beta_m + a_m t_m = a_m (t_m - b_m),
    the logit at that ability (:class:`models.transforms.ItemEffects`' shift; a
    translation for given a and theta, so the density is unchanged).  With beta_m itself
    the coordinate, a question whose crossing b_m lies far from the abilities' mean has
    beta_m = -a_m b_m tied to its slope along a ridge a diagonal mass matrix cannot
    follow: on LiveCodeBench, a question solved in every run by the four best models
    and in none by the others had corr(log a, beta) = -0.94 (log a's bulk ESS 444 of
    4,000 draws), against corr(log a, b) = -0.16 (docs/samplers.md, "Crossings").  The
    3PL keeps its coordinates (:class:`models.transforms.FloorsAndIntercepts`): with this
    shift its ESS per second fell on three real subsamples of five.
    """
    data = pm.modelcontext(None).named_vars.get("crossings")
    if data is None:
        data = pm.Data("crossings", walls.crossings)
    low, high = pt.cast(data[0], "int64"), pt.cast(data[1], "int64")
    return (1.0 - data[2]) * walls.ability[low] + data[2] * walls.ability[high]


def wall_positions(walls: Walls, side):
    """Where the one-sided 2PL/3PL intercepts' walls are, beta_w = -a_m theta_best, and
    how far their caps lie beyond them, and which questions have one: (wall, width,
    capped), each (M,).

    A question no model solves needs a_m theta_l + beta_m well below 0 for every model
    that answered it, which the best such model's ability bounds (:func:`wall_models`): its
    intercept's conditional posterior is the prior N(mu, s^2) cut off by a soft wall at
    beta_w (the worst model's for a question every model solves, from below).  The wall is
    about one logit wide, the prior s wide (on Reasoning Gym hard s is 32: the one-sided
    questions lie in both tails of one normal), so such intercepts are sampled by their
    distance from it (:class:`models.transforms.ItemEffects`; docs/samplers.md, sixth
    round).

    A model left out of the split because it solves every question (or none) bounds the
    other side too: it solves a question no informed model solves, so beta_m > -a_m
    theta_all, a cap about one logit wide at width a_m (theta_all - theta_best) below the
    wall (above it, from the model solving nothing, for a question every informed model
    solves).  Between wall and cap the posterior is the prior cut off at both ends: such
    a question is sampled by the two-sided wall map (``width`` > 0; 0 where no cap), whose
    stretch ends at the cap.  With the one-sided map's stretch (1 + s) reaching past the
    cap, NUTS met the cap about s times steeper than the wall, and diverged there in 4 of
    10 fits of LiveCodeBench with its weakest model's runs all failed.  The width is
    a_m softplus(gap), positive at every point a trajectory visits.
    """
    best, worst = (pt.cast(row, "int64") for row in _data("wall_models", walls.models))
    solves_all, solves_none = _data("cap_models", walls.caps)
    capped_all, capped_none = _data("capped", walls.capped)
    top, bottom = walls.ability[best], walls.ability[worst]
    gap = pt.where(side > 0, pt.softplus(pt.dot(solves_all, walls.ability) - top),
                   pt.softplus(bottom - pt.dot(solves_none, walls.ability)))
    capped = pt.where(side > 0, capped_all, pt.where(side < 0, capped_none, 0.0))
    return -walls.slope * pt.where(side > 0, top, bottom), capped * walls.slope * gap, capped


def _data(name: str, rows: np.ndarray):
    """The two rows of ``rows`` (:func:`wall_models`, :func:`cap_models`) as the data
    ``name`` of the current model, created where first read."""
    data = pm.modelcontext(None).named_vars.get(name)
    if data is None:
        data = pm.Data(name, rows)
    return data[0], data[1]


def pooled(name: str, location, scale_name: str, split, uninformed_scale: bool = False,
           uninformed=None, walls: Walls | None = None, guessing=None):
    """Item effects i.i.d. Normal(location, scale), scale ~ HalfNormal(2.5).

    The questions that ``split.centred`` marks are sampled as they are (the
    data pin each down); the others non-centred, location + scale z with z ~
    N(0, 1): an uninformed question's posterior is the prior's tail, whose
    width scales with the learnt scale, a funnel when centred.  One variable
    ``name`` holds both kinds, told apart by masks that are data
    (:class:`models.irt.QuestionSplit`), so the graph does not depend on which
    questions are which; its free coordinates are those of
    :class:`models.transforms.ItemEffects`.

    ``uninformed_scale``: the one-sided questions (``split.side`` +-1) get their own scale
    ``{scale_name}_uninformed`` ~ HalfNormal(2.5) (the 2PL and 3PL; :mod:`models.irt`)
    where ``split.own_scale``; otherwise they share ``scale`` and that variable keeps its
    prior (it is in the graph either way, so that datasets of one shape share one graph).
    ``walls``: with ``uninformed_scale``, the one-sided questions are sampled from the
    wall their data put up (:func:`wall_positions`).
    ``guessing`` (alpha, beta): the 3PL; the intercepts come with floors c_m ~
    Beta(alpha, beta), sampled jointly (:class:`models.transforms.FloorsAndIntercepts`);
    returns the Deterministics (beta, c).
    ``uninformed(raw, location, scale)``: the uninformed questions' reported
    values from their z (:func:`models.one_sided.collapsed_difficulties`); then
    the result is the pair (the plain map, unnamed; the reported Deterministic).
    """
    scale = pm.HalfNormal(scale_name, 2.5)
    if uninformed is not None:
        return _collapsed(name, location, scale, split, uninformed)
    own = sigma = scale
    if uninformed_scale:  # the one-sided questions' scale (models.irt.question_split)
        own = pt.where(split.data("own_scale")[0] > 0,
                       pm.HalfNormal(f"{scale_name}_uninformed", 2.5), scale)
        sigma = pt.where(pt.neq(split.data("side"), 0), own, scale)
    zeros = pt.zeros(split.size)
    side = split.data("side") if walls is not None else zeros
    wall, width, capped = (wall_positions(walls, side) if walls is not None
                           else (zeros, zeros, zeros))
    where = {"centred": split.data("centred"), "side": side, "walls": walls is not None,
             "wall": wall, "width": width}
    # the one-sided map's stretch, where no cap ends it (wall_positions)
    stretch = (1.0 - capped) * own
    if guessing is None:
        # an informed intercept's coordinate: its logit where the question crosses
        shift = (walls.slope * crossing_ability(walls) if walls is not None
                 else pt.as_tensor(np.float64(0.0)))
        return item_effects(name, location, sigma, stretch, shift=shift, **where)
    model = pm.modelcontext(None)
    if "item_parameter" not in model.coords:
        model.add_coord("item_parameter", [name, "c"])
    pair = floors_and_intercepts(f"{name}_c", location, sigma, stretch, guessing=guessing,
                                 **where)
    return (pm.Deterministic(name, pair[:, 0], dims="question"),
            pm.Deterministic("c", pair[:, 1], dims="question"))


def _collapsed(name, location, scale, split, uninformed):
    """The Rasch's difficulties with the one-sided ones integrated out (:mod:`.one_sided`):
    the free ``{name}_raw`` (centred entries b_m, the others z_m ~ N(0, 1)), the plain map,
    and the reported Deterministic."""
    centred = split.data("centred") > 0
    raw = pm.Normal(f"{name}_raw", pt.where(centred, location, 0.0),
                    pt.where(centred, scale, 1.0), dims="question")
    plain = pt.where(centred, raw, location + scale * raw)
    reported = pt.where(split.data("informed") > 0, plain, uninformed(raw, location, scale))
    return plain, pm.Deterministic(name, reported, dims="question")
