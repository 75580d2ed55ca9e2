"""Resumable studies (issue 50, part 1): a study process killed by SIGKILL at any point
resumes from its checkpoint to the frames of an uninterrupted run with the same seed;
another call is refused rather than mixed in.

The kills are real SIGKILLs of a separate process, sent by the process to itself at
chosen points of its checkpoint writes (right after a block is stored, or halfway
through writing one), so that each point is hit exactly, whatever the machine's load.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesrank import ResponseData, run_study, save
from bayesrank.cli import main
from bayesrank.study.checkpoint import CheckpointMismatch

PLAN = {"protocols": "gold,stability,convergence,bootstrap", "methods": "fast",
        "budgets": (1, 2), "reps": 2, "sizes": (3,), "subsets": 3, "seed": 1, "quiet": True}
CLI_PLAN = ["--protocol", "gold,stability,convergence,bootstrap", "--methods", "fast",
            "--budgets", "1,2", "--reps", "2", "--sizes", "3", "--subsets", "3",
            "--seed", "1", "--quiet"]


def _data() -> ResponseData:
    rng = np.random.default_rng(3)
    p = 1 / (1 + np.exp(-(np.linspace(-1.2, 1.2, 5)[:, None, None]
                          - rng.normal(size=(1, 8, 1)))))
    return ResponseData((rng.random((5, 8, 4)) < p).astype(int),
                        models=[f"m{i}" for i in range(5)])


def _same_frames(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> None:
    assert list(a) == list(b)
    for name in a:
        drop = [c for c in ("seconds",) if c in a[name]]
        pd.testing.assert_frame_equal(a[name].drop(columns=drop), b[name].drop(columns=drop),
                                      check_exact=True)


# the study in a process of its own, which SIGKILLs itself at its KILL_AT-th block write:
# "after" the block is stored, or "during" its write (half the bytes in the temporary file)
_KILLED = """
import os, signal, sys
from pathlib import Path
from bayesrank.study import checkpoint
kill_at, when, how, data, where = int(sys.argv[1]), sys.argv[2], sys.argv[3], *sys.argv[4:6]
plan = eval(sys.argv[6])
real_save, real_write = checkpoint.Checkpoint.save, Path.write_bytes
count = [0]
def save(self, name, value):
    count[0] += 1
    real_save(self, name, value)
    if count[0] == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
