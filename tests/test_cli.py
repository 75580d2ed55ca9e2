"""The command-line interface."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from bayesrank import ResponseData, save
from bayesrank.cli import main


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert "bayesrank 0.1.0" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "rank" in capsys.readouterr().out


def test_rank_example_prints_leaderboard(capsys):
    assert main(["rank", "--method", "avg"]) == 0
    out = capsys.readouterr().out
    assert "simulated" in out
    lines = out.strip().splitlines()
    # the data's own accuracy first after the model, then the method's score, named
    assert lines[1].split() == ["rank", "model", "observed", "accuracy", "avg", "score"]
    assert len(lines) == 2 + 20
    assert lines[2].split()[0] == "1"


def test_rank_file_and_bad_method(tmp_path, capsys):
    R = np.zeros((3, 2, 2), dtype=int)
    R[1] = 1
    path = save(ResponseData(R, models=["x", "y", "z"]), tmp_path / "d.npz")
    assert main(["rank", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[2].split()[:2] == ["1", "y"]
    assert main(["rank", str(path), "--method", "nope"]) == 2
    assert "unknown ranking method" in capsys.readouterr().err
    assert main(["rank", str(tmp_path / "absent.npz")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_console_script_installed():
    out = subprocess.run(
        [sys.executable, "-m", "bayesrank.cli", "--version"], capture_output=True, text=True,
        check=True,
    )
    assert out.stdout.startswith("bayesrank ")


def test_rank_a_wide_count_table_with_trials(tmp_path, capsys):
    path = tmp_path / "counts.csv"
    path.write_text("model,p1,p2,p3\nweak,0,1,0\nstrong,4,4,3\nmid,2,2,1\n")
    assert main(["rank", str(path), "--trials", "4", "--method", "avg"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[2:]]
    assert [r[1] for r in rows] == ["strong", "mid", "weak"]
    assert float(rows[0][2]) == pytest.approx(11 / 12)
    assert main(["rank", str(path), "--method", "avg"]) == 1  # a wide table is not long
    err = capsys.readouterr().err
    assert "lacks column(s) question, trial, outcome" in err and "--trials N" in err
    assert main(["rank", "--trials", "4"]) == 2  # no DATA file
    plan = tmp_path / "plan.csv"
    assert main(["plan", str(path), "--trials", "4", "--budget", "6", "-o", str(plan)]) == 0
    assert plan.read_text().startswith("model,question,trials")
