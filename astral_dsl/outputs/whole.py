"""A file written whole or not at all: a temporary file of its own beside the output (never a
file of the user's: `review.html.tmp` was overwritten, then renamed away), renamed over it when
the writing ends, and removed when it does not (the path a folder, a disk full, Ctrl-C: `astral
forecast --trace` left half a trace, JSON cut in the middle, where the whole one had been). A
path that names no regular file but a device, a pipe or a socket (`/dev/null`, `/dev/stdout`, a
shell's `>(gzip > r.gz)`) is written into, as every other output is: renamed over, `-o
/dev/null` made /dev/null a regular file holding the page (and `/dev/full` took it without a
word). A file there already keeps its permissions, and a link is written through, not renamed
over, as open() would (`astral calibrate --docs` rewrites the user's own Markdown)."""
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
    newline = None if encoding is None else ""        # text as given: its \r\n kept, none added
    try:
        if _stream(path):
            with os.fdopen(output(path), mode, encoding=encoding, newline=newline) as fh:
                yield fh
            return
        target = os.path.realpath(path)          # through a link, as open() writes
        fd, tmp = tempfile.mkstemp(prefix=".astral-", suffix=".tmp",
                                   dir=os.path.dirname(target))
        try:
            with os.fdopen(fd, mode, encoding=encoding, newline=newline) as fh:
                yield fh
            os.chmod(tmp, _permissions(target))
            os.replace(tmp, target)
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


def _permissions(path: str) -> int:
    """The permissions of the file at `path`, or those open() would create it with (not
    mkstemp's 0600)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _stream(path: str) -> bool:
    """Whether `path` (its link followed) is there and is neither a regular file nor a folder."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


__all__ = ["whole"]
