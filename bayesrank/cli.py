"""Command-line interface: ``bayesrank rank``, ``methods``, ``report``, ``study`` and ``plan``.

Every mistake ends with one line on stderr naming the problem (and the fix, in
command-line terms) and exit status 2 for a usage error or 1 for a data or run
error; ``--debug`` shows the Python traceback instead.  Ctrl-C prints
``interrupted`` (status 130) and a closed output pipe ends quietly (status 141,
as for other tools killed by SIGPIPE).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import inspect
import math
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bayesrank import __version__
from bayesrank.checks import category_weights_argument, names_argument
from bayesrank.data.io import columns_argument

if TYPE_CHECKING:
    import pandas as pd

    from bayesrank.data import ResponseData
    from bayesrank.ranking import Ranking

EXAMPLE_NOTE = "bundled simulated example (not real model results)"


class UsageError(Exception):
    """A command-line mistake: exit status 2 with the message."""


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error: the problem and where to read the usage."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# -- argument types and checks -------------------------------------------------------------
def _int_at_least(low: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {low}, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {value}")
        return value

    return parse


def _first_existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_writable_folder(folder: Path, flag: str) -> None:
    existing = _first_existing(folder)
    if not existing.is_dir():
        raise UsageError(f"cannot write {flag} under {folder}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write {flag} under {existing}: permission denied; "
                         f"choose another {flag}")


def check_output_file(path: str | os.PathLike, flag: str = "-o") -> Path:
    """Refuse, before any work, an output file that could not be written."""
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{flag} {target} is a directory; give a file name, "
                         f"e.g. {flag} {target / 'report.html'}")
    _check_writable_folder(target.parent, flag)
    return target


def check_output_dir(path: str | os.PathLike, flag: str = "-o") -> Path:
    """Refuse, before any work, an output directory that could not be created or written."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{flag} {target} is an existing file, but this command writes several "
                         f"files into a directory; give a directory name")
    _check_writable_folder(target, flag)
    return target


# -- progress and warnings ------------------------------------------------------------------
def _watched(args: argparse.Namespace) -> bool:
    """Progress for a person at a terminal, unless --quiet."""
    if getattr(args, "quiet", False):
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _step(args: argparse.Namespace, text: str) -> None:
    if _watched(args):
        print(f"bayesrank: {text}", file=sys.stderr, flush=True)


class Stages:
    """Stage lines of long work on stderr, each with the seconds since the command began:
    ``bayesrank: [  12.3 s] fitting ...``; on a terminal the sampler's progress bar shows
    the draws, elsewhere (CI, a notebook's log, ``nohup``) :meth:`draws` prints a line
    every ``every`` seconds and when sampling ends.  ``--quiet`` silences both."""

    def __init__(self, args: argparse.Namespace, every: float = 15.0) -> None:
        self.quiet = bool(getattr(args, "quiet", False))
        self.bar = _watched(args)
        self.every = every
        self.started = time.perf_counter()
        self._last = -math.inf
        self._finished = False
        self._lock = threading.Lock()

    def __call__(self, text: str) -> None:
        if not self.quiet:
            elapsed = time.perf_counter() - self.started
            print(f"bayesrank: [{elapsed:7.1f} s] {text}", file=sys.stderr, flush=True)

    def draws(self, done: int, total: int) -> None:
        """The sampler's count of draws done (warm-up included), from its own thread."""
        if self.bar or self.quiet or total <= 0:
            return
        with self._lock:
            now = time.perf_counter()
            if done >= total and not self._finished:
                self._finished = True
                self(f"sampling: {done}/{total} draws done; log-likelihood and convergence "
                     "checks")
            elif done < total and now - self._last >= self.every:
                self._last = now
                self(f"sampling: {done}/{total} draws done ({done / total:.0%}, warm-up "
                     "included)")


def _one_line(message: Warning | str) -> str:
    return " ".join(str(message).split())


@contextlib.contextmanager
def _cli_warnings() -> Iterator[None]:
    """Warnings as one ``bayesrank: warning: ...`` line each, without Python source lines."""

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"bayesrank: warning: {_one_line(message)}", file=file or sys.stderr)

    with warnings.catch_warnings():
        # PyTensor's C backend warns when it finds no system BLAS; the samplers bayesrank
        # uses (nutpie, numpyro) compile their own kernels, so the warning is only noise here.
        warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")
        # PyTensor's note that a random variable's perform method runs in Numba object mode
        # concerns only its speed when replicating data, not the results
        warnings.filterwarnings("ignore", message="Numba will use object mode")
        warnings.showwarning = show
        yield


