"""Model adequacy on the real data sets in ../shared/data: PPC p-values and PSIS-LOO.

Issue 9, item 3: the report's default model is chosen by measurement.  For
each real set every candidate model is fitted with the defaults of
:func:`bayesrank.fit` (4 chains x (1,000 tune + 1,000 draws)), then
``post.ppc()`` (500 replicated data sets) and :func:`bayesrank.compare`
(PSIS-LOO over model-question cells) are run.  On 2 shared cores the sets are
cut to at most ``--max-questions`` questions (every k-th in the data's order,
so the share of never/always-solved questions is kept); every model of a set
sees the same questions, so their ELPDs are comparable.

With one trial per cell (N = 1) the beta-binomial variants are skipped: a
beta-binomial with n = 1 is exactly the Bernoulli, so they are the binomial
models with an unidentified extra parameter (the 3PL keeps its default).

Run: ``python benchmarks/model_adequacy_real.py [--max-questions 150] [--sets a,b]``;
rows are appended to ``bench-results/model_adequacy_real.csv`` per set.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import bayesrank

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_models_real import load_real_sets  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "bench-results" / "model_adequacy_real.csv"
CANDIDATES = {
    "bayes": ("bayes", {}),
    "rasch": ("rasch", {}),
    "rasch_betabin": ("rasch", {"likelihood": "beta_binomial"}),
    "2pl": ("2pl", {}),
    "2pl_betabin": ("2pl", {"likelihood": "beta_binomial"}),
    "3pl": ("3pl", {}),  # beta-binomial by default
}
ORDER = ("lcb_repair", "matharena_aime2025_I", "zeroeval_math_l5", "reasoning_gym_hard")


def every_kth_question(data: bayesrank.ResponseData, limit: int) -> bayesrank.ResponseData:
    step = -(-data.M // limit)
    keep = np.arange(0, data.M, step)
    return bayesrank.ResponseData(
        data.R[:, keep], models=list(data.models), questions=list(np.asarray(data.questions)[keep])
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-questions", type=int, default=150)
    parser.add_argument("--sets", default=",".join(ORDER), help="comma-separated set names")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    out = Path(args.out)
    sets = load_real_sets()
    out.parent.mkdir(exist_ok=True)
    fields = ["set", "L", "M", "N", "model", "wall_s", "max_rhat", "min_ess_bulk",
              "divergences", "acc_p_min", "qdisp_p", "mdisp_p", "qdisp_flagged",
              "mdisp_flagged", "acc_flagged", "solve_flagged", "elpd_loo", "se",
              "elpd_diff", "diff_se", "weight", "n_pareto_k_high"]
    new = not out.exists()
    with out.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        if new:
            writer.writeheader()
        for set_name in args.sets.split(","):
            data = every_kth_question(sets[set_name], args.max_questions)
            posts, rows = {}, {}
            for label, (model, options) in CANDIDATES.items():
                if data.N == 1 and options.get("likelihood") == "beta_binomial":
                    continue  # with one trial per cell the beta-binomial is the Bernoulli
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    post = bayesrank.fit(data, model, random_seed=0, progressbar=False, **options)
                wall = time.perf_counter() - t0
                diag = post.diagnostics
                ppc = post.ppc(random_seed=0)
                stats = ppc.statistics
                per = ppc.summary().set_index("statistic")

                def overall(name, stats=stats):
                    row = stats[(stats["statistic"] == name) & (stats["target"] == "all")]
                    return float(row["p_value"].iloc[0]) if len(row) else np.nan

                acc = stats[stats["statistic"] == "accuracy"]["p_value"]
                rows[label] = {
                    "set": set_name, "L": data.L, "M": data.M, "N": data.N, "model": label,
                    "wall_s": round(wall, 1),
                    "max_rhat": _get(diag, "r_hat", max),
                    "min_ess_bulk": _get(diag, "ess_bulk", min),
                    "divergences": diag.attrs.get("divergences", np.nan),
                    "acc_p_min": float(np.nanmin(np.minimum(acc, 1 - acc))),
                    "qdisp_p": overall("question_dispersion"),
                    "mdisp_p": overall("model_dispersion"),
                    "qdisp_flagged": f"{per.loc['question_dispersion', 'flagged']}/{data.L}",
                    "mdisp_flagged": f"{per.loc['model_dispersion', 'flagged']}/{data.M}",
                    "acc_flagged": f"{per.loc['accuracy', 'flagged']}/{data.L}",
                    "solve_flagged": f"{per.loc['solve_rate', 'flagged']}/{data.M}",
                }
                posts[label] = post
                print(set_name, label, rows[label], flush=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                table = bayesrank.compare(posts)
            for label, row in rows.items():
                t = table.loc[label]
                row.update({k: t[k] for k in ("elpd_loo", "se", "elpd_diff", "diff_se", "weight",
                                              "n_pareto_k_high")})
                writer.writerow(row)
            fh.flush()
            print(table.to_string(), flush=True)


def _get(diag, column, reduce):
    try:
        values = np.asarray(diag[column], dtype=float)
        return float(reduce(values[np.isfinite(values)]))
    except (KeyError, TypeError, ValueError):
        return np.nan


if __name__ == "__main__":
    main()
