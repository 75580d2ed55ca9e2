"""Bayes@N in closed form: the one implementation (Hariri et al.; paper appendix, "Bayes@N").

For model l and question m, category counts n_lmk and pseudo-counts
n0_mk = sum_d 1{R0_md = k} give a Dirichlet posterior with parameters

    nu_lmk = 1 + n0_mk + n_lmk          (a Dirichlet(1, ..., 1) prior plus R0 plus data)

and total T_lm = sum_k nu_lmk = 1 + C + D + n_lm.  The weighted score of model l,
``theta_l = 1/M sum_m sum_k w_k p_lmk``, has posterior moments

    mu_l    = w_0 + 1/M sum_m sum_k nu_lmk/T_lm (w_k - w_0)
    sigma_l = ( 1/M^2 sum_m [ sum_k nu_lmk/T_lm (w_k - w_0)^2
                              - (sum_k nu_lmk/T_lm (w_k - w_0))^2 ] / (T_lm + 1) )^(1/2)

(cell by cell, so missing trials need no special case), and the posterior of
every cell's probabilities can be drawn exactly (:func:`exact_draws`).

The prior outcomes R0 enter through one argument with one default everywhere
(:func:`bayesrank.rank` with ``"bayes"``, :func:`bayesrank.closed_form`,
:func:`bayesrank.fit` with ``"bayes"``): ``R0=None`` is the uniform prior
(Bayes_U@N, the paper's gold standard); ``R0="data"`` uses the data's own prior
outcomes (Bayes_R0@N, identifier ``bayes_greedy``); an array replaces them.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray
from xarray.core import indexing

from bayesrank.data import ResponseData, as_response_data
from bayesrank.errors import DataError
from bayesrank.threads import worker_threads

__all__ = [
    "bayes_at_n",
    "dirichlet_parameters",
    "DeferredArray",
    "deferred_variable",
    "ExactDraws",
    "bayes_moments",
    "exact_draws",
    "prior_counts",
    "resolve_weights",
    "uses_prior",
]


def prior_counts(data: ResponseData, R0: Any = None) -> np.ndarray | None:
    """Pseudo-counts of the prior outcomes, (M, C+1) or (L, M, C+1); None for the uniform prior.

    Parameters
    ----------
    data : ResponseData
    R0 : None, "data" or array_like
        ``None``: uniform prior.  ``"data"``: the data's own prior outcomes (a
        :class:`DataError` when it has none).  An array of shape (M, D) or
        (L, M, D): those prior outcomes instead.
    """
    if R0 is None:
        return None
    if isinstance(R0, str):
        if R0 != "data":
            raise DataError(f"R0 must be None, 'data' or an array of prior outcomes, got {R0!r}")
        if data.R0 is None:
            raise DataError(
                "R0='data' uses the data's prior outcomes (e.g. greedy decodes), but these "
                "data have none; load them with R0=... or use the uniform prior (R0=None)"
            )
        return data.reductions.prior_category_counts
    with_prior = ResponseData(
        data.R, models=data.models, questions=data.questions, R0=R0, weights=data.weights,
        mask=data.mask,
    )
    return with_prior.reductions.prior_category_counts


def uses_prior(R0: Any) -> bool:
    """Whether ``R0`` asks for prior outcomes (anything but None)."""
    return R0 is not None


def resolve_weights(data: ResponseData, weights: Any = None) -> np.ndarray:
    """Category utilities: ``weights`` checked against the data, or the data's own."""
    w = data.weights if weights is None else np.asarray(weights, dtype=float)
    if w.shape != (data.n_categories,) or not np.all(np.isfinite(w)):
        raise DataError(
            f"weights must be {data.n_categories} finite numbers (one per category), "
            f"got shape {np.shape(w)}"
        )
    return w


def dirichlet_parameters(data: ResponseData, R0: Any = None) -> np.ndarray:
    """Posterior Dirichlet parameters ``nu_lmk``, shape (L, M, C+1)."""
    nu = data.reductions.category_counts + 1.0
    prior = prior_counts(data, R0)
    return nu if prior is None else nu + prior  # (M, C+1) broadcasts over models