# -- data ----------------------------------------------------------------------------------
def _load_data(args: argparse.Namespace):
    """The data named by the shared data arguments, and how to call their source."""
    from bayesrank import datasets
    from bayesrank.data import io

    path, prior = args.data, args.prior
    if path is None:
        given = [flag for flag, value in (("--prior", prior), ("--columns", args.columns),
                                          ("--trials", args.trials), ("--weights", args.weights),
                                          ("--covariates", args.covariates))
                 if value]
        if given:
            raise UsageError(f"{given[0]} applies to a DATA file; give one (the bundled example "
                             "already has its prior)")
        return datasets.example(args.key or "combined"), EXAMPLE_NOTE
    check_input_file(path)
    if prior is not None:
        check_input_file(prior, "--prior ")
    return io.load(path, key=args.key, R0=prior, columns=args.columns, trials=args.trials,
                   weights=args.weights, metric=args.metric, covariates=args.covariates), path


def check_input_file(path: str | os.PathLike, flag: str = "") -> None:
    """A file named on the command line that is not there is a usage error (status 2)."""
    if not Path(path).exists():
        raise UsageError(f"{flag}no such file: {path}")


def _add_data_arguments(p: argparse.ArgumentParser, suite: str | None = None) -> None:
    """The data arguments; ``suite``, where given, says what several DATA paths do."""
    help_text = ("data file (.npz/.npy/.csv/.jsonl/.parquet/.nc), or an evaluation harness's "
                 "logs (an Inspect .eval file or log folder, ...); omit to use the bundled "
                 "simulated example")
    if suite is None:
        p.add_argument("data", nargs="?", help=help_text)
    else:
        p.add_argument("data", nargs="*", help=f"{help_text}. {suite}")
    p.add_argument("--metric", help="which score of a harness log to read where it has "
                   "several (an Inspect scorer's name, ...)")
    p.add_argument("--key", help="benchmark key inside a multi-benchmark .npz "
                   "(example: aime24, aime25, hmmt_feb_2025, brumo_2025, combined), or the "
                   "task of harness logs holding several")
    p.add_argument("--prior", help="prior outcomes for R0 (e.g. greedy decodes): a long table "
                   "(.csv/.jsonl/.parquet with question, [model,] trial, outcome; aligned by "
                   "name), a .nc/.npz written by bayesrank, or an array (.npy, keyed .npz)")
    p.add_argument("--columns", type=columns_argument, metavar="OURS=YOURS,...",
                   help="names of your table's columns, e.g. "
                   "--columns model=llm,question=task_id,trial=sample_idx,outcome=correct")
    p.add_argument("--trials", type=int, metavar="N",
                   help="DATA is a wide table of success counts (a model column, one column "
                   "per question), each out of N trials, e.g. MathArena's per-problem tables")
    p.add_argument("--weights", type=category_weights_argument, metavar="W0,W1,...",
                   help="categorical outcomes 0..C: the score of each, e.g. --weights 0,0.5,1 "
                   "(outcomes above 1 are refused without it)")
    p.add_argument("--covariates", type=names_argument, metavar="NAME,...",
                   help="DATA is a battles table: per-battle covariates to control for (style "
                   "control), e.g. --covariates length,markdown reads length_a/length_b and "
                   "markdown_a/markdown_b; fit and report then use the contextual model")


def _add_common_arguments(p: argparse.ArgumentParser, *, quiet: bool = True) -> None:
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                   help="show the Python traceback of an error")
    if quiet:
        p.add_argument("-q", "--quiet", action="store_true",
                       help="no progress output (default: progress only in a terminal)")


# -- rank ----------------------------------------------------------------------------------
def _parse_value(text: str):
    import json

    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def method_options(identifier: str, items: Sequence[str] | None) -> dict:
    """``-O NAME=VALUE`` items checked against the options of method ``identifier``."""
    from bayesrank.registry import get_method

    spec = get_method(identifier)
    params = inspect.signature(spec.function).parameters.values()
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in params)
    known = [p.name for p in params if p.kind is p.KEYWORD_ONLY]
    options = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            example = known[0] if known else "NAME"
            raise UsageError(f"-O {item!r}: write NAME=VALUE, e.g. -O {example}=3")
        if not accepts_any and name not in known:
            listed = ", ".join(f"{k} (default {spec.defaults.get(k, _default(spec, k))!r})"
                               for k in known) or "none"
            raise UsageError(f"method {identifier!r} has no option {name!r}; its options: {listed}")
        options[name] = _parse_value(value)
    return options


