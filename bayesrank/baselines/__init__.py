"""Deterministic ranking rules of the paper, one module per family, and the table of identifiers.

:data:`METHODS` is the one place where an identifier is defined: it maps each of the paper's
72 identifiers (App. "Ranking Method APIs and Hyperparameters"), plus a few base rules by
name, to a :class:`MethodSpec`: the rule function, its family, the default arguments and
whether the paper uses it.  Identifiers that share a rule differ only in their defaults;
a ``*_map`` identifier is its base rule with a Gaussian prior on log-strengths or
abilities (``prior=1.0``).  :mod:`bayesrank.registry` looks identifiers up here;
the family modules never import the registry.  To add an identifier, add a row to its
family's list below; to add a rule, see ``docs/architecture.md``, "Adding a ranking rule"
(and :data:`PER_DRAW`).  Shared pieces live in :mod:`._optim` (Newton, ML/MAP penalty,
identifiability) and :mod:`bayesrank.checks` (argument checks).

=========  ============================================================================
module     rules
=========  ============================================================================
metrics    avg, inverse difficulty, Pass@k family, Bayes@N, Thompson sampling
ratings    Elo, Glicko, TrueSkill over the induced match stream
paired     Bradley-Terry, Davidson and Rao-Kupper ties (ML / MAP), Bayesian BT by MCMC
luce       Plackett-Luce, Bradley-Terry-Luce, Davidson-Luce (ML / MAP)
voting     Borda, Copeland, win rate, Minimax, Schulze, Ranked Pairs, Kemeny-Young, ...
irt/       Rasch / 2PL / 3PL (JML / MAP), Rasch MML, dynamic IRT (a subpackage)
graph      PageRank, spectral, alpha-Rank, Nash, Rank Centrality, SerialRank, HodgeRank
=========  ============================================================================
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

from bayesrank.baselines import graph, irt, luce, metrics, paired, ratings, voting
from bayesrank.ranking import Ranking

__all__ = [
    "METHODS",
    "MethodSpec",
    "PER_DRAW",
    "rule_defaults",
    "graph",
    "irt",
    "luce",
    "metrics",
    "paired",
    "ratings",
    "voting",
]


@dataclass(frozen=True)
class MethodSpec:
    """One identifier: a rule called with fixed default arguments.

    Attributes
    ----------
    identifier : str
        The name passed to :func:`bayesrank.rank` (e.g. ``"bradley_terry_map"``).
    label : str
        Human-readable family label (e.g. ``"Voting rules"``).
    function : callable
        The rule, ``function(data, **options) -> Ranking``.
    defaults : Mapping
        Arguments the identifier passes to ``function`` (callers may override them).
    in_paper : bool
        Whether the identifier is one of the paper's 72.
    family : str
        The family module of :mod:`bayesrank.baselines` the rule belongs to.
    """

    identifier: str
    label: str
    function: Callable[..., Ranking]
    defaults: Mapping[str, Any]
    in_paper: bool
    family: str

    @property
    def base(self) -> str:
        """Name of the base rule (shared by every identifier that configures it)."""
        return self.function.__name__

    @cached_property
    def options(self) -> Mapping[str, Any]:
        """Every keyword option of the rule as this identifier runs it: the rule's own
        defaults (:func:`rule_defaults`), then :attr:`defaults` over them.  The study's
        stacked forms receive these, so no default is written twice."""
        return MappingProxyType({**rule_defaults(self.function), **self.defaults})

    @property
    def per_draw(self) -> str | None:
        """Why the rule has no stacked form (the study ranks it draw by draw), or None."""
        return PER_DRAW.get(self.base)


def rule_defaults(function: Callable[..., Any]) -> dict[str, Any]:
    """The keyword options of a rule that have defaults, from its signature."""
    rule = getattr(function, "__wrapped_rule__", function)
    return {name: p.default for name, p in inspect.signature(rule).parameters.items()
            if p.kind is p.KEYWORD_ONLY and p.default is not p.empty}


_Row = tuple[str, Callable[..., Ranking], dict[str, Any]]

#: Base rules without a stacked form, and why (every other rule has one in
#: :mod:`bayesrank.study.stack_rules`, which runs its core here over all draws at once).
PER_DRAW: Mapping[str, str] = MappingProxyType({
    "davidson_luce": "not a paper identifier: the study never ranks it in bulk",
    "g_pass_at_k_tau": "not a paper identifier: the study never ranks it in bulk",
})


def _family(
    family: str, label: str, paper: Iterable[_Row], extra: Iterable[_Row] = ()
) -> list[MethodSpec]:
    """MethodSpecs of one family: the paper's identifiers, then base rules by name."""
    return [
        MethodSpec(identifier, label, function, MappingProxyType(dict(defaults)), in_paper,
                   family)
        for in_paper, rows in ((True, paper), (False, extra))
        for identifier, function, defaults in rows
    ]


