"""lm-evaluation-harness ``--log_samples`` output read back.

The files under ``tests/data/harness/lm_eval`` were written by lm-eval 0.4.13
itself (``lm_eval --model dummy --model_args pretrained=dummy-a|dummy-b --tasks
toy_mc,toy_norm --include_path tests/data/harness/lm_eval --log_samples``, the
two task YAMLs and ``toy.jsonl`` beside them, whose ``data_files`` then pointed at
a copy in /tmp; the dummy model answers at random).  The oracle is lm-eval's
own aggregate in each ``results_*.json``: bayesrank's per-document outcomes must
average to it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import bayesrank as br
from bayesrank.cli import main
from bayesrank.errors import DataError, LoadError

HERE = Path(__file__).parent / "data" / "harness" / "lm_eval"
MODELS = ("dummy-a", "dummy-b")


def _results(model: str) -> dict:
    return json.loads(next((HERE / model).glob("results_*.json")).read_text())["results"]


def _samples(model: str, task: str) -> Path:
    return next((HERE / model).glob(f"samples_{task}_*.jsonl"))


def test_folder_gives_each_task_whose_accuracy_is_lm_evals_own():
    tasks = br.load_benchmarks(HERE, metric="acc")
    assert sorted(tasks) == ["toy_mc", "toy_norm"]
    for task, data in tasks.items():
        assert data.N == 1 and data.is_binary and data.mask is None
        assert data.questions == tuple(str(i) for i in range(6))
        assert sorted(data.models) == list(MODELS)
        for li, model in enumerate(data.models):
            published = _results(model)[task]["acc,none"]
            assert data.R[li].mean() == pytest.approx(published, abs=1e-12)


@pytest.mark.parametrize("model", MODELS)
def test_a_second_metric_of_one_task(model):
    data = br.load(_samples(model, "toy_norm"), metric="acc_norm")
    published = _results(model)["toy_norm"]["acc_norm,none"]
    assert data.R.mean() == pytest.approx(published, abs=1e-12)
    with pytest.raises(DataError, match=r"no single metric 'acc_norm'; its metrics: \['acc,"):
        br.load_benchmarks(HERE, metric="acc_norm")


def test_one_file_names_its_model_from_the_results_file():
    data = br.load(_samples("dummy-b", "toy_mc"))
    assert data.models == ("dummy-b",)
    assert data.R.mean() == pytest.approx(_results("dummy-b")["toy_mc"]["acc,none"])


def test_several_metrics_need_metric_and_cli_passes_it(capsys):
    path = _samples("dummy-a", "toy_norm")
    with pytest.raises(DataError, match=r"several metrics \['acc,none', 'acc_norm,none'\]"):
        br.load(path)
    assert br.load(path, metric="acc_norm,none") == br.load(path, metric="acc_norm")
    assert main(["rank", str(HERE), "--key", "toy_mc", "--metric", "acc", "--method",
                 "avg"]) == 0
    out = capsys.readouterr().out
    assert "dummy-a" in out and "dummy-b" in out


def _copy(tmp_path: Path, model: str = "dummy-a") -> Path:
    folder = tmp_path / model
    shutil.copytree(HERE / model, folder)
    return folder


def test_samples_without_their_results_file(tmp_path):
    folder = _copy(tmp_path)
    for results in folder.glob("results_*.json"):
        results.unlink()
    path = next(folder.glob("samples_toy_mc_*"))
    with pytest.raises(LoadError, match=r"no results_.*\.json beside it") as exc:
        br.load(path)
    assert "\n" not in str(exc.value)


def test_unknown_score_value_names_the_line(tmp_path):
    path = next(_copy(tmp_path).glob("samples_toy_mc_*"))
    lines = path.read_text().splitlines()
    row = json.loads(lines[3])
    row["acc"] = 0.5
    lines[3] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=rf"line 4 of {path}: score 0.5 .*metric="):
        br.load(path)


def test_truncated_file(tmp_path):
    path = next(_copy(tmp_path).glob("samples_toy_mc_*"))
    path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(LoadError, match=rf"line 6 of {path} is not JSON"):
        br.load(path)


def test_duplicate_documents(tmp_path):
    path = next(_copy(tmp_path).glob("samples_toy_mc_*"))
    first = path.read_text().splitlines()[0]
    with open(path, "a") as fh:
        fh.write(first + "\n")
    with pytest.raises(DataError, match=r"line 7 of .* again, as line 1 of"):
        br.load(path)


def test_the_same_model_run_twice(tmp_path):
    _copy(tmp_path / "run1")
    _copy(tmp_path / "run2")
    with pytest.raises(DataError, match="keep one run per model and task"):
        br.load_benchmarks(tmp_path, metric="acc")


def test_a_long_table_jsonl_is_still_a_long_table(tmp_path):
    table = tmp_path / "long.jsonl"
    rows = [{"model": m, "question": q, "trial": 0, "outcome": int(m == "a")}
            for m in "ab" for q in "xy"]
    table.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    data = br.load(table)
    np.testing.assert_array_equal(data.R[:, :, 0], [[1, 1], [0, 0]])
