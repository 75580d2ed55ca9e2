"""What a data file declares is checked against what it holds before memory is spent on it.

A ``.npy`` header (alone, or as a member of an ``.npz`` archive) states an array's
shape and dtype, and numpy allocates that much before reading: a header of a few
bytes declaring a shape of 10**12 cells would ask for terabytes.  NetCDF (HDF5)
variables may declare any shape, their unwritten chunks read as the fill value.
:func:`check_npy` refuses a header whose declared size differs from the bytes that
follow it (truncated, damaged or forged), :func:`check_size` an array larger than
:func:`memory_limit` (half of this machine's memory), each with a one-line
:class:`~bayesrank.errors.LoadError`.
"""

from __future__ import annotations

import functools
import os
from typing import IO

import numpy as np

from bayesrank.errors import LoadError

__all__ = ["check_npy", "check_size", "memory_limit"]


@functools.cache
def memory_limit() -> int:
    """Bytes one loaded array may take: half the physical memory (64 GiB if unknown)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 64 * 2**30


def check_size(nbytes: int, what: str) -> None:
    """Refuse an array of ``nbytes`` bytes when it exceeds :func:`memory_limit`."""
    if nbytes > memory_limit():
        raise LoadError(f"{what} declares {nbytes:,} bytes of data, more than half of this "
                        f"machine's memory ({memory_limit():,} bytes); it is damaged or not "
                        "a data set bayesrank can hold")


def check_npy(stream: IO[bytes], available: int, what: str) -> None:
    """Read the ``.npy`` header at the start of ``stream`` (``available`` bytes in all)
    and refuse it unless the array it declares is exactly the bytes that follow."""
    try:
        major, _ = np.lib.format.read_magic(stream)
        if major not in (1, 2, 3):
            raise ValueError(f"unknown .npy format version {major}")
        size = 2 if major == 1 else 4
        length = int.from_bytes(stream.read(size), "little")
        if length > available - stream.tell():  # numpy would allocate it before reading
            raise ValueError(f"a header of {length:,} bytes in a file of {available:,}")
        stream.seek(-size, 1)
        read = (np.lib.format.read_array_header_1_0 if major == 1
                else np.lib.format.read_array_header_2_0)
        shape, _, dtype = read(stream)
    except Exception as exc:  # noqa: BLE001 - numpy parses the header with tokenize, ast
        raise LoadError(f"{what} is not a valid .npy array: {' '.join(str(exc).split())}"
                        ) from None
    if dtype.hasobject:
        raise LoadError(f"{what} holds pickled objects, which bayesrank never loads")
    declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
    check_size(declared, what)
    held = available - stream.tell()
    if declared != held:
        raise LoadError(f"{what} declares a {dtype} array of shape {tuple(shape)} "
                        f"({declared:,} bytes) but holds {held:,} bytes: it is truncated "
                        "or damaged")
