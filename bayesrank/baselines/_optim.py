"""Shared pieces of the penalised ML / MAP fits: priors, Newton, identifiability, ties.

Used by the strength models (:mod:`~bayesrank.baselines.paired`,
:mod:`~bayesrank.baselines.luce`), the graph rules and the IRT fits, so that each idea
has one implementation:

- :func:`prior_variance` -- the one check of a Gaussian prior variance argument;
- :func:`penalise` -- the location penalty (ML) or Gaussian prior (MAP) on log-strengths;
- :func:`newton` -- damped Newton with Armijo backtracking for smooth convex objectives;
- :func:`require_connected`, :func:`check_identified`, :func:`check_ford_condition` -- when does a
  finite maximum-likelihood estimate exist (comparison graphs and binomial IRT counts);
- :func:`average_groups`, :func:`strengths` -- exact ties (the groups of
  :func:`bayesrank.ranking.exchangeable_groups`) and the strength scale of the ranking rules.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np
from scipy import linalg
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from bayesrank.baselines.graph_batch import connected_batch
from bayesrank.checks import check_finite, check_int
from bayesrank.errors import DataError, DisconnectedGraphError, NotIdentifiedError

__all__ = [
    "GTOL",
    "average_groups",
    "check_ford_condition",
    "check_identified",
    "fit_options",
    "newton",
    "newton_step",
    "normalised_strengths",
    "penalise",
    "prior_variance",
    "require_connected",
    "strengths",
    "warn_stalled",
]

GTOL = 1e-11  # on the gradient of the per-comparison objective
_LOG_CAP = 30.0  # |theta| beyond which exp(theta) is reported as exp(+-30)

Objective = Callable[[np.ndarray], tuple[float, np.ndarray, np.ndarray]]


# -- priors and penalties -------------------------------------------------------------------
def prior_variance(prior: float | None, name: str = "prior") -> float | None:
    """The variance of a Gaussian prior ``N(0, prior)``, or None for maximum likelihood.

    Raises :class:`~bayesrank.errors.DataError` naming ``name`` unless ``prior`` is None or
    a positive finite number (a bool, a string or an array is not a variance).
    """
    if prior is None:
        return None
    try:
        return check_finite(name, prior, positive=True)
    except DataError:
        raise DataError(
            f"{name} must be a positive, finite prior variance or None, got {prior!r}"
        ) from None


def fit_options(prior: float | None, max_iter: int) -> tuple[float | None, int]:
    """The checked ``(prior variance, max_iter)`` of an ML / MAP fit (one DataError each)."""
    return prior_variance(prior), check_int("max_iter", max_iter)


def penalise(
    f: float,
    g: np.ndarray,
    H: np.ndarray | None,
    theta: np.ndarray,
    prior_var: float | None,
    scale: float,
) -> tuple[float, np.ndarray, np.ndarray | None]:
    """Add the identification term on log-strengths to a negative log-likelihood.

    ``theta`` holds the log-strengths, the first ``L`` entries of the parameter vector
    whose objective ``f``, gradient ``g`` and Hessian ``H`` are given (any further entries,
    e.g. a tie parameter, are left alone).

    - ML (``prior_var`` None): ``scale (mean theta)^2 / 2`` pins the location without moving
      the optimum (the likelihood is shift-invariant, so its optimum has mean zero);
    - MAP: the Gaussian prior ``theta ~ N(0, prior_var)``, ``theta . theta / (2 prior_var)``.

    Everything is then divided by ``scale`` (the number of comparisons or events) so that
    Newton's tolerances are relative.  ``g`` and ``H`` are updated in place; pass ``H=None``
    for first-order methods.
    """
    L = theta.size
    if prior_var is None:
        m = theta.mean()
        f += 0.5 * m**2 * scale
        g[:L] += m * scale / L
        if H is not None:
            H[:L, :L] += scale / L**2
    else:
        f += 0.5 * theta @ theta / prior_var
        g[:L] += theta / prior_var
        if H is not None:
            H[np.arange(L), np.arange(L)] += 1.0 / prior_var
    return f / scale, g / scale, None if H is None else H / scale


# -- Newton's method ---------------------------------------------------------------------------
def newton_step(H: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Newton direction ``-H^{-1} g``; for a non-positive-definite ``H`` the eigenvalues are
    replaced by their absolute values (a descent direction either way)."""
    try:
        step = -linalg.solve(H, g, assume_a="pos", check_finite=False)
        if g @ step < 0:
            return step
    except (linalg.LinAlgError, ValueError):
        pass
    vals, vecs = np.linalg.eigh(H)
    return -vecs @ ((vecs.T @ g) / np.maximum(np.abs(vals), 1e-8 * max(1.0, np.abs(vals).max())))