_GRAPH = _family("graph", "Graph/game", [
    ("pagerank", graph.pagerank, {"damping": 0.85, "max_iter": 100, "tol": 1e-12}),
    ("spectral", graph.spectral, {"max_iter": 10_000, "tol": 1e-12}),
    ("alpharank", graph.alpharank,
     {"alpha": 1.0, "population_size": 50, "max_iter": 100_000, "tol": 1e-12}),
    ("nash_vs_equilibrium", graph.nash,
     {"n_iter": 100, "temperature": 0.1, "solver": "lp", "score_type": "vs_equilibrium",
      "return_equilibrium": False}),
    ("nash_advantage_vs_equilibrium", graph.nash,
     {"n_iter": 100, "temperature": 0.1, "solver": "lp",
      "score_type": "advantage_vs_equilibrium", "return_equilibrium": False}),
    ("rank_centrality_tie_ignore", graph.rank_centrality,
     {"tie_handling": "ignore", "smoothing": 0.0, "teleport": 0.0, "max_iter": 10_000,
      "tol": 1e-12}),
    ("rank_centrality_tie_half", graph.rank_centrality,
     {"tie_handling": "half", "smoothing": 0.0, "teleport": 0.0, "max_iter": 10_000,
      "tol": 1e-12}),
    ("serial_rank_prob_diff", graph.serial_rank, {"comparison": "prob_diff"}),
    ("serial_rank_sign", graph.serial_rank, {"comparison": "sign"}),
    ("hodge_rank_binary_total", graph.hodge_rank,
     {"pairwise_stat": "binary", "weight_method": "total", "return_diagnostics": False}),
    ("hodge_rank_binary_decisive", graph.hodge_rank,
     {"pairwise_stat": "binary", "weight_method": "decisive", "return_diagnostics": False}),
    ("hodge_rank_binary_uniform", graph.hodge_rank,
     {"pairwise_stat": "binary", "weight_method": "uniform", "return_diagnostics": False}),
    ("hodge_rank_log_odds_total", graph.hodge_rank,
     {"pairwise_stat": "log_odds", "weight_method": "total", "return_diagnostics": False,
      "epsilon": 0.5}),
    ("hodge_rank_log_odds_decisive", graph.hodge_rank,
     {"pairwise_stat": "log_odds", "weight_method": "decisive", "return_diagnostics": False,
      "epsilon": 0.5}),
    ("hodge_rank_log_odds_uniform", graph.hodge_rank,
     {"pairwise_stat": "log_odds", "weight_method": "uniform", "return_diagnostics": False,
      "epsilon": 0.5}),
])

