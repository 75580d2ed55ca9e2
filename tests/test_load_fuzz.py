"""Fuzzed input (issue 50, part 5): every loader of ``bayesrank.data.io`` and the signals
loader, given truncated files, random bytes, wrong dtypes and huge declared sizes, ends in
a one-line DataError/LoadError or a validated result: never another exception, a hang
(each load has a watchdog that ends the test process after ``HANG_S``, even inside C code,
which fails the test where hypothesis' deadline could only complain after the call had
returned) or a memory blow-up (each example's peak allocation, as ``tracemalloc`` sees
numpy's and Python's, stays under ``PEAK``)."""

from __future__ import annotations

import faulthandler
import io
import json
import os
import resource
import struct
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayesrank import ResponseData, load, save
from bayesrank.data.signals import Signals, load_signals
from bayesrank.errors import DataError

PEAK = 64 * 2**20  # bytes; the files here are a few kilobytes
HANG_S = 60  # a load of a few kilobytes that takes this long is a hang
ROOM = 2 * 2**30  # more address space each example may take (threads' stacks included)
EXAMPLES = int(os.environ.get("BAYESRANK_FUZZ_EXAMPLES", "60"))  # more: a longer search
FUZZ = settings(max_examples=EXAMPLES, deadline=20_000, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])
SUFFIXES = [".csv", ".jsonl", ".parquet", ".npz", ".npy", ".nc"]
TRIED: dict[str, int] = {}
pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(),
                                reason="the memory guard reads /proc (Linux)")


def _data() -> ResponseData:
    R = np.random.default_rng(0).integers(0, 2, (3, 4, 2))
    return ResponseData(R, models=["a", "b", "c"], R0=R[:, :, :1])


def _valid(suffix: str, folder: Path) -> bytes:
    data = _data()
    if suffix == ".npy":
        data = ResponseData(data.R)
    return save(data, folder / f"valid{suffix}").read_bytes()


def _outcome(load_it, what: str) -> object:
    """Call ``load_it``; a result, or the one-line DataError it raised.  Anything else
    (another exception, too much memory) fails the test."""
    TRIED[what] = TRIED.get(what, 0) + 1
    tracemalloc.start()
    limit = resource.getrlimit(resource.RLIMIT_AS)
    # and a hard stop for what tracemalloc does not see (C libraries' own allocations): a
    # blow-up is a MemoryError here, not a machine out of memory
    resource.setrlimit(resource.RLIMIT_AS, (_address_space() + ROOM, limit[1]))
    # a hang ends the process with every thread's stack on stderr: the run fails, not waits
    faulthandler.dump_traceback_later(HANG_S, exit=True)
    try:
        result = load_it()
    except DataError as exc:
        result = exc
        assert "\n" not in str(exc).strip(), f"{what}: a message of several lines: {exc}"
    finally:
        faulthandler.cancel_dump_traceback_later()
        resource.setrlimit(resource.RLIMIT_AS, limit)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < PEAK, f"{what}: {peak / 2**20:.0f} MiB allocated"
    assert isinstance(result, ResponseData | Signals | DataError)
    return result


