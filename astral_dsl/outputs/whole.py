"""A file written whole or not at all: a temporary file of its own beside the output (never a
file of the user's: `review.html.tmp` was overwritten, then renamed away), renamed over it when
the writing ends, and removed when it does not (the path a folder, a disk full, Ctrl-C: `astral
forecast --trace` left half a trace, JSON cut in the middle, where the whole one had been). A
path that names no regular file but a device, a pipe or a socket (`/dev/null`, `/dev/stdout`, a
shell's `>(gzip > r.gz)`) is written into, as every other output is: renamed over, `-o
/dev/null` made /dev/null a regular file holding the page (and `/dev/full` took it without a
word)."""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from typing import Iterator, Optional

from astral_dsl.regularfile import output


@contextlib.contextmanager
def whole(path: str, encoding: Optional[str] = None) -> Iterator:
    """A file object (binary, or text in `encoding`) whose content becomes `path` when the block
    ends, and nothing when it raises; OSError (nothing left behind) naming `path`, not the
    temporary file, a name the caller never gave (`No such file or directory:
    'out/.astral-x1y2.tmp'` for a folder `out` that does not exist)."""
    mode = "wb" if encoding is None else "w"
    try:
        if _stream(path):
            with os.fdopen(output(path), mode, encoding=encoding) as fh:
                yield fh
            return
        fd, tmp = tempfile.mkstemp(prefix=".astral-", suffix=".tmp",
                                   dir=os.path.dirname(os.path.abspath(path)))
        try:
            with os.fdopen(fd, mode, encoding=encoding) as fh:
                yield fh
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)      # as open() would create it, not mkstemp's 0600
            os.replace(tmp, path)
        except BaseException:            # a disk full, a folder in the way, Ctrl-C
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        if exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, path) from None     # its subclass, by errno


def _stream(path: str) -> bool:
    """Whether `path` (its link followed) is there and is neither a regular file nor a folder."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


__all__ = ["whole"]
