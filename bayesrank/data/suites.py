"""Reading a suite of benchmarks from several files or a folder (``bayesrank report a b``).

Each path gives its benchmarks, named so that models are matched across them by name:

- an evaluation harness's logs (a file or folder, :mod:`bayesrank.data.harness`): every
  task, named for the task (:func:`~bayesrank.data.io.load_benchmarks`);
- a ``.npz`` in the paper's layout (one outcome tensor per key): every tensor, named for
  its key (``math_l5``, ``gsm8k``);
- any other data file (bayesrank's own ``.npz``, ``.csv``, ``.jsonl``, ``.parquet``,
  ``.nc``, ``.npy``): one benchmark, named for the file's stem;
- a folder that is not harness logs: every data file directly inside it, as above.

Two benchmarks with one name are refused (a LoadError naming both files), never merged.
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bayesrank.data import harness
from bayesrank.data.io import load, load_benchmarks
from bayesrank.data.response import ResponseData
from bayesrank.errors import LoadError

__all__ = ["DATA_SUFFIXES", "SuiteReadOptions", "benchmark_files", "describe", "is_plain_folder",
           "read_suite"]

#: the files a folder's benchmarks are read from
DATA_SUFFIXES = (".npz", ".npy", ".csv", ".jsonl", ".parquet", ".nc")


@dataclass(frozen=True)
class SuiteReadOptions:
    """How every file of a suite is read (:func:`bayesrank.load`'s options of the same names).

    Attributes
    ----------
    columns : mapping, optional
        Long tables' column names, ``{our name: yours}``.
    trials : int, optional
        Tables are wide success counts out of ``trials``.
    metric : str, optional
        The score to read from harness logs that hold several.
    """

    columns: Mapping[str, str] | None = None
    trials: int | None = None
    metric: str | None = None


def benchmark_files(folder: str | Path) -> list[Path]:
    """The data files (:data:`DATA_SUFFIXES`) directly inside ``folder``, by name."""
    return sorted(f for f in Path(folder).iterdir()
                  if f.is_file() and f.suffix.lower() in DATA_SUFFIXES)


def is_plain_folder(path: str | Path) -> bool:
    """A folder that is not an evaluation harness's logs (so: a folder of data files)."""
    p = Path(path)
    return p.is_dir() and harness.format_of(p, None) is None


def _npz_keys(path: Path) -> set[str]:
    """The arrays' names in a ``.npz`` (its members' names: no array is read); {"R"} for a
    file that is no zip archive, which :func:`~bayesrank.data.io.load` then refuses."""
    try:
        with zipfile.ZipFile(path) as archive:
            return {n.removesuffix(".npy") for n in archive.namelist() if n.endswith(".npy")}
    except (zipfile.BadZipFile, OSError):
        return {"R"}


def _benchmarks_of(path: Path, options: SuiteReadOptions) -> dict[str, ResponseData]:
    if harness.format_of(path, None) is not None:
        return load_benchmarks(path, metric=options.metric)
    if path.suffix.lower() == ".npz" and "R" not in _npz_keys(path):
        return load_benchmarks(path)  # the paper's layout: one tensor per key
    return {path.stem: load(path, columns=options.columns, trials=options.trials,
                            metric=options.metric)}


def read_suite(paths: Sequence[str | Path],
               options: SuiteReadOptions | None = None) -> dict[str, ResponseData]:
    """Every benchmark of ``paths`` (files, harness logs or plain folders), by name.

    Parameters
    ----------
    paths : sequence of path
        Read as the module docstring says; a plain folder stands for its data files.
    options : SuiteReadOptions, optional

    Returns
    -------
    dict of str to ResponseData
        In the order of the paths (and of the keys or tasks within one).

    Raises
    ------
    LoadError
        A folder without data files, a benchmark whose models have no names, or two
        benchmarks with one name.
    """
    o = options or SuiteReadOptions()
    files: list[Path] = []
    for path in map(Path, paths):
        if is_plain_folder(path):
            inside = benchmark_files(path)
            if not inside:
                raise LoadError(f"{path} holds no benchmark file "
                                f"({', '.join(DATA_SUFFIXES)}) and no harness logs")
            files += inside
        else:
            files.append(path)
    suite: dict[str, ResponseData] = {}
    origin: dict[str, Path] = {}
    for path in files:
        for name, data in _benchmarks_of(path, o).items():
            if data.models == tuple(f"model_{i}" for i in range(data.L)):
                raise LoadError(
                    f"{path} names no models (benchmark {name!r}), so its models would be "
                    "matched to the other benchmarks' by position; a suite matches models by "
                    "name: store them (a 'models' array beside the tensor, a model column)")
            if name in suite and origin[name].resolve() == path.resolve():
                raise LoadError(f"{path} is given twice (benchmark {name!r}); give each "
                                "benchmark's file once")
            if name in suite:
                raise LoadError(
                    f"two benchmarks are named {name!r} ({origin[name]} and {path}); a "
                    "benchmark is named for its file (or its key in a multi-benchmark .npz, "
                    "its task in harness logs): rename one of the files")
            suite[name], origin[name] = data, path
    return suite


def describe(suite: Mapping[str, Any]) -> str:
    """``name (L x M), ...`` for progress lines and messages."""
    return ", ".join(f"{name} ({d.L} x {d.M})" for name, d in suite.items())
