"""The page written whole or not at all (`astral report` and `astral_dsl.report`): a temporary
file of its own beside it (never a file of the user's: `review.html.tmp` was overwritten, then
renamed away), renamed over it, and removed when that fails (the path a folder, a disk full,
Ctrl-C: `review.tmp` was left beside a folder named as the output). A path that names no
regular file but a device, a pipe or a socket (`/dev/null`, `/dev/stdout`, a shell's
`>(gzip > r.gz)`) is written into, as every other output is: renamed over, `-o /dev/null` made
/dev/null a regular file holding the page (and `/dev/full` took it without a word)."""
from __future__ import annotations

import os
import stat
import tempfile

from astral_dsl.regularfile import output


def write_whole(path: str, data: bytes) -> None:
    """Write `data` to `path` whole; OSError (nothing left behind) when it cannot be, naming
    `path`: not the temporary file, a name the caller never gave (`No such file or directory:
    'out/.astral-report-x1y2.tmp'` for a folder `out` that does not exist)."""
    try:
        if _stream(path):
            _write_into(path, data)
        else:
            _write_whole(path, data)
    except OSError as exc:
        if exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, path) from None     # its subclass, by errno


def _write_whole(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".astral-report-", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)          # as open() would create it, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:                # a disk full, a folder in the way, Ctrl-C
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _stream(path: str) -> bool:
    """Whether `path` (its link followed) is there and is neither a regular file nor a folder."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _write_into(path: str, data: bytes) -> None:
    """Write `data` into a device, pipe or socket (regularfile.output: a pipe no process reads
    is an error, not a wait for a reader that may never come)."""
    with os.fdopen(output(path), "wb") as fh:
        fh.write(data)
