"""HELM run directories: ``per_instance_stats.json`` beside ``run_spec.json``.

A run (``benchmark_output/runs/{suite}/{run name}/``) is one scenario run by one
model: ``run_spec.json`` names the model (``adapter_spec.model``) and the run
(``name``, e.g. ``mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2``);
``per_instance_stats.json`` lists, per instance and ``train_trial_index`` (HELM's
repeats with other in-context examples: the trials), ``stats: [{name: {name,
split, ...}, count, sum, mean, ...}]``.  The benchmark is the run name less its
``model=`` argument, so the same scenario run by several models lines up; the
outcome is the chosen stat's ``mean`` (``metric=``, e.g. ``exact_match``),
which must be 0 or 1.  Perturbed copies of an instance (robustness and fairness
runs, ``perturbation`` set) are not questions of their own and are left out;
a run holding only those is an error.  A folder is every run under it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from bayesrank.data.harness.common import Trial, read_json
from bayesrank.errors import DataError, LoadError

__all__ = ["FIX", "sniff", "trials"]

FIX = "choose a 0/1 stat (exact_match, quasi_exact_match, ...) with metric="
STATS = "per_instance_stats.json"
_MODEL_ARG = re.compile(r"(^|,)model(_deployment)?=[^,]*")


def _runs(path: Path) -> list[Path]:
    if path.is_file():
        return [path.parent] if path.name == STATS else []
    return sorted(p.parent for p in path.rglob(STATS) if (p.parent / "run_spec.json").exists())


def sniff(path: Path) -> bool:
    """A run folder, its ``per_instance_stats.json``, or a folder of runs."""
    return bool(_runs(path))


def _benchmark(name: str) -> str:
    scenario, _, args = name.partition(":")
    rest = _MODEL_ARG.sub("", args).strip(",")
    return f"{scenario}:{rest}" if rest else scenario


def _binary_stats(entries: list[dict]) -> list[str]:
    """Stat names whose every mean is 0 or 1 (the candidates for ``metric=``)."""
    seen: dict[str, bool] = {}
    for entry in entries:
        for stat in entry.get("stats") or []:
            name = stat["name"]["name"]
            seen[name] = seen.get(name, True) and stat.get("mean") in (0, 1)
    return sorted(n for n, ok in seen.items() if ok)


def trials(path: Path, metric: str | None = None) -> Iterator[Trial]:
    """Each unperturbed instance's stat ``metric`` per trial, one :class:`Trial` each."""
    for run in _runs(path):
        spec = read_json(run / "run_spec.json", "a HELM run_spec.json")
        stats_file = run / STATS
        entries = read_json(stats_file, "HELM per-instance stats")
        try:
            model, benchmark = spec["adapter_spec"]["model"], _benchmark(spec["name"])
        except (KeyError, TypeError):
            raise LoadError(f"{run / 'run_spec.json'} lacks name or adapter_spec.model; not "
                            "a HELM run spec") from None
        if not isinstance(entries, list):
            raise LoadError(f"{stats_file} is not a list of per-instance stats")
        plain = [e for e in entries if not e.get("perturbation")]
        if not plain:
            raise DataError(f"{stats_file} holds no unperturbed instance")
        if metric is None:
            raise DataError(f"{stats_file} has many stats; choose one with metric= (--metric); "
                            f"those that are 0/1 on every instance: {_binary_stats(plain)}")
        for entry in plain:
            where = f"{stats_file} instance {entry.get('instance_id')!r}"
            found = [s for s in entry.get("stats") or [] if s["name"]["name"] == metric
                     and not s["name"].get("perturbation")]
            if len(found) != 1:
                raise DataError(f"{where} (trial {entry.get('train_trial_index')}) has "
                                f"{len(found)} {metric!r} stats, not one; its 0/1 stats: "
                                f"{_binary_stats([entry])}")
            yield Trial(benchmark, str(model), str(entry["instance_id"]),
                        int(entry.get("train_trial_index", 0)), found[0].get("mean"), where)
