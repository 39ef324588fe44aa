"""Reading saved files that may be hostile: regular files only, never past a declared size.

A FIFO named like an index file blocks ``read()`` forever; a symlink to ``/dev/zero`` reads until
memory runs out. :func:`read_regular` opens without blocking, checks on the open descriptor that
the file is a regular one (a symlink is followed: to a regular file it is fine) and that its size
is what the caller expects, and reads at most that many bytes (one more, to notice a file that
grew meanwhile), so nothing is allocated past what the format declares.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class NotRegularError(OSError):
    """The path names something that is not a regular file (``str(exc)`` says what)."""


class SizeError(OSError):
    """A regular file whose size is not the expected one (``str(exc)`` says both)."""


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def read_regular(path: Path, *, exact: int | None = None, at_most: int | None = None) -> bytes:
    """The bytes of regular file ``path``.

    Parameters
    ----------
    path : Path
        The file; a symlink is followed (its target must be a regular file).
    exact : int, optional
        The size the file must have (e.g. a manifest's entry): checked before reading.
    at_most : int, optional
        A cap on the size, when no exact size is known (e.g. the manifest itself).

    Raises
    ------
    FileNotFoundError
        Nothing at ``path``.
    NotRegularError
        ``path`` is a directory, FIFO, device or socket (or a symlink to one).
    SizeError
        The file's size is not ``exact``, exceeds ``at_most``, or changed while it was read.
    OSError
        Any other failure to open or read it.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):  # before open(): opening a FIFO for reading may block
        raise NotRegularError(f"{path} is {_kind(mode)}, not a regular file")
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)  # the file actually opened (the path may have been swapped)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularError(f"{path} is {_kind(st.st_mode)}, not a regular file")
        size = st.st_size
        if exact is not None and size != exact:
            raise SizeError(f"{path} has {size} bytes, expected {exact}")
        if at_most is not None and size > at_most:
            raise SizeError(f"{path} has {size} bytes, more than the {at_most} expected at most")
        want = size
        chunks = []
        got = 0
        while got <= want:
            chunk = os.read(fd, min(want + 1 - got, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got != want:
            raise SizeError(f"{path} changed size while it was read ({got} bytes read, {want} expected)")
        return b"".join(chunks)
    finally:
        os.close(fd)