def _address_space() -> int:
    """This process's virtual memory now, in bytes (``VmSize`` of /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmSize")


def _mutate(whole: bytes, cut: int, flips: list[tuple[int, int]], tail: bytes) -> bytes:
    data = bytearray(whole[: cut % (len(whole) + 1)])
    for where, value in flips:
        if data:
            data[where % len(data)] = value
    return bytes(data) + tail


mutations = st.tuples(st.integers(0, 10**6),
                      st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                               max_size=8),
                      st.binary(max_size=64))


@pytest.mark.parametrize("suffix", SUFFIXES)
@FUZZ
@given(mutation=mutations)
def test_a_damaged_file_is_one_line_or_a_result(tmp_path_factory, suffix, mutation):
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / f"damaged{suffix}"
    path.write_bytes(_mutate(_valid(suffix, folder), *mutation))
    _outcome(lambda: load(path), f"damaged {suffix}")


@pytest.mark.parametrize("suffix", SUFFIXES)
@FUZZ
@given(payload=st.binary(max_size=2048))
def test_random_bytes_are_one_line_or_a_result(tmp_path_factory, suffix, payload):
    path = tmp_path_factory.mktemp("fuzz") / f"random{suffix}"
    path.write_bytes(payload)
    _outcome(lambda: load(path), f"random {suffix}")


cell_values = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                        st.text(max_size=5), st.booleans(), st.none())


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
@FUZZ
@given(column=st.sampled_from(["model", "question", "trial", "outcome"]),
       values=st.lists(cell_values, min_size=24, max_size=24))
def test_a_table_with_wrong_values_is_one_line_or_a_result(tmp_path_factory, suffix, column,
                                                          values):
    frame = _data().to_frame()
    frame[column] = pd.Series(values, dtype=object)
    path = tmp_path_factory.mktemp("fuzz") / f"typed{suffix}"
    try:
        _write_table(frame, path)
    except (ValueError, TypeError, OverflowError, ImportError):
        return  # pandas cannot write this mixture; nothing to read
    result = _outcome(lambda: load(path), f"wrong values {suffix}")
    if isinstance(result, ResponseData) and column == "outcome":
        # read only when every outcome was a whole number >= 0: those, in the cells
        assert sorted(result.R.ravel().tolist()) == sorted(int(v) for v in values)


def _write_table(frame: pd.DataFrame, path: Path) -> None:
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    elif path.suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True, default_handler=str)
    else:
        frame.astype({c: str for c in frame.columns if frame[c].dtype == object}
                     ).to_parquet(path, index=False)


@FUZZ
@given(dtype=st.sampled_from(["<f8", "<c16", "<U3", "|b1", "<i8", "<u8", "|S2", "<m8[s]",
                              "<M8[D]", "<f2"]),
       shape=st.lists(st.integers(0, 5), min_size=0, max_size=4),
       member=st.sampled_from(["R", "mask", "R0", "weights", "models"]))
def test_an_archive_of_wrong_dtypes_is_one_line_or_a_result(tmp_path_factory, dtype, shape,
                                                            member):
    arrays = {k: np.asarray(v) for k, v in (
        ("R", _data().R), ("models", np.array(["a", "b", "c"])))}
    arrays[member] = np.zeros(shape, dtype=dtype)
    folder = tmp_path_factory.mktemp("fuzz")
    np.savez(folder / "typed.npz", **arrays)
    np.save(folder / "typed.npy", arrays[member])
    _outcome(lambda: load(folder / "typed.npz"), "wrong dtypes .npz")
    _outcome(lambda: load(folder / "typed.npy"), "wrong dtypes .npy")


def _npy_header(shape: tuple[int, ...], dtype: str = "<i8") -> bytes:
    header = repr({"descr": dtype, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (-(len(header) + 11) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header


huge_shapes = st.lists(st.integers(1, 10**9), min_size=1, max_size=3).filter(
    lambda s: int(np.prod(s, dtype=object)) > 10**7).map(tuple)


@FUZZ
@given(shape=huge_shapes, dtype=st.sampled_from(["<i8", "|i1", "<f8"]),
       body=st.binary(max_size=256))
def test_a_huge_declared_array_is_refused_not_allocated(tmp_path_factory, shape, dtype, body):
    folder = tmp_path_factory.mktemp("fuzz")
    npy = _npy_header(shape, dtype) + body
    (folder / "huge.npy").write_bytes(npy)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("R.npy", npy)
    (folder / "huge.npz").write_bytes(buffer.getvalue())
    for name in ("huge.npy", "huge.npz"):
        assert isinstance(_outcome(lambda n=name: load(folder / n), "huge sizes npy/npz"),
                          DataError)


@FUZZ
@given(trial=st.integers(-2**63, 2**63 - 1), question=st.text(max_size=3))
def test_a_huge_declared_trial_or_odd_label_in_a_table(tmp_path_factory, trial, question):
    frame = _data().to_frame()
    frame.loc[0, "trial"] = trial
    frame.loc[1, "question"] = question
    folder = tmp_path_factory.mktemp("fuzz")
    for suffix in (".csv", ".jsonl", ".parquet"):
        _write_table(frame, folder / f"t{suffix}")
        _outcome(lambda s=suffix: load(folder / f"t{s}"), f"huge trial {suffix}")


@FUZZ
@given(dtype=st.sampled_from(["<f8", "<c16", "|b1", "<i8", "<u8", "|S2", "<f2", "<i2", "|u1"]),
       shape=st.lists(st.integers(0, 5), min_size=0, max_size=4),
       member=st.sampled_from(["R", "mask", "R0", "weights"]))
def test_a_netcdf_of_wrong_dtypes_is_one_line_or_a_result(tmp_path_factory, dtype, shape,
                                                          member):
    h5py = pytest.importorskip("h5py")
    path = tmp_path_factory.mktemp("fuzz") / "typed.nc"
    save(_data(), path)
    with h5py.File(path, "a") as f:  # one variable replaced by another dtype and shape
        if member in f:
            del f[member]
        f.create_dataset(member, data=np.zeros(shape, dtype=dtype))
    _outcome(lambda: load(path), "wrong dtypes .nc")


def test_a_netcdf_declaring_a_huge_variable_is_refused(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "huge.nc"
    save(_data(), path)
    with h5py.File(path, "a") as f:  # chunked, never written: a tiny file, 10**13 cells
        del f["R"]
        f.create_dataset("R", shape=(10**4, 10**5, 10**4), dtype="i1", chunks=(1, 1, 16))
    assert path.stat().st_size < 10**6
    assert isinstance(_outcome(lambda: load(path), "huge NetCDF"), DataError)


signal_values = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
                          st.integers(-10, 10), st.none())


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
@FUZZ
@given(values=st.lists(signal_values, min_size=24, max_size=24), mutation=mutations,
       damage=st.booleans())
def test_the_signals_loader_is_one_line_or_a_result(tmp_path_factory, suffix, values,
                                                    mutation, damage):
    frame = _data().to_frame().drop(columns="outcome")
    frame["is_correct"] = np.random.default_rng(1).integers(0, 2, len(frame))
    frame["mean_logprob"] = pd.Series(values, dtype=object)
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / f"signals{suffix}"
    try:
        _write_table(frame, path)
    except (ValueError, TypeError, OverflowError):
        return
    if damage:
        path.write_bytes(_mutate(path.read_bytes(), *mutation))
    _outcome(lambda: load_signals(path, signals=["is_correct", "mean_logprob"]),
             f"signals {suffix}")


def test_zz_count_of_cases(capsys):
    """The number of cases tried, for the note (run last in this module; under xdist each
    worker counts its own: ``pytest -p no:xdist tests/test_load_fuzz.py`` for the total)."""
    with capsys.disabled():
        print("\nfuzzed loader cases:", json.dumps(TRIED), "total", sum(TRIED.values()))


@pytest.mark.parametrize("outcome", [10**9, 2**62, 1e18, 1e300, -1e300])
def test_an_outcome_implying_a_huge_number_of_categories_is_refused(tmp_path, outcome):
    """Found by the fuzzing above: an outcome of 10**9 in a table made the data ask for
    10**9 category weights (8 GB); 1e300 overflowed the cast to a misleading message."""
    frame = _data().to_frame()
    frame["outcome"] = frame["outcome"].astype(object)
    frame.loc[0, "outcome"] = outcome
    frame.to_csv(tmp_path / "t.csv", index=False)
    error = _outcome(lambda: load(tmp_path / "t.csv"), "huge outcome")
    assert isinstance(error, DataError) and "category indices" in str(error)


def test_complex_weights_are_refused_not_cast(tmp_path):
    """Found by the fuzzing: complex weights in an archive were cast to their real part."""
    np.savez(tmp_path / "w.npz", R=_data().R, weights=np.array([0, 1 + 2j]))
    error = _outcome(lambda: load(tmp_path / "w.npz"), "complex weights")
    assert isinstance(error, DataError) and "complex" in str(error)