def _default(spec, name: str):
    param = inspect.signature(spec.function).parameters[name]
    return None if param.default is param.empty else param.default


def suite_paths(args: argparse.Namespace) -> list[str] | None:
    """The DATA paths when they are a suite of benchmarks, else None (one benchmark).

    Several paths are a suite; so is one folder, given without ``--key``, that is not
    a harness's logs (a folder of data files) or whose logs hold several tasks.  Sets
    ``args.data`` to the one path (None for a suite or the bundled example), so one
    benchmark goes on exactly as before.
    """
    from bayesrank.data.io import load_benchmarks
    from bayesrank.data.suites import is_plain_folder

    paths = list(args.data or [])
    args.data = paths[0] if len(paths) == 1 else None
    if len(paths) > 1:
        for path in paths:
            check_input_file(path)
        args.data = None
        return paths
    if not paths or args.key is not None or not Path(paths[0]).is_dir():
        return None
    if is_plain_folder(paths[0]) or len(load_benchmarks(paths[0], metric=args.metric)) > 1:
        args.data = None
        return paths
    return None


def _cmd_rank(args: argparse.Namespace) -> int:
    from bayesrank import rank

    paths = suite_paths(args)
    if paths is not None:
        raise UsageError(
            f"bayesrank rank ranks one benchmark, and no deterministic rule ranks a suite "
            f"({' '.join(paths)}) whose models need not have run every benchmark: fit the "
            f"suite model with `bayesrank report {' '.join(paths)}` (its overall "
            "leaderboard comes first; bayesrank.fit_benchmarks in Python), or rank one "
            "benchmark (one file, or --key)")
    options = method_options(args.method, args.option)
    data, source = _load_data(args)
    _step(args, f"ranking {data.L} models with {args.method}")
    result = rank(data, args.method, ties=args.ties, **options)
    print(f"# {result.method} on {source}: {data!r}")
    print(rank_table(result, data, options).to_string(index=False))
    return 0


def rank_table(result: Ranking, data: ResponseData, options: dict) -> pd.DataFrame:
    """``bayesrank rank``'s leaderboard: rank, model, the observed accuracy (or weighted
    score) from the data exactly, then the method's score named for what it is."""
    from bayesrank.analysis.posterior import estimate_label, observed_label

    frame = result.to_frame()
    observed = dict(zip(data.models, data.reductions.observed_score, strict=True))
    frame.insert(2, observed_label(data), [observed[m] for m in frame["model"]])
    label = f"{result.method} score"
    if result.method in ("bayes", "bayes_greedy") and options.get("quantile") is None:
        # the posterior mean score, named for the prior it shrinks toward
        greedy = result.method == "bayes_greedy" or options.get("R0") is not None
        label = estimate_label("bayes_greedy" if greedy else "bayes", data)
    return frame.rename(columns={"score": label})


def _cmd_methods(args: argparse.Namespace) -> int:
    from bayesrank import methods

    table = methods(paper_only=args.paper)
    print(table.to_string(index=False))
    return 0


# -- report --------------------------------------------------------------------------------
def _check_report_arguments(args: argparse.Namespace) -> None:
    from bayesrank.inference.backends import SAMPLERS
    from bayesrank.models import MODELS
    from bayesrank.registry import get_method

    if args.posterior is not None:
        given = [flag for flag, value in (("DATA", args.data), ("--model", args.model),
                                          ("--prior", args.prior), ("--columns", args.columns),
                                          ("--weights", args.weights),
                                          ("--sampler", args.sampler),
                                          ("--save-posterior", args.save_posterior))
                 if value is not None]
        if given:
            raise UsageError(f"--posterior renders a saved fit as it is; drop {', '.join(given)}")
        if not Path(args.posterior).exists():  # a .nc file or a .zarr folder
            raise UsageError(f"--posterior {args.posterior}: no such file")
    model = args.model  # None: the report's measured default (_fit_for_report)
    if model is not None and model != "closed_form" and model not in MODELS:
        raise UsageError(f"unknown --model {model!r}; choose one of "
                         f"{', '.join([*MODELS, 'closed_form'])}")
    if args.sampler is not None and args.sampler not in SAMPLERS:
        raise UsageError(f"unknown --sampler {args.sampler!r}; choose one of "
                         f"{', '.join(SAMPLERS)} (or leave it out for the model's default)")
    for ident in _baselines(args):
        get_method(ident)
    check_output_file(args.output)
    if args.save_posterior is not None:
        check_output_file(args.save_posterior, "--save-posterior")


