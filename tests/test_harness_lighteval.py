"""lighteval details parquet files read back.

lighteval needs a model to run, so its details files are written here as
lighteval 0.13.0 writes them (``logging/evaluation_tracker.py``: one row per
``Detail`` ``{doc, model_response, metric}`` as nested columns, sorted, under
``OUTPUT/details/{model_name}/{date}/details_{task}_{date}.parquet``; ``doc.id``
the document's index, ``tasks/lighteval_task.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayesrank as br
from bayesrank.errors import DataError, LoadError

DATE = "2025-06-01T10-00-00.000000"
TASK = "lighteval|gsm8k|0"
MODELS = ("HuggingFaceTB/SmolLM2-135M", "openai/gpt-4o-mini")


def correct(model: str, doc: int) -> int:
    return (doc * len(model)) % 3 == 0


def _write(root: Path, model: str, docs: int = 4, metric: dict | None = None) -> Path:
    folder = root / "details" / model / DATE
    folder.mkdir(parents=True)
    rows = [{"doc": {"query": f"Question {i}?", "choices": [str(i)], "gold_index": 0,
                     "id": str(i), "task_name": TASK},
             "metric": metric or {"extractive_match": float(correct(model, i))},
             "model_response": {"text": [str(i)], "input_tokens": [], "output_tokens": []}}
            for i in range(docs)]
    path = folder / f"details_{TASK}_{DATE}.parquet"
    pd.DataFrame(rows)[["doc", "metric", "model_response"]].to_parquet(path)
    return path


@pytest.fixture
def output(tmp_path) -> Path:
    for model in MODELS:
        _write(tmp_path, model)
    return tmp_path


def test_output_folder_gives_the_task_with_models_from_their_folders(output):
    data = br.load(output)
    assert sorted(data.models) == sorted(MODELS) and data.questions == ("0", "1", "2", "3")
    for li, model in enumerate(data.models):
        np.testing.assert_array_equal(data.R[li, :, 0], [correct(model, i) for i in range(4)])
    assert list(br.load_benchmarks(output)) == [TASK]


def test_one_file_and_the_metric_choice(tmp_path):
    path = _write(tmp_path, "m", metric={"extractive_match": 1.0, "f1": 0.25})
    with pytest.raises(DataError, match=r"metrics \['extractive_match', 'f1'\]"):
        br.load(path)
    assert br.load(path, metric="extractive_match").models == ("m",)
    with pytest.raises(DataError, match=r"row 0 of .*: score 0.25 .*metric="):
        br.load(path, metric="f1")


def test_details_outside_lightevals_folders(tmp_path):
    path = _write(tmp_path, "m")
    moved = tmp_path / "x.parquet"
    path.rename(moved)
    with pytest.raises(LoadError, match="details/{model}/{date}"):
        br.load(moved)


def test_truncated_details(tmp_path):
    path = _write(tmp_path, "m")
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(LoadError, match=rf"cannot read {path} as lighteval details"):
        br.load(path, format="lighteval")
