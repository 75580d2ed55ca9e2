"""Where the study's tasks run: in this process (default) or on a Dask cluster.

A protocol splits its work into independent tasks (blocks of draws, model pools,
budgets) and hands them to :func:`run_tasks`.  Everything random (draws, pools)
is drawn in the calling process before any task starts, and every ranking rule
is deterministic (the seeded rules carry their seed), so a task's result does
not depend on where or in which order it runs: a Dask run gives the same frames
as the serial run with the same seed.

With ``client`` (a :class:`distributed.Client`) the shared inputs (the data, the
method list, the draws) are scattered to every worker once and the tasks are
submitted with :meth:`~distributed.Client.map`; results are gathered in task
order.  Dask is an optional dependency (``pip install bayesrank[cluster]``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bayesrank.study import checkpoint
from bayesrank.study.progress import Progress

__all__ = ["connect", "run_tasks"]

#: how long :func:`connect` keeps trying to reach a scheduler before it gives up
CONNECT_TIMEOUT = "10s"


def connect(address: str) -> Any:
    """A :class:`distributed.Client` for the scheduler at ``address`` (e.g. tcp://host:8786)."""
    try:
        from distributed import Client
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("running a study on a cluster needs dask.distributed: "
                          "pip install 'bayesrank[cluster]'") from exc
    try:
        return Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:  # the CLI reports ValueErrors as one clean line
        raise ValueError(f"cannot reach the Dask scheduler at {address!r}: {exc}") from exc


class _Shared:
    """The shared keyword arguments of a task list, sent to the cluster as one object."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values


def _kept(box: _Shared) -> _Shared:
    """The task that holds ``box`` on the cluster (an object dask does not look inside)."""
    return box


def _call(item: Any, task: Callable[..., Any], box: _Shared) -> Any:
    return task(item, **box.values)


def run_tasks(
    func: Callable[..., Any],
    items: Sequence[Any],
    *,
    client: Any = None,
    progress: Progress | None = None,
    label: str = "",
    unit: str = "tasks",
    **shared: Any,
) -> list[Any]:
    """``[func(item, **shared) for item in items]``, serially or on ``client``.

    ``func`` must be a module-level function (picklable) for the Dask path.  Inside
    ``run_study(..., checkpoint=DIR)`` each result is stored as it arrives and results
    stored before are not computed again (:mod:`bayesrank.study.checkpoint`).
    """
    progress = progress if progress is not None else Progress(quiet=True)
    kept = checkpoint.tasks(func, items)  # run_study(checkpoint=...): stored blocks
    done = kept.found() if kept is not None else {}
    todo = [i for i in range(len(items)) if i not in done]

    def finished(index: int, value: Any) -> None:
        done[index] = value
        if kept is not None:
            kept.keep(index, value)  # as soon as it is done: a kill loses only the running
        progress.advance()

    progress.start(label, len(items), unit)
    try:
        for _ in done:
            progress.advance()
        if client is None:
            for i in todo:
                finished(i, func(items[i], **shared))
        elif todo:
            from distributed import as_completed

            # one task that holds the shared arguments, fetched once by each worker: unlike
            # scattered data the scheduler can make it again when its worker is lost, and
            # no broadcast is in flight when a worker dies (a broadcast to a dying worker
            # left the study waiting forever: dask/distributed#5704, #3149)
            box = client.submit(_kept, _Shared(shared), pure=False)
            futures = client.map(_call, [items[i] for i in todo], task=func, box=box,
                                 pure=False)
            index = {future.key: i for future, i in zip(futures, todo, strict=True)}
            # a worker lost mid-run: the scheduler runs its tasks again elsewhere
            for future, value in as_completed(futures, with_results=True):
                finished(index[future.key], value)
        return [done[i] for i in range(len(items))]
    finally:
        progress.finish()