def _baselines(args: argparse.Namespace) -> list[str]:
    from bayesrank.report.html import DEFAULT_BASELINES

    if args.baselines is None:
        return list(DEFAULT_BASELINES)
    return [b.strip() for b in args.baselines.split(",") if b.strip()]


def _fit_for_report(args: argparse.Namespace, stages: Stages):
    from bayesrank.report import default_model

    stages(f"loading {args.data or 'the bundled example'}")
    data, source = _load_data(args)
    data.require_models("a report")
    # chosen by posterior-predictive checks and PSIS-LOO on real benchmarks (docs/report.md)
    model, options = (args.model, {}) if args.model else default_model(data)
    if model == "closed_form":
        from bayesrank.analysis import closed_form

        stages(f"closed-form Bayes@N posterior of {data!r}")
        return closed_form(data), source
    from bayesrank.inference import fit

    described = " ".join([model, *(f"{k}={v}" for k, v in options.items())])
    post = _sample(args, stages, (described, repr(data)),
                   functools.partial(fit, data, model, **options))
    return post, source


def _sample(args: argparse.Namespace, stages: Stages, what: tuple[str, str],
            fitter: Callable[..., Any]) -> Any:
    """``fitter`` called with the command line's sampler options, after the stage line
    ``fitting {what[0]} (chains x draws after warm-up) to {what[1]}``, with the draws'
    progress on the stage lines."""
    from bayesrank.inference.backends import draws_progress

    draws = "the default draws" if args.draws is None else f"{args.draws} draws"
    tune = "the default" if args.tune is None else f"{args.tune}"
    stages(f"fitting {what[0]} ({args.chains} chains x {draws} after {tune} warm-up) to "
           f"{what[1]}")
    token = draws_progress.set(stages.draws)
    try:
        return fitter(sampler=args.sampler, draws=args.draws, tune=args.tune,
                      chains=args.chains, random_seed=args.seed, progressbar=stages.bar)
    finally:
        draws_progress.reset(token)


def _cmd_report(args: argparse.Namespace) -> int:
    from bayesrank.report import write_report

    paths = suite_paths(args)
    if paths is not None:
        return _report_suite(args, paths)
    _check_report_arguments(args)
    stages = Stages(args)
    if args.posterior is not None:
        from bayesrank.analysis.persist import load_posterior

        stages(f"loading {args.posterior}")
        post, source = load_posterior(args.posterior), f"posterior saved in {args.posterior}"
    else:
        post, source = _fit_for_report(args, stages)
        if args.save_posterior is not None:
            stages(f"writing {args.save_posterior}")
            post.save(args.save_posterior)
            print(f"wrote {args.save_posterior}")
    path = write_report(post, args.output, baselines=_baselines(args), random_seed=args.seed,
                        source=source, progress=lambda stage: stages(f"report: {stage}"))
    stages(f"wrote {path}")
    print(f"wrote {path}")
    return 0


# -- report of a suite of benchmarks ---------------------------------------------------------
#: report options that read one benchmark only, and what to do instead
_SUITE_REFUSED = {
    "--posterior": "a suite's posterior is not saved yet; fit it from the files",
    "--save-posterior": "a suite's posterior is not saved yet; drop it",
    "--prior": "the suite models take no prior outcomes (R0); drop it",
    "--weights": "the suite models read binary outcomes only; reduce categories to 0/1 first",
    "--key": "--key picks one benchmark of one file; give the suite's files, or one file "
             "with --key for one benchmark's report",
    "--baselines": "deterministic baselines rank one benchmark; drop it",
}


def _check_suite_arguments(args: argparse.Namespace) -> str:
    """The suite model to fit; usage errors for the options a suite cannot take."""
    from bayesrank.inference.backends import SAMPLERS
    from bayesrank.models.suite import KINDS

    values = {"--posterior": args.posterior, "--save-posterior": args.save_posterior,
              "--prior": args.prior, "--weights": args.weights, "--key": args.key,
              "--baselines": args.baselines}
    for flag, value in values.items():
        if value is not None:
            raise UsageError(f"{flag} does not apply to a suite of benchmarks: "
                             f"{_SUITE_REFUSED[flag]}")
    model = args.model or SUITE_DEFAULT_MODEL
    if model not in KINDS:
        raise UsageError(f"--model {model!r} has no suite version; a suite of benchmarks is "
                         f"fitted with --model {' or '.join(KINDS)} (default "
                         f"{SUITE_DEFAULT_MODEL})")
    if args.sampler is not None and args.sampler not in SAMPLERS:
        raise UsageError(f"unknown --sampler {args.sampler!r}; choose one of "
                         f"{', '.join(SAMPLERS)} (or leave it out for the model's default)")
    check_output_file(args.output)
    return model


