"""Loaders: round trips for every format, the paper's archive layout, bad files."""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesrank import DataError, LoadError, ResponseData, load, save
from bayesrank.data.io import from_counts, load_benchmarks, save_benchmarks

FORMATS = ["npz", "nc", "csv", "jsonl", "parquet"]


def _data(categorical: bool, missing: bool, prior: str | None) -> ResponseData:
    rng = np.random.default_rng(7)
    n_cat = 3 if categorical else 2
    R = rng.integers(0, n_cat, (4, 5, 6))
    mask = None
    if missing:
        mask = rng.random(R.shape) < 0.75
        mask[:, 0, 0] = True
    R0 = None
    if prior == "shared":
        R0 = rng.integers(0, n_cat, (5, 2))
    elif prior == "per_model":
        R0 = rng.integers(0, n_cat, (4, 5, 1))
    return ResponseData(
        R,
        models=["gpt", "claude", "gemini", "llama"],
        questions=[f"item-{i}" for i in range(5)],
        R0=R0,
        mask=mask,
        n_categories=n_cat,
    )


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("categorical", [False, True])
@pytest.mark.parametrize("missing", [False, True])
@pytest.mark.parametrize("prior", [None, "shared", "per_model"])
def test_round_trip(tmp_path: Path, fmt, categorical, missing, prior):
    d = _data(categorical, missing, prior)
    path = save(d, tmp_path / f"data.{fmt}")
    if fmt in ("csv", "jsonl", "parquet"):  # long tables hold R only
        back = load(path, R0=d.R0, n_categories=d.n_categories)
    else:
        back = load(path)
    assert back == d
    assert not list(tmp_path.glob(".data*")), "temporary file left behind"


def test_npy_round_trip(tmp_path: Path):
    d = ResponseData(np.random.default_rng(0).integers(0, 2, (3, 4, 5)))
    assert load(save(d, tmp_path / "r.npy")).R.tolist() == d.R.tolist()
    with pytest.raises(DataError, match="mask/R0"):
        save(ResponseData(d.R, R0=np.ones((4, 1), int)), tmp_path / "r0.npy")


def test_paper_layout_with_greedy_archive(tmp_path: Path):
    rng = np.random.default_rng(1)
    benchmarks = {
        key: ResponseData(rng.integers(0, 2, (3, m, 8)), R0=rng.integers(0, 2, (3, m, 1)))
        for key, m in [("aime24", 4), ("hmmt_feb_2025", 6)]
    }
    path = save_benchmarks(benchmarks, tmp_path / "topp.npz", prior_path=tmp_path / "greedy.npz")
    with np.load(path) as archive:
        assert sorted(archive.files) == ["aime24", "hmmt_feb_2025"]
    one = load(path, key="hmmt_feb_2025", R0=tmp_path / "greedy.npz")
    np.testing.assert_array_equal(one.R, benchmarks["hmmt_feb_2025"].R)
    np.testing.assert_array_equal(one.R0, benchmarks["hmmt_feb_2025"].R0)
    everything = load_benchmarks(path, R0=tmp_path / "greedy.npz")
    assert set(everything) == {"aime24", "hmmt_feb_2025"}
    with pytest.raises(LoadError, match="choose one with key="):
        load(path)
    with pytest.raises(LoadError, match="no key 'brumo'"):
        load(path, key="brumo")