def newton(
    objective: Objective,
    x0: np.ndarray,
    max_iter: int,
    what: str,
    gtol: float = GTOL,
) -> np.ndarray:
    """Minimise a smooth convex objective by damped Newton with Armijo backtracking.

    ``objective(x)`` returns ``(f, gradient, Hessian)``.  One linear solve per iteration
    (no eigen-decompositions unless the Hessian is indefinite), quadratic convergence near
    the optimum; stops when ``max |gradient| <= gtol``.  Warns if ``max_iter`` runs out.
    """
    x = np.asarray(x0, dtype=float).copy()
    f, g, H = objective(x)
    for _ in range(max_iter):
        if np.max(np.abs(g), initial=0.0) <= gtol:
            return x
        step = newton_step(H, g)
        slope = g @ step
        alpha = 1.0
        while True:
            x_new = x + alpha * step
            f_new, g_new, H_new = objective(x_new)
            noise = 1e-13 * (1.0 + abs(f))
            if f_new <= f + 1e-4 * alpha * slope + noise or alpha < 1e-12:
                break
            alpha /= 2
        if alpha < 1e-12:  # no further progress at floating-point resolution
            return x
        x, f, g, H = x_new, f_new, g_new, H_new
    if np.max(np.abs(g), initial=0.0) > 1e-7:
        warnings.warn(
            f"{what}: Newton stopped after max_iter={max_iter} iterations with max |gradient| "
            f"{np.max(np.abs(g)):.2e}; raise max_iter",
            RuntimeWarning,
            stacklevel=3,
        )
    return x


def warn_stalled(stalled: np.ndarray, what: str, max_iter: int) -> None:
    """Warn (at the caller's caller) when a batched Newton fit of one problem ``stalled``."""
    if stalled.any():
        warnings.warn(f"{what}: Newton stopped after max_iter={max_iter} iterations without "
                      "converging; raise max_iter", RuntimeWarning, stacklevel=3)


# -- identifiability ---------------------------------------------------------------------------
def _names(labels: Sequence[str] | None, n: int) -> list[str]:
    return list(labels) if labels is not None else [str(k) for k in range(n)]


def require_connected(
    edges: np.ndarray,
    what: str,
    *,
    labels: Sequence[str] | None = None,
    suggestion: str | None = None,
    quantity: str = "order",
) -> None:
    """Raise :class:`DisconnectedGraphError` unless the undirected graph ``edges`` is connected.

    Models in different components were never compared, not even indirectly, so their
    relative ``quantity`` (order, strengths) is not identified.  ``suggestion`` names a
    rule whose prior links the components; ``labels`` name the models (default indices).
    """
    A = np.asarray(edges, dtype=bool)
    if A.shape[0] <= 1 or connected_batch(A[None])[0]:  # the cheap test; scipy to explain
        return
    n, comp = connected_components(A | A.T, directed=False)
    names = _names(labels, A.shape[0])
    groups = [[names[i] for i in np.flatnonzero(comp == c)][:4] for c in range(n)]
    hint = f"; use {suggestion} (its prior keeps strengths finite)" if suggestion else ""
    raise DisconnectedGraphError(
        f"{what}: the comparison graph has {n} disconnected components (e.g. "
        f"{groups[:3]}); models in different components were never compared, so their "
        f"relative {quantity} is not identified{hint}, or rank each component separately"
    )


def check_identified(
    beats: np.ndarray,
    *,
    method: str = "this maximum-likelihood fit",
    suggestion: str | None = None,
    labels: Sequence[str] | None = None,
) -> None:
    """Raise unless the directed comparison graph is strongly connected.

    The maximum-likelihood strengths of Bradley–Terry-type models exist iff every model
    can be reached from every other through "beats" edges (Zermelo 1929; Hunter 2004).

    Parameters
    ----------
    beats : array_like of bool, shape (L, L)
        ``beats[i, j]`` is True when ``i`` was observed to do at least as well as ``j`` in a
        way the model rewards (a win, or a tie in the tie models).
    method, suggestion : str
        Names used in the error message (e.g. ``"bradley_terry"``, ``"bradley_terry_map"``).
    labels : sequence of str, optional
        Model names for the message (default: indices).

    Raises
    ------
    DisconnectedGraphError
        Some groups of models were never compared with each other.
    NotIdentifiedError
        The graph is connected but a group never loses (or never wins) against the others,
        so its log-strength diverges: no finite maximum-likelihood estimate.
    """
    A = np.asarray(beats, dtype=bool).copy()
    np.fill_diagonal(A, False)
    require_connected(A, method, labels=labels, suggestion=suggestion, quantity="strengths")
    n_strong, comp = connected_components(A, directed=True, connection="strong")
    if n_strong > 1:
        names = _names(labels, A.shape[0])
        hint = f"; use {suggestion} (its prior keeps strengths finite)" if suggestion else ""
        between = A & (comp[:, None] != comp[None, :])
        beaten = np.zeros(n_strong, bool)  # component has a member beaten from outside
        beaten[np.unique(comp[np.flatnonzero(between.any(axis=0))])] = True
        winning = np.zeros(n_strong, bool)
        winning[np.unique(comp[np.flatnonzero(between.any(axis=1))])] = True
        unbeaten = [names[k] for k in np.flatnonzero(~beaten[comp])][:5]
        winless = [names[k] for k in np.flatnonzero(~winning[comp])][:5]
        raise NotIdentifiedError(
            f"{method} has no finite maximum-likelihood estimate: models {unbeaten} never "
            f"lose to any model outside their group and {winless} never beat any model "
            f"outside theirs{hint}"
        )


