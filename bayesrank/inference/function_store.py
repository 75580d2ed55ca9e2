"""Compiled functions of a model kept on disk between processes: nutpie's log-density,
gradient and expansion with the initial points (:mod:`.nutpie_models`), and the pointwise
log-likelihood (:mod:`.log_likelihood`).

Compiling one of bayesrank's models for nutpie's Numba build with PyTensor's and Numba's
caches warm still took 1.3-1.5 s (AIME and ZeroEval 2PL, idle), most of it PyTensor
building and rewriting the log-density and its gradient; loaded from here, 0.6-0.7 s
(``docs/samplers.md``).
The rewritten functions are the same for every data set of the same structure, which
:func:`bayesrank.inference.cache.structure_key` already relies on within a process: so
they are pickled here under that key, and a later process loads them and puts its own
data into their shared variables instead of building them again.

The key adds everything else the graph depends on: the source of ``bayesrank.models``
and of the modules that build the functions, the versions of the libraries that compile
them, and PyTensor's ``floatX`` and ``mode``.  A file that does not load, or whose data
variables do not match the model's by name, shape and dtype, is compiled anew and
replaced.  Files are written whole (a temporary file, then a rename, so processes filling
a cold store at once each see a whole file or none) and the oldest are removed beyond
:data:`MAX_FILES`.

Loading a pickle runs the code it names, so the store is private to its user
(:mod:`bayesrank.data.private`): it is created with mode 0700 and its files 0600, and a
store directory or file owned by another user or writable by others is never read: one
warning, and the process compiles as if there were no store.

``BAYESRANK_FUNCTION_CACHE=0`` turns the store off; ``BAYESRANK_FUNCTION_CACHE_DIR`` moves
it (default: ``bayesrank-functions`` in PyTensor's compile directory).
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import warnings
from collections.abc import Callable, Hashable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np
import pymc as pm

__all__ = ["MAX_FILES", "load_or_make", "put_data", "store_dir"]

#: Files kept in the store (up to two a model structure: its nutpie functions and its
#: log-likelihood, 0.1-1.3 MB each); the least recently used beyond this are removed.
MAX_FILES = 128

_LIBRARIES = ("pymc", "pytensor", "nutpie", "numba", "numpy")


def enabled() -> bool:
    return os.environ.get("BAYESRANK_FUNCTION_CACHE", "1") != "0"


def store_dir() -> Path:
    """Where the functions are kept (``BAYESRANK_FUNCTION_CACHE_DIR`` or PyTensor's compiledir)."""
    chosen = os.environ.get("BAYESRANK_FUNCTION_CACHE_DIR")
    if chosen:
        return Path(chosen)
    import pytensor

    return Path(pytensor.config.compiledir) / "bayesrank-functions"


@functools.cache
def _code_version() -> str:
    """A digest of the code that shapes the compiled graph and of the compiling libraries."""
    import pytensor

    import bayesrank.models

    digest = hashlib.sha256()
    sources = sorted(Path(p) for d in bayesrank.models.__path__ for p in Path(d).rglob("*.py"))
    here = Path(__file__)
    for path in (*sources, here.with_name("nutpie_models.py"),
                 here.with_name("log_likelihood.py"), here):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    for library in _LIBRARIES:
        digest.update(f"{library}={version(library)}".encode())
    digest.update(f"floatX={pytensor.config.floatX} mode={pytensor.config.mode}".encode())
    return digest.hexdigest()


@functools.cache
def _refuse(directory: Path, why: str) -> None:
    """Warn once per process and directory that the store is not used."""
    warnings.warn(f"bayesrank: not using the function store {directory}: {why}; compiling "
                  "without it (point BAYESRANK_FUNCTION_CACHE_DIR at a directory of your own)",
                  RuntimeWarning, stacklevel=4)


def _trusted_dir() -> Path | None:
    """The store directory, made private (0700) if new; None (one warning) when another
    user owns it or can write it."""
    from bayesrank.data.private import private_dir

    directory = store_dir()
    why = private_dir(directory)
    if why is not None:
        _refuse(directory, why)
        return None
    return directory


def _path(key: Hashable) -> Path:
    text = repr(key) + _code_version()
    return store_dir() / f"{hashlib.sha256(text.encode()).hexdigest()}.pkl"


def _load(path: Path, model: pm.Model) -> Any | None:
    """The functions stored at ``path`` with ``model``'s data, or None (absent, damaged,
    or a shared variable that is not one of ``model``'s data variables of that shape and
    dtype)."""
    from bayesrank.data.private import distrust, read_private

    try:
        why = distrust(os.stat(path))
    except OSError:  # absent
        return None
    if why:
        _refuse(path, why)
        return None
    payload = read_private(path)  # None: absent, a link, or swapped for an untrusted file
    if payload is None:
        return None
    try:
        stored = pickle.loads(payload)
    except Exception:  # noqa: BLE001 - a damaged, truncated or outdated file is compiled anew
        return None
    if not put_data(stored, model):
        return None
    try:
        os.utime(path)
    except OSError:
        pass
    return stored


def put_data(functions: tuple, model: pm.Model) -> bool:
    """Copy ``model``'s data into the shared variables of the PyTensor functions in
    ``functions``, matched by name; False (nothing copied) when one of them is not a data
    variable or dimension length of ``model`` with that shape (any length along
    :data:`~bayesrank.inference.cache.DATA_ONLY_DIMS`) and dtype.  Random generators are
    left alone."""
    from pytensor.tensor.random.type import RandomType

    from bayesrank.inference.cache import data_only_axes, same_layout

    data = {name: np.asarray(length.get_value(borrow=True))
            for name, length in model.dim_lengths.items() if hasattr(length, "get_value")}
    data.update({v.name: np.asarray(v.get_value(borrow=True)) for v in model.data_vars})
    shared = [var for fn in functions if hasattr(fn, "get_shared") for var in fn.get_shared()
              if not isinstance(var.type, RandomType)]
    for var in shared:
        old, new = np.asarray(var.get_value(borrow=True)), data.get(var.name)
        if new is None or not same_layout(old, new, data_only_axes(model, var.name)):
            return False
    for var in shared:
        var.set_value(data[var.name].copy())
    return True


def _store(path: Path, value: Any) -> None:
    from bayesrank.data.private import write_private

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as out:
            pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)

    try:
        write_private(path, write)
    except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        return  # a store that cannot be written only costs the next process a compile
    _prune(path.parent)


def _prune(directory: Path) -> None:
    try:
        files = sorted((p for p in directory.glob("*.pkl") if not p.name.startswith(".")),
                       key=lambda p: p.stat().st_mtime, reverse=True)
        for old in files[MAX_FILES:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass


def load_or_make(key: Hashable | None, model: pm.Model, make: Callable[[], tuple]) -> tuple:
    """``make()`` (a tuple holding PyTensor functions), or the copy stored under ``key``.

    A stored copy gets ``model``'s data in its shared variables.  ``key`` None, the store
    turned off, or a store directory that is not private to the user (one warning):
    ``make()``, not stored.
    """
    if key is None or not enabled() or _trusted_dir() is None:
        return make()
    path = _path(key)
    stored = _load(path, model)
    if stored is not None:
        return stored
    value = make()
    _store(path, value)
    return value
