"""Long command-line work says what it is doing (issue 52): stage lines with elapsed time
on stderr when no terminal watches (CI, a notebook's log, nohup), nothing with --quiet."""

from __future__ import annotations

import argparse
import re
import warnings

import numpy as np
import pytest

from bayesrank import ResponseData, save
from bayesrank.cli import Stages, main

LINE = re.compile(r"^bayesrank: \[\s*(\d+\.\d) s\] (.*)$")


def test_stages_report_draws_at_most_every_few_seconds_and_once_at_the_end(capsys):
    stages = Stages(argparse.Namespace(quiet=False), every=3600.0)
    stages.bar = False  # as when stderr is not a terminal
    for done in (0, 10, 20, 30):
        stages.draws(done, 40)
    stages.draws(40, 40)
    stages.draws(40, 40)
    lines = capsys.readouterr().err.splitlines()
    assert [LINE.match(x).group(2) for x in lines] == [
        "sampling: 0/40 draws done (0%, warm-up included)",
        "sampling: 40/40 draws done; log-likelihood and convergence checks",
    ]
    quiet = Stages(argparse.Namespace(quiet=True))
    quiet("fitting")
    quiet.draws(40, 40)
    assert capsys.readouterr().err == ""


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    R = (rng.random((3, 8, 2)) < np.array([0.3, 0.5, 0.7])[:, None, None]).astype(np.int8)
    return save(ResponseData(R, models=["a", "b", "c"]),
                tmp_path_factory.mktemp("progress") / "small.npz")


def test_report_prints_its_stages_with_elapsed_time_when_piped(capsys, tmp_path, small_file):
    out = tmp_path / "r.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["report", str(small_file), "--model", "rasch", "--draws", "40",
                     "--tune", "40", "--chains", "1", "--baselines", "avg", "-o", str(out)])
    assert code == 0
    err = capsys.readouterr().err
    stages = [LINE.match(x) for x in err.splitlines() if x.startswith("bayesrank: [")]
    texts = [m.group(2) for m in stages]
    seconds = [float(m.group(1)) for m in stages]
    assert seconds == sorted(seconds)
    expected = ["loading", "fitting rasch", "sampling: 80/80 draws done",
                "report: posterior-predictive checks", "report: writing", "wrote"]
    positions = [next(i for i, t in enumerate(texts) if t.startswith(e)) for e in expected]
    assert positions == sorted(positions), texts
    assert out.exists()


def test_quiet_report_prints_no_stage(capsys, tmp_path, small_file):
    out = tmp_path / "q.html"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["report", str(small_file), "--model", "closed_form", "--quiet",
                     "--baselines", "avg", "-o", str(out)]) == 0
    assert "bayesrank: [" not in capsys.readouterr().err


def test_study_prints_its_stages_and_protocol_progress_when_piped(capsys, tmp_path):
    out = tmp_path / "study"
    assert main(["study", "--key", "aime24", "--methods", "avg,borda", "--protocol",
                 "gold,stability", "--draws", "3", "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    stages = [LINE.match(x).group(2) for x in err if x.startswith("bayesrank: [")]
    assert [s.split()[0] for s in stages] == ["loading", "running", "writing"], err
    progress = [x for x in err if x.startswith("[study] ")]
    # each protocol's last line (forced when it finishes) with its elapsed time
    assert any(re.match(r"\[study\] stability \(n=1\) 1/1 draw blocks, \d+ s$", x)
               for x in progress), err
    assert main(["study", "--key", "aime24", "--methods", "avg", "--protocol", "gold",
                 "--quiet", "-o", str(tmp_path / "q"), "--fresh"]) == 0
    assert capsys.readouterr().err == ""
