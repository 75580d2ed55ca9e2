"""The paper's raw inference records (scorio JSON Lines) read back.

The records follow the layout scorio 0.2.3 documents and reads
(``scorio.categorical.io``); the oracle is scorio's own reader,
``load_records``, on the same files: its (model, problem, trial, is_correct)
columns must be bayesrank's tensor cell for cell.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import bayesrank as br
from bayesrank.errors import DataError, LoadError

MODELS = ("m-small", "m-large", "m-mid")
PROBLEMS = (6, 11, 23, 42)
SEEDS = (1261, 7, 99)


def _record(model: str, problem: int, seed: int, correct: int) -> dict:
    return {"seed": seed, "data_id": problem, "model": model,
            "output": {"finish_reason": "stop" if correct else "length",
                       "num_completion_tokens": 100 + problem},
            "tokens": {"completion_avg_logprob": -0.1, "completion_sum_logprob": -10.0,
                       "completion_ppl": 1.1, "prompt_sum_logprob": -40.0, "prompt_ppl": 7.0,
                       "completion_logprob_list": [-0.1, -0.2, -0.05]},
            "processed_results": {"is_correct": correct, "has_box": 1}}


@pytest.fixture
def folder(tmp_path) -> Path:
    rng = np.random.default_rng(48)
    out = tmp_path / "aime"
    out.mkdir()
    for model in MODELS:  # one file per model, seeds shuffled as a real run logs them
        rows = [_record(model, p, s, int(rng.integers(2))) for s in SEEDS for p in PROBLEMS]
        order = rng.permutation(len(rows))
        (out / f"{model}.jsonl").write_text("".join(json.dumps(rows[i]) + "\n" for i in order))
    return out


def _oracle(path: Path) -> tuple[list, list, np.ndarray]:
    io = pytest.importorskip("scorio.categorical.io", reason="scorio (a dev dependency) absent")
    cols = io.load_records(path, workers=1)
    models = list(dict.fromkeys(cols["model"]))
    problems = sorted(set(cols["problem"]))
    seeds = sorted(set(cols["trial"]))
    table = np.full((len(models), len(problems), len(seeds)), -1)
    for m, p, t, c in zip(cols["model"], cols["problem"], cols["trial"], cols["is_correct"],
                          strict=True):
        table[models.index(m), problems.index(p), seeds.index(t)] = c
    return models, problems, table


def test_folder_matches_scorios_own_reader(folder):
    data = br.load(folder)
    models, problems, table = _oracle(folder)
    assert (table >= 0).all() and data.mask is None and data.is_binary
    li = [data.models.index(m) for m in models]
    qi = [data.questions.index(str(p)) for p in problems]
    np.testing.assert_array_equal(data.R[np.ix_(li, qi)], table)
    assert br.load_benchmarks(folder).keys() == {"aime"}


def test_one_file_with_several_models_and_has_box_as_metric(folder, tmp_path):
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(f.read_text() for f in sorted(folder.iterdir())))
    data = br.load(mixed)
    assert sorted(data.models) == sorted(MODELS) and data.shape == (3, 4, 3)
    assert br.load(mixed, metric="has_box").R.min() == 1


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize(("value", "message"), [
    (None, r"line 6 of {} \(model .* has no processed_results.is_correct"),
    (2, r"line 6 of {}: score 2 .*must be 0 or 1"),
])
def test_ungraded_or_unknown_score(folder, value, message):
    path = folder / "m-mid.jsonl"
    rows = _lines(path)
    rows[5]["processed_results"]["is_correct"] = value
    _write(path, rows)
    with pytest.raises(DataError, match=message.format(path)):
        br.load(path)


def test_duplicate_completion_and_truncation(folder):
    path = folder / "m-large.jsonl"
    rows = _lines(path)
    _write(path, [*rows, rows[0]])
    with pytest.raises(DataError, match=r"line 13 of .* again, as line 1 of"):
        br.load(path)
    path.write_text(path.read_text()[:-30])
    with pytest.raises(LoadError, match=rf"line 13 of {path} is not JSON"):
        br.load(path)


def test_the_records_signals_for_the_categorical_schemes(folder):
    signals = br.load_signals(folder)
    assert set(signals.names) == {"has_box", "is_correct", "token_ratio", "repeated_pattern",
                                  "prompt_bpt", "completion_bpt"}
    assert signals.outcomes() == br.load(folder)
    qi = [signals.questions.index(str(p)) for p in PROBLEMS]
    np.testing.assert_allclose(signals["token_ratio"][:, qi, :],
                               np.broadcast_to((100 + np.array(PROBLEMS))[None, :, None] / 32768,
                                               signals.shape))
    # the fixture's runs stop on their own exactly when correct
    np.testing.assert_array_equal(signals["repeated_pattern"], 1 - signals["is_correct"])
    np.testing.assert_allclose(signals["completion_bpt"], 0.1 / np.log(2))
    np.testing.assert_allclose(signals["prompt_bpt"], np.log2(7.0))
    # the paper's schemes also read the verifier's compass_* signals, not in raw records
    with pytest.raises(DataError, match=r"needs signal\(s\) \['compass_C'\]"):
        br.schemes.apply(signals, "conservative")