#: the suite's default model: the one fitted and timed on the real ZeroEval suite
#: (docs/suite.md); the suite stores no pointwise log-likelihood, so no PSIS-LOO chose it
SUITE_DEFAULT_MODEL = "rasch"


def _report_suite(args: argparse.Namespace, paths: list[str]) -> int:
    """``bayesrank report a b ...``: fit the suite model, write its report."""
    from bayesrank.data.suites import SuiteReadOptions, describe, read_suite
    from bayesrank.errors import DataError
    from bayesrank.inference.suite import fit_benchmarks
    from bayesrank.models.suite import SuiteData
    from bayesrank.report import write_report

    model = _check_suite_arguments(args)
    stages = Stages(args)
    source = " ".join(paths)
    stages(f"loading the suite {source}")
    suite = read_suite(paths, SuiteReadOptions(columns=args.columns, trials=args.trials,
                                               metric=args.metric))
    if len(suite) < 2:
        raise DataError(f"{source} holds one benchmark ({', '.join(suite)}); a suite needs two "
                        "or more: add the other benchmarks' files, or report this one alone "
                        "(bayesrank report FILE)")
    SuiteData.of(suite)  # one line before the fit for a benchmark apart or with categories
    post = _sample(args, stages, (f"the suite {model}",
                                  f"{len(suite)} benchmarks: {describe(suite)}"),
                   functools.partial(fit_benchmarks, suite, model))
    path = write_report(post, args.output, random_seed=args.seed, source=source,
                        progress=lambda stage: stages(f"report: {stage}"))
    stages(f"wrote {path}")
    print(f"wrote {path}")
    return 0


# -- study ---------------------------------------------------------------------------------
def _int_list(text: str | None) -> list[int] | None:
    try:
        return [int(v) for v in text.split(",") if v] if text else None
    except ValueError:
        raise UsageError(f"expected comma-separated integers, e.g. 1,2,4; got {text!r}") from None


def _cmd_study(args: argparse.Namespace) -> int:
    from bayesrank.study import categorical, run_study
    from bayesrank.study import cli as study_cli

    check_output_dir(args.output)
    if args.signals:
        return categorical.cli_main(args)

    stages = Stages(args)
    stages(f"loading {args.data or 'the bundled example'}")
    data, source = _load_data(args)
    stages(f"running the protocols on {data!r}")
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
    stages(f"writing the frames to {args.output}")
    paths = result.to_csv(args.output)
    print(f"# study on {source}: {data!r}")
    print(result)
    summary = result.summary()
    if not summary.empty:
        print(summary.to_string(index=False, float_format="%.4f"))
    print(f"wrote {len(paths)} files to {args.output}")
    return 0


