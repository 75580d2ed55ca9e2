"""A fitted Bayesian ranking model and the decisions built on its uncertainty.

Two kinds of posterior share one analytics interface (:class:`RankAnalytics`):

- :class:`Posterior` -- MCMC draws of ``theta`` (dims ``chain, draw, llm``) from
  :func:`bayesrank.fit`; superiority, ranks and P(best) are Monte Carlo
  estimates with MCSEs.
- :class:`NormalPosterior` -- independent normals ``N(mu_l, sigma_l^2)``, e.g.
  the closed-form Bayes@N approximation (:func:`closed_form`); the same
  quantities are computed exactly (no sampling, no seed).

Every output is labelled: pandas frames indexed by model (``llm``) or xarray
objects with dims ``llm`` / ``llm_other`` / ``rank``.  Conservative ranking
follows the paper (Sec. "Interval estimates and conservative ranking"): rank by
a lower credible bound (LCB, the posterior ``q``-quantile), report
``P(theta_i > theta_j | R)``, and keep every model that could still be best.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr
from scipy import special

from bayesrank import conjugate
from bayesrank.analysis import rank_stats as unc
from bayesrank.analysis.accuracy import expected_accuracy_draws, predictive_accuracy_draws
from bayesrank.checks import check_probability
from bayesrank.data import ResponseData, as_response_data
from bayesrank.data.pairwise import PairwiseData
from bayesrank.datatree import from_arrays, has_group
from bayesrank.ranking import Ranking

#: Samplers whose draws are independent by construction (exact conjugate draws, the
#: Laplace approximation's): their effective sample size is the number of draws.
INDEPENDENT_DRAWS = ("conjugate", "laplace")

if TYPE_CHECKING:
    from bayesrank.analysis.ppc import PPCResult

__all__ = [
    "Posterior", "NormalPosterior", "RankAnalytics", "closed_form", "exchangeable_models",
    "estimate_label",
    "expected_accuracy_draws",
    "observed_label",
]

RankBy = Literal["mean", "median", "lcb"]
IntervalKind = Literal["eti", "hdi"]


class RankAnalytics:
    """Uncertainty-aware ranking analytics shared by every posterior type.

    Subclasses provide ``models``, ``model`` and the four primitives
    ``_point``, ``_interval``, ``_superiority_arrays`` and ``_rank_probs``.
    """

    models: tuple[str, ...]
    model: str

    # -- primitives (overridden) ----------------------------------------------------
    def _point(self, by: str, q: float) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _interval(self, prob: float, kind: str) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError  # pragma: no cover - abstract

    def _superiority_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError  # pragma: no cover - abstract

    def _rank_probs(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _sd(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- public analytics -------------------------------------------------------------
    def rank(self, by: RankBy = "mean", q: float = 0.05, *, ties: str = "competition") -> Ranking:
        """Rank models by a posterior summary of theta.

        Parameters
        ----------
        by : {"mean", "median", "lcb"}
            ``"lcb"`` ranks by the lower credible bound, the posterior
            ``q``-quantile of theta (conservative ranking; for a normal
            posterior ``mu + Phi^{-1}(q) sigma``, as ``bayes_ci`` in the paper).
        q : float
            Quantile for ``by="lcb"``.
        ties : str
            Tie convention of the ranks (see :mod:`bayesrank.ranking`).
        """
        if by not in ("mean", "median", "lcb"):
            raise ValueError(f"by must be 'mean', 'median' or 'lcb', got {by!r}")
        q = check_probability("q", q)
        raw = self._point(by, q)
        groups = self._tie_groups(raw, by, q)
        scores = unc.tied_scores(raw, groups)
        details = {"by": by, "sd": self._sd(), "untied_scores": raw,
                   "tie_groups": [tuple(self.models[i] for i in g) for g in groups]}
        if by == "lcb":
            details["q"] = q
        return Ranking(scores, f"{self.model}_{by}", self.models, ties=ties, details=details)

    def tie_groups(self, by: RankBy = "mean", q: float = 0.05) -> list[tuple[str, ...]]:
        """Groups of models that :meth:`rank` ties (ties are ties).

        Two sources: models that are *exchangeable* given the data (identical
        sufficient statistics: the same counts per question for the cell
        models, the same pairwise rows for Bradley-Terry/Davidson, identical
        outcomes otherwise) have the same posterior, so their order is pure
        Monte Carlo noise and they always tie, whatever the seed; and models
        whose ``by`` scores differ by no more than 2 Monte Carlo standard errors
        of the difference (MCMC posteriors only).  Tied models share the best
        rank of their group (competition ranking, "1, 2, 2, 4").
        """
        q = check_probability("q", q)
        groups = self._tie_groups(self._point(by, q), by, q)
        return [tuple(self.models[i] for i in g) for g in groups]

    def _tie_groups(self, scores: np.ndarray, by: str, q: float) -> list[np.ndarray]:
        return unc.tie_groups(scores, self._mc_tolerance(by, q), self._exchangeable_groups)

    def _mc_tolerance(self, by: str, q: float) -> np.ndarray | None:
        """Largest score gap, per pair, that Monte Carlo error alone explains (None: exact)."""
        return None

    @cached_property
    def _exchangeable_groups(self) -> list[np.ndarray]:
        data = getattr(self, "data", None)
        if data is None:
            return []
        return exchangeable_models(data, self.model)

    def credible_intervals(self, prob: float = 0.9, kind: IntervalKind = "eti") -> pd.DataFrame:
        """Central (``"eti"``, equal-tailed) or highest-density (``"hdi"``) intervals.

        Returns a frame indexed by ``llm`` with columns ``mean``, ``lower``, ``upper``.
        """
        prob = check_probability("prob", prob)
        if kind not in ("eti", "hdi"):
            raise ValueError(f"kind must be 'eti' or 'hdi', got {kind!r}")
        lower, upper = self._interval(prob, kind)
        frame = pd.DataFrame(
            {"mean": self._point("mean", 0.5), "lower": lower, "upper": upper},
            index=pd.Index(self.models, name="llm"),
        )
        frame.attrs.update(prob=prob, kind=kind)
        return frame

    def superiority(self) -> xr.Dataset:
        """``prob[i, j] = P(theta_i > theta_j | data)`` and its Monte Carlo standard error.

        Returns a Dataset with ``prob`` and ``mcse`` on dims ``(llm, llm_other)``;
        ``prob + prob.T = 1`` and the diagonal is 1/2.
        """
        prob, mcse = self._superiority_arrays()
        dims = ("llm", "llm_other")
        coords = {"llm": list(self.models), "llm_other": list(self.models)}
        return xr.Dataset(
            {"prob": (dims, prob.copy()), "mcse": (dims, mcse.copy())},
            coords=coords,
            attrs={"description": "P(theta_llm > theta_llm_other | data)"},
        )

    def rank_distribution(self) -> xr.DataArray:
        """``P(rank of model = r)``, dims ``(llm, rank)`` with ranks 1..L (1 = best).

        Models tied within a draw share their positions equally, so rows and
        columns sum to 1.  :meth:`rank_summary` condenses it into the expected
        rank, a rank credible interval and P(best).
        """
        p = self._rank_probs()
        return xr.DataArray(
            p.copy(),
            dims=("llm", "rank"),
            coords={"llm": list(self.models), "rank": np.arange(1, p.shape[1] + 1)},
            name="rank_probability",
        )

    def rank_summary(self, prob: float = 0.9) -> pd.DataFrame:
        """Expected rank, equal-tailed rank credible interval and P(best) per model."""
        prob = check_probability("prob", prob)
        p = self._rank_probs()
        lower, upper = unc.rank_intervals(p, prob)
        frame = pd.DataFrame(
            {
                "expected_rank": unc.expected_ranks(p),
                "rank_lower": lower,
                "rank_upper": upper,
                "p_best": p[:, 0],
            },
            index=pd.Index(self.models, name="llm"),
        )
        frame.attrs["prob"] = prob
        return frame

    def top_set(self, alpha: float = 0.05) -> tuple[str, ...]:
        """Smallest set of models containing the best one with probability >= 1 - alpha.

        Models enter in decreasing order of P(best).  With MCMC draws, P(best)
        is a Monte Carlo estimate: a model never best in any draw can still be
        best with small probability.
        """
        idx = unc.top_set_indices(self._rank_probs()[:, 0], alpha)
        return tuple(self.models[i] for i in idx)

    def separated_pairs(
        self, level: float = 0.95, *, by: RankBy = "mean", q: float = 0.05
    ) -> pd.DataFrame:
        """Adjacent pairs of the ranking by ``by`` and whether the data separate them.

        One row per adjacent pair (``upper`` placed directly above ``lower``):
        ``p_superior = P(theta_upper > theta_lower)``, its ``mcse``, and
        ``separated = p_superior >= level``.
        """
        level = check_probability("level", level)
        order = self._order(by, q)
        prob, mcse = self._superiority_arrays()
        upper, lower = order[:-1], order[1:]
        names = np.asarray(self.models, dtype=object)
        frame = pd.DataFrame(
            {
                "upper": names[upper],
                "lower": names[lower],
                "p_superior": prob[upper, lower],
                "mcse": mcse[upper, lower],
            }
        )
        frame["separated"] = frame["p_superior"] >= level
        frame.attrs.update(level=level, by=by)
        return frame

    def leaderboard(
        self,
        *,
        by: RankBy = "mean",
        prob: float = 0.9,
        q: float = 0.05,
        alpha: float = 0.05,
        level: float = 0.95,
    ) -> pd.DataFrame:
        """One row per model, best first (by ``by``), with every decision-relevant summary.

        Columns, in the order people read them: ``observed`` (the model's observed
        accuracy, or weighted score with categories, from the data exactly:
        :attr:`~bayesrank.data.reductions.Reductions.observed_score`), ``accuracy`` with
        ``accuracy_lower``/``accuracy_upper`` (the model's estimate on the same scale:
        posterior mean of the expected accuracy on the benchmark's questions, see
        :meth:`Posterior.expected_accuracy`, and the central ``prob`` interval of the
        benchmark accuracy of replicated trials, :meth:`Posterior.predictive_accuracy`,
        which the observed accuracy falls in at that rate when the model fits; named in
        ``attrs["accuracy_label"]`` for what it is, e.g. the Bayes@N score shrinks toward
        the prior at small N; left out, with ``attrs["accuracy_note"]``, for models
        without per-question solve probabilities), ``rank``, ``mean``, ``sd``,
        ``lower``/``upper`` (central ``prob`` interval of theta), ``lcb``
        (``q``-quantile) and ``lcb_rank``, ``expected_rank``,
        ``rank_lower``/``rank_upper``, ``p_best``, ``in_top_set`` (level 1 - alpha),
        ``p_above_next`` (P(this model > the next one down)) and
        ``separated_from_next`` (``p_above_next >= level``).  Ranks tie as in
        :meth:`tie_groups`; ``attrs["tie_groups"]`` lists the tied groups.
        """
        ranking = self.rank(by, q)
        lcb = self.rank("lcb", q)
        intervals = self.credible_intervals(prob, "eti")
        summary = self.rank_summary(prob)
        top = set(self.top_set(alpha))
        order = self._order(by, q)
        prob_matrix, _ = self._superiority_arrays()
        above_next = np.full(len(order), np.nan)
        above_next[order[:-1]] = prob_matrix[order[:-1], order[1:]]
        frame = pd.DataFrame(
            {
                "rank": ranking.ranks,
                "mean": intervals["mean"].to_numpy(),
                "sd": self._sd(),
                "lower": intervals["lower"].to_numpy(),
                "upper": intervals["upper"].to_numpy(),
                "lcb": lcb.scores,
                "lcb_rank": lcb.ranks,
                "expected_rank": summary["expected_rank"].to_numpy(),
                "rank_lower": summary["rank_lower"].to_numpy(),
                "rank_upper": summary["rank_upper"].to_numpy(),
                "p_best": summary["p_best"].to_numpy(),
                "in_top_set": [m in top for m in self.models],
                "p_above_next": above_next,
            },
            index=pd.Index(self.models, name="llm"),
        )
        accuracy = self._accuracy_summary(prob)
        if accuracy is not None:
            for offset, (name, values) in enumerate(zip(
                    ("accuracy", "accuracy_lower", "accuracy_upper"), accuracy, strict=True)):
                frame.insert(offset, name, values)
        if self.data is not None:
            observed = pd.Series(self.data.reductions.observed_score, index=self.data.models)
            frame.insert(0, "observed", observed.reindex(list(self.models)).to_numpy())
        separated = pd.array(above_next >= level, dtype="boolean")
        separated[np.isnan(above_next)] = pd.NA  # the last model has no next one
        frame["separated_from_next"] = separated
        frame = frame.iloc[order]
        frame.attrs.update(by=by, prob=prob, q=q, alpha=alpha, level=level, model=self.model,
                           tie_groups=ranking.details["tie_groups"],
                           observed_label=observed_label(self.data),
                           accuracy_label=estimate_label(self.model, self.data))
        if accuracy is None:
            frame.attrs["accuracy_note"] = ACCURACY_NOT_AVAILABLE.format(model=self.model)
        return frame

    def _accuracy_summary(
        self, prob: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _order(self, by: str, q: float) -> np.ndarray:
        """Model indices best first by ``by``; equal scores keep input order."""
        ranks = self.rank(by, q).ranks
        return np.lexsort((np.arange(len(ranks)), ranks))


class Posterior(RankAnalytics):
    """Posterior of a ranking model: an ArviZ :class:`xarray.DataTree` plus its data.

    Parameters
    ----------
    idata : xarray.DataTree
        Must hold ``posterior["theta"]`` with dims ``(chain, draw, llm)``
        (larger is better).
    data : ResponseData
        The data the model was fitted to.
    model : str
        Model identifier (``"bayes"``, ``"rasch"``, ...).
    sampler : str, optional
        Backend that produced the draws.
    pymc_model : pymc.Model, optional
        The generative model (needed for posterior-predictive sampling and for
        computing the pointwise log-likelihood used by :func:`compare`).
    observed_var : str, optional
        Name of the likelihood variable in ``pymc_model`` / ``observed_data``.
    diagnostics : pandas.DataFrame, optional
        R-hat, ESS, divergences, BFMI summary of the fit.
    timings : dict, optional
        Wall-clock seconds of the fit's stages.

    Notes
    -----
    Analytics are computed from the draws of ``theta`` and cached; superiority
    and P(best) carry Monte Carlo standard errors based on the effective sample
    size.  Treat the posterior as read-only after construction.
    """

    def __init__(
        self,
        idata: xr.DataTree,
        data: ResponseData,
        model: str,
        *,
        sampler: str | None = None,
        pymc_model: Any = None,
        observed_var: str | None = None,
        diagnostics: Any = None,
        timings: dict[str, float] | None = None,
    ) -> None:
        if not has_group(idata, "posterior") or "theta" not in idata["posterior"]:
            raise ValueError("idata must hold posterior['theta'] with dims (chain, draw, llm)")
        dims = tuple(idata.posterior["theta"].dims)
        if dims != ("chain", "draw", "llm") and sorted(dims) != ["chain", "draw", "llm"]:
            raise ValueError(f"posterior['theta'] must have dims (chain, draw, llm); got {dims}")
        self.idata = idata
        self.data = data
        self.model = model
        self.sampler = sampler
        self.pymc_model = pymc_model
        self.observed_var = observed_var
        self.diagnostics = diagnostics
        self.timings = dict(timings or {})

    @property
    def theta(self) -> xr.DataArray:
        """Draws of the ranking quantity, dims (chain, draw, llm)."""
        return self.idata.posterior["theta"]

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(str(x) for x in self.theta["llm"].values)

    @property
    def independent_draws(self) -> bool:
        """Whether the draws are independent by construction (:data:`INDEPENDENT_DRAWS`):
        then every effective sample size is the number of draws."""
        return self.sampler in INDEPENDENT_DRAWS

    def theta_draws(self) -> np.ndarray:
        """Draws of theta as an (S, L) array, chains concatenated."""
        t = self.theta.transpose("chain", "draw", "llm").values
        return t.reshape(-1, t.shape[-1])

    @cached_property
    def _chain_draws(self) -> np.ndarray:
        return unc.as_draw_matrix(self.theta.transpose("chain", "draw", "llm").values).reshape(
            self.theta.sizes["chain"], self.theta.sizes["draw"], -1
        )

    # -- primitives -----------------------------------------------------------------
    def _point(self, by: str, q: float) -> np.ndarray:
        x = self._chain_draws.reshape(-1, self._chain_draws.shape[-1])
        if by == "mean":
            return x.mean(axis=0)
        if by == "median":
            return np.median(x, axis=0)
        return np.quantile(x, q, axis=0)

    def _sd(self) -> np.ndarray:
        x = self._chain_draws.reshape(-1, self._chain_draws.shape[-1])
        return x.std(axis=0, ddof=1) if x.shape[0] > 1 else np.zeros(x.shape[1])

    def _interval(self, prob: float, kind: str) -> tuple[np.ndarray, np.ndarray]:
        if kind == "hdi":
            hdi = az.hdi(self.theta, prob=prob)
            values = hdi.transpose("llm", "ci_bound").values
            return values[:, 0], values[:, 1]
        x = self._chain_draws.reshape(-1, self._chain_draws.shape[-1])
        tail = (1 - prob) / 2
        lower, upper = np.quantile(x, [tail, 1 - tail], axis=0)
        return lower, upper

    @cached_property
    def _superiority_cache(self) -> tuple[np.ndarray, np.ndarray]:
        return unc.superiority_from_draws(self._chain_draws,
                                          independent=self.independent_draws)

    def _superiority_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return self._superiority_cache

    @cached_property
    def _rank_prob_cache(self) -> np.ndarray:
        return unc.rank_probabilities_from_draws(self._chain_draws)

    def _rank_probs(self) -> np.ndarray:
        return self._rank_prob_cache

    def p_best_mcse(self) -> pd.Series:
        """ESS-based Monte Carlo standard error of each model's P(best)."""
        x = self._chain_draws
        best = (x == x.max(axis=-1, keepdims=True)).astype(float)
        best /= best.sum(axis=-1, keepdims=True)
        ds = xr.Dataset({"best": (("chain", "draw", "llm"), best)})
        sd = best.reshape(-1, best.shape[-1]).std(axis=0, ddof=1)
        ess = (best[..., 0].size if self.independent_draws else
               az.ess(ds, method="mean")["best"].values)
        with np.errstate(invalid="ignore", divide="ignore"):
            se = np.where(sd > 0, sd / np.sqrt(ess), 0.0)
        return pd.Series(se, index=pd.Index(self.models, name="llm"), name="p_best_mcse")

    def _mc_tolerance(self, by: str, q: float) -> np.ndarray:
        x = self._chain_draws
        if by == "mean":
            return 2.0 * unc.mean_difference_mcse(x, independent=self.independent_draws)
        ds = xr.Dataset({"theta": (("chain", "draw", "llm"), x)})
        prob = 0.5 if by == "median" else q
        se = np.nan_to_num(np.asarray(
            az.mcse(ds, method="quantile", prob=prob)["theta"].values, dtype=float))
        return 2.0 * np.sqrt(se[:, None] ** 2 + se[None, :] ** 2)

    def expected_accuracy(self) -> xr.DataArray | None:
        """Posterior draws of each model's expected accuracy on the benchmark's questions.

        ``acc_l = (1/M) sum_m P(model l solves question m)``, per draw, from the
        posterior's cell probabilities (see :func:`expected_accuracy_draws`):
        dims ``(chain, draw, llm)``, on the 0-1 scale people read, next to theta
        on the model's own scale.  ``None`` for models without per-question
        solve probabilities (Bradley-Terry, Davidson, Davidson-Luce).
        """
        return self._accuracy_draws

    @cached_property
    def _accuracy_draws(self) -> xr.DataArray | None:
        exact = self._exact_sampler()
        if exact is not None and np.array_equal(exact.weights, self.data.weights):
            # theta is (1/M) sum_m w . p_lm, the expected score, from the same draws: reading
            # p would make every cell's draws at once (45 GB at 50 x 14,000 x 4,000 draws)
            return self.theta.rename("expected_accuracy")
        return expected_accuracy_draws(self.idata, self.data)

    def _exact_sampler(self) -> conjugate.ExactDraws | None:
        """The exact Bayes@N sampler that made these draws (None for any other fit)."""
        if self.sampler != "conjugate" or self.pymc_model is None or self.data is None:
            return None
        from bayesrank.models.bayes import exact_sampler

        post = self.idata["posterior"]
        return exact_sampler(self.pymc_model, draws=post.sizes["draw"],
                             chains=post.sizes["chain"], seed=int(post.attrs["random_seed"]))

    @property
    def predictive_interval(self) -> bool:
        """Whether the leaderboard's accuracy interval is the posterior predictive one."""
        return self.predictive_accuracy() is not None

    def predictive_accuracy(self) -> xr.DataArray | None:
        """Posterior predictive draws of each model's benchmark accuracy on new trials.

        Replicated outcomes for the same trials of the same questions, one replicate
        per posterior draw (:func:`~bayesrank.analysis.accuracy.predictive_accuracy_draws`,
        seed 0): the distribution the observed accuracy is one draw of, so its
        central interval is the leaderboard's interval on the accuracy scale.
        """
        return self._predictive_draws

    @cached_property
    def _predictive_draws(self) -> xr.DataArray | None:
        exact = self._exact_sampler()
        if exact is not None and np.array_equal(exact.weights, self.data.weights):
            # block by block from the exact draws of p (seed 0), never all cells at once
            scores = exact.replicated_scores(self.data.reductions.trials,
                                             np.random.default_rng(0))
            total = self.data.reductions.trials.sum(axis=1)
            return (self.theta * 0 + scores / total).rename("predictive_accuracy")
        return None if self.data is None else predictive_accuracy_draws(self.idata, self.data)

    def _accuracy_summary(self, prob: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        draws = self.expected_accuracy()
        if draws is None:
            return None
        x = draws.transpose("chain", "draw", "llm").values.reshape(-1, draws.sizes["llm"])
        spread = self.predictive_accuracy()
        if spread is not None:  # the interval a replicated benchmark's accuracy falls in
            x_rep = spread.transpose("chain", "draw", "llm").values
            tail = (1 - prob) / 2
            lower, upper = np.quantile(x_rep.reshape(-1, x.shape[1]), [tail, 1 - tail], axis=0)
            return x.mean(axis=0), lower, upper
        tail = (1 - prob) / 2
        lower, upper = np.quantile(x, [tail, 1 - tail], axis=0)
        return x.mean(axis=0), lower, upper

    # -- model checking -------------------------------------------------------------
    def loo(self) -> Any:
        """PSIS-LOO over the fit's observation units (model-question cells for the cell
        models), computed block by block from draws the fit keeps
        (:func:`bayesrank.analysis.comparison.loo`): the same numbers as
        :func:`arviz.loo` on the whole pointwise log-likelihood, without holding it.
        """
        from bayesrank.analysis.comparison import loo

        return loo(self)

    def ppc(self, *, num_draws: int | None = 500, random_seed: int | None = 0,
            alpha: float = 0.05, max_values: int | None = None) -> PPCResult:
        """Posterior-predictive check on the observed scale (counts per model-question cell).

        Returns test statistics with Bayesian p-values and, as
        ``result.idata``, a copy of :attr:`idata` with the
        ``posterior_predictive`` group (for :func:`arviz.plot_ppc_dist`);
        this posterior is not changed.  The draws are replicated a block at a time,
        at most ``max_values`` values at once.  See
        :func:`bayesrank.analysis.ppc.posterior_predictive_check`.
        """
        from bayesrank.analysis.ppc import posterior_predictive_check

        blocks = {} if max_values is None else {"max_values": max_values}
        return posterior_predictive_check(
            self, num_draws=num_draws, random_seed=random_seed, alpha=alpha, **blocks
        )

    def __repr__(self) -> str:
        c, d = self.theta.sizes["chain"], self.theta.sizes["draw"]
        return (
            f"Posterior(model={self.model!r}, sampler={self.sampler!r}, "
            f"{c} chains x {d} draws, L={self.theta.sizes['llm']})"
        )

    def save(self, path: str | Any) -> Any:
        """Write the draws, data and settings to a ``.nc`` or ``.zarr`` file (atomically).

        Read it back with :func:`bayesrank.load_posterior`; see
        :mod:`bayesrank.analysis.persist`.
        """
        from bayesrank.analysis.posterior_file import save_posterior

        return save_posterior(self, path)


class NormalPosterior(RankAnalytics):
    """Independent normal posteriors ``theta_l ~ N(mu_l, sigma_l^2)``, analysed exactly.

    The paper's closed-form Bayes@N summarises each model by ``(mu_l, sigma_l)``
    and ranks by ``mu_l`` or by the normal quantile ``mu_l + Phi^{-1}(q) sigma_l``
    (identifier ``bayes_ci``).  Here every analytic is exact under that
    approximation: superiority ``Phi((mu_i - mu_j) / sqrt(sigma_i^2 + sigma_j^2))``
    (MCSE 0), intervals from normal quantiles, and the rank distribution by
    one-dimensional quadrature (:func:`bayesrank.analysis.rank_stats.normal_rank_probabilities`).

    Parameters
    ----------
    mu, sigma : array_like, shape (L,)
    models : sequence of str
    data : ResponseData, optional
    model : str
        Label used in ranking names (default ``"bayes"``).
    """

    def __init__(
        self,
        mu: np.ndarray,
        sigma: np.ndarray,
        models: tuple[str, ...] | list[str],
        *,
        data: ResponseData | None = None,
        model: str = "bayes",
    ) -> None:
        mu, sigma = unc._normal_parameters(mu, sigma)
        if len(models) != mu.size:
            raise ValueError(f"{len(models)} model names for {mu.size} means")
        self.mu = mu
        self.sigma = sigma
        self.models = tuple(str(m) for m in models)
        self.data = data
        self.model = model

    def _point(self, by: str, q: float) -> np.ndarray:
        if by in ("mean", "median"):
            return self.mu.copy()
        return self.mu + special.ndtri(q) * self.sigma

    def _sd(self) -> np.ndarray:
        return self.sigma.copy()

    prior: Any = None  # the R0 of closed_form(data, R0=...), when it made this posterior

    @property
    def predictive_interval(self) -> bool:
        """Whether the leaderboard's accuracy interval is the posterior predictive one."""
        return self.model in ("bayes", "bayes_greedy") and self.data is not None and not (
            self.model == "bayes_greedy" and self.prior is None)

    def _accuracy_summary(self, prob: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        if self.model not in ("bayes", "bayes_greedy"):
            return None
        if not self.predictive_interval:
            lower, upper = self._interval(prob, "eti")  # Bayes@N's mu is its expected score
            return self.mu.copy(), lower, upper
        # the predictive interval of the replicated benchmark score, normal approximation of
        # the Dirichlet-multinomial: per cell mean n E[w], variance n Var(w) (T + n) / (T + 1)
        nu = conjugate.dirichlet_parameters(self.data, self.prior)
        w = self.data.weights
        T, n = nu.sum(axis=-1), self.data.reductions.trials
        mean_w = (nu @ w) / T
        var_w = np.maximum((nu @ w**2) / T - mean_w**2, 0.0)
        total = n.sum(axis=1)
        center = (n * mean_w).sum(axis=1) / total
        sd = np.sqrt((n * var_w * (T + n) / (T + 1)).sum(axis=1)) / total
        half = special.ndtri(0.5 + prob / 2) * sd
        return (self.mu.copy(), np.clip(center - half, w.min(), w.max()),
                np.clip(center + half, w.min(), w.max()))

    def _interval(self, prob: float, kind: str) -> tuple[np.ndarray, np.ndarray]:
        half = special.ndtri(0.5 + prob / 2) * self.sigma  # the normal's HDI is its ETI
        return self.mu - half, self.mu + half

    @cached_property
    def _superiority_cache(self) -> tuple[np.ndarray, np.ndarray]:
        p = unc.normal_superiority(self.mu, self.sigma)
        return p, np.zeros_like(p)

    def _superiority_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return self._superiority_cache

    @cached_property
    def _rank_prob_cache(self) -> np.ndarray:
        return unc.normal_rank_probabilities(self.mu, self.sigma)

    def _rank_probs(self) -> np.ndarray:
        return self._rank_prob_cache

    def sample(self, draws: int = 1000, *, chains: int = 4, random_seed: int | None = 0
               ) -> Posterior:
        """Independent draws from the normal approximation as a :class:`Posterior`.

        Useful to feed the same draw-based tools (ArviZ plots, reports) or to
        check the exact analytics by simulation.
        """
        rng = np.random.default_rng(random_seed)
        theta = self.mu + self.sigma * rng.standard_normal((chains, draws, self.mu.size))
        idata = from_arrays(
            {"posterior": {"theta": theta}},
            coords={"llm": list(self.models)},
            dims={"theta": ["llm"]},
        )
        return Posterior(
            idata, self.data, self.model, sampler="normal_approximation"  # type: ignore[arg-type]
        )

    def __repr__(self) -> str:
        return f"NormalPosterior(model={self.model!r}, L={self.mu.size})"

    def save(self, path: str | Any) -> Any:
        """Write mu, sigma, data and settings to a ``.nc`` or ``.zarr`` file (atomically)."""
        from bayesrank.analysis.posterior_file import save_posterior

        return save_posterior(self, path)


BAYES_SCORE_LABEL = "Bayes@N score (uniform prior, shrinks toward 0.5 at small N)"
IRT_ACCURACY_LABEL = "expected accuracy on these questions"


def estimate_label(model: str, data: ResponseData | None = None) -> str:
    """What a model's ``accuracy`` column is, in the words a leaderboard shows.

    Bayes@N's score is the posterior mean of the Dirichlet solve rates, ``(k + 1) /
    (N + 2)`` per question under the uniform prior: at N = 1 it lies in [1/3, 2/3],
    so it is labelled as a shrunken score, never as accuracy.  The item-response
    models' ``(1/M) sum_m P(l solves m)`` is the expected accuracy on these questions.
    """
    if model == "bayes_greedy":
        return "Bayes@N score (prior: the data's prior outcomes R0, shrinks toward them)"
    if model == "bayes":
        # the uniform Dirichlet's mean score is the mean category weight: 0.5 for 0/1
        centre = 0.5 if data is None else float(np.mean(data.weights))
        return BAYES_SCORE_LABEL.replace("0.5", f"{centre:.3g}")
    return IRT_ACCURACY_LABEL


def observed_label(data: ResponseData | PairwiseData | None) -> str:
    """``observed accuracy`` for binary data, ``observed score`` with category weights,
    ``observed win rate`` for pairwise battles (a tie counts half)."""
    if isinstance(data, PairwiseData):
        return "observed win rate (ties half)"
    return "observed accuracy" if data is None or data.is_binary else "observed score"


ACCURACY_NOT_AVAILABLE = (
    "No accuracy column: the {model} model has no per-question solve probabilities "
    "(it models pairwise or setwise comparisons), so theta cannot be put on the "
    "accuracy scale."
)
PAIRWISE_MODELS = ("bradley_terry", "davidson")


def exchangeable_models(data: ResponseData, model: str) -> list[np.ndarray]:
    """Groups of models with identical sufficient statistics for ``model`` (indices).

    Cell models (Bayes@N, Rasch, 2PL, 3PL) see each model only through its
    category counts and trials per question (and prior outcomes); pairwise
    models only through the win/tie matrices; any other model is given
    identical outcome arrays.  Every model's prior is exchangeable over LLMs,
    so models in one group have the same posterior distribution of theta.
    """
    red = data.reductions
    L = data.L
    if model in PAIRWISE_MODELS:
        return unc.swap_invariant_pairs(red.wins, red.ties)
    if model in ("bayes", "bayes_greedy", "rasch", "2pl", "3pl"):
        parts = [red.category_counts.reshape(L, -1), red.trials.reshape(L, -1)]
    else:
        mask = np.ones(data.R.shape, bool) if data.mask is None else data.mask
        parts = [np.where(mask, data.R, -1).reshape(L, -1)]
    prior = red.prior_category_counts
    if prior is not None and prior.ndim >= 2 and prior.shape[0] == L:
        parts.append(prior.reshape(L, -1))
    return unc.identical_rows(*parts)


def closed_form(
    data: ResponseData | Any, *, weights: np.ndarray | None = None, R0: Any = None
) -> NormalPosterior:
    """Closed-form Bayes@N posterior ``N(mu_l, sigma_l^2)`` with exact ranking analytics.

    Wraps :func:`bayesrank.conjugate` (paper appendix, "Bayes@N"): ``mu_l`` and
    ``sigma_l`` are the mean and standard deviation of model ``l``'s weighted
    score under independent Dirichlet posteriors per question.  ``R0=None`` gives
    Bayes_U@N (uniform prior only); the default uses the data's own prior
    outcomes (Bayes_R0@N when present).

    Examples
    --------
    >>> post = closed_form(data)                      # doctest: +SKIP
    >>> post.rank("lcb", q=0.05)                      # = bayes_ci ranking  # doctest: +SKIP
    >>> post.superiority()["prob"]                    # doctest: +SKIP
    """
    d = as_response_data(data)
    mu, sigma = conjugate.bayes_at_n(d, weights=weights, R0=R0)
    label = "bayes_greedy" if conjugate.uses_prior(R0) else "bayes"
    post = NormalPosterior(mu, sigma, d.models, data=d, model=label)
    post.prior = R0  # for the predictive interval of the accuracy (same Dirichlet posterior)
    return post