def test_keyed_archive_takes_its_names_from_label_arrays(tmp_path: Path):
    """The layout of the real benchmark archives: outcome tensors beside 1-D name arrays
    (``models``, ``questions``, and ``models_n1`` for the ``repair_n1`` tensor)."""
    rng = np.random.default_rng(3)
    models, questions = np.array(["gpt-x", "llama-y", "qwen-z"]), np.array(["p1", "p2", "p3", "p4"])
    path = tmp_path / "R.npz"
    np.savez(path, repair=rng.integers(0, 2, (3, 4, 5)).astype(np.int8),
             repair_n1=rng.integers(0, 2, (2, 4, 1)).astype(np.int8), models=models,
             models_n1=np.array(["o1 (N=1)", "o1-mini (N=1)"]), questions=questions,
             question_dates=np.array(["2024-10-01"] * 4))
    full = load(path, key="repair")
    assert full.models == tuple(models) and full.questions == tuple(questions)
    small = load(path, key="repair_n1")
    assert small.models == ("o1 (N=1)", "o1-mini (N=1)") and small.questions == tuple(questions)
    assert load(path, key="repair", models=["a", "b", "c"]).models == ("a", "b", "c")
    with pytest.raises(LoadError, match=r"several benchmarks \['repair', 'repair_n1'\]"):
        load(path)
    with pytest.raises(LoadError, match="'models' is not an outcome tensor.*3 names"):
        load(path, key="models")
    assert set(load_benchmarks(path)) == {"repair", "repair_n1"}
    # one tensor: no key needed; a name array of the wrong length is not used
    single = tmp_path / "one.npz"
    np.savez(single, math=rng.integers(0, 2, (3, 4)), models=models, questions=questions[:3])
    one = load(single)
    assert one.models == tuple(models) and one.questions == ("q0", "q1", "q2", "q3")
    # other spellings: the one array whose name says what it holds; two candidates: none
    spelled = tmp_path / "spelled.npz"
    np.savez(spelled, math=rng.integers(0, 2, (3, 4)), model_names=models, problem_ids=questions,
             task=np.array(["t1", "t1", "t2", "t2"]))
    assert load(spelled).models == tuple(models) and load(spelled).questions == tuple(questions)
    ambiguous = tmp_path / "ambiguous.npz"
    np.savez(ambiguous, math=rng.integers(0, 2, (3, 4)), model_names=models,
             model_dirs=np.array(["d1", "d2", "d3"]))
    assert load(ambiguous).models == ("model_0", "model_1", "model_2")
    names_only = tmp_path / "names.npz"
    np.savez(names_only, models=models)
    with pytest.raises(LoadError, match="holds no outcome tensor"):
        load(names_only)


def test_real_archives_load_with_their_model_names(shared_dir: Path):
    """The shared real sets load with the models their SOURCE.md names, not model_0..."""
    data = shared_dir / "data"
    zeroeval = load(data / "real_zeroeval_math_l5" / "R.npz", key="math_l5")
    assert zeroeval.R.shape == (38, 721, 1) and zeroeval.models[:2] == (
        "o1-mini-2024-09-12", "o1-preview-2024-09-12")
    rg = load(data / "real_reasoning_gym_hard" / "R.npz", key="rg_hard_cat", n_categories=3)
    assert rg.models[1] == "deepseek/deepseek-r1" and rg.questions[0].startswith("algebra/")
    lcb = load(data / "real_lcb_repair_2024_10" / "R.npz", key="repair_n1")
    assert lcb.models == ("O1-Preview-2024-09-12 (N=1)", "O1-Mini-2024-09-12 (N=1)")
    with pytest.raises(DataError, match="integer outcomes.*threshold scores"):
        load(data / "real_reasoning_gym_hard" / "R.npz", key="rg_hard_score")


def test_from_counts_keeps_the_counts_and_masks_the_trials_a_cell_lacks():
    k = np.array([[2, 0], [3, 1]])
    n = np.array([[3, 3], [3, 1]])
    d = from_counts(k, n, models=["a", "b"], questions=["x", "y"])
    np.testing.assert_array_equal(d.reductions.successes, k)
    np.testing.assert_array_equal(d.reductions.trials, n)
    assert d.N == 3 and d.mask is not None and d.mask[1, 1].tolist() == [True, False, False]
    assert from_counts(k, 3).complete
    for bad, match in [((k, 2), "'b', question 'x' has 3 successes out of only 2"),
                       ((k - 1, 3), "non-negative integers"), ((k, 0), "integers >= 1"),
                       ((k.astype(float) + 0.5, 3), "non-negative integers"),
                       ((k[0], 3), r"\(L, M\) array"), ((k, [3, 3, 3]), "shape")]:
        with pytest.raises(DataError, match=match):
            from_counts(*bad, models=["a", "b"], questions=["x", "y"])


