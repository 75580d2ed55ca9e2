"""A model's numbers on the accuracy scale: expected accuracy and its predictive interval.

Two quantities per model ``l``, both from the posterior's cell probabilities:

- the expected accuracy on these questions, ``(1/M) sum_m P(l solves m)``
  (:func:`expected_accuracy_draws`), the posterior of a mean;
- the benchmark accuracy of replicated trials on these questions
  (:func:`predictive_accuracy_draws`): per posterior draw, new outcomes
  ``k~_lm ~ Binomial(n_lm, p_lm)`` (``BetaBinomial(n_lm, p_lm phi, (1 - p_lm) phi)``
  under the beta-binomial likelihood, ``Multinomial(n_lm, p_lm)`` for categories)
  for the same ``n_lm`` trials, scored ``sum_m w . k~_lm / sum_m n_lm``.  Its
  central interval is the one to set beside the observed accuracy, itself one such
  replicate: the interval of the expected accuracy leaves out the trial-to-trial
  noise and the cell-level over-dispersion, and misses the observed accuracy
  more often than its level says (issue 52).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import xarray as xr
from scipy import special

from bayesrank.data import ResponseData
from bayesrank.data.reductions import ObservedCells

__all__ = ["expected_accuracy_draws", "predictive_accuracy_draws"]

_ACCURACY_CHUNK = 2**22  # cells x draws per chunk (bounds memory on large benchmarks)
#: The item-response models' accuracies score every cell at every draw they read (the
#: predictive one draws a binomial per cell): at most this many cells x draws (about a
#: minute here), every k-th draw beyond (50 x 14,000 cells: 1,500 of 6,000 draws; 1,000 x
#: 20,000: 50 of 4,000; every draw up to 268,000 cells at 4,000 draws: every real set)
ACCURACY_BUDGET = 2**30


def _within_budget(post: xr.Dataset) -> xr.Dataset:
    """``post`` thinned to every k-th draw of every chain so that draws x cells stay
    within :data:`ACCURACY_BUDGET`."""
    cells = post.sizes["llm"] * post.sizes["question"]
    step = -(-post.sizes["chain"] * post.sizes["draw"] * cells // ACCURACY_BUDGET)
    return post if step <= 1 else post.isel(draw=slice(None, None, step))


def _irt_chunks(post: xr.Dataset, cells: ObservedCells | None = None
                ) -> Iterator[tuple[slice, slice, np.ndarray]]:
    """``(draw slice, part, P(l solves m))`` in chunks of at most about
    :data:`_ACCURACY_CHUNK` values: ``(chain, draws, L, questions)`` over the questions in
    ``part``, or ``(chain, draws, cells)`` over the observed ``cells`` in ``part``.  Where
    one draw of every chain is more than a chunk (1,000 x 20,000 cells), the cells are cut
    too."""
    names = set(post.data_vars)
    theta = post["theta"].transpose("chain", "draw", "llm").values
    b = post["b"].transpose("chain", "draw", "question").values
    a = post["a"].transpose("chain", "draw", "question").values if "a" in names else None
    c = post["c"].transpose("chain", "draw", "question").values if "c" in names else None
    chains, L, M = theta.shape[0], theta.shape[-1], b.shape[-1]
    if cells is None:
        def at_llm(x, part):
            return x[..., :, None]

        def at_question(x, part):
            return x[..., None, part]
        size, per_part, parts = L * M, L, M
    else:
        def at_llm(x, part):
            return np.take(x, cells.rows[part], axis=-1)

        def at_question(x, part):
            return np.take(x, cells.columns[part], axis=-1)
        size, per_part, parts = cells.size, 1, cells.size
    step = max(1, _ACCURACY_CHUNK // max(1, chains * size))
    width = parts if chains * size <= _ACCURACY_CHUNK else max(
        1, _ACCURACY_CHUNK // (chains * per_part))
    for start in range(0, theta.shape[1], step):
        sl = slice(start, start + step)
        for first in range(0, parts, width):
            part = slice(first, first + width)
            eta = at_llm(theta[:, sl], part) - at_question(b[:, sl], part)
            if a is not None:
                eta = eta * at_question(a[:, sl], part)
            p = special.expit(eta)
            if c is not None:
                p = at_question(c[:, sl], part) + (1.0 - at_question(c[:, sl], part)) * p
            yield sl, part, p


def _kind(post: xr.Dataset) -> str | None:
    names = set(post.data_vars)
    if "p" in names and {"llm", "question", "category"} <= set(post["p"].dims):
        return "dirichlet"
    if "b" in names and "question" in post["b"].dims and "theta" in names:
        return "irt"
    return None


def _per_llm(post: xr.Dataset, values: np.ndarray, name: str) -> xr.DataArray:
    return xr.DataArray(
        values, dims=("chain", "draw", "llm"),
        coords={"chain": post["chain"].values, "draw": post["draw"].values,
                "llm": post["llm"].values},
        name=name,
    )


def expected_accuracy_draws(idata: xr.DataTree, data: ResponseData | None) -> xr.DataArray | None:
    """Draws of ``(1/M) sum_m P(l solves m)`` from the cell probabilities in ``idata``.

    Reads the variables present in the posterior:

    - ``p`` (dims ``llm, question, category``; the Bayes@N Dirichlet model):
      the weighted score ``sum_k w_k p_lmk`` with the data's category weights;
    - ``b`` (dims ``question``; Rasch, 2PL, 3PL): ``logistic(a_m (theta_l - b_m))``
      with ``a = 1`` when there is no ``a`` (Rasch), floored by the guessing
      ``c_m + (1 - c_m) logistic(...)`` when ``c`` is present (3PL).  Under the
      beta-binomial likelihood this is still the cell's mean solve rate.

    Returns None when neither is present (pairwise and setwise models).
    """
    post = idata["posterior"]
    kind = _kind(post)
    if kind == "dirichlet":
        weights = np.asarray(data.weights if data is not None else [0.0, 1.0], dtype=float)
        p = post["p"].transpose("chain", "draw", "llm", "question", "category")
        score = xr.apply_ufunc(lambda v: v @ weights, p, input_core_dims=[["category"]])
        return score.mean("question").rename("expected_accuracy")
    if kind is None:
        return None
    post = _within_budget(post)
    out = np.zeros(post["theta"].transpose("chain", "draw", "llm").shape)
    for sl, _, p in _irt_chunks(post):
        out[:, sl] += p.sum(axis=-1)
    return _per_llm(post, out / post.sizes["question"], "expected_accuracy")


def _dispersion(post: xr.Dataset) -> np.ndarray | None:
    """The beta-binomial's ``phi`` as ``(chain, draw, 1 or L, 1 or M)``, or None."""
    if "phi" not in post.data_vars:
        return None
    phi = post["phi"]
    extra = [d for d in phi.dims if d not in ("chain", "draw")]
    if not set(extra) <= {"llm", "question"}:
        return None
    values = phi.transpose("chain", "draw", *extra).values
    shape = values.shape[:2] + tuple(values.shape[2 + extra.index(d)] if d in extra else 1
                                     for d in ("llm", "question"))
    order = [extra.index(d) + 2 for d in ("llm", "question") if d in extra]
    return np.transpose(values, (0, 1, *order)).reshape(shape)