_IRT = _family("irt", "IRT", [
    ("rasch", irt.rasch, {"max_iter": 500, "return_item_params": False}),
    ("rasch_map", irt.rasch, {"prior": 1.0, "max_iter": 500, "return_item_params": False}),
    ("rasch_2pl", irt.rasch_2pl, {"max_iter": 500, "return_item_params": False}),
    ("rasch_2pl_map", irt.rasch_2pl,
     {"prior": 1.0, "max_iter": 500, "return_item_params": False}),
    ("rasch_3pl", irt.rasch_3pl,
     {"max_iter": 500, "fix_guessing": None, "return_item_params": False}),
    ("rasch_3pl_map", irt.rasch_3pl,
     {"prior": 1.0, "max_iter": 500, "fix_guessing": None, "return_item_params": False}),
    ("rasch_mml", irt.rasch_mml,
     {"max_iter": 100, "em_iter": 20, "n_quadrature": 21, "return_item_params": False}),
    ("rasch_mml_credible", irt.rasch_mml,
     {"quantile": 0.05, "max_iter": 100, "em_iter": 20, "n_quadrature": 21}),
    ("dynamic_irt_linear", irt.dynamic_irt,
     {"variant": "linear", "max_iter": 500, "return_item_params": False}),
    ("dynamic_irt_growth", irt.dynamic_irt,
     {"variant": "growth", "max_iter": 500, "return_item_params": False}),
])

_PAIRED = _family("paired", "paired", [
    ("bradley_terry", paired.bradley_terry, {"max_iter": 500}),
    ("bradley_terry_map", paired.bradley_terry, {"prior": 1.0, "max_iter": 500}),
    ("bradley_terry_davidson", paired.bradley_terry_davidson, {"max_iter": 500}),
    ("bradley_terry_davidson_map", paired.bradley_terry_davidson,
     {"prior": 1.0, "max_iter": 500}),
    ("rao_kupper", paired.rao_kupper, {"tie_strength": 1.1, "max_iter": 500}),
    ("rao_kupper_map", paired.rao_kupper,
     {"tie_strength": 1.1, "prior": 1.0, "max_iter": 500}),
    ("bayesian_mcmc", paired.bayesian_mcmc,
     {"n_samples": 5000, "burnin": 1000, "prior_var": 1.0, "seed": 42}),
])

_LUCE = _family("luce", "luce", [
    ("plackett_luce", luce.plackett_luce, {"max_iter": 500, "tol": 1e-8}),
    ("plackett_luce_map", luce.plackett_luce, {"prior": 1.0, "max_iter": 500}),
    ("bradley_terry_luce", luce.bradley_terry_luce, {"max_iter": 500}),
    ("bradley_terry_luce_map", luce.bradley_terry_luce, {"prior": 1.0, "max_iter": 500}),
], extra=[
    ("davidson_luce", luce.davidson_luce, {"max_iter": 500}),
    ("davidson_luce_map", luce.davidson_luce, {"prior": 1.0, "max_iter": 500}),
])

_METRICS = _family("metrics", "metrics", [
    ("avg", metrics.avg, {}),
    ("inverse_difficulty", metrics.inverse_difficulty, {"clip_range": (0.01, 0.99)}),
    ("pass_at_k_2", metrics.pass_at_k, {"k": 2}),
    ("pass_hat_k_2", metrics.pass_hat_k, {"k": 2}),
    ("mg_pass_at_k_2", metrics.mg_pass_at_k, {"k": 2}),
    ("bayes", metrics.bayes, {"R0": None, "quantile": None}),
    ("bayes_greedy", metrics.bayes, {"R0": "data", "quantile": None}),
    ("bayes_ci", metrics.bayes, {"R0": None, "quantile": 0.05}),
    ("thompson", metrics.thompson,
     {"n_samples": 10000, "prior_alpha": 1.0, "prior_beta": 1.0, "seed": 42}),
], extra=[  # base rules by name, e.g. rank(data, "pass_at_k", k=8)
    ("pass_at_k", metrics.pass_at_k, {"k": 2}),
    ("pass_hat_k", metrics.pass_hat_k, {"k": 2}),
    ("mg_pass_at_k", metrics.mg_pass_at_k, {"k": 2}),
    ("g_pass_at_k_tau", metrics.g_pass_at_k_tau, {"k": 4, "tau": 0.75}),
])