def test_wide_count_tables_load_with_trials(tmp_path: Path):
    frame = pd.DataFrame({"llm": ["m1", "m2"], "p1": [4, 0], "p2": [1, 3]})
    path = tmp_path / "counts.csv"
    frame.to_csv(path, index=False)
    d = load(path, trials=4, columns={"model": "llm"})
    assert d.models == ("m1", "m2") and d.questions == ("p1", "p2") and d.N == 4
    np.testing.assert_array_equal(d.reductions.successes, [[4, 1], [0, 3]])
    assert load(frame, trials=4, columns={"model": "llm"}) == d
    with pytest.raises(LoadError, match="needs a 'model' column"):
        load(path, trials=4)
    frame.loc[1, "p2"] = None
    frame.to_csv(path, index=False)
    with pytest.raises(LoadError, match="question p2 holds nothing .an empty cell., not a count"):
        load(path, trials=4, columns={"model": "llm"})
    with pytest.raises(LoadError, match="whole number >= 1"):
        load(path, trials=0)
    frame["p2"] = frame["p2"].astype(object)
    frame.loc[1, "p2"] = "three"
    with pytest.raises(LoadError, match="question p2 holds 'three', not a count"):
        load(frame, trials=4, columns={"model": "llm"})
    with pytest.raises(LoadError, match="not a npy file"):
        load(save(d, tmp_path / "d.npy"), trials=4)


def test_matharena_count_table_reproduces_the_published_averages(shared_dir: Path):
    """MathArena AIME 2025 I: the "Avg" row of table_data.js (SOURCE.md), in the file's order."""
    path = shared_dir / "data" / "matharena_aime2025_I" / "counts_correct_of_4.csv"
    data = load(path, trials=4)
    assert data.shape == (16, 15, 4) and data.models[0] == "o3-mini (high)"
    published = [80.0, 78.3333, 73.3333, 65.0, 53.3333, 53.3333, 51.6667, 50.0, 50.0,
                 36.6667, 30.0, 28.3333, 26.6667, 25.0, 13.3333, 3.3333]
    accuracy = 100 * data.reductions.successes.sum(axis=1) / data.reductions.trials.sum(axis=1)
    np.testing.assert_allclose(accuracy, published, atol=5e-5)


def test_long_format_custom_columns_and_missing_trials():
    frame = pd.DataFrame(
        {
            "llm": ["a", "a", "a", "b", "b"],
            "item": ["q1", "q1", "q2", "q1", "q2"],
            "sample": [0, 1, 0, 0, 0],
            "correct": [1, 0, 1, 1, 0],
        }
    )
    d = load(frame, columns={"model": "llm", "question": "item", "trial": "sample",
                             "outcome": "correct"})
    assert d.models == ("a", "b") and d.questions == ("q1", "q2") and d.N == 2
    np.testing.assert_array_equal(d.reductions.trials, [[2, 1], [1, 1]])
    np.testing.assert_array_equal(d.reductions.successes, [[1, 1], [1, 0]])


def test_one_models_long_table_without_a_model_column_is_named_by_models(tmp_path: Path):
    """An agent's rewards per task and trial (tau-bench's shape): models=["name"] names
    the one model; the error without it says so; a second name or a model column is
    refused rather than ignored, and so is questions= for any table."""
    frame = pd.DataFrame({"task": [0, 0, 1, 1], "trial": [0, 1, 0, 1], "reward": [1, 0, 0, 0]})
    path = tmp_path / "rewards.csv"
    frame.to_csv(path, index=False)
    columns = {"question": "task", "outcome": "reward"}
    for source in (frame, path):
        d = load(source, columns=columns, models=["agent"])
        assert d.models == ("agent",) and d.questions == ("0", "1") and d.N == 2
        np.testing.assert_array_equal(d.reductions.successes, [[1, 0]])
    with pytest.raises(LoadError, match=r"lacks column\(s\) model.*models=\['its name'\]"):
        load(path, columns=columns)
    with pytest.raises(DataError, match="models= must name one model, got 2"):
        load(path, columns=columns, models=["a", "b"])
    with pytest.raises(DataError, match="has a model column, which names its models"):
        load(frame.assign(model="x"), columns=columns, models=["agent"])
    with pytest.raises(LoadError, match="questions= name the axes of an array"):
        load(path, columns=columns, models=["agent"], questions=["a", "b"])


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (pd.DataFrame({"model": ["a"], "trial": [0], "outcome": [1]}), r"lacks column.*question"),
        (
            pd.DataFrame({"model": ["a", "a"], "question": ["q", "q"], "trial": [0, 0],
                          "outcome": [1, 0]}),
            r"rows sharing a \(model, question, trial\); first: \(a, q, 0\) at row 0, row 1",
        ),
        (
            pd.DataFrame({"model": ["a", "b"], "question": ["q", "q"], "trial": [0, 0],
                          "outcome": [1, None]}),
            "outcome nan at row 1 of the DataFrame is not a number",
        ),
        (
            pd.DataFrame({"model": ["a", "b"], "question": ["q", "q"], "trial": [0, 0],
                          "outcome": [1, 0.5]}),
            "integer outcomes",
        ),
        (pd.DataFrame(columns=["model", "question", "trial", "outcome"]), "no rows"),
    ],
)
def test_long_format_errors(frame, message):
    with pytest.raises(DataError, match=message):
        load(frame)


