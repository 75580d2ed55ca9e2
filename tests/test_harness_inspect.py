"""Inspect AI logs written by Inspect itself (its offline ``mockllm`` model) read back.

The oracle is the scorer: every (model, sample, epoch) gets the grade
:func:`grade` says, so the tensor bayesrank reads must be exactly that table.
Damaged logs (truncated, unscored, duplicated, unknown values, unfinished) are
made from genuine ones and must give one-line errors naming the file.
"""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import bayesrank as br
from bayesrank.cli import main
from bayesrank.data.harness.common import GRADE_WEIGHTS, GRADES
from bayesrank.errors import DataError, LoadError

pytest.importorskip("inspect_ai", reason="inspect-ai (a dev dependency) is not installed: "
                    "no genuine Inspect logs can be written")

# inspect-ai 0.3.285 passes tenacity a deprecated argument on every model call
pytestmark = pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated")

MODELS = ("mockllm/alpha", "mockllm/beta")
QUESTIONS = tuple(f"q{i}" for i in range(5))
EPOCHS = 3


def grade(task: str, model: str, qi: int, epoch: int) -> str:
    """The grade the test's scorer gives: all four letters on ``graded``, C/I on ``binary``."""
    if task == "graded":
        return GRADES[(qi * epoch + len(model)) % 4]
    return "CI"[(qi + epoch + len(model)) % 2]


def _run(log_dir: Path, log_format: str) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, accuracy, scorer
    from inspect_ai.solver import generate

    def reply(input, tools, tool_choice, config):  # usage given: no tokenizer download
        out = ModelOutput.from_content(model="mockllm", content="an answer")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    @scorer(metrics=[accuracy()])
    def table(task: str):
        async def score(state, target):
            qi = QUESTIONS.index(str(state.sample_id))
            return Score(value=grade(task, str(state.model), qi, state.epoch))
        return score

    def task(name: str) -> Task:
        return Task(name=name, dataset=[Sample(id=q, input=f"question {q}", target="x")
                                        for q in QUESTIONS],
                    solver=[generate()], scorer=table(name), epochs=EPOCHS)

    models = [get_model(m, custom_outputs=reply) for m in MODELS]
    logs = eval([task("graded"), task("binary")], model=models, log_dir=str(log_dir),
                log_format=log_format, display="none")
    assert [log.status for log in logs] == ["success"] * 4


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    out = {}
    for fmt in ("eval", "json"):
        out[fmt] = tmp_path_factory.mktemp(f"inspect_{fmt}")
        _run(out[fmt], fmt)
    return out


def expected(task: str) -> np.ndarray:
    table = np.empty((len(MODELS), len(QUESTIONS), EPOCHS), int)
    for li, qi, e in np.ndindex(table.shape):
        letter = grade(task, MODELS[li], qi, e + 1)
        table[li, qi, e] = GRADES.index(letter) if task == "graded" else letter == "C"
    return table


def _one(folder: Path, task: str, model: str) -> Path:
    found = [p for p in sorted(folder.iterdir()) if f"_{task}_" in p.name
             and model.split("/")[1] in _model_of(p)]
    assert len(found) == 1
    return found[0]


def _model_of(path: Path) -> str:
    return str(br.load(path).models[0])


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_log_folder_gives_one_benchmark_per_task_with_epochs_as_trials(logs, fmt):
    tasks = br.load_benchmarks(logs[fmt])
    assert sorted(tasks) == ["binary", "graded"]
    for name, data in tasks.items():
        order = [data.models.index(m) for m in MODELS]
        assert sorted(data.models) == list(MODELS)
        assert set(data.questions) == set(QUESTIONS)
        qi = [data.questions.index(q) for q in QUESTIONS]
        assert data.mask is None
        np.testing.assert_array_equal(data.R[np.ix_(order, qi)], expected(name))
    assert tasks["binary"].is_binary
    np.testing.assert_array_equal(tasks["graded"].weights, GRADE_WEIGHTS)


def test_one_task_by_key_and_the_error_without_it(logs):
    data = br.load(logs["eval"], key="graded")
    assert data.shape == (2, 5, 3)
    with pytest.raises(LoadError, match=r"several tasks \['binary', 'graded'\].*key="):
        br.load(logs["eval"])


def test_a_single_eval_file_and_its_json_twin_agree(logs):
    for task in ("graded", "binary"):
        for model in MODELS:
            a = br.load(_one(logs["eval"], task, model))
            b = br.load(_one(logs["json"], task, model))
            assert a.models == (model,)
            assert a == b.subset(questions=list(a.questions))


def test_format_forced_and_cli_reads_the_folder(logs, capsys):
    one = _one(logs["eval"], "binary", MODELS[0])
    renamed = one.parent.parent / "renamed.zip"
    shutil.copy(one, renamed)
    assert br.load(renamed, format="inspect") == br.load(one)
    assert main(["rank", str(logs["eval"]), "--key", "binary", "--method", "avg"]) == 0
    out = capsys.readouterr().out
    assert "mockllm/alpha" in out and "mockllm/beta" in out
    # several tasks are a suite: rank refuses it as it does several files (a usage error),
    # pointing to one task (--key) and to the suite's report
    assert main(["rank", str(logs["eval"]), "--method", "avg"]) == 2
    err = capsys.readouterr().err
    assert "--key" in err and f"bayesrank report {logs['eval']}" in err