_ELO = {"K": 0.05, "initial_rating": 1500.0}
_GLICKO = {"initial_rating": 1500.0, "initial_rd": 350.0, "c": 0.0, "rd_max": 350.0}
_RATINGS = _family("ratings", "Pairwise rating", [
    ("elo_tie_skip", ratings.elo, {**_ELO, "tie_handling": "skip"}),
    ("glicko_tie_skip", ratings.glicko, {**_GLICKO, "tie_handling": "skip"}),
    ("elo_tie_draw", ratings.elo, {**_ELO, "tie_handling": "draw"}),
    ("glicko_tie_draw", ratings.glicko, {**_GLICKO, "tie_handling": "draw"}),
    ("elo_tie_correct_draw_only", ratings.elo, {**_ELO, "tie_handling": "correct_draw_only"}),
    ("glicko_tie_correct_draw_only", ratings.glicko,
     {**_GLICKO, "tie_handling": "correct_draw_only"}),
    ("trueskill", ratings.trueskill,
     {"mu_initial": 25.0, "sigma_initial": 8.333333333333334, "beta": 4.166666666666667,
      "tau": 0.00333333333}),
], extra=[
    ("elo", ratings.elo, {}),
    ("glicko", ratings.glicko, {}),
])

_VOTING = _family("voting", "Voting rules", [
    ("borda", voting.borda, {}),
    ("copeland", voting.copeland, {}),
    ("win_rate", voting.win_rate, {}),
    ("majority_judgment", voting.majority_judgment, {}),
    ("minimax_variant_margin_tie_ignore", voting.minimax,
     {"variant": "margin", "tie_policy": "ignore"}),
    ("ranked_pairs_strength_margin_tie_ignore", voting.ranked_pairs,
     {"strength": "margin", "tie_policy": "ignore"}),
    ("minimax_variant_margin_tie_half", voting.minimax,
     {"variant": "margin", "tie_policy": "half"}),
    ("ranked_pairs_strength_margin_tie_half", voting.ranked_pairs,
     {"strength": "margin", "tie_policy": "half"}),
    ("minimax_variant_winning_votes_tie_ignore", voting.minimax,
     {"variant": "winning_votes", "tie_policy": "ignore"}),
    ("ranked_pairs_strength_winning_votes_tie_ignore", voting.ranked_pairs,
     {"strength": "winning_votes", "tie_policy": "ignore"}),
    ("minimax_variant_winning_votes_tie_half", voting.minimax,
     {"variant": "winning_votes", "tie_policy": "half"}),
    ("ranked_pairs_strength_winning_votes_tie_half", voting.ranked_pairs,
     {"strength": "winning_votes", "tie_policy": "half"}),
    ("schulze_tie_ignore", voting.schulze, {"tie_policy": "ignore"}),
    ("kemeny_young_tie_ignore", voting.kemeny_young,
     {"tie_policy": "ignore", "time_limit": None}),
    ("schulze_tie_half", voting.schulze, {"tie_policy": "half"}),
    ("kemeny_young_tie_half", voting.kemeny_young, {"tie_policy": "half", "time_limit": None}),
    ("nanson_rank_ties_average", voting.nanson, {"rank_ties": "average"}),
    ("baldwin_rank_ties_average", voting.baldwin, {"rank_ties": "average"}),
    ("nanson_rank_ties_max", voting.nanson, {"rank_ties": "max"}),
    ("baldwin_rank_ties_max", voting.baldwin, {"rank_ties": "max"}),
], extra=[
    ("minimax", voting.minimax, {}),
    ("schulze", voting.schulze, {}),
    ("ranked_pairs", voting.ranked_pairs, {}),
    ("kemeny_young", voting.kemeny_young, {}),
    ("nanson", voting.nanson, {}),
    ("baldwin", voting.baldwin, {}),
    ("schulze_margin", voting.schulze, {"strength": "margin"}),
])


def _table(*families: Iterable[MethodSpec]) -> Mapping[str, MethodSpec]:
    table: dict[str, MethodSpec] = {}
    for spec in (s for family in families for s in family):
        if spec.identifier in table:
            raise ValueError(f"method identifier {spec.identifier!r} defined twice")
        table[spec.identifier] = spec
    return MappingProxyType(table)


#: Every identifier, in a fixed order (the order of :func:`bayesrank.methods`).
METHODS: Mapping[str, MethodSpec] = _table(
    _GRAPH, _IRT, _PAIRED, _LUCE, _METRICS, _RATINGS, _VOTING
)