# -- parser and entry point ----------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    from bayesrank import adaptive
    from bayesrank.study import categorical
    from bayesrank.study import cli as study_cli

    parser = _Parser(
        prog="bayesrank",
        description="Rank LLMs from repeated-trial benchmark results, with honest uncertainty.",
    )
    parser.add_argument("--version", action="version", version=f"bayesrank {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the Python traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("rank", help="rank models with a deterministic method; print a leaderboard")
    _add_data_arguments(p, suite="Several files (a suite of benchmarks) are refused: "
                        "`bayesrank report` fits them")
    p.add_argument("--method", default="avg", help="method identifier (see `bayesrank methods`)")
    p.add_argument("--ties", default="competition",
                   choices=["competition", "dense", "average", "ordinal"])
    p.add_argument("-O", "--option", action="append", metavar="NAME=VALUE",
                   help="override an option of the method (JSON value), "
                   "e.g. --method elo -O K=16 or --method pass_at_k -O k=4")
    _add_common_arguments(p)
    p.set_defaults(func=_cmd_rank)

    p = sub.add_parser("methods", help="list every ranking method identifier")
    p.add_argument("--paper", action="store_true", help="only the paper's 72 identifiers")
    _add_common_arguments(p, quiet=False)
    p.set_defaults(func=_cmd_methods)

    p = sub.add_parser("report", help="fit a Bayesian model and write a self-contained HTML report")
    _add_data_arguments(p, suite="Several files, or a folder of them (or of logs with "
                        "several tasks), are a suite of benchmarks: the suite model is fitted "
                        "and the report opens with the overall leaderboard (docs/suite.md)")
    p.add_argument("--model", default=None,
                   help="bayes, rasch, 2pl, 3pl, bradley_terry, davidson, davidson_luce, or "
                   "closed_form (Bayes@N normal approximation: no MCMC, seconds); default: "
                   "the beta-binomial 2PL (binomial with one trial per cell; bayes for "
                   "categories), chosen by posterior-predictive checks and PSIS-LOO on real "
                   "benchmarks (docs/report.md). A suite: rasch (default) or 2pl")
    p.add_argument("--sampler", default=None, help="numpyro, nutpie or pymc (default: per model)")
    p.add_argument("--baselines", default=None,
                   help="comma-separated deterministic methods to show beside the posterior "
                   "(default: avg,bradley_terry,elo_tie_draw; one benchmark only)")
    p.add_argument("--draws", type=_int_at_least(1), default=None,
                   help="kept draws per chain (default: 1000, more for models with hundreds "
                   "or thousands of parameters, so chance alone does not fail R-hat)")
    p.add_argument("--tune", type=_int_at_least(0), default=None,
                   help="warm-up iterations per chain (default: 500 with nutpie, 1000 with "
                   "PyMC or NumPyro)")
    p.add_argument("--chains", type=_int_at_least(1), default=4)
    p.add_argument("--seed", type=_int_at_least(0), default=0)
    p.add_argument("--posterior", metavar="FILE", default=None,
                   help="render a posterior saved with --save-posterior or post.save() "
                   "instead of fitting")
    p.add_argument("--save-posterior", metavar="FILE", default=None,
                   help="also save the fitted posterior (.nc or .zarr) for later use")
    p.add_argument("-o", "--output", default="report.html")
    _add_common_arguments(p)
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
    _add_common_arguments(p, quiet=False)
    p.set_defaults(func=_cmd_study)
    p = adaptive.add_cli(sub)
    _add_common_arguments(p, quiet=False)
    return parser


def _cli_message(exc: BaseException) -> str:
    """The error in command-line terms (errors may carry their own ``cli_message``)."""
    text = getattr(exc, "cli_message", None) or str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename else ""
        text = f"{exc.strerror}{where}"
    return _one_line(text.strip("'\""))


def _quiet_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so the exit flush stays silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def run(args: argparse.Namespace) -> int:
    """Run the parsed command, turning every error into one line and an exit status."""
    from bayesrank.errors import BayesrankError, UnknownMethodError

    try:
        if args.command == "plan":  # bayesrank.adaptive's command: check its paths here too
            check_input_file(args.data)
            check_output_file(args.output)
        return int(args.func(args))
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:
        _quiet_stdout()
        return 141
    except (UsageError, UnknownMethodError) as exc:
        print(f"bayesrank: error: {_cli_message(exc)}", file=sys.stderr)
        return 2
    except (BayesrankError, OSError, ValueError) as exc:
        print(f"bayesrank: error: {_cli_message(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug: still one line, with the way to the details
        print(f"bayesrank: error: {type(exc).__name__}: {_cli_message(exc)} "
              "(rerun with --debug for the traceback, and please report it)", file=sys.stderr)
        return 1


def _interrupted() -> int:
    """One line for Ctrl-C (status 130) or SIGTERM (143, 128 + the signal's number)."""
    from bayesrank.data.interrupts import last_signal

    if last_signal() == signal.SIGTERM:
        print("\nbayesrank: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    print("\nbayesrank: interrupted", file=sys.stderr)
    return 130


def main(argv: Sequence[str] | None = None) -> int:
    from bayesrank.data.interrupts import sigterm_as_interrupt

    # SIGTERM unwinds like Ctrl-C: no file is left half-written
    with sigterm_as_interrupt(ctrl_c=True):
        try:
            args = build_parser().parse_args(argv)
        except KeyboardInterrupt:  # Ctrl-C while the heavy modules load
            return _interrupted()
        with _cli_warnings():
            if getattr(args, "debug", False):
                return int(args.func(args))
            return run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