def bayes_at_n(
    data: ResponseData | Any,
    *,
    weights: np.ndarray | None = None,
    R0: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean ``mu`` and standard deviation ``sigma`` of each model's score.

    Parameters
    ----------
    data : ResponseData or array_like (L, M, N)
    weights : array_like, optional
        Category utilities ``w``; default the data's weights.
    R0 : None, "data" or array_like
        See :func:`prior_counts`; default the uniform prior (Bayes_U@N).

    Returns
    -------
    mu, sigma : numpy.ndarray, shape (L,)
    """
    d = as_response_data(data)
    return bayes_moments(dirichlet_parameters(d, R0), resolve_weights(d, weights))


def bayes_moments(nu: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and sd of ``(1/M) sum_m sum_k w_k pi_lmk`` from Dirichlet parameters.

    ``nu`` (..., L, M, C+1): any leading batch axes (the study passes every draw of a
    stack at once; :func:`bayes_at_n` one dataset).  With ``T = sum_k nu_k`` and utilities
    shifted by ``w_0`` (exact for binary data), a cell's mean is ``sum_k nu_k w_k / T`` and
    its variance ``(E[w^2] - E[w]^2) / (T + 1)``; cells are independent, so
    ``mu = w_0 + (1/M) sum_m E_m`` and ``sigma = sqrt(sum_m Var_m) / M``.

    Returns
    -------
    mu, sigma : numpy.ndarray, shape (..., L)
    """
    w = np.asarray(weights, dtype=float)
    M = nu.shape[-2]
    T = nu.sum(axis=-1)
    shifted = w - w[0]
    mean_cell = (nu @ shifted) / T
    second_cell = (nu @ shifted**2) / T
    var_cell = (second_cell - mean_cell**2) / (T + 1.0)
    mu = w[0] + mean_cell.sum(axis=-1) / M
    sigma = np.sqrt(np.maximum(var_cell.sum(axis=-1), 0.0)) / M
    return mu, sigma


# Random numbers per block of cells: small enough to stay in cache, large enough that
# Python's per-block overhead is negligible.
_BLOCK = 2**18


def multinomial_coefficient(counts: np.ndarray) -> np.ndarray:
    """``log( n! / prod_k n_k! )`` over the last axis."""
    from scipy.special import gammaln

    return gammaln(counts.sum(axis=-1) + 1.0) - gammaln(counts + 1.0).sum(axis=-1)


# Two-category cells whose smaller parameter is an integer up to this many are drawn as a
# product of Beta(a + j, 1) variables (one exponential each); beyond it, from two Gammas.
_MAX_PRODUCT = 8


@dataclass(frozen=True)
class _Block:
    """Cells of one model sampled together from one child seed.

    ``small`` is the category of a two-category block whose parameter is the
    integer ``b`` in every cell (drawn as a product of ``b`` Beta(., 1)
    variables), or None for a block of cells sharing one parameter vector
    ``shape`` (Gamma variates).
    """

    cells: np.ndarray
    small: int | None
    b: int
    shape: np.ndarray | None


def _blocks(nu: np.ndarray, n_questions: int, n_samples: int) -> list[_Block]:
    """Partition of the cells (rows of ``nu``, model-major) into blocks of one model and kind."""
    n_cells, K = nu.shape
    step = max(1, _BLOCK // max(1, n_samples))
    rest = np.ones(n_cells, dtype=bool)
    kinds: list[tuple[np.ndarray, int | None, int, np.ndarray | None]] = []
    if K == 2:
        small = np.argmin(nu, axis=1)
        b = nu[np.arange(n_cells), small]
        product = (b == np.round(b)) & (b >= 1) & (b <= _MAX_PRODUCT)
        for category in (1, 0):
            for steps in range(1, _MAX_PRODUCT + 1):
                cells = np.flatnonzero(product & (small == category) & (b == steps))
                kinds.append((cells, category, steps, None))
        rest &= ~product
    left = np.flatnonzero(rest)
    if left.size:
        shapes, which = np.unique(nu[left], axis=0, return_inverse=True)
        kinds += [(left[which.ravel() == g], None, 0, shapes[g]) for g in range(len(shapes))]
    out = []
    for cells, category, steps, shape in kinds:
        for same_model in np.split(cells, np.flatnonzero(np.diff(cells // n_questions)) + 1):
            out += [_Block(same_model[i:i + step], category, steps, shape)
                    for i in range(0, same_model.size, step)]
    return out


def _block_draws(
    block: _Block, nu: np.ndarray, n_samples: int, rng: np.random.Generator, whole: bool
) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Draws of one block's ``p_k`` (cells, samples) by category, and the logs known exactly.

    Product (``block.small`` set; ``b = nu_small`` an integer, ``a = nu_large``):
    ``Beta(a + j, 1)`` has CDF ``x^(a+j)``, so ``exp(-E_j / (a + j))`` with
    ``E_j ~ Exp(1)`` draws it exactly, and if ``X ~ Beta(a, c)`` and
    ``Y ~ Beta(a + c, 1)`` are independent then ``XY ~ Beta(a, c + 1)``.  Hence

        p_large = exp(-sum_{j<b} E_j / (a + j)) ~ Beta(a, b),

    ``log p_large`` is exact and ``p_small = -expm1(log p_large)`` keeps its
    relative precision near 0.  A question never or always solved (the bulk of
    real benchmarks) has ``b = 1``: one exponential variate per draw.
    ``p_large`` itself only when ``whole`` (the score needs ``p_small`` alone).
    Otherwise ``p = G / sum(G)`` with ``G_k ~ Gamma(nu_k)`` (one scalar shape per
    call, numpy's fast path; ``Gamma(1)`` is the exponential).
    """
    size = (block.cells.size, n_samples)
    if block.small is not None:
        large = 1 - block.small
        a = nu[block.cells, large, None]
        log_large = rng.standard_exponential(size)
        log_large *= -1.0 / a
        for j in range(1, block.b):
            term = rng.standard_exponential(size)
            term *= -1.0 / (a + j)
            log_large += term
        p_small = np.expm1(log_large)
        np.negative(p_small, out=p_small)
        p = {block.small: p_small}
        if whole:
            p[large] = np.exp(log_large)
        return p, {large: log_large}
    gamma = np.empty((block.shape.size, *size))
    for k, a in enumerate(block.shape):
        if a == 1.0:
            rng.standard_exponential(size, out=gamma[k])
        else:
            rng.standard_gamma(a, size, out=gamma[k])
    gamma /= gamma.sum(axis=0)
    return dict(enumerate(gamma)), {}


def _block_log_likelihood(
    p: dict[int, np.ndarray], logs: dict[int, np.ndarray], counts: np.ndarray,
    coefficient: np.ndarray,
) -> np.ndarray:
    """``coefficient + sum_k n_k log p_k`` per cell and sample (terms with n_k = 0 skipped)."""
    out = None
    for k in range(counts.shape[1]):
        if np.any(counts[:, k]):
            with np.errstate(divide="ignore", invalid="ignore"):  # p_k = 0: -inf, as PyMC
                term = counts[:, k, None] * (logs[k] if k in logs else np.log(p[k]))
            term[counts[:, k] == 0] = 0.0  # 0 log 0 = 0, not NaN
            out = term if out is None else np.add(out, term, out=out)
    if out is None:
        return np.repeat(coefficient[:, None], next(iter(p.values())).shape[-1], axis=1)
    if np.any(coefficient):
        out += coefficient[:, None]
    return out


def _binomial(rng: np.random.Generator, trials: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Binomial(trials, p) variates (trials (cells, 1), p (cells, samples)).  Where no cell
    has more than one trial (a one-trial benchmark, missing cells 0) each is one uniform
    against p, ``[U < p]``: the same distribution, a fraction of the cost of
    :meth:`numpy.random.Generator.binomial` per variate."""
    p = np.clip(p, 0.0, 1.0)
    if trials.max(initial=0) <= 1:
        return (rng.random(p.shape) < p) * trials
    return rng.binomial(trials, p)


@dataclass(frozen=True)
class DeferredArray:
    """An array made only when first asked for: its ``shape``, ``dtype`` and ``make()``;
    ``make_draws(chains, draws)``, if given, makes only those (index arrays) of its first
    two axes (chain, draw)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    make: Any
    make_draws: Any = None


class ExactDraws:
    """Exact i.i.d. posterior draws ``p_lm ~ Dirichlet(nu_lm)``, independently over cells.

    Cells are sampled by kind, each with an exact method cheap in numpy: a
    two-category cell whose smaller parameter is an integer b <= 8 as a
    product of b Beta(., 1) variables, one exponential variate each (b = 1 for
    a question never or always solved, the bulk of real benchmarks); every
    other cell from one Gamma variate per category, grouped by parameter
    vector so that numpy draws with a scalar shape.  The cells are cut into
    blocks of one model each, and each block draws from its own child of
    ``SeedSequence(seed)``: the draws of a block can be made again at any
    time, so :meth:`sample` returns ``theta`` (and the log-likelihood) without
    keeping the (chain, draw, llm, question, category) array of ``p``, and
    :meth:`p` makes the very same ``p`` when it is asked for.

    Parameters
    ----------
    nu : ndarray (L, M, K)
        Posterior Dirichlet parameters (:func:`dirichlet_parameters`).
    weights : ndarray (K,)
    draws, chains, seed : int
    """

    def __init__(self, nu: np.ndarray, weights: np.ndarray, *, draws: int, chains: int,
                 seed: int) -> None:
        self.shape = nu.shape
        self.draws, self.chains = int(draws), int(chains)
        self.n_samples = self.draws * self.chains
        self.weights = np.asarray(weights, dtype=float)
        self._nu = np.ascontiguousarray(nu, dtype=float).reshape(-1, nu.shape[-1])
        self._blocks = _blocks(self._nu, nu.shape[1], self.n_samples)
        self._seeds = np.random.SeedSequence(seed).spawn(len(self._blocks))

    def _draw(self, j: int, whole: bool) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
        rng = np.random.default_rng(self._seeds[j])
        return _block_draws(self._blocks[j], self._nu, self.n_samples, rng, whole)

    def _map(self, task) -> list:
        """``task(j)`` for every block, in block order (threads when there are cores)."""
        workers = worker_threads()  # numpy draws and ufuncs release the GIL
        if workers == 1 or len(self._blocks) < 2:
            return [task(j) for j in range(len(self._blocks))]
        with ThreadPoolExecutor(workers) as pool:
            return list(pool.map(task, range(len(self._blocks))))

    def _by_model(self, block_sum) -> np.ndarray:
        """Each model's sum of ``block_sum(j)`` (samples,) over its blocks, (chain, draw,
        llm): every block holds cells of one model (the cells are model-major), and the
        blocks are summed in order whatever the threads."""
        L, M, _ = self.shape
        out = np.zeros((L, self.n_samples))
        for j, values in enumerate(self._map(block_sum)):
            out[self._blocks[j].cells[0] // M] += values
        return out.reshape(L, self.chains, self.draws).transpose(1, 2, 0)

    def sample(self, counts: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """Draws of ``theta`` (chain, draw, llm) and, with ``counts``, ``log_likelihood``.

        ``theta_l = 1/M sum_m sum_k w_k p_lmk``.  With the observed category
        counts ``counts`` (L, M, K), also the pointwise multinomial
        log-likelihood of every cell at every draw, ``log n_lm! - sum_k log n_lmk!
        + sum_k n_lmk log p_lmk`` (chain, draw, llm, question).  Same seed, same
        draws, however many threads draw the blocks.
        """
        L, M, K = self.shape
        n = None if counts is None else np.asarray(counts, dtype=float).reshape(-1, K)
        coefficient = None if n is None else multinomial_coefficient(n)
        loglik = None if n is None else np.empty((L * M, self.n_samples))
        w = self.weights

        def block_score(j: int) -> np.ndarray:
            block = self._blocks[j]
            p, logs = self._draw(j, whole=False)
            if loglik is not None:
                loglik[block.cells] = _block_log_likelihood(
                    p, logs, n[block.cells], coefficient[block.cells])
            if block.small is None:
                return sum(w[k] * p[k].sum(axis=0) for k in range(K))
            # w_small p_small + w_large (1 - p_small), summed over the block's cells
            large = 1 - block.small
            return block.cells.size * w[large] + (w[block.small] - w[large]) * p[
                block.small].sum(axis=0)

        out = {"theta": self._by_model(block_score) / M}
        if loglik is not None:
            out["log_likelihood"] = loglik.reshape(
                L, M, self.chains, self.draws).transpose(2, 3, 0, 1)
        return out

    def log_likelihood_blocks(self, counts: np.ndarray, max_values: int
                              ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The pointwise log-likelihood of :meth:`sample`, a few cells at a time.

        Yields ``(cells, values)``: flat indices of (llm, question) cells and their
        log-likelihood (chain, draw, cells) at the very draws :meth:`sample` makes,
        blocks of draws grouped to about ``max_values`` values each (at least one block),
        so that no more than that is held at once.
        """
        K = self.shape[-1]
        n = np.asarray(counts, dtype=float).reshape(-1, K)
        coefficient = multinomial_coefficient(n)
        group: list[int] = []
        for j in range(len(self._blocks)):
            group.append(j)
            last = j == len(self._blocks) - 1
            size = sum(self._blocks[i].cells.size for i in group) * self.n_samples
            if not last and size + self._blocks[j + 1].cells.size * self.n_samples <= max_values:
                continue
            cells = np.concatenate([self._blocks[i].cells for i in group])
            values = np.concatenate([
                _block_log_likelihood(*self._draw(i, whole=False), n[self._blocks[i].cells],
                                      coefficient[self._blocks[i].cells]) for i in group])
            group = []
            yield cells, values.reshape(-1, self.chains, self.draws).transpose(1, 2, 0)

    def replicated_scores(self, trials: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Per draw, each model's summed weighted score of replicated trials (chain, draw, llm).

        ``k~_lm ~ Multinomial(n_lm, p_lm)`` at every draw of ``p``, with ``trials`` n_lm
        (L, M), scored ``sum_m w . k~_lm``: one block of cells at a time (the draws of
        ``p`` are made again block by block, never all at once), each block from its own
        child of ``rng`` (:meth:`numpy.random.Generator.spawn`), so the blocks run on
        threads and the result does not depend on how many.
        """
        K = self.shape[-1]
        n = np.asarray(trials).reshape(-1)
        streams = rng.spawn(len(self._blocks))

        def block_scores(j: int) -> np.ndarray:
            block, block_rng = self._blocks[j], streams[j]
            trials = n[block.cells, None]
            if not trials.any():  # missing cells replicate nothing: no draws of p
                return np.zeros(self.n_samples)
            p = self._draw(j, whole=K > 2)[0]
            if K == 2:  # the binomial: one variate per cell and draw
                small = next(iter(p))  # the category drawn (the smaller one for products)
                k = _binomial(block_rng, trials, p[small])
                scores = self.weights[1 - small] * trials + (
                    self.weights[small] - self.weights[1 - small]) * k
            else:
                pvals = np.stack([p[k] for k in range(K)], axis=-1)  # (cells, samples, K)
                pvals /= pvals.sum(axis=-1, keepdims=True)
                scores = block_rng.multinomial(trials, pvals) @ self.weights
            return scores.sum(axis=0)

        return self._by_model(block_scores)

    def fresh_counts(self, trials: np.ndarray, samples: int, rng: np.random.Generator
                     ) -> np.ndarray:
        """Replicated category counts at ``samples`` new exact draws of ``p`` (samples,
        llm, question, category): per draw ``p~_lm ~ Dirichlet(nu_lm)`` and ``k~_lm ~
        Multinomial(n_lm, p~_lm)`` with ``trials`` n_lm (L, M), all from ``rng``; blocks of
        missing cells (n = 0) are 0 without draws.

        Draws from the posterior predictive distribution of the stored draws (those are
        i.i.d. from the same posterior), costing their own size: the stored draws of a
        block of cells can only be made again all at once, so replicating at a few of
        them costs a pass over every draw (:meth:`p_at`).
        """
        L, M, K = self.shape
        n = np.asarray(trials).reshape(-1)
        out = np.zeros((samples, L * M, K), dtype=np.int64)
        for block in self._blocks:
            cell_trials = n[block.cells, None]
            if not cell_trials.any():  # missing cells replicate 0 of 0 trials
                continue
            p = _block_draws(block, self._nu, samples, rng, whole=K > 2)[0]
            if K == 2:  # the binomial: one variate per cell and draw
                small = next(iter(p))  # the category drawn (the smaller one for products)
                k = _binomial(rng, cell_trials, p[small])
                out[:, block.cells, small], out[:, block.cells, 1 - small] = k.T, (
                    cell_trials - k).T
            else:
                pvals = np.stack([p[k] for k in range(K)], axis=-1)  # (cells, samples, K)
                pvals /= pvals.sum(axis=-1, keepdims=True)
                out[:, block.cells] = rng.multinomial(cell_trials, pvals).transpose(1, 0, 2)
        return out.reshape(samples, L, M, K)

    def deferred_p(self) -> DeferredArray:
        """:meth:`p`, made when first asked for (what a fit stores: most uses never read it)."""
        L, M, K = self.shape

        def make_draws(chains: np.ndarray, draws: np.ndarray) -> np.ndarray:
            flat = (chains[:, None] * self.draws + draws[None, :]).ravel()
            return self.p_at(flat).reshape(chains.size, draws.size, L, M, K)

        return DeferredArray((self.chains, self.draws, L, M, K), np.dtype(float), self.p,
                             make_draws)

    def p(self) -> np.ndarray:
        """The draws of ``p`` (chain, draw, llm, question, category) that :meth:`sample` used."""
        L, M, K = self.shape
        return self.p_at(np.arange(self.n_samples)).reshape(
            self.chains, self.draws, L, M, K)

    def p_at(self, samples: np.ndarray) -> np.ndarray:
        """Those draws of ``p`` only, (samples, llm, question, category), ``samples`` flat
        indices ``chain * draws + draw``: each block's draws are made and the rest
        dropped, so a thinned set (a predictive check's) costs its own size in memory."""
        L, M, K = self.shape
        samples = np.asarray(samples, dtype=int)
        every = samples.size == self.n_samples and np.array_equal(samples, np.arange(samples.size))
        p = np.empty((K, L * M, samples.size))

        def fill(j: int) -> None:
            cells = self._blocks[j].cells
            for k, values in self._draw(j, whole=True)[0].items():
                p[k, cells] = values if every else values[:, samples]

        self._map(fill)
        return p.reshape(K, L, M, samples.size).transpose(3, 1, 2, 0)


def exact_draws(
    nu: np.ndarray, weights: np.ndarray, *, draws: int, chains: int, seed: int,
    counts: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Exact i.i.d. posterior draws: ``p_lm ~ Dirichlet(nu_lm)`` independently over cells.

    All at once, from :class:`ExactDraws`: ``p`` (chain, draw, llm, question,
    category), ``theta`` (chain, draw, llm) and, with ``counts`` (L, M, K),
    ``log_likelihood`` (chain, draw, llm, question).  Their effective sample size
    equals the number of draws.
    """
    sampler = ExactDraws(nu, weights, draws=draws, chains=chains, seed=seed)
    return {"p": sampler.p(), **sampler.sample(counts)}


class _MadeOnFirstRead(BackendArray):
    """A :class:`~bayesrank.conjugate.DeferredArray` as a lazily indexed xarray variable."""

    def __init__(self, deferred: DeferredArray) -> None:
        self.shape = tuple(deferred.shape)
        self.dtype = np.dtype(deferred.dtype)
        self._make = deferred.make
        self._make_draws = deferred.make_draws
        self._array: np.ndarray | None = None

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._read)

    def _read(self, key):
        """The whole array is made, and kept, when read whole; a part of the draws (a
        thinned posterior) is made alone, and not kept, when ``make_draws`` can."""
        if self._array is None and self._make_draws is not None:
            chains, draws = (np.atleast_1d(np.arange(n)[k]) for n, k in zip(
                self.shape[:2], key[:2], strict=True))
            if chains.size * draws.size < self.shape[0] * self.shape[1]:
                part = np.asarray(self._make_draws(chains, draws))
                rest = [0 if isinstance(k, int | np.integer) else slice(None) for k in key[:2]]
                for axis, k in reversed(list(enumerate([*rest, *key[2:]]))):
                    part = part[(slice(None),) * axis + (k,)]  # outer: one axis at a time
                return part
        if self._array is None:
            self._array = np.asarray(self._make())
        return self._array[key]


def deferred_variable(deferred: DeferredArray, dims: tuple[str, ...]) -> xr.Variable:
    """``deferred`` as an xarray variable on ``dims`` whose values are made when read."""
    return xr.Variable(dims, indexing.LazilyIndexedArray(_MadeOnFirstRead(deferred)))