def predictive_accuracy_draws(idata: xr.DataTree, data: ResponseData | None, *,
                              random_seed: int | None = 0,
                              trials: np.ndarray | None = None) -> xr.DataArray | None:
    """Replicated benchmark accuracy: each model's score on new trials of these questions.

    For each posterior draw ``s``, ``k~_lm ~ Binomial(n_lm, p^s_lm)`` with the data's
    own trials per cell ``n_lm`` (beta-binomial with the draw's ``phi`` when the model
    has one, ``Multinomial(n_lm, p^s_lm)`` weighted by the category weights for the
    Dirichlet Bayes@N), and ``acc~^s_l = sum_m w . k~_lm / sum_m n_lm``: the posterior
    predictive distribution of the number a benchmark reports (Gelman et al., *Bayesian
    Data Analysis*, 3rd ed., sec. 6.3).  Dims ``(chain, draw, llm)``; None for models
    without per-question probabilities.  ``trials`` (L, M): the replicate's n_lm in place
    of the data's (the item-response models; ``data`` may then be None), e.g. a suite's
    trials for a model that did not run the benchmark (:mod:`bayesrank.analysis.suite`).
    """
    post = idata["posterior"]
    kind = _kind(post)
    if kind is None:
        return None
    rng = np.random.default_rng(random_seed)
    n = data.reductions.trials if trials is None else np.asarray(trials)  # (L, M)
    total = n.sum(axis=1)
    if kind == "irt":
        post = _within_budget(post)
    out = np.empty((post.sizes["chain"], post.sizes["draw"], n.shape[0]))
    if kind == "dirichlet":
        p_all = post["p"].transpose("chain", "draw", "llm", "question", "category")
        weights = np.asarray(data.weights, dtype=float)
        step = max(1, _ACCURACY_CHUNK // max(1, p_all.shape[0] * n.size * weights.size))
        for start in range(0, out.shape[1], step):  # chunks bound the memory of big sets
            p = p_all.isel(draw=slice(start, start + step)).values
            counts = rng.multinomial(np.broadcast_to(n, p.shape[:-1]), p / p.sum(-1, keepdims=True))
            out[:, start:start + step] = (counts @ weights).sum(axis=-1) / total
        return _per_llm(post, out, "predictive_accuracy")
    phi = _dispersion(post)
    out[:] = 0.0
    if (n > 0).all():
        for sl, part, p in _irt_chunks(post):
            if phi is not None:
                f = phi[:, sl]
                f = f[..., part] if f.shape[-1] > 1 else f
                p = rng.beta(np.maximum(p * f, 1e-300), np.maximum((1.0 - p) * f, 1e-300))
            out[:, sl] += rng.binomial(np.broadcast_to(n[:, part], p.shape), p).sum(axis=-1)
        return _per_llm(post, out / total, "predictive_accuracy")
    # cells missing: only the observed ones replicate (a missing cell is 0 of 0 trials)
    cells = data.reductions.observed_cells if trials is None else ObservedCells.of(n)
    cell_n = cells.gather(n)
    for sl, part, p in _irt_chunks(post, cells):
        if phi is not None:
            f = np.broadcast_to(phi[:, sl], p.shape[:2] + n.shape)[
                ..., cells.rows[part], cells.columns[part]]
            p = rng.beta(np.maximum(p * f, 1e-300), np.maximum((1.0 - p) * f, 1e-300))
        out[:, sl] += cells.by_model(rng.binomial(np.broadcast_to(cell_n[part], p.shape), p),
                                     part)
    with np.errstate(invalid="ignore"):  # 0 / 0 for a model with nothing observed, as the
        out /= total  # whole table gives
    return _per_llm(post, out, "predictive_accuracy")