def test_unreadable_and_truncated_files(tmp_path: Path):
    with pytest.raises(LoadError, match="no such file"):
        load(tmp_path / "missing.npz")
    bad = tmp_path / "garbage.npz"
    bad.write_bytes(b"not a zip archive at all")
    with pytest.raises(LoadError, match="not a valid .npz"):
        load(bad)
    good = save(_data(False, False, None), tmp_path / "good.npz")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(LoadError):
        load(truncated)
    npy = tmp_path / "t.npy"
    np.save(npy, np.ones((2, 3, 4), dtype=np.int8))
    cut = tmp_path / "cut.npy"
    cut.write_bytes(npy.read_bytes()[:100])
    with pytest.raises(LoadError):
        load(cut)
    nc = tmp_path / "broken.nc"
    nc.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 20)
    with pytest.raises(LoadError, match="NetCDF"):
        load(nc)
    with pytest.raises(LoadError, match="suffix"):
        load(good.rename(tmp_path / "data.bin"))


def test_pickled_archives_are_refused(tmp_path: Path):
    path = tmp_path / "evil.npz"
    np.savez(path, R=np.array([{"x": 1}], dtype=object))
    with pytest.raises(LoadError, match="pickle"):
        load(path)
    assert zipfile.is_zipfile(path)


def test_failed_write_leaves_no_file(tmp_path: Path):
    d = ResponseData(np.ones((2, 2, 2), int), R0=np.ones((2, 1), int))
    target = tmp_path / "x.npy"
    with pytest.raises(DataError):
        save(d, target)
    assert list(tmp_path.iterdir()) == []


def test_written_files_get_ordinary_permissions(tmp_path: Path):
    """Atomic writes go through mkstemp (mode 0o600); the result must not stay owner-only."""
    import os
    import stat

    old = os.umask(0o022)
    try:
        target = save(ResponseData(np.ones((2, 3, 2), dtype=int)), tmp_path / "d.npz")
        assert stat.S_IMODE(target.stat().st_mode) == 0o644
        target.chmod(0o640)  # replacing an existing file keeps its mode
        save(ResponseData(np.zeros((2, 3, 2), dtype=int)), target)
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
    finally:
        os.umask(old)


# -- harness formats: --columns / columns=, word outcomes, priors by name ------------------------
def _harness_csv(path: Path, rows: list[str], header: str = "llm,task_id,sample_idx,correct"):
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


HARNESS = {"model": "llm", "question": "task_id", "trial": "sample_idx", "outcome": "correct"}


def test_columns_mapping_and_word_outcomes(tmp_path: Path):
    rows = ["m1,a,0,True", "m1,a,1,false", "m1,b,0,YES", "m1,b,1,no",
            "m2,a,0,1", "m2,a,1,0", "m2,b,0,yes", "m2,b,1,yes"]
    d = load(_harness_csv(tmp_path / "h.csv", rows), columns=HARNESS)
    assert d.models == ("m1", "m2") and d.questions == ("a", "b")
    np.testing.assert_array_equal(d.R, [[[1, 0], [1, 0]], [[1, 0], [1, 1]]])