def write_bytes(self, payload):
    if count[0] == kill_at and when == "during" and self.parent.name == "checkpoint":
        real_write(self, payload[: len(payload) // 2])
        os.kill(os.getpid(), signal.SIGKILL)
    return real_write(self, payload)
checkpoint.Checkpoint.save, Path.write_bytes = save, write_bytes
if how == "api":
    import bayesrank
    bayesrank.run_study(bayesrank.load(data), checkpoint=where, **plan)
else:
    from bayesrank.cli import main
    main(["study", data, "-o", where, *plan])
sys.exit(3)  # not killed: the study had fewer blocks than KILL_AT
"""


def _kill_at(n: int, when: str, how: str, data: Path, where: Path, plan) -> None:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", _KILLED, str(n), when, how, str(data),
                           str(where), repr(plan)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]


@pytest.mark.slow
def test_a_study_killed_at_several_points_resumes_to_the_uninterrupted_frames(tmp_path):
    data = _data()
    path = save(data, tmp_path / "d.npz")
    whole = run_study(data, **PLAN)
    checkpoint = tmp_path / "checkpoint"
    plan = dict(PLAN)
    # killed right after its 2nd block, then halfway through writing a block, then after
    # the 3rd block of the third process
    added = []
    for n, when in ((2, "after"), (2, "during"), (3, "after")):
        before = _blocks(checkpoint)
        _kill_at(n, when, "api", path, checkpoint, plan)
        added.append(len(_blocks(checkpoint) - before))
        if when == "during":  # the half-written block is a temporary file, not a block
            (partial,) = [p for p in checkpoint.iterdir() if p.name.startswith(".")]
            assert partial.name.lstrip(".").split(".")[0] + ".pkl" not in _blocks(checkpoint)
    assert added == [2, 1, 3]  # each process kept the blocks it finished, and only those
    stored = _blocks(checkpoint)
    resumed = run_study(data, checkpoint=checkpoint, **PLAN)
    _same_frames(resumed.frames, whole.frames)
    again = run_study(data, checkpoint=checkpoint, **PLAN)  # everything stored: loaded
    _same_frames(again.frames, whole.frames)
    assert _blocks(checkpoint) > stored


def _blocks(folder: Path) -> set[str]:
    """The stored blocks (not a temporary file a kill left halfway written)."""
    return {p.name for p in folder.glob("*.pkl") if not p.name.startswith(".")}


def test_every_block_is_found_again_and_nothing_is_recomputed(tmp_path, monkeypatch):
    from bayesrank.study import checkpoint

    data = _data()
    plan = {**PLAN, "methods": ["avg", "bayes", "borda", "elo_tie_draw"]}
    first = run_study(data, checkpoint=tmp_path, **plan)

    def refuse(*args, **kwargs):
        raise AssertionError("a stored block was computed again")

    monkeypatch.setattr(checkpoint.Checkpoint, "save", refuse)
    _same_frames(run_study(data, checkpoint=tmp_path, **plan).frames, first.frames)


@pytest.mark.parametrize("change", [
    {"seed": 2}, {"methods": ["avg", "borda"]}, {"reps": 3}, {"protocols": "gold"},
    {"engine": "reference"}, "data"])
def test_another_call_is_refused_and_fresh_starts_over(tmp_path, change):
    data = _data()
    plan = {**PLAN, "methods": ["avg", "bayes", "borda"], "protocols": "gold,stability"}
    run_study(data, checkpoint=tmp_path, **plan)
    other = (ResponseData(1 - data.R, models=data.models) if change == "data" else data)
    changed = plan if change == "data" else {**plan, **change}
    with pytest.raises(CheckpointMismatch, match=r"another study call.*--fresh \(fresh=True\)"
                       ) as caught:
        run_study(other, checkpoint=tmp_path, **changed)
    assert "\n" not in str(caught.value)
    fresh = run_study(other, checkpoint=tmp_path, fresh=True, **changed)
    _same_frames(fresh.frames, run_study(other, **changed).frames)


def test_a_damaged_block_is_computed_again(tmp_path):
    data = _data()
    plan = {**PLAN, "methods": ["avg", "bayes", "borda"], "protocols": "gold,stability"}
    first = run_study(data, checkpoint=tmp_path, **plan)
    for block in tmp_path.glob("*.pkl"):
        block.write_bytes(block.read_bytes()[:7])
    _same_frames(run_study(data, checkpoint=tmp_path, **plan).frames, first.frames)


def test_a_checkpoint_others_can_write_is_refused(tmp_path):
    tmp_path.chmod(0o777)
    with pytest.raises(CheckpointMismatch, match="other users can write it"):
        run_study(_data(), checkpoint=tmp_path, **{**PLAN, "methods": ["avg"]})


def _csv_frames(folder: Path) -> dict[str, pd.DataFrame]:
    return {p.stem: pd.read_csv(p) for p in sorted(folder.glob("*.csv"))}


@pytest.mark.slow
def test_the_command_line_study_resumes_after_sigkill(tmp_path, capsys):
    data = save(_data(), tmp_path / "d.npz")
    whole, out = tmp_path / "whole", tmp_path / "out"
    assert main(["study", str(data), "-o", str(whole), *CLI_PLAN]) == 0
    _kill_at(4, "after", "cli", data, out, CLI_PLAN)
    assert not list(out.glob("*.csv"))  # killed before any output
    assert len(_blocks(out / "checkpoint")) == 4
    assert main(["study", str(data), "-o", str(out), *CLI_PLAN]) == 0
    _same_frames(_csv_frames(out), _csv_frames(whole))
    capsys.readouterr()
    changed = [*CLI_PLAN[:-3], "--seed", "5", "--quiet"]
    assert main(["study", str(data), "-o", str(out), *changed]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "seed differs" in err and "--fresh" in err
    assert main(["study", str(data), "-o", str(out), *changed, "--fresh"]) == 0
