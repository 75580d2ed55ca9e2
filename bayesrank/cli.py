"""Command-line interface: ``bayesrank rank``, ``methods``, ``report`` and ``study``."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence

from bayesrank import __version__

EXAMPLE_NOTE = "bundled simulated example (not real model results)"


def _load_data(path: str | None, key: str | None, prior: str | None):
    from bayesrank import datasets
    from bayesrank.data import io

    if path is None:
        return datasets.example(key or "combined"), EXAMPLE_NOTE
    return io.load(path, key=key, R0=prior), path


def _add_data_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", nargs="?", help="data file (.npz/.npy/.csv/.jsonl/.parquet/.nc); "
                   "omit to use the bundled simulated example")
    p.add_argument("--key", help="benchmark key inside a multi-benchmark .npz "
                   "(example: aime24, aime25, hmmt_feb_2025, brumo_2025, combined)")
    p.add_argument("--prior", help="prior-outcome archive/array (e.g. greedy decodes) for R0")


def _cmd_rank(args: argparse.Namespace) -> int:
    from bayesrank import rank

    data, source = _load_data(args.data, args.key, args.prior)
    options = {}
    for item in args.option or []:
        name, _, value = item.partition("=")
        options[name] = _parse_value(value)
    result = rank(data, args.method, ties=args.ties, **options)
    print(f"# {result.method} on {source}: {data!r}")
    print(result.to_frame().to_string(index=False))
    return 0


def _parse_value(text: str):
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _cmd_methods(args: argparse.Namespace) -> int:
    from bayesrank import methods

    table = methods(paper_only=args.paper)
    print(table.to_string(index=False))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from bayesrank.report import write_report

    data, source = _load_data(args.data, args.key, args.prior)
    if args.model == "closed_form":
        from bayesrank.analysis import closed_form

        post = closed_form(data)
    else:
        from bayesrank.inference import fit

        post = fit(data, args.model, sampler=args.sampler, draws=args.draws, tune=args.tune,
                   chains=args.chains, random_seed=args.seed)
    path = write_report(
        post,
        args.output,
        baselines=[b for b in (args.baselines or "").split(",") if b],
        random_seed=args.seed,
        source=source,
    )
    print(f"wrote {path}")
    return 0


def _int_list(text: str | None) -> list[int] | None:
    return [int(v) for v in text.split(",") if v] if text else None


def _cmd_study(args: argparse.Namespace) -> int:
    from bayesrank.study import categorical, run_study
    from bayesrank.study import cli as study_cli

    if args.signals:
        return categorical.cli_main(args)

    data, source = _load_data(args.data, args.key, args.prior)
    try:
        result = run_study(
            data,
            protocols=args.protocol,
            methods=args.methods,
            seed=args.seed,
            n_trials=args.n_trials,
            draws=args.draws,
            budgets=_int_list(args.budgets),
            reps=args.reps,
            sizes=_int_list(args.sizes),
            subsets=args.subsets,
            prior_reps=args.prior_reps,
            **study_cli.run_options(args),
        )
    except (ValueError, KeyError) as exc:  # bad protocol, budget, size or method: say which
        print(f"bayesrank: error: {str(exc).strip(chr(39))}", file=sys.stderr)
        return 2
    paths = result.to_csv(args.output)
    print(f"# study on {source}: {data!r}")
    print(result)
    summary = result.summary()
    if not summary.empty:
        print(summary.to_string(index=False, float_format="%.4f"))
    print(f"wrote {len(paths)} files to {args.output}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from bayesrank import adaptive
    from bayesrank.study import categorical
    from bayesrank.study import cli as study_cli

    parser = argparse.ArgumentParser(
        prog="bayesrank",
        description="Rank LLMs from repeated-trial benchmark results, with honest uncertainty.",
    )
    parser.add_argument("--version", action="version", version=f"bayesrank {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("rank", help="rank models with a deterministic method; print a leaderboard")
    _add_data_arguments(p)
    p.add_argument("--method", default="avg", help="method identifier (see `bayesrank methods`)")
    p.add_argument("--ties", default="competition",
                   choices=["competition", "dense", "average", "ordinal"])
    p.add_argument("-O", "--option", action="append", metavar="NAME=VALUE",
                   help="override a method argument (JSON value), e.g. -O K=16")
    p.set_defaults(func=_cmd_rank)

    p = sub.add_parser("methods", help="list every ranking method identifier")
    p.add_argument("--paper", action="store_true", help="only the paper's 72 identifiers")
    p.set_defaults(func=_cmd_methods)

    p = sub.add_parser("report", help="fit a Bayesian model and write a self-contained HTML report")
    _add_data_arguments(p)
    p.add_argument("--model", default="rasch",
                   help="bayes, rasch, 2pl, 3pl, bradley_terry, davidson_luce, or closed_form "
                   "(Bayes@N normal approximation: no MCMC, seconds)")
    p.add_argument("--sampler", default=None, help="numpyro, nutpie or pymc (default: per model)")
    p.add_argument("--baselines", default="avg,bradley_terry,elo_tie_draw",
                   help="comma-separated deterministic methods to show beside the posterior")
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--tune", type=int, default=1000)
    p.add_argument("--chains", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", default="report.html")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("study", help="run the paper's evaluation protocols (gold agreement, N=1 "
                       "stability, convergence, model-pool bootstrap, prior effect); write CSVs")
    _add_data_arguments(p)
    p.add_argument("--protocol", default="gold,stability",
                   help="comma-separated: gold, stability, convergence, bootstrap, prior")
    p.add_argument("--methods", default=None,
                   help="comma-separated method identifiers, or paper (default: the paper's "
                   "72), fast (the paper's minus the 6 slowest) or all")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-trials", type=int, default=1, help="trials per low-budget draw")
    p.add_argument("--draws", type=int, default=None,
                   help="low-budget draws (default: all N single-trial draws)")
    p.add_argument("--budgets", default=None, help="convergence/prior budgets, e.g. 1,2,4,80")
    p.add_argument("--reps", type=int, default=20, help="convergence draws per budget")
    p.add_argument("--sizes", default="5,10,15", help="model-pool sizes for bootstrap")
    p.add_argument("--subsets", type=int, default=50, help="model pools per size")
    p.add_argument("--prior-reps", type=int, default=50, help="prior-effect draws per budget")
    p.add_argument("-o", "--output", default="study", help="directory for the CSV files")
    categorical.add_cli_arguments(p)
    study_cli.add_cli_arguments(p)
    p.set_defaults(func=_cmd_study)
    adaptive.add_cli(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # PyTensor's C backend warns when it finds no system BLAS; the samplers bayesrank
    # uses (nutpie, numpyro) compile their own kernels, so the warning is only noise here.
    warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")
    args = build_parser().parse_args(argv)
    from bayesrank.errors import BayesrankError

    try:
        return int(args.func(args))
    except (BayesrankError, FileNotFoundError) as exc:
        print(f"bayesrank: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
