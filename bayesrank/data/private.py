"""Files only their user may have written: the function store and study checkpoints.

Both keep pickles, and unpickling runs whatever code the file names, so a pickle
that someone else could have written is code execution by that someone.  As pip
does with its cache and ssh with keys, a directory or file is trusted only when it
is owned by the current user and no other user (group or others) can write it;
whatever is not trusted is not read.

:func:`private_dir` makes (mode 0700) or checks a directory, :func:`read_private`
opens a file without following a symbolic link and checks the opened file itself
(``fstat`` of the descriptor, so the file cannot be swapped between the check and
the read), and :func:`write_private` writes one atomically with mode 0600.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from bayesrank.data.io import atomic_write

__all__ = ["distrust", "private_dir", "read_private", "write_private"]

#: Bits that let someone other than the owner change a file or a directory's entries.
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH


def distrust(info: os.stat_result) -> str | None:
    """Why a file or directory with this ``stat`` cannot be trusted, or None."""
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return f"it is owned by user id {info.st_uid}, not by you ({os.geteuid()})"
    if info.st_mode & _OTHERS_WRITE:
        return f"other users can write it (mode {stat.filemode(info.st_mode)})"
    return None


def private_dir(path: Path) -> str | None:
    """Create ``path`` (mode 0700, parents as usual) or check it; None when it can be
    trusted, else why not."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(path)
    except OSError as exc:
        return f"it cannot be made or read ({exc.strerror or exc})"
    if stat.S_ISLNK(info.st_mode):  # a link to elsewhere: check what it points at
        info = os.stat(path)
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a directory"
    return distrust(info)


def read_private(path: Path) -> bytes | None:
    """The bytes of ``path``, or None when it is absent, a link, or not trusted
    (:func:`distrust`).  The directory must have been checked by :func:`private_dir`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode) or distrust(info):
            return None
        return stream.read()


def write_private(path: Path, writer: Callable[[Path], None]) -> Path:
    """:func:`~bayesrank.data.io.atomic_write` with the file private to the user (0600;
    atomic_write gives the umask's mode, which may let the group write, and only for the
    moment before this chmod, inside a directory that is already 0700)."""
    atomic_write(path, writer)
    os.chmod(path, 0o600)
    return path
