"""Resumable studies: each finished block of a study kept on disk as it completes.

``run_study(..., checkpoint=DIR)`` (``bayesrank study DATA -o OUT`` keeps it in
``OUT/checkpoint``) writes, as soon as each is done,

- every task's result of :func:`~bayesrank.study.engine.run_tasks` (a block of draws,
  a model pool or stack of pools, a budget's draw), named by the protocol, the
  task list's place in it and a digest of the task's input, and
- every protocol's finished frame,

each atomically (:func:`bayesrank.data.private.write_private`: a temporary file, then a
rename), so a process killed at any moment, even by SIGKILL, leaves whole blocks or
none.  Running the same call again loads what is there and computes the rest.  Every
random choice of a study (draws, pools) is made from the seed before any task runs and
every task is deterministic (``engine``), so the resumed frames equal an uninterrupted
run's; a block's input digest makes a block computed with another split of the work
(another number of Dask workers) simply not found, not wrongly reused.

``DIR/manifest.json`` records the call (a digest of the data, the protocols, methods,
plan, seed, engine and bayesrank's version); a checkpoint of another call is refused
with :class:`CheckpointMismatch` naming what differs, and ``fresh=True``
(``--fresh``) discards it.  Blocks are pickles, so the directory must be private to
its user, as the function store's (:mod:`bayesrank.data.private`).
"""

from __future__ import annotations

import contextvars
import hashlib
import itertools
import json
import os
import pickle
import time
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from bayesrank.data import ResponseData
from bayesrank.data.private import private_dir, read_private, write_private
from bayesrank.errors import BayesrankError

__all__ = ["Checkpoint", "CheckpointMismatch", "open_checkpoint", "run_block"]

_MANIFEST = "manifest.json"
_MISSING = object()


class CheckpointMismatch(BayesrankError, ValueError):
    """The checkpoint directory holds another study call's work."""


def data_digest(data: ResponseData) -> str:
    """A digest of everything in ``data`` a study reads (outcomes, mask, weights, prior,
    names)."""
    digest = hashlib.sha256()
    for part in (data.R, data.mask, data.weights, data.R0):
        array = None if part is None else np.ascontiguousarray(part)
        digest.update(b"-" if array is None else
                      f"{array.dtype.str}{array.shape}".encode() + array.tobytes())
    digest.update(json.dumps([list(map(str, data.models)), list(map(str, data.questions))])
                  .encode())
    return digest.hexdigest()


class Checkpoint:
    """A private directory of finished study blocks (see the module's description)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.saved = 0  # blocks written by this process
        self.loaded = 0  # blocks found on disk

    def _path(self, name: str) -> Path:
        return self.directory / f"{name}.pkl"

    def load(self, name: str) -> Any:
        """The block ``name``, or ``_MISSING`` (absent, damaged, or not private)."""
        payload = read_private(self._path(name))
        if payload is None:
            return _MISSING
        try:
            value = pickle.loads(payload)
        except Exception:  # noqa: BLE001 - a damaged block is computed again
            return _MISSING
        self.loaded += 1
        return value

    def save(self, name: str, value: Any) -> None:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        write_private(self._path(name), lambda tmp: tmp.write_bytes(payload))
        self.saved += 1


def _refuse(directory: Path, why: str) -> CheckpointMismatch:
    return CheckpointMismatch(
        f"the study checkpoint {directory} {why}; rerun with --fresh (fresh=True) to "
        "discard it, or choose another directory")


def open_checkpoint(directory: str | os.PathLike, call: dict[str, Any], *,
                    fresh: bool = False) -> Checkpoint:
    """The checkpoint of ``call`` in ``directory`` (made, mode 0700, if new).

    Raises
    ------
    CheckpointMismatch
        ``directory`` holds the work of another call (the message names the first field
        that differs), or it is not private to the user.
    """
    folder = Path(directory)
    why = private_dir(folder)
    if why is not None:
        raise _refuse(folder, f"cannot be used: {why}")
    manifest = folder / _MANIFEST
    call = {**call, "bayesrank": version("bayesrank")}
    if fresh:
        for old in folder.glob("*.pkl"):
            old.unlink()
        manifest.unlink(missing_ok=True)
    stored = read_private(manifest)
    if stored is None and manifest.exists():
        raise _refuse(folder, "has a manifest.json that is not private to you")
    if stored is not None:
        try:
            before = json.loads(stored)
        except ValueError:
            before = {}
        if before != call:
            changed = [k for k in call if before.get(k) != call[k]] or ["its manifest"]
            raise _refuse(folder, f"holds another study call's work ({changed[0]} differs)")
    else:
        if any(folder.glob("*.pkl")):
            raise _refuse(folder, "holds blocks without a manifest")
        write_private(manifest, lambda tmp: tmp.write_text(json.dumps(call, indent=1)))
    return Checkpoint(folder)


# -- the protocol being run, for run_tasks --------------------------------------------------
_SCOPE: contextvars.ContextVar[tuple[Checkpoint, str, Iterator[int]] | None] = (
    contextvars.ContextVar("bayesrank_study_checkpoint", default=None))


def run_block(saved: Checkpoint | None, name: str, func: Callable[..., Any], *args: Any,
              **kwargs: Any) -> tuple[Any, float]:
    """``(func(*args, **kwargs), seconds)`` for the protocol frame ``name``, or the
    frame and seconds stored for it; the tasks ``func`` runs are kept too (:func:`tasks`)."""
    if saved is not None:
        found = saved.load(f"frame-{name}")
        if found is not _MISSING:
            return found
    start = time.perf_counter()
    token = _SCOPE.set(None if saved is None else (saved, name, itertools.count()))
    try:
        frame = func(*args, **kwargs)
    finally:
        _SCOPE.reset(token)
    done = (frame, time.perf_counter() - start)
    if saved is not None:
        saved.save(f"frame-{name}", done)
    return done


class TaskBlocks:
    """The stored results of one task list (one :func:`run_tasks` call) of a protocol."""

    def __init__(self, saved: Checkpoint, prefix: str, func: Callable[..., Any],
                 items: Sequence[Any]) -> None:
        self.saved = saved
        self.names = [f"{prefix}-{_digest(func, item)}" for item in items]
        self.kept: set[str] = set()

    def found(self) -> dict[int, Any]:
        """The results already stored, by task index."""
        out = {}
        for i, name in enumerate(self.names):
            value = self.saved.load(name)
            if value is not _MISSING:
                out[i] = value
        return out

    def keep(self, index: int, value: Any) -> None:
        """Store task ``index``'s result (once: a task list may repeat an input)."""
        name = self.names[index]
        if name not in self.kept:
            self.kept.add(name)
            self.saved.save(name, value)


def _digest(func: Callable[..., Any], item: Any) -> str:
    text = pickle.dumps((func.__module__, func.__qualname__, item), protocol=4)
    return hashlib.sha256(text).hexdigest()[:24]


def tasks(func: Callable[..., Any], items: Sequence[Any]) -> TaskBlocks | None:
    """The stored blocks of this task list of the protocol being run with a checkpoint
    (None when there is none)."""
    scope = _SCOPE.get()
    if scope is None:
        return None
    saved, name, counter = scope
    return TaskBlocks(saved, f"{name}-{next(counter)}", func, items)