def test_ambiguous_word_outcome_names_its_line(tmp_path: Path):
    path = _harness_csv(tmp_path / "h.csv", ["m1,a,0,yes", "m1,a,1,2", "m1,b,0,no"])
    with pytest.raises(DataError, match=rf"outcome 2 at line 3 of {path} is not binary"):
        load(path, columns=HARNESS)


def test_nan_outcome_names_the_line_a_person_counts(tmp_path: Path):
    rows = ["m1,a,0,1", "m1,a,1,0", "m1,b,0,1", "m1,b,1,0", "m2,a,0,nan", "m2,a,1,1"]
    path = _harness_csv(tmp_path / "h.csv", rows)
    with pytest.raises(DataError) as err:
        load(path, columns=HARNESS)
    assert str(err.value).startswith(f"outcome nan at line 6 of {path} is not a number")
    assert "np.float64" not in str(err.value)


def test_missing_columns_speak_python_and_cli(tmp_path: Path):
    path = _harness_csv(tmp_path / "h.csv", ["m1,a,0,1"])
    with pytest.raises(LoadError) as err:
        load(path)
    assert "columns={'model': ..." in str(err.value)
    assert "--columns model=...,question=...,trial=...,outcome=..." in err.value.cli_message
    assert "llm, task_id, sample_idx, correct" in str(err.value)


def _data_frame() -> pd.DataFrame:
    return pd.DataFrame({"model": ["x", "x", "y", "y"] * 2, "question": ["a", "b"] * 4,
                         "trial": [0, 0, 0, 0, 1, 1, 1, 1], "outcome": [1, 0, 1, 1, 0, 0, 1, 0]})


def test_prior_long_csv_aligned_by_name(tmp_path: Path):
    data = tmp_path / "d.csv"
    _data_frame().to_csv(data, index=False)
    # shared greedy decode per question, in another order, with its own column names
    (tmp_path / "g.csv").write_text("task_id,correct\nb,yes\na,no\n")
    d = load(data, R0=tmp_path / "g.csv", columns={"question": "task_id", "outcome": "correct"})
    np.testing.assert_array_equal(d.R0, [[0], [1]])
    # per model, rows shuffled
    (tmp_path / "pm.csv").write_text("model,question,outcome\ny,b,1\nx,a,1\ny,a,0\nx,b,0\n")
    d = load(data, R0=str(tmp_path / "pm.csv"))
    np.testing.assert_array_equal(d.R0, [[[1], [0]], [[0], [1]]])
    assert load(_data_frame(), R0=tmp_path / "pm.csv") == d


def test_prior_names_that_do_not_match(tmp_path: Path):
    data = tmp_path / "d.csv"
    _data_frame().to_csv(data, index=False)
    (tmp_path / "g.csv").write_text("question,outcome\na,1\nc,0\n")
    with pytest.raises(DataError, match=r"no prior for 1 question\(s\) of the data: \['b'\]; "
                                        r"1 question\(s\) not in the data: \['c'\]"):
        load(data, R0=tmp_path / "g.csv")
    (tmp_path / "m.csv").write_text("model,question,outcome\nx,a,1\nx,b,0\nz,a,1\nz,b,1\n")
    with pytest.raises(DataError, match=r"model\(s\) of the data: \['y'\].*data: \['z'\]"):
        load(data, R0=tmp_path / "m.csv")


def test_prior_from_a_bayesrank_file_is_aligned_by_name(tmp_path: Path):
    prior = ResponseData(np.array([[[1], [0]], [[0], [0]]]), models=["y", "x"],
                         questions=["a", "b"])
    for name in ("p.nc", "p.npz"):
        save(prior, tmp_path / name)
        d = load(_data_frame(), R0=tmp_path / name)
        np.testing.assert_array_equal(d.R0, [[[0], [0]], [[1], [0]]])


def test_long_dataframe_given_to_response_data_says_what_to_call():
    import bayesrank

    with pytest.raises(DataError, match=r"call bayesrank.load\(df\)"):
        ResponseData(_data_frame())
    with pytest.raises(DataError, match=r"call bayesrank.load\(df\)"):
        bayesrank.rank(_data_frame(), "avg")
    assert bayesrank.rank(load(_data_frame()), "avg").models == ("x", "y")
