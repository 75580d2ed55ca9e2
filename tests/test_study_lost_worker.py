"""A Dask worker lost mid-study (issue 50, part 2): the scheduler runs its tasks again on
another worker and the study's frames are those of the serial run."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesrank import ResponseData, run_study

distributed = pytest.importorskip("distributed")

PLAN = {"protocols": "stability,convergence,bootstrap",
        "methods": ["avg", "bayes", "borda", "copeland", "elo_tie_draw", "bradley_terry_map"],
        "budgets": (1, 2, 4), "reps": 3, "sizes": (3, 4), "subsets": 4, "seed": 3,
        "quiet": True}


class KillOnce(distributed.WorkerPlugin):
    """SIGKILL the worker's own process as it starts a study task, on the first worker
    to start one (a marker file, created exclusively, makes it once in all)."""

    name = "kill-once"

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def transition(self, key, start, finish, **kwargs):
        name = key[0] if isinstance(key, tuple) else key
        if finish != "executing" or not str(name).startswith("_call"):
            return
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os.kill(os.getpid(), signal.SIGKILL)  # mid-task, the process gone at once


def _data() -> ResponseData:
    rng = np.random.default_rng(5)
    p = 1 / (1 + np.exp(-(np.linspace(-1, 1, 6)[:, None, None] - rng.normal(size=(1, 9, 1)))))
    return ResponseData((rng.random((6, 9, 4)) < p).astype(int))


@pytest.mark.slow
def test_a_killed_worker_costs_a_rerun_not_the_study(tmp_path):
    data = _data()
    serial = run_study(data, **PLAN)
    marker = tmp_path / "killed"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        client.register_plugin(KillOnce(str(marker)))
        pids = set(client.run(os.getpid).values())
        on_cluster = run_study(data, client=client, **PLAN)
        survivors = set(client.run(os.getpid).values())
    assert Path(marker).exists()  # a worker was killed ...
    assert not pids <= survivors  # ... and it was one of the two (since replaced)
    assert list(on_cluster.frames) == list(serial.frames)
    for name in serial.frames:
        drop = [c for c in ("seconds",) if c in serial[name]]
        pd.testing.assert_frame_equal(on_cluster[name].drop(columns=drop),
                                      serial[name].drop(columns=drop), check_exact=True)


class MarkTasks(distributed.WorkerPlugin):
    """Create ``marker`` when any worker starts a study task."""

    name = "mark-tasks"

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def transition(self, key, start, finish, **kwargs):
        name = key[0] if isinstance(key, tuple) else key
        if finish == "executing" and str(name).startswith("_call"):
            Path(self.marker).touch()


@pytest.mark.slow
def test_a_lost_client_resumes_from_the_blocks_that_came_back(tmp_path):
    """The study's checkpoint outlives its cluster: a rerun on a new cluster of the same
    size computes nothing again, and the frames are the serial run's."""
    data, where = _data(), tmp_path / "checkpoint"
    plan = {**PLAN, "protocols": "stability,bootstrap"}
    serial = run_study(data, **plan)
    for attempt in ("first", "resumed"):
        marker = tmp_path / attempt
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=":0") as cluster, \
                distributed.Client(cluster) as client:
            client.register_plugin(MarkTasks(str(marker)))
            result = run_study(data, client=client, checkpoint=where, **plan)
        for name in serial.frames:
            drop = [c for c in ("seconds",) if c in serial[name]]
            pd.testing.assert_frame_equal(result[name].drop(columns=drop),
                                          serial[name].drop(columns=drop), check_exact=True)
    assert (tmp_path / "first").exists()  # the first run computed on the cluster ...
    assert not (tmp_path / "resumed").exists()  # ... the rerun only read its blocks
