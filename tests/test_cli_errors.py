"""Every command-line mistake ends in one line and an exit status, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from bayesrank import ResponseData, save
from bayesrank.cli import main


@pytest.fixture
def data_file(tmp_path):
    R = np.zeros((3, 4, 2), dtype=int)
    R[1] = 1
    R[2, :2] = 1
    return save(ResponseData(R, models=["x", "y", "z"]), tmp_path / "d.npz")


def run_cli(capsys, *argv):
    """Exit status and stderr of ``bayesrank argv`` (argparse's SystemExit included)."""
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.err


@pytest.mark.parametrize(
    ("argv", "code", "words"),
    [
        (["report", "--sampler", "blackjax"], 2, ["--sampler 'blackjax'", "nutpie"]),
        (["report", "--draws", "0"], 2, ["--draws", ">= 1, got 0"]),
        (["report", "--chains", "two"], 2, ["--chains", "'two'"]),
        (["report", "--model", "rash"], 2, ["--model 'rash'", "rasch"]),
        (["report", "--baselines", "avg,nope"], 2, ["unknown ranking method 'nope'"]),
        (["rank", "--method", "bayes", "-O", "foo=bar"], 2,
         ["no option 'foo'", "R0", "quantile"]),
        (["rank", "--method", "pass_at_k", "-O", "K=3"], 2, ["no option 'K'", "k (default 2)"]),
        (["rank", "--method", "elo", "-O", "K"], 2, ["NAME=VALUE"]),
        (["rank", "--prior", "greedy.csv"], 2, ["--prior", "DATA file"]),
        (["rank", "--columns", "outcome"], 2, ["--columns", "OURS=YOURS"]),
        (["rank", "--columns", "score=correct"], 2, ["--columns", "outcome"]),
        (["rank", "absent.csv"], 2, ["no such file: absent.csv"]),
        (["rank", "absent.csv", "--prior", "g.csv"], 2, ["no such file: absent.csv"]),
    ],
)
def test_usage_and_data_errors_are_one_line(capsys, tmp_path, argv, code, words):
    out = tmp_path / "r.html"
    got, err = run_cli(capsys, *argv, *(["-o", str(out)] if argv[0] == "report" else []))
    assert got == code
    assert len(err.strip().splitlines()) <= 2, err
    for word in words:
        assert word in err
    assert not out.exists()


def test_help_example_names_a_real_option(capsys):
    from bayesrank.cli import method_options

    with pytest.raises(SystemExit):
        main(["rank", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--method elo -O K=16" in text and "--method pass_at_k -O k=4" in text
    assert method_options("elo", ["K=16"]) == {"K": 16}
    assert method_options("pass_at_k", ["k=4"]) == {"k": 4}


def test_option_value_error_is_a_run_error(capsys, data_file):
    code, err = run_cli(capsys, "rank", str(data_file), "--method", "pass_at_k", "-O", "k=9")
    assert code == 1 and err.startswith("bayesrank: error:")


def test_output_paths_are_checked_before_any_work(capsys, tmp_path, monkeypatch):
    import bayesrank.analysis

    def must_not_run(*args, **kwargs):
        raise AssertionError("the fit started before the output path was checked")

    monkeypatch.setattr(bayesrank.analysis, "closed_form", must_not_run)
    folder = tmp_path / "out"
    folder.mkdir()
    code, err = run_cli(capsys, "report", "--model", "closed_form", "-o", str(folder))
    assert code == 2 and "is a directory" in err and "report.html" in err
    afile = tmp_path / "file"
    afile.write_text("keep")
    code, err = run_cli(capsys, "report", "--model", "closed_form", "-o", str(afile / "r.html"))
    assert code == 2 and "is a file, not a folder" in err
    code, err = run_cli(capsys, "study", "--methods", "avg", "-o", str(afile))
    assert code == 2 and "existing file" in err and "directory" in err
    assert afile.read_text() == "keep"
    code, err = run_cli(capsys, "plan", str(afile), "--budget", "3", "-o", str(folder))
    assert code == 2 and "is a directory" in err
    assert list(folder.iterdir()) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into read-only folders")
def test_unwritable_output_folder(capsys, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    code, err = run_cli(capsys, "report", "--model", "closed_form",
                        "-o", str(locked / "sub" / "r.html"))
    assert code == 2 and "permission denied" in err


def test_ctrl_c_is_one_line(capsys, tmp_path, monkeypatch):
    import bayesrank.analysis

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bayesrank.analysis, "closed_form", interrupted)
    out = tmp_path / "r.html"
    code, err = run_cli(capsys, "report", "--model", "closed_form", "-o", str(out))
    *stages, last = err.strip().splitlines()
    assert code == 130 and last == "bayesrank: interrupted"
    # before it only the stage lines of issue 52 (and the blank line that ends a ^C)
    assert all(line.startswith("bayesrank: [") for line in stages if line)
    assert not out.exists()


@pytest.mark.filterwarnings("ignore:Found chain dimension to be longer")
def test_interrupted_sampler_is_not_a_finished_fit():
    """nutpie and PyMC return the draws made so far on Ctrl-C; fit() passes the interrupt on."""
    from bayesrank.datatree import from_arrays
    from bayesrank.inference.fitting import _require_all_draws

    partial = from_arrays({"posterior": {"theta": np.zeros((4, 0, 3))}})
    with pytest.raises(KeyboardInterrupt, match="after 0 of 100 draws"):
        _require_all_draws(partial, 100)
    _require_all_draws(from_arrays({"posterior": {"theta": np.zeros((2, 5, 3))}}), 5)


def test_debug_shows_the_traceback(data_file):
    with pytest.raises(KeyError):  # UnknownMethodError, raised as it is
        main(["--debug", "rank", str(data_file), "--method", "nope"])
    with pytest.raises(KeyError):
        main(["rank", str(data_file), "--method", "nope", "--debug"])


def test_unexpected_error_is_one_line_with_a_pointer(capsys, data_file, monkeypatch):
    import bayesrank

    def bug(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(bayesrank, "rank", bug)
    code, err = run_cli(capsys, "rank", str(data_file))
    assert code == 1 and "ZeroDivisionError" in err and "--debug" in err


def test_closed_pipe_ends_quietly(data_file):
    """``bayesrank rank ... | head -1``: no BrokenPipeError, SIGPIPE's status."""
    producer = subprocess.Popen(
        [sys.executable, "-m", "bayesrank.cli", "rank"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    first = producer.stdout.readline()
    producer.stdout.close()  # what head does after its first line
    err = producer.stderr.read().decode()
    assert producer.wait(timeout=120) == 141
    assert first.startswith(b"# avg")
    assert err == ""


def test_warnings_print_as_one_line(capsys, data_file, monkeypatch):
    import warnings

    import bayesrank

    def warn_then_rank(data, method, **kwargs):
        warnings.warn("first part\n  second part", UserWarning, stacklevel=2)
        return real(data, method, **kwargs)

    real = bayesrank.rank
    monkeypatch.setattr(bayesrank, "rank", warn_then_rank)
    assert main(["rank", str(data_file)]) == 0
    err = capsys.readouterr().err
    assert err == "bayesrank: warning: first part second part\n"


def _harness(tmp_path):
    data = tmp_path / "std.csv"
    data.write_text("llm,task_id,sample_idx,correct\n" + "".join(
        f"{m},{q},{t},{'yes' if (m == 'good') or (t == 0 and q == 'a') else 'no'}\n"
        for m in ("good", "bad") for q in ("a", "b") for t in (0, 1)))
    greedy = tmp_path / "greedy.csv"
    greedy.write_text("llm,task_id,correct\ngood,b,true\nbad,a,false\ngood,a,true\nbad,b,false\n")
    return data, greedy


def test_harness_columns_and_prior_on_the_command_line(capsys, tmp_path):
    data, greedy = _harness(tmp_path)
    code, err = run_cli(capsys, "rank", str(data))
    assert code == 1
    assert "--columns model=...,question=...,trial=...,outcome=..." in err
    assert "columns={" not in err
    columns = "model=llm,question=task_id,trial=sample_idx,outcome=correct"
    assert main(["rank", str(data), "--columns", columns, "--method", "bayes_greedy",
                 "--prior", str(greedy)]) == 0
    out = capsys.readouterr().out
    assert "R0 per-model, D=1" in out
    assert out.splitlines()[2].split()[:2] == ["1", "good"]
    greedy.write_text("llm,task_id,correct\ngood,b,1\ngood,c,1\n")
    code, err = run_cli(capsys, "rank", str(data), "--columns", columns, "--prior", str(greedy))
    assert code == 1 and "does not match the data by name" in err and "['c']" in err


def test_report_and_study_read_harness_columns(capsys, tmp_path):
    data, _ = _harness(tmp_path)
    columns = "model=llm,question=task_id,trial=sample_idx,outcome=correct"
    out = tmp_path / "r.html"
    assert main(["report", str(data), "--columns", columns, "--model", "closed_form",
                 "--baselines", "avg", "-o", str(out)]) == 0
    assert out.exists()
    folder = tmp_path / "study"
    assert main(["study", str(data), "--columns", columns, "--methods", "avg",
                 "--protocol", "gold", "-o", str(folder)]) == 0
    assert any(folder.iterdir())


def test_progress_piped_or_in_a_terminal_unless_quiet(capsys, tmp_path, monkeypatch):
    out = tmp_path / "r.html"
    argv = ["report", "--model", "closed_form", "--baselines", "avg", "-o", str(out)]
    for terminal in (False, True):  # stage lines either way (issue 52)
        monkeypatch.setattr(sys.stderr, "isatty", lambda terminal=terminal: terminal)
        assert main(argv) == 0
        err = capsys.readouterr().err
        assert "] closed-form Bayes@N posterior" in err
        assert "] report: posterior-predictive checks" in err and "] wrote " in err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main([*argv, "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_nan_in_an_array_file_gets_command_line_advice(capsys, tmp_path):
    R = np.zeros((2, 3, 2))
    R[1, 2, 0] = np.nan
    path = tmp_path / "r.npy"
    np.save(path, R)
    code, err = run_cli(capsys, "rank", str(path))
    assert code == 1 and "NaN/inf" in err and "leave their rows out of a long table" in err
    assert "mask=" not in err