def model_labels(index: np.ndarray, labels: Sequence[str] | None) -> str:
    """Models at ``index`` by name (``labels``), or by position when no names are known."""
    if labels is None:
        return str(index.tolist())
    return ", ".join(repr(str(labels[i])) for i in index)


def check_ford_condition(
    successes: np.ndarray, trials: np.ndarray, what: str, labels: Sequence[str] | None = None
) -> None:
    """Ford's (1957) condition for a finite binomial Rasch joint-ML estimate.

    On informative items (each solved and failed at least once), the bipartite "beats"
    graph -- model ``l`` beats item ``m`` if ``k_lm > 0``, item ``m`` beats model ``l`` if
    ``k_lm < n_lm`` -- must be strongly connected.  Raises :class:`NotIdentifiedError` naming
    models with no observed trial, models that solved every trial (or none) and, otherwise,
    the separated groups.
    """
    k, n = successes, trials
    L, M = k.shape
    unseen = np.flatnonzero(n.sum(axis=1) == 0)
    if unseen.size:
        raise NotIdentifiedError(
            f"{what}: model(s) {model_labels(unseen, labels)} have no observed trial on any "
            "informative item"
        )
    rows_solved, rows_failed = k.sum(axis=1), (n - k).sum(axis=1)
    perfect = np.flatnonzero(rows_failed == 0)
    hopeless = np.flatnonzero(rows_solved == 0)
    if perfect.size or hopeless.size:
        parts = []
        if perfect.size:
            parts.append(f"model(s) {model_labels(perfect, labels)} solved every informative "
                         "trial")
        if hopeless.size:
            parts.append(f"model(s) {model_labels(hopeless, labels)} solved none")
        raise NotIdentifiedError(
            f"{what}: {' and '.join(parts)}, so their joint-ML ability is infinite; use the "
            "MAP variant (Gaussian ability prior) or rasch_mml, whose abilities stay finite"
        )
    model_beats = np.argwhere(k > 0)
    item_beats = np.argwhere(k < n)
    rows = np.r_[model_beats[:, 0], L + item_beats[:, 1]]
    cols = np.r_[L + model_beats[:, 1], item_beats[:, 0]]
    graph = coo_matrix((np.ones(rows.size), (rows, cols)), shape=(L + M, L + M))
    n_comp, comp = connected_components(graph, directed=True, connection="strong")
    if n_comp > 1:
        sizes = np.bincount(comp[:L], minlength=n_comp)
        members = [np.flatnonzero(comp[:L] == c) for c in np.flatnonzero(sizes)][:4]
        groups = (str([m.tolist() for m in members]) if labels is None
                  else ", ".join(f"[{model_labels(m, labels)}]" for m in members))
        raise NotIdentifiedError(
            f"{what}: the data are separated (Ford's condition fails): the models split into "
            f"groups {groups} such that one group solves items the other always fails, "
            "consistently in one direction, so the joint-ML abilities diverge. Use the MAP "
            "variant or rasch_mml"
        )


# -- exact ties and the strength scale ---------------------------------------------------------
def average_groups(scores: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Replace each score by the mean over its group (exact ties get exactly equal scores)."""
    sums = np.bincount(groups, scores)
    sizes = np.bincount(groups)
    return (sums / sizes)[groups]


def strengths(theta: np.ndarray) -> np.ndarray:
    """Strengths ``pi = exp(theta)`` with ``|theta|`` capped at 30 (no overflow)."""
    return np.exp(np.clip(theta, -_LOG_CAP, _LOG_CAP))


def normalised_strengths(theta: np.ndarray) -> np.ndarray:
    """``exp(theta)`` normalised to sum 1 over the last axis (Plackett–Luce's scores)."""
    pi = np.exp(theta)
    return pi / np.sum(pi, axis=-1, keepdims=True)
