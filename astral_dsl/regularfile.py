"""Opening a file that must be a regular file, without blocking on anything else.

A path checked beforehand can be swapped for a FIFO, a device or a socket before it is opened
(a FIFO with no writer would block the open, and a read of a device may never end): the file is
opened without blocking and its kind checked on the opened descriptor. The compiler's module
loader (semantics/source_files.py) and the trace reader (observe/load.py) open their inputs so, and
`read_regular` reads the files the commands are given (a JSON option, a runs or operator table):
a FIFO there blocked the command, `/dev/zero` (or a link to it) filled the memory (E000).
The files a command names itself inside an output folder are `created` without following a
link, and the file a user names as an output is opened by `output`, which waits for no reader."""
from __future__ import annotations

import errno
import os
import stat

FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def no_nul(path) -> None:
    """OSError (EINVAL) for a path that holds a NUL, which no file's path can: the operating
    system's calls refuse it with ValueError ("embedded null byte"), which no reader or writer
    of a file expects (a Python caller's `astral_dsl.load("a\\0b")` met it as a traceback)."""
    text = os.fspath(path)
    if ("\0" if isinstance(text, str) else b"\0") in text:
        raise OSError(errno.EINVAL, "the path holds a NUL character, which no file's path can",
                      os.fsdecode(text).replace("\0", "\\0"))


def open_regular(path) -> int:
    """A descriptor of `path` opened for reading, if it is a regular file (the caller closes
    it); IsADirectoryError for a directory, OSError (EINVAL) for a FIFO, device or socket, or
    a path with a NUL in it (no_nul)."""
    no_nul(path)
    fd = os.open(path, FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or socket)",
                          str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path, limit: int) -> bytes:
    """The bytes of the regular file `path`, of at most `limit` bytes: OSError for anything
    else (open_regular's), and EFBIG for a larger file, found before or while it is read."""
    fd = open_regular(path)
    try:
        if os.fstat(fd).st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            total += len(chunk)
            if total > limit:                       # it grew while being read
                raise OSError(errno.EFBIG, f"larger than {limit:,} bytes", str(path))
            chunks.append(chunk)
    finally:
        os.close(fd)


def output(path) -> int:
    """A descriptor of the output `path` for writing (created or emptied; a device, a pipe or
    a socket written into), as open(path, "w") would give, but a pipe that no process reads is
    OSError (ENXIO), not a wait for a reader that may never come (every command's `-o` on a
    FIFO blocked until one did)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NONBLOCK", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    no_nul(path)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, "a pipe that no process reads from", str(path)) \
                from None
        raise
    os.set_blocking(fd, True)
    return fd


def created(name, folder=None) -> int:
    """A descriptor of the file `name` for writing, created or emptied, never through a
    symbolic link: a file a command names itself inside an output folder (`astral synth -o
    DIR`'s traces, `astral export --netbox DIR`'s files), a folder someone else may have made
    beforehand (`/tmp/drill`, with `rank-0.json.gz` a link to the user's ~/.bashrc, which the
    drill overwrote). With `folder` (the output folder, `name` inside it), the folders between
    the two are made as needed and none is followed as a link either (`DIR/device-types` a
    link to another folder had the device types written there). OSError for a link, naming
    it."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | \
        getattr(os, "O_CLOEXEC", 0)
    if folder is None:
        return _no_link(name, lambda: os.open(name, flags, 0o666))
    parts = os.path.relpath(name, folder).split(os.sep)
    if parts[0] in (os.curdir, os.pardir) or os.path.isabs(parts[0]):
        raise ValueError(f"{name} is not inside {folder}")
    at = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) |
                 getattr(os, "O_CLOEXEC", 0))        # the folder the user named: followed
    try:
        for i, part in enumerate(parts[:-1]):
            where = os.path.join(folder, *parts[:i + 1])
            try:
                os.mkdir(part, 0o777, dir_fd=at)
            except FileExistsError:
                pass
            inner = _no_link(where, lambda part=part, at=at: os.open(
                part, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
                | getattr(os, "O_CLOEXEC", 0), dir_fd=at), at, part)
            os.close(at)
            at = inner
        return _no_link(name, lambda: os.open(parts[-1], flags, 0o666, dir_fd=at), at,
                        parts[-1])
    finally:
        os.close(at)


def _no_link(name, opened, at=None, part=None) -> int:
    """`opened()`, with the error of a symbolic link (ELOOP; ENOTDIR for a link where a folder
    is opened) said as one."""
    try:
        return opened()
    except OSError as exc:
        link = exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and part is not None and
                                            stat.S_ISLNK(os.stat(part, dir_fd=at,
                                                                 follow_symlinks=False).st_mode))
        if link:
            raise _link(exc.errno, name) from None
        raise


def not_a_link(name) -> None:
    """OSError, as `created` says it, when `name` is a symbolic link: for a file moved into
    place (os.replace replaces a link, never writes through it), refused alike."""
    if os.path.islink(name):
        raise _link(errno.ELOOP, name)


def _link(code: int, name) -> OSError:
    return OSError(code, f"`{name}` is a symbolic link: nothing is written through one",
                   str(name))
