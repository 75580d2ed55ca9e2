"""Oracle for refactoring the model layer: the models built now are the models at a git ref.

A refactor of a model module (issue 46: one short function per variant) must leave every
model exactly as it was.  For each configuration (a registry name, each option it accepts,
fixture-sized and small real data sets, ``fast`` on and off) this script builds the model
with the package at ``--ref`` (default ``main``, in a child process, :mod:`git_tree`) and
with the current checkout, and asserts that the two agree in

* the free variables (names, order, value transforms, value shapes and dtypes, dims), the
  deterministics, observed variables and potentials (names, dims, Op), the value variables;
* every ``pm.Data`` (name, dims, dtype and value) and the coords;
* the initial point, the log-density and its gradient, and the deterministics at three
  random points of the sampled (transformed) space, bit for bit;
* the printed graphs of the log-density and its gradient (before rewrites);
* a few prior and prior-predictive draws from one seed (the random methods);
* the error raised (type and message) where a configuration is refused.

Each model's default options are checked with ``fast`` on and off, the other options
with ``fast`` on (the switch swaps likelihood kernels, not the model's variables).

Graphs run with PyTensor's Python linker (no C or Numba compilation) and its full
rewrites; two graphs that print the same run to the same bits under any one linker.  It
covers the registry's Bayes@N, Bradley-Terry, Davidson and Davidson-Luce models (the IRT
models' refactor was checked the same way before this script existed).  Usage::

    .venv/bin/python benchmarks/same_models.py [--ref main] [--models bayes davidson ...]
                                               [--only "aime2025_I | default"]

Exit status 1 and the differing items when anything differs.  It takes minutes, not
seconds (PyMC's rewrites of every graph, twice): 4-7 minutes per model family on a shared
2-core machine (2026-12-05), which is why it is a script and not a test.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = ROOT.parent / "shared" / "data"


# -- data sets: fixtures as the models' tests build them, and small real sets --------------

def _fixtures() -> dict[str, Callable]:
    from bayesrank import ResponseData

    def binary():
        rng = np.random.default_rng(3)
        return ResponseData((rng.random((5, 9, 3)) < rng.random((5, 1, 1))).astype(int))

    def masked():
        rng = np.random.default_rng(7)
        R = (rng.random((6, 8, 4)) < rng.random((6, 1, 1))).astype(int)
        return ResponseData(R, mask=rng.random(R.shape) > 0.25)

    def two_models():
        return ResponseData(np.array([[[1, 0, 1]], [[0, 1, 0]]]))

    def all_solved():
        return ResponseData(np.ones((3, 2, 2), dtype=int))

    def categorical():
        return ResponseData(np.random.default_rng(1).integers(0, 3, (3, 4, 5)), n_categories=3)

    def binary_r0(kind: str):
        def make():
            rng = np.random.default_rng(0)
            p = rng.beta(1.0, 1.0, (4, 6))
            R = (rng.random((4, 6, 10)) < p[..., None]).astype(int)
            R0 = ((rng.random((4, 6, 2)) < p[..., None]).astype(int) if kind == "per_model"
                  else rng.integers(0, 2, (6, 1)))
            return ResponseData(R, R0=R0)
        return make

    def categorical_r0():
        rng = np.random.default_rng(1)
        R = rng.integers(0, 3, (3, 5, 8))
        mask = rng.random(R.shape) > 0.2
        return ResponseData(R, R0=rng.integers(0, 3, (5, 2)), mask=mask,
                            weights=[0.0, 0.3, 1.0])

    def battles():
        from bayesrank.data.pairwise import PairwiseData

        rng = np.random.default_rng(11)
        wins, ties = rng.integers(0, 9, (5, 5)), rng.integers(0, 3, (5, 5))
        np.fill_diagonal(wins, 0)
        ties = np.triu(ties, 1) + np.triu(ties, 1).T
        return PairwiseData(wins, ties, models=[f"m{i}" for i in range(5)])

    return {"battles_5": battles, "binary_5x9x3": binary, "masked_6x8x4": masked,
            "two_models": two_models, "all_solved": all_solved, "categorical_3x4x5": categorical,
            "r0_per_model_4x6x10": binary_r0("per_model"), "r0_shared_4x6x10": binary_r0("shared"),
            "categorical_r0_3x5x8": categorical_r0}


def _real() -> dict[str, Callable]:
    import json

    from bayesrank import ResponseData

    if not DATA.is_dir():
        print(f"(real sets skipped: {DATA} is absent)")
        return {}

    def npz(folder: str, key: str):
        def make():
            z = np.load(DATA / folder / "R.npz")
            return ResponseData(z[key], models=list(z["models"]), questions=list(z["questions"]))
        return make

    def aime():
        with open(DATA / "matharena_aime2025_I" / "counts_correct_of_4.csv", newline="") as fh:
            rows = list(csv.reader(fh))
        counts = np.array([[int(x) for x in row[1:]] for row in rows[1:]])
        return ResponseData((np.arange(4) < counts[..., None]).astype(np.int8),
                            models=[row[0] for row in rows[1:]], questions=rows[0][1:])

    def worked_example():
        ex = json.loads((DATA / "bayes_at_n_worked_example"
                         / "bayes_at_n_readme_example.json").read_text())
        return ResponseData(np.asarray(ex["R_outcomes_M_by_N"])[None],
                            R0=np.asarray(ex["R0_prior_outcomes_M_by_D"]),
                            weights=ex["category_weights_w"])

    return {"aime2025_I": aime, "lcb_repair": npz("real_lcb_repair_2024_10", "repair"),
            "zeroeval_math_l5": npz("real_zeroeval_math_l5", "math_l5"),
            "bayes_worked_example": worked_example}


# -- configurations: (registry name, data set, label, options of the data) ------------------

def _largest_tie(d) -> int:
    return int(d.reductions.setwise.winners.sum(axis=1).max())


def _options() -> dict[str, list[tuple[str, Callable]]]:
    const = lambda **o: lambda d: o  # noqa: E731
    return {
        "davidson_luce": [
            ("default", const()),
            ("max_tie_order=largest", lambda d: {"max_tie_order": _largest_tie(d)}),
            ("max_tie_order=largest-1", lambda d: {"max_tie_order": _largest_tie(d) - 1}),
            ("scale=2.5", const(scale=2.5)),
            ("hierarchical", const(hierarchical=True)),
            ("hierarchical,scale=0.5,D", lambda d: {"hierarchical": True, "scale": 0.5,
                                                     "max_tie_order": _largest_tie(d)}),
            ("scale=-1", const(scale=-1.0)),
        ],
        "bradley_terry": [
            ("default", const()),
            ("ties=davidson", const(ties="davidson")),
            ("scale=2", const(scale=2.0)),
            ("hierarchical", const(hierarchical=True)),
            ("ties=davidson,hierarchical,scale=0.7",
             const(ties="davidson", hierarchical=True, scale=0.7)),
            ("ties=bogus", const(ties="bogus")),
            ("scale=0", const(scale=0.0)),
        ],
        "davidson": [
            ("default", const()),
            ("ties=None", const(ties=None)),
            ("hierarchical,scale=0.7", const(hierarchical=True, scale=0.7)),
            ("scale=3", const(scale=3.0)),
        ],
        "bayes": [
            ("default", const()),
            ("R0=data", const(R0="data")),
            ("R0=shared array", lambda d: {"R0": np.arange(d.M * 2).reshape(d.M, 2) % 2}),
            ("R0=per-model array",
             lambda d: {"R0": np.arange(d.L * d.M * 3).reshape(d.L, d.M, 3) % 2}),
            ("weights", lambda d: {"weights": np.linspace(0.0, 1.0, d.n_categories) ** 2}),
            ("R0=data,weights", lambda d: {"R0": "data",
                                           "weights": np.linspace(1.0, 0.0, d.n_categories)}),
            ("R0=wrong shape", const(R0=np.zeros((2, 2, 2, 2)))),
            ("weights=wrong size", const(weights=[0.0, 0.5, 0.7, 1.0, 2.0])),
        ],
    }


#: Which data sets each model is checked on (the real ones where present).
DATASETS = {
    "davidson_luce": ["binary_5x9x3", "masked_6x8x4", "two_models", "all_solved",
                      "categorical_3x4x5", "aime2025_I", "lcb_repair"],
    "bradley_terry": ["binary_5x9x3", "masked_6x8x4", "two_models", "categorical_3x4x5",
                      "battles_5", "aime2025_I", "lcb_repair"],
    "davidson": ["binary_5x9x3", "masked_6x8x4", "categorical_3x4x5", "battles_5",
                 "aime2025_I"],
    "bayes": ["binary_5x9x3", "r0_per_model_4x6x10", "r0_shared_4x6x10", "categorical_r0_3x5x8",
              "masked_6x8x4", "aime2025_I", "bayes_worked_example"],
}


# -- the fingerprint of one model ----------------------------------------------------------

def _mode():
    from pytensor.compile.mode import Mode

    return Mode(linker="py", optimizer="fast_run").excluding("fusion")


def _printed(graph) -> str:
    import pytensor

    return pytensor.dprint(graph, file="str", print_type=True)


def fingerprint(model, seed: int) -> dict[str, np.ndarray]:
    """Everything the oracle compares of ``model``, as named arrays (strings for the rest)."""
    import pymc as pm
    import pytensor

    out: dict[str, np.ndarray] = {}
    dims = model.named_vars_to_dims
    transforms = model.rvs_to_transforms
    out["free"] = np.array([
        f"{rv.name} {type(transforms[rv]).__name__ if transforms[rv] else None} "
        f"{dims.get(rv.name)} {rv.type}" for rv in model.free_RVs])
    out["value_vars"] = np.array([f"{v.name} {v.type}" for v in model.value_vars])
    out["deterministics"] = np.array([f"{v.name} {dims.get(v.name)} {v.type}"
                                      for v in model.deterministics] or [""])
    out["observed"] = np.array([f"{v.name} {dims.get(v.name)} {type(v.owner.op).__name__}"
                                for v in model.observed_RVs])
    out["potentials"] = np.array([v.name for v in model.potentials] or [""])
    out["data_vars"] = np.array([f"{v.name} {dims.get(v.name)} {v.type}"
                                 for v in model.data_vars] or [""])
    for v in model.data_vars:
        out[f"data/{v.name}"] = np.asarray(v.get_value())
    for v in model.observed_RVs:
        out[f"observed_value/{v.name}"] = np.asarray(model.rvs_to_values[v].eval())
    out["coords"] = np.array(repr({k: tuple(map(str, v)) if v is not None else None
                                   for k, v in model.coords.items()}))
    out["attributes"] = np.array(sorted(vars(model)))
    ip = model.initial_point(seed)
    for name, value in ip.items():
        out[f"initial/{name}"] = np.asarray(value)
    logp, dlogp = model.logp(), model.dlogp()
    out["graph/logp"] = np.array(_printed(logp))
    out["graph/dlogp"] = np.array(_printed(dlogp))
    inputs = model.value_vars
    dets = model.replace_rvs_by_values(model.deterministics)
    mode = _mode()
    f = pytensor.function(inputs, [logp, dlogp, *dets], mode=mode, on_unused_input="ignore")
    rng = np.random.default_rng(seed)
    for p in range(3):
        point = [np.asarray(ip[v.name] + rng.normal(0.0, 0.5, np.shape(ip[v.name])),
                            dtype=v.dtype) for v in inputs]
        values = f(*point)
        out[f"point{p}/logp"] = np.asarray(values[0])
        out[f"point{p}/dlogp"] = np.asarray(values[1])
        for det, value in zip(model.deterministics, values[2:], strict=True):
            out[f"point{p}/{det.name}"] = np.asarray(value)
    prior = pm.sample_prior_predictive(draws=3, model=model, random_seed=seed,
                                       compile_kwargs={"mode": mode})
    for group in ("prior", "prior_predictive"):
        for name, var in prior[group].data_vars.items():
            out[f"{group}/{name}"] = np.asarray(var.values)
    return out


def run_all(models: list[str], only: str | None = None,
            verbose: bool = False) -> dict[str, dict[str, np.ndarray]]:
    """The fingerprints of every configuration, keyed ``model | data | options | fast``."""
    import logging
    import warnings

    import bayesrank.models as registry

    warnings.filterwarnings("ignore")
    logging.getLogger("pymc").setLevel(logging.ERROR)
    makers = {**_fixtures(), **_real()}
    options = _options()
    results = {}
    for model in models:
        for data_name in DATASETS[model]:
            if data_name not in makers:
                continue
            data = makers[data_name]()
            for number, (label, opts) in enumerate(options[model]):
                for fast in (True, False)[:2 if number == 0 else 1]:
                    key = f"{model} | {data_name} | {label} | fast={fast}"
                    if only and only not in key:
                        continue
                    seed = sum(map(ord, key)) % 1000
                    start = time.perf_counter()
                    try:
                        built = registry.build(model, data, fast=fast, **opts(data))
                    except Exception as error:  # the refusal itself is compared
                        results[key] = {"error": np.array(f"{type(error).__name__}: {error}")}
                        continue
                    results[key] = fingerprint(built, seed)
                    if verbose:
                        print(f"  {key}: {time.perf_counter() - start:.1f} s", flush=True)
    return results


def _save(results: dict[str, dict[str, np.ndarray]], path: Path) -> None:
    np.savez(path, **{f"{key} :: {item}": value for key, items in results.items()
                      for item, value in items.items()})


def _load(path: Path) -> dict[str, dict[str, np.ndarray]]:
    results: dict[str, dict[str, np.ndarray]] = {}
    with np.load(path, allow_pickle=False) as z:
        for name in z.files:
            key, item = name.split(" :: ", 1)
            results.setdefault(key, {})[item] = z[name]
    return results


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit: dtype, shape and bytes (NaNs included)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return a.tobytes() == b.tobytes()
    return bool(np.array_equal(a, b))


def _first_difference(before: np.ndarray, now: np.ndarray) -> str:
    """The first differing line of two texts, or where two arrays differ."""
    if before.dtype.kind != "U" or now.dtype.kind != "U":
        if before.shape != now.shape or before.dtype != now.dtype:
            return f"{before.dtype}{before.shape} != {now.dtype}{now.shape}"
        return f"{int((before != now).sum())} of {before.size} values differ"
    lines = zip(str(before).splitlines(), str(now).splitlines(), strict=False)
    for number, (b, n) in enumerate(lines):
        if b != n:
            return f"line {number}: {b.strip()!r} != {n.strip()!r}"
    return "one text is longer"


def compare(before: dict, now: dict) -> list[str]:
    """The differences, one line each (nothing: the same models)."""
    problems = []
    for key in sorted(set(before) | set(now)):
        if key not in before or key not in now:
            problems.append(f"{key}: only {'now' if key in now else 'before'}")
            continue
        b, n = before[key], now[key]
        for item in sorted(set(b) | set(n)):
            if item not in b or item not in n:
                problems.append(f"{key}: {item} only {'now' if item in n else 'before'}")
            elif not _same(b[item], n[item]):
                shown = _first_difference(b[item], n[item])
                problems.append(f"{key}: {item}: {shown}")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="git ref of the models to match")
    parser.add_argument("--models", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--only", help="only configurations whose key contains this")
    parser.add_argument("--_child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._child:
        import bayesrank.models

        print(f"(the models at {args.ref}: {Path(bayesrank.models.__file__).parent})")
        _save(run_all(args.models, args.only, verbose=True), Path(args._child))
        return
    from git_tree import extract_package

    with tempfile.TemporaryDirectory() as tmp:
        package = extract_package(args.ref, Path(tmp) / "ref")
        env = {**os.environ, "PYTHONPATH": str(package)}
        out = Path(tmp) / "ref.npz"
        command = [sys.executable, __file__, "--models", *args.models, "--_child", str(out)]
        child = subprocess.Popen(command + (["--only", args.only] if args.only else []),
                                 env=env, cwd=tmp)
        now = run_all(args.models, args.only)  # meanwhile
        if child.wait() != 0:
            sys.exit(f"the models at {args.ref} failed to build")
        before = _load(out)
    problems = compare(before, now)
    built = sum("error" not in items for items in now.values())
    print(f"{len(now)} configurations ({built} built, {len(now) - built} refused), "
          f"against {args.ref}: {'the same' if not problems else f'{len(problems)} differences'}")
    for line in problems:
        print("  " + line)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
