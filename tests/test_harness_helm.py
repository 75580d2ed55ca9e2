"""HELM run directories read back.

HELM (crfm-helm) needs model weights or API keys to run, so these runs are
written here, field by field as crfm-helm 0.5.16 serialises them
(``helm/benchmark/runner.py``: ``run_spec.json`` from ``RunSpec``,
``per_instance_stats.json`` a list of ``PerInstanceStats`` ``{instance_id,
train_trial_index, stats: [Stat {name: MetricName {name, split}, count, sum,
sum_squared, min, max, mean, variance, stddev}]}`` via ``asdict_without_nones``,
so absent fields are left out, as HELM leaves them).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import bayesrank as br
from bayesrank.errors import DataError

MODELS = ("openai/gpt2", "meta/llama-7b")
RUNS = {"mmlu:subject=anatomy,method=multiple_choice_joint": "mmlu",
        "boolq": "boolq"}
INSTANCES = ("id12", "id7", "id31")
TRIALS = 2


def outcome(run: str, model: str, instance: int, trial: int) -> int:
    return (len(run) + len(model) * instance + trial) % 2


def _stat(name: str, value: float, split: str = "test") -> dict:
    return {"name": {"name": name, "split": split}, "count": 1, "sum": value,
            "sum_squared": value * value, "min": value, "max": value, "mean": value,
            "variance": 0.0, "stddev": 0.0}


def _write_run(suite: Path, run: str, model: str) -> Path:
    scenario, _, args = run.partition(":")
    name = f"{scenario}:{args + ',' if args else ''}model={model.replace('/', '_')}"
    folder = suite / name.replace("/", "_")
    folder.mkdir(parents=True)
    spec = {"name": name,
            "scenario_spec": {"class_name": f"helm.benchmark.scenarios.{scenario}", "args": {}},
            "adapter_spec": {"method": "generation", "model_deployment": model, "model": model,
                             "max_train_instances": 5, "num_train_trials": TRIALS},
            "metric_specs": [{"class_name": "helm.benchmark.metrics.basic_metrics.BasicMetric",
                              "args": {"names": ["exact_match", "quasi_exact_match"]}}],
            "groups": [scenario]}
    entries = []
    for trial in range(TRIALS):
        for i, instance in enumerate(INSTANCES):
            y = outcome(run, model, i, trial)
            entries.append({"instance_id": instance, "train_trial_index": trial, "stats": [
                _stat("exact_match", float(y)), _stat("quasi_exact_match", 1.0),
                _stat("num_output_tokens", 17.0), _stat("inference_runtime", 0.42)]})
    entries.append({"instance_id": INSTANCES[0], "train_trial_index": 0,
                    "perturbation": {"name": "typos", "robustness": True, "fairness": False,
                                     "computed_on": "perturbed", "prob": 0.1},
                    "stats": [_stat("exact_match", 0.5)]})
    (folder / "run_spec.json").write_text(json.dumps(spec, indent=2))
    (folder / "per_instance_stats.json").write_text(json.dumps(entries, indent=2))
    (folder / "stats.json").write_text("[]")
    return folder


@pytest.fixture
def suite(tmp_path) -> Path:
    root = tmp_path / "benchmark_output" / "runs" / "v1"
    for run in RUNS:
        for model in MODELS:
            _write_run(root, run, model)
    return tmp_path / "benchmark_output"


def test_suite_gives_one_benchmark_per_scenario_trials_from_train_trial_index(suite):
    tasks = br.load_benchmarks(suite, metric="exact_match")
    assert sorted(tasks) == sorted(RUNS)
    for run, data in tasks.items():
        assert data.shape == (2, 3, TRIALS) and data.mask is None and data.is_binary
        want = np.array([[[outcome(run, m, i, t) for t in range(TRIALS)]
                          for i in range(len(INSTANCES))] for m in MODELS])
        li = [data.models.index(m) for m in MODELS]
        qi = [data.questions.index(q) for q in INSTANCES]
        np.testing.assert_array_equal(data.R[np.ix_(li, qi)], want)


def test_one_run_and_its_stats_file(suite):
    run = next(suite.rglob("boolq:model=openai_gpt2"))
    data = br.load(run, metric="exact_match")
    assert data.models == ("openai/gpt2",)
    assert br.load(run / "per_instance_stats.json", metric="exact_match") == data


def test_metric_is_required_and_the_error_lists_the_0_1_stats(suite):
    run = next(suite.rglob("boolq:model=openai_gpt2"))
    with pytest.raises(DataError, match=r"\['exact_match', 'quasi_exact_match'\]") as exc:
        br.load(run)
    assert "\n" not in str(exc.value) and "metric=" in str(exc.value)
    with pytest.raises(DataError, match="score 17.0 .*0/1 stat"):
        br.load(run, metric="num_output_tokens")


def test_instance_without_the_stat(suite):
    run = next(suite.rglob("boolq:model=openai_gpt2"))
    path = run / "per_instance_stats.json"
    entries = json.loads(path.read_text())
    entries[1]["stats"] = entries[1]["stats"][1:]
    path.write_text(json.dumps(entries))
    with pytest.raises(DataError, match=r"instance 'id7' \(trial 0\) has 0 'exact_match' stats"):
        br.load(run, metric="exact_match")


def test_duplicate_instance(suite):
    run = next(suite.rglob("boolq:model=openai_gpt2"))
    path = run / "per_instance_stats.json"
    entries = json.loads(path.read_text())
    path.write_text(json.dumps([*entries, entries[0]]))
    with pytest.raises(DataError, match="again"):
        br.load(run, metric="exact_match")