def test_without_inspect_a_deflate_archive_reads_and_a_zstd_one_names_the_fix(logs, tmp_path,
                                                                              monkeypatch):
    import inspect_ai.log  # noqa: F401  (its import teaches zipfile zstd, to rewrite the file)

    one = _one(logs["eval"], "graded", MODELS[1])
    deflated = tmp_path / "deflated.eval"
    with zipfile.ZipFile(one) as src, zipfile.ZipFile(deflated, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    want = br.load(one)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if not installed
    assert br.load(deflated) == want
    zstd_method = {i.compress_type for i in zipfile.ZipFile(one).infolist()}
    if zstd_method == {zipfile.ZIP_DEFLATED}:
        pytest.skip("this Inspect wrote deflate members: nothing needs its reader")
    monkeypatch.setattr(zipfile.ZipFile, "open", _no_zstd(zipfile.ZipFile.open))
    with pytest.raises(LoadError, match=r"pip install inspect-ai.*inspect log convert"):
        br.load(one)


def _no_zstd(open_member):
    """zipfile as Python 3.12 has it without inspect's patch: zstd members refused."""
    def refuse(self, name, *args, **kwargs):
        info = name if isinstance(name, zipfile.ZipInfo) else self.getinfo(name)
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise NotImplementedError("That compression method is not supported")
        return open_member(self, name, *args, **kwargs)
    return refuse


def _edited(src: Path, dst: Path, edit) -> Path:
    log = json.loads(src.read_text())
    edit(log)
    dst.write_text(json.dumps(log))
    return dst


def _one_line(exc: pytest.ExceptionInfo, path: Path) -> str:
    text = str(exc.value)
    assert "\n" not in text and str(path) in text
    return text


def test_truncated_archive(logs, tmp_path):
    one = _one(logs["eval"], "graded", MODELS[0])
    cut = tmp_path / "cut.eval"
    cut.write_bytes(one.read_bytes()[: one.stat().st_size // 2])
    with pytest.raises(LoadError) as exc:
        br.load(cut)
    assert "truncated" in _one_line(exc, cut)


def test_sample_without_scores(logs, tmp_path):
    src = _one(logs["json"], "graded", MODELS[0])
    bad = _edited(src, tmp_path / "unscored.json",
                  lambda log: log["samples"][2].update(scores=None))
    with pytest.raises(DataError) as exc:
        br.load(bad)
    assert "has no score" in _one_line(exc, bad) and "inspect score" in str(exc.value)


def test_unknown_score_value(logs, tmp_path):
    src = _one(logs["json"], "graded", MODELS[0])
    bad = _edited(src, tmp_path / "odd.json",
                  lambda log: log["samples"][4]["scores"]["table"].update(value=0.7))
    with pytest.raises(DataError) as exc:
        br.load(bad)
    assert "score 0.7" in _one_line(exc, bad) and "C, I, P, N" in str(exc.value)


def test_the_same_run_twice_in_a_folder(logs, tmp_path):
    src = _one(logs["eval"], "binary", MODELS[0])
    for name in ("a.eval", "b.eval"):
        shutil.copy(src, tmp_path / name)
    with pytest.raises(DataError) as exc:
        br.load(tmp_path)
    text = _one_line(exc, tmp_path / "b.eval")
    assert "again" in text and str(tmp_path / "a.eval") in text


def test_duplicate_sample_ids_in_one_log(logs, tmp_path):
    src = _one(logs["json"], "binary", MODELS[0])
    bad = _edited(src, tmp_path / "dup.json",
                  lambda log: log["samples"].append(dict(log["samples"][0])))
    with pytest.raises(DataError, match="again"):
        br.load(bad)


def test_several_scorers_need_metric(logs, tmp_path):
    src = _one(logs["json"], "binary", MODELS[0])

    def second_scorer(log):
        log["samples"][0]["scores"]["match"] = {"value": "I"}

    bad = _edited(src, tmp_path / "two.json", second_scorer)
    with pytest.raises(DataError, match=r"several scorers \['match', 'table'\].*metric="):
        br.load(bad)
    assert br.load(bad, metric="table") == br.load(src)


def test_unfinished_run_is_refused(logs, tmp_path):
    src = _one(logs["json"], "binary", MODELS[0])
    bad = _edited(src, tmp_path / "cancelled.json", lambda log: log.update(status="cancelled"))
    with pytest.raises(DataError, match=r"status 'cancelled'.*eval-retry"):
        br.load(bad)


def test_options_of_tables_are_refused_for_logs(logs):
    with pytest.raises(LoadError, match="do not apply"):
        br.load(logs["eval"], key="binary", weights=[0, 1])
