"""OpenAI evals JSON Lines logs read back.

``evals`` needs an API (or its own registry data) to run, so the logs are
written here line by line as evals 3.0.1.post1's ``LocalRecorder`` writes them
(``evals/record.py``: a ``{"spec": RunSpec}`` line, ``Event`` lines ``{run_id,
event_id, sample_id, type, data, created_by, created_at}`` with
``record_match``'s ``data = {correct, expected, picked}``, then
``{"final_report": ..., "run_id"}``; ``evals/elsuite/basic/match.py`` reports
``accuracy``, the mean of ``correct``, the oracle here).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import bayesrank as br
from bayesrank.errors import DataError

SAMPLES = [f"test-match.s1.{i}" for i in range(5)]


def _log(path: Path, model: str, correct: list[bool], *, fns: list[str] | None = None,
         final: bool = True, eval_name: str = "test-match.s1.simple-v0") -> Path:
    run_id = "2412051200ABCDEFGH"
    spec = {"completion_fns": fns or [model], "eval_name": eval_name,
            "base_eval": eval_name.split(".")[0], "split": "s1",
            "run_config": {"completion_fns": fns or [model], "eval_spec": {}, "seed": 20220722,
                           "max_samples": None, "command": "oaieval", "initial_settings": {}},
            "created_by": "", "run_id": run_id, "created_at": "2024-12-05 12:00:00.000000"}
    lines = [{"spec": spec}]
    event_id = 0
    for sample, ok in zip(SAMPLES, correct, strict=True):
        for kind, data in (("sampling", {"prompt": [{"role": "user", "content": "?"}],
                                         "sampled": ["x"]}),
                           ("match", {"correct": ok, "expected": "x", "picked": "x" if ok
                                      else None})):
            lines.append({"run_id": run_id, "event_id": event_id, "sample_id": sample,
                          "type": kind, "data": data, "created_by": "",
                          "created_at": "2024-12-05 12:00:01.000000+00:00"})
            event_id += 1
    if final:
        lines.append({"final_report": {"accuracy": float(np.mean(correct))}, "run_id": run_id})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


CORRECT = {"gpt-4o-mini": [True, False, True, True, False], "gpt-4o": [True] * 4 + [False]}


@pytest.fixture
def folder(tmp_path) -> Path:
    for model, correct in CORRECT.items():
        _log(tmp_path / f"{model}.jsonl", model, correct)
    return tmp_path


def test_folder_of_logs_reproduces_each_final_report(folder):
    data = br.load(folder)
    assert sorted(data.models) == sorted(CORRECT) and data.questions == tuple(SAMPLES)
    for model, correct in CORRECT.items():
        report = json.loads((folder / f"{model}.jsonl").read_text().splitlines()[-1])
        row = data.R[data.models.index(model), :, 0]
        np.testing.assert_array_equal(row, correct)
        assert row.mean() == report["final_report"]["accuracy"]
    assert list(br.load_benchmarks(folder)) == ["test-match.s1.simple-v0"]


def test_several_completion_functions_in_one_log(tmp_path):
    path = _log(tmp_path / "mixed.jsonl", "a", [True] * 5, fns=["gpt-4o", "gpt-4o-mini"])
    with pytest.raises(DataError, match=r"2 completion functions .*one completion function"):
        br.load(path)


def test_unfinished_run(tmp_path):
    path = _log(tmp_path / "cut.jsonl", "gpt-4o", [True] * 5, final=False)
    with pytest.raises(DataError, match="no final_report"):
        br.load(path)


def test_duplicate_sample_and_unknown_value(tmp_path):
    path = _log(tmp_path / "dup.jsonl", "gpt-4o", [True] * 5)
    lines = path.read_text().splitlines()
    lines.insert(3, lines[2])  # the first match event twice
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"line 4 of .* again, as line 3 of"):
        br.load(path)
    del lines[3]
    event = json.loads(lines[2])
    event["data"]["correct"] = "yes"
    lines[2] = json.dumps(event)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"line 3 of .*: score 'yes'"):
        br.load(path)
