"""Reading a source file, and saying why it cannot be read: a regular file only (a FIFO, device
or socket refused without blocking on it), of at most MAX_SOURCE_BYTES (E108), checked before
and while it is read; E100 with a hint that says what to do about the OS error. The module
loader (modules.py) reads a design's files so; so do the commands, the language server and the
climate and inventory files a design names."""
from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Iterator, Optional

from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.regularfile import open_regular

MAX_SOURCE_BYTES = 8 * 1024 * 1024


class SourceTooLarge(OSError):
    """A source file beyond MAX_SOURCE_BYTES (reported as E108)."""


def _chunks(path: Path, first: Optional[int], size: int) -> Iterator[bytes]:
    """The bytes of a regular source file of at most MAX_SOURCE_BYTES in chunks (`first` bytes,
    None: as many as its size says, then `size` each): a FIFO, device or socket is refused
    without blocking on it, a larger file before it is read, one that grows past the limit
    while being read when it does."""
    fd = open_regular(path)
    try:
        st = os.fstat(fd)
        if st.st_size > MAX_SOURCE_BYTES:
            raise SourceTooLarge(errno.EFBIG, f"{st.st_size:,} bytes", str(path))
        total, n = 0, st.st_size + 1 if first is None else first
        while True:
            chunk = os.read(fd, n)
            n = size
            if not chunk:
                return
            total += len(chunk)
            if total > MAX_SOURCE_BYTES:     # it grew while being read
                raise SourceTooLarge(errno.EFBIG, f"over {MAX_SOURCE_BYTES:,} bytes", str(path))
            yield chunk
    finally:
        os.close(fd)


def too_large(data: bytes, name: str) -> SourceTooLarge:
    """The error for a source text beyond MAX_SOURCE_BYTES that was not read from a file (the
    language server's buffers, `astral_dsl.loads`): the same cap as a file's (E108)."""
    return SourceTooLarge(errno.EFBIG, f"{len(data):,} bytes", name)


def read_file(path: Path) -> bytes:
    """The bytes of a regular source file: a FIFO, device or socket is refused without blocking
    on it, and a file larger than MAX_SOURCE_BYTES is refused before it is read into memory.
    Read at once, as its size says, then on if it grew (one buffer, no chunks joined, for
    start-up: a 1.7 MB climate file read 1 MiB at a time cost 1.2-1.9 ms of CPU, 0.1 ms so)."""
    return b"".join(_chunks(path, None, 1 << 20))


def file_sha256(path: Path) -> str:
    """The SHA-256 (hex) of the bytes read_file would give, read 64 kB at a time: a caller that
    may not need the bytes themselves (a stdlib climate file whose hours ship) does not hold
    them (1.7 MB newly mapped: 420 page faults, 1.3 ms of CPU, for start-up)."""
    import hashlib

    digest = hashlib.sha256()
    for chunk in _chunks(path, 1 << 16, 1 << 16):
        digest.update(chunk)
    return digest.hexdigest()


def unreadable(what: str, exc: OSError, span: Optional[Span] = None,
               file: Optional[str] = None) -> Diagnostic:
    """The diagnostic for a source file that cannot be read (E100), or is too large (E108)."""
    if isinstance(exc, SourceTooLarge):
        return Diagnostic("E108", Severity.ERROR,
                          f"{what} is too large to compile ({exc.strerror}; the limit is "
                          f"{MAX_SOURCE_BYTES // (1024 * 1024)} MiB)", span,
                          "split the design into modules that import each other", file=file)
    return Diagnostic("E100", Severity.ERROR, f"cannot read {what}: {exc.strerror or exc}",
                      span, unreadable_hint(getattr(exc, "errno", None)), file=file)


def unreadable_hint(err: Optional[int], name: str = "a .astral file",
                    imports: bool = True) -> str:
    """What to do about a file that cannot be read with the OS error `err`: E100's hint, and
    that of a runs table (E766) or an observed file (E780), each naming what it reads (`name`;
    `imports`: whether an import's relative path is read from the project root)."""
    if err == errno.ENOENT:
        return ("check the path: a relative one starts at the working directory"
                + (" (an import's, at the project root)" if imports else ""))
    if err == errno.EACCES:
        return "check the file's permissions: the user running astral must be able to read it"
    if err == errno.ELOOP:
        return ("the symbolic link points at itself or at a ring of links: point it at the "
                "file, or replace it with the file")
    if err == errno.EISDIR:
        return f"name {name}, not a folder"
    return "check the path and that the file can be read"
