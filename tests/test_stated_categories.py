"""Nothing is coerced (issue 52): outcomes above 1 need their categories stated, one model is
refused before a fit, and an N = 1 long table may leave out its trial column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import bayesrank
from bayesrank import ResponseData, fit, load
from bayesrank.cli import main
from bayesrank.errors import DataError


def run_cli(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    # progress lines ("bayesrank: [  0.0 s] loading ...") aside, the error is one line
    err = "".join(line for line in captured.err.splitlines(keepends=True)
                  if not line.startswith("bayesrank: ["))
    return code, captured.out, err


@pytest.fixture
def three_level(tmp_path):
    """A long CSV whose outcomes are 0/1/2 (e.g. 2 = correct where 0/1 was meant)."""
    rng = np.random.default_rng(0)
    rows = [{"model": f"m{i}", "question": f"q{j}", "trial": t, "outcome": int(rng.integers(3))}
            for i in range(3) for j in range(6) for t in range(2)]
    path = tmp_path / "levels.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_outcomes_above_one_without_categories_are_refused_naming_values_and_fixes():
    R = np.array([[0, 1, 2], [2, 2, 0]])
    with pytest.raises(DataError) as err:
        ResponseData(R)
    text = str(err.value)
    assert "\n" not in text
    assert "{0, 1, 2}" in text
    assert "weights=[0, 0.5, 1]" in text and "n_categories=3" in text
    assert "0/1" in text


def test_stated_categories_load_with_their_weights(three_level):
    by_weights = load(three_level, weights=[0, 0.5, 1])
    by_count = load(three_level, n_categories=3)
    assert by_weights.n_categories == by_count.n_categories == 3
    np.testing.assert_array_equal(by_weights.weights, [0, 0.5, 1])
    np.testing.assert_array_equal(by_weights.R, by_count.R)
    uneven = load(three_level, weights=[0, 0.2, 1])
    np.testing.assert_array_equal(uneven.weights, [0, 0.2, 1])


def test_binary_data_still_need_nothing_stated():
    data = ResponseData(np.array([[0, 1, 1], [1, 0, 0]]))
    assert data.is_binary
    np.testing.assert_array_equal(data.weights, [0, 1])


@pytest.mark.parametrize("command", ["rank", "report", "study", "plan"])
def test_every_data_command_refuses_unstated_categories_in_one_line(
        capsys, tmp_path, three_level, command):
    extra = {"rank": [], "report": ["-o", tmp_path / "r.html"], "study": ["-o", tmp_path / "s"],
             "plan": ["--budget", "5", "-o", tmp_path / "p.csv"]}[command]
    code, _, err = run_cli(capsys, command, three_level, *extra)
    assert code == 1, err
    line = err.strip()
    assert "\n" not in line
    assert "{0, 1, 2}" in line and "--weights 0,0.5,1" in line and "0/1" in line


@pytest.mark.parametrize("command", ["rank", "study", "plan"])
def test_every_data_command_takes_weights(capsys, tmp_path, three_level, command):
    extra = {"rank": ["--method", "bayes"], "study": ["-o", tmp_path / "s", "--methods", "avg",
                                                      "--protocol", "gold"],
             "plan": ["--budget", "5", "-o", tmp_path / "p.csv"]}[command]
    code, out, err = run_cli(capsys, command, three_level, "--weights", "0,0.5,1", *extra)
    assert code == 0, err
    assert "C+1=3" in out or "cells" in out


def test_rank_scores_use_the_stated_weights(capsys, three_level):
    data = load(three_level, weights=[0, 0.25, 1])
    expected = (data.weights[data.R]).mean(axis=(1, 2))
    code, out, err = run_cli(capsys, "rank", three_level, "--weights", "0,0.25,1",
                             "--method", "avg")
    assert code == 0, err
    table = out.splitlines()[1:]
    got = {line.split()[1]: float(line.split()[-1]) for line in table[1:]}
    assert got == pytest.approx(dict(zip(data.models, expected, strict=True)), abs=1e-4)


def test_bad_weights_argument_is_a_usage_error(capsys, three_level):
    code, _, err = run_cli(capsys, "rank", three_level, "--weights", "0;1")
    assert code == 2
    assert "--weights" in err and "0,0.5,1" in err


def test_one_model_is_refused_before_any_fit(capsys, tmp_path):
    one = ResponseData(np.array([[[0, 1], [1, 1], [0, 0]]]), models=["solo"])
    with pytest.raises(DataError, match=r"at least two models.*'solo'"):
        fit(one, "rasch", draws=5, tune=5, chains=1)
    from bayesrank.inference.fitting import fit_many

    with pytest.raises(DataError, match=r"fit_many.*at least two models.*'solo'"):
        fit_many([one, one], "rasch", sampler="numpyro", draws=5, tune=5, chains=1)
    path = bayesrank.save(one, tmp_path / "one.npz")
    code, _, err = run_cli(capsys, "report", path, "-o", tmp_path / "r.html")
    assert code == 1
    assert "at least two models" in err and "\n" not in err.strip()
    assert not (tmp_path / "r.html").exists()


def test_n1_long_table_without_trial_column_is_trial_zero(tmp_path):
    frame = pd.DataFrame({"model": ["a", "a", "b", "b"], "question": ["x", "y", "x", "y"],
                          "outcome": [1, 0, 1, 1]})
    path = tmp_path / "greedy.csv"
    frame.to_csv(path, index=False)
    data = load(path)
    assert data.R.shape == (2, 2, 1)
    np.testing.assert_array_equal(data.R[..., 0], [[1, 0], [1, 1]])


def test_repeated_cell_without_trial_column_names_the_column(tmp_path):
    frame = pd.DataFrame({"model": ["a", "a", "b"], "question": ["x", "x", "x"],
                          "outcome": [1, 0, 1]})
    with pytest.raises(DataError, match="no trial column.*add the trial column"):
        load(frame)
