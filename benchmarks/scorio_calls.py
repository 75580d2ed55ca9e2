"""The paper's 72 identifiers as calls of scorio 0.2.3 (the paper's implementation).

Transcribed from the paper's method table (identifier, base function, arguments used).
``R0=R0`` means "pass the greedy prior outcomes".  Used by benchmarks and oracle tests.
"""

from __future__ import annotations

PAPER_METHODS: dict[str, tuple[str, str, dict]] = {
    "avg": ("avg", "Metrics", {}),
    "pass_at_k_2": ("pass_at_k", "Metrics", {"k": 2}),
    "pass_hat_k_2": ("pass_hat_k", "Metrics", {"k": 2}),
    "mg_pass_at_k_2": ("mg_pass_at_k", "Metrics", {"k": 2}),
    "bayes": ("bayes", "Metrics", {"R0": None, "quantile": None}),
    "bayes_greedy": ("bayes", "Metrics", {"R0": "R0", "quantile": None}),
    "bayes_ci": ("bayes", "Metrics", {"R0": None, "quantile": 0.05}),
    "inverse_difficulty": ("inverse_difficulty", "Metrics", {"clip_range": [0.01, 0.99]}),
    "elo_tie_skip": (
        "elo",
        "Pairwise rating",
        {"K": 0.05, "initial_rating": 1500.0, "tie_handling": "skip"},
    ),
    "elo_tie_draw": (
        "elo",
        "Pairwise rating",
        {"K": 0.05, "initial_rating": 1500.0, "tie_handling": "draw"},
    ),
    "elo_tie_correct_draw_only": (
        "elo",
        "Pairwise rating",
        {"K": 0.05, "initial_rating": 1500.0, "tie_handling": "correct_draw_only"},
    ),
    "glicko_tie_skip": (
        "glicko",
        "Pairwise rating",
        {
            "initial_rating": 1500.0,
            "initial_rd": 350.0,
            "c": 0.0,
            "rd_max": 350.0,
            "tie_handling": "skip",
            "return_deviation": False,
        },
    ),
    "glicko_tie_draw": (
        "glicko",
        "Pairwise rating",
        {
            "initial_rating": 1500.0,
            "initial_rd": 350.0,
            "c": 0.0,
            "rd_max": 350.0,
            "tie_handling": "draw",
            "return_deviation": False,
        },
    ),
    "glicko_tie_correct_draw_only": (
        "glicko",
        "Pairwise rating",
        {
            "initial_rating": 1500.0,
            "initial_rd": 350.0,
            "c": 0.0,
            "rd_max": 350.0,
            "tie_handling": "correct_draw_only",
            "return_deviation": False,
        },
    ),
    "trueskill": (
        "trueskill",
        "Pairwise rating",
        {
            "mu_initial": 25.0,
            "sigma_initial": 8.333333333333334,
            "beta": 4.166666666666667,
            "tau": 0.00333333333,
        },
    ),
    "bradley_terry": ("bradley_terry", "Probabilistic comparisons", {"max_iter": 500}),
    "bradley_terry_map": (
        "bradley_terry_map",
        "Probabilistic comparisons",
        {"prior": 1.0, "max_iter": 500},
    ),
    "bradley_terry_davidson": (
        "bradley_terry_davidson",
        "Probabilistic comparisons",
        {"max_iter": 500},
    ),
    "bradley_terry_davidson_map": (
        "bradley_terry_davidson_map",
        "Probabilistic comparisons",
        {"prior": 1.0, "max_iter": 500},
    ),
    "rao_kupper": (
        "rao_kupper",
        "Probabilistic comparisons",
        {"tie_strength": 1.1, "max_iter": 500},
    ),
    "rao_kupper_map": (
        "rao_kupper_map",
        "Probabilistic comparisons",
        {"tie_strength": 1.1, "prior": 1.0, "max_iter": 500},
    ),
    "thompson": (
        "thompson",
        "Probabilistic comparisons",
        {"n_samples": 10000, "prior_alpha": 1.0, "prior_beta": 1.0, "seed": 42},
    ),
    "bayesian_mcmc": (
        "bayesian_mcmc",
        "Probabilistic comparisons",
        {"n_samples": 5000, "burnin": 1000, "prior_var": 1.0, "seed": 42},
    ),
    "plackett_luce": (
        "plackett_luce",
        "Probabilistic comparisons",
        {"max_iter": 500, "tol": 1e-08},
    ),
    "plackett_luce_map": (
        "plackett_luce_map",
        "Probabilistic comparisons",
        {"prior": 1.0, "max_iter": 500},
    ),
    "bradley_terry_luce": ("bradley_terry_luce", "Probabilistic comparisons", {"max_iter": 500}),
    "bradley_terry_luce_map": (
        "bradley_terry_luce_map",
        "Probabilistic comparisons",
        {"prior": 1.0, "max_iter": 500},
    ),
    "borda": ("borda", "Voting rules", {}),
    "copeland": ("copeland", "Voting rules", {}),
    "win_rate": ("win_rate", "Voting rules", {}),
    "minimax_variant_margin_tie_ignore": (
        "minimax",
        "Voting rules",
        {"variant": "margin", "tie_policy": "ignore"},
    ),
    "minimax_variant_margin_tie_half": (
        "minimax",
        "Voting rules",
        {"variant": "margin", "tie_policy": "half"},
    ),
    "minimax_variant_winning_votes_tie_ignore": (
        "minimax",
        "Voting rules",
        {"variant": "winning_votes", "tie_policy": "ignore"},
    ),
    "minimax_variant_winning_votes_tie_half": (
        "minimax",
        "Voting rules",
        {"variant": "winning_votes", "tie_policy": "half"},
    ),
    "schulze_tie_ignore": ("schulze", "Voting rules", {"tie_policy": "ignore"}),
    "schulze_tie_half": ("schulze", "Voting rules", {"tie_policy": "half"}),
    "ranked_pairs_strength_margin_tie_ignore": (
        "ranked_pairs",
        "Voting rules",
        {"strength": "margin", "tie_policy": "ignore"},
    ),
    "ranked_pairs_strength_margin_tie_half": (
        "ranked_pairs",
        "Voting rules",
        {"strength": "margin", "tie_policy": "half"},
    ),
    "ranked_pairs_strength_winning_votes_tie_ignore": (
        "ranked_pairs",
        "Voting rules",
        {"strength": "winning_votes", "tie_policy": "ignore"},
    ),
    "ranked_pairs_strength_winning_votes_tie_half": (
        "ranked_pairs",
        "Voting rules",
        {"strength": "winning_votes", "tie_policy": "half"},
    ),
    "kemeny_young_tie_ignore": (
        "kemeny_young",
        "Voting rules",
        {"tie_policy": "ignore", "time_limit": None},
    ),
    "kemeny_young_tie_half": (
        "kemeny_young",
        "Voting rules",
        {"tie_policy": "half", "time_limit": None},
    ),
    "nanson_rank_ties_average": ("nanson", "Voting rules", {"rank_ties": "average"}),
    "nanson_rank_ties_max": ("nanson", "Voting rules", {"rank_ties": "max"}),
    "baldwin_rank_ties_average": ("baldwin", "Voting rules", {"rank_ties": "average"}),
    "baldwin_rank_ties_max": ("baldwin", "Voting rules", {"rank_ties": "max"}),
    "majority_judgment": ("majority_judgment", "Voting rules", {}),
    "rasch": ("rasch", "IRT", {"max_iter": 500, "return_item_params": False}),
    "rasch_map": ("rasch_map", "IRT", {"prior": 1.0, "max_iter": 500, "return_item_params": False}),
    "rasch_2pl": ("rasch_2pl", "IRT", {"max_iter": 500, "return_item_params": False}),
    "rasch_2pl_map": (
        "rasch_2pl_map",
        "IRT",
        {"prior": 1.0, "max_iter": 500, "return_item_params": False},
    ),
    "rasch_3pl": (
        "rasch_3pl",
        "IRT",
        {"max_iter": 500, "fix_guessing": None, "return_item_params": False},
    ),
    "rasch_3pl_map": (
        "rasch_3pl_map",
        "IRT",
        {"prior": 1.0, "max_iter": 500, "fix_guessing": None, "return_item_params": False},
    ),
    "rasch_mml": (
        "rasch_mml",
        "IRT",
        {"max_iter": 100, "em_iter": 20, "n_quadrature": 21, "return_item_params": False},
    ),
    "rasch_mml_credible": (
        "rasch_mml_credible",
        "IRT",
        {"quantile": 0.05, "max_iter": 100, "em_iter": 20, "n_quadrature": 21},
    ),
    "dynamic_irt_linear": (
        "dynamic_irt",
        "IRT",
        {"variant": "linear", "max_iter": 500, "return_item_params": False},
    ),
    "dynamic_irt_growth": (
        "dynamic_irt",
        "IRT",
        {"variant": "growth", "max_iter": 500, "return_item_params": False},
    ),
    "pagerank": ("pagerank", "Graph/game", {"damping": 0.85, "max_iter": 100, "tol": 1e-12}),
    "spectral": ("spectral", "Graph/game", {"max_iter": 10000, "tol": 1e-12}),
    "alpharank": (
        "alpharank",
        "Graph/game",
        {"alpha": 1.0, "population_size": 50, "max_iter": 100000, "tol": 1e-12},
    ),
    "nash_vs_equilibrium": (
        "nash",
        "Graph/game",
        {
            "n_iter": 100,
            "temperature": 0.1,
            "solver": "lp",
            "score_type": "vs_equilibrium",
            "return_equilibrium": False,
        },
    ),
    "nash_advantage_vs_equilibrium": (
        "nash",
        "Graph/game",
        {
            "n_iter": 100,
            "temperature": 0.1,
            "solver": "lp",
            "score_type": "advantage_vs_equilibrium",
            "return_equilibrium": False,
        },
    ),
    "rank_centrality_tie_ignore": (
        "rank_centrality",
        "Graph/game",
        {
            "tie_handling": "ignore",
            "smoothing": 0.0,
            "teleport": 0.0,
            "max_iter": 10000,
            "tol": 1e-12,
        },
    ),
    "rank_centrality_tie_half": (
        "rank_centrality",
        "Graph/game",
        {
            "tie_handling": "half",
            "smoothing": 0.0,
            "teleport": 0.0,
            "max_iter": 10000,
            "tol": 1e-12,
        },
    ),
    "serial_rank_prob_diff": ("serial_rank", "Graph/game", {"comparison": "prob_diff"}),
    "serial_rank_sign": ("serial_rank", "Graph/game", {"comparison": "sign"}),
    "hodge_rank_binary_total": (
        "hodge_rank",
        "Graph/game",
        {"pairwise_stat": "binary", "weight_method": "total", "return_diagnostics": False},
    ),
    "hodge_rank_binary_decisive": (
        "hodge_rank",
        "Graph/game",
        {"pairwise_stat": "binary", "weight_method": "decisive", "return_diagnostics": False},
    ),
    "hodge_rank_binary_uniform": (
        "hodge_rank",
        "Graph/game",
        {"pairwise_stat": "binary", "weight_method": "uniform", "return_diagnostics": False},
    ),
    "hodge_rank_log_odds_total": (
        "hodge_rank",
        "Graph/game",
        {
            "pairwise_stat": "log_odds",
            "weight_method": "total",
            "epsilon": 0.5,
            "return_diagnostics": False,
        },
    ),
    "hodge_rank_log_odds_decisive": (
        "hodge_rank",
        "Graph/game",
        {
            "pairwise_stat": "log_odds",
            "weight_method": "decisive",
            "epsilon": 0.5,
            "return_diagnostics": False,
        },
    ),
    "hodge_rank_log_odds_uniform": (
        "hodge_rank",
        "Graph/game",
        {
            "pairwise_stat": "log_odds",
            "weight_method": "uniform",
            "epsilon": 0.5,
            "return_diagnostics": False,
        },
    ),
}
