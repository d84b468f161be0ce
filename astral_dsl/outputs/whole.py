"""A file written whole or not at all: a temporary file of its own beside the output (never a
file of the user's: `review.html.tmp` was overwritten, then renamed away), renamed over it when
the writing ends, and removed when it does not (the path a folder, a disk full, Ctrl-C: `astral
forecast --trace` left half a trace, JSON cut in the middle, where the whole one had been). A
path that names no regular file but a device, a pipe or a socket (`/dev/null`, `/dev/stdout`, a
shell's `>(gzip > r.gz)`) is written into, as every other output is: renamed over, `-o
/dev/null` made /dev/null a regular file holding the page (and `/dev/full` took it without a
word). A file there already keeps its permissions, and a link is written through, not renamed
over, as open() would (`astral calibrate --docs` rewrites the user's own Markdown), once the
kernel has said, as open() would have it, that the file may be written (`_asked`: a read-only
file, a link `fs.protected_symlinks` forbids). Renamed over, a file's hard links to other names
keep the old content and its owner becomes the writer's."""
from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from typing import Iterator, Optional

from astral_dsl.regularfile import no_nul, output


@contextlib.contextmanager
def whole(path: str, encoding: Optional[str] = None) -> Iterator:
    """A file object (binary, or text in `encoding`) whose content becomes `path` when the block
    ends, and nothing when it raises; OSError (nothing left behind) naming `path`, not the
    temporary file, a name the caller never gave (`No such file or directory:
    'out/.astral-x1y2.tmp'` for a folder `out` that does not exist)."""
    mode = "wb" if encoding is None else "w"
    newline = None if encoding is None else ""        # text as given: its \r\n kept, none added
    try:
        no_nul(path)               # (else _stream's stat said "no file there", and then ValueError)
        if _stream(path):
            with os.fdopen(output(path), mode, encoding=encoding, newline=newline) as fh:
                yield fh
            return
        created = _asked(path)
        target = os.path.realpath(path)          # through a link, as open() writes
        try:
            fd, tmp = tempfile.mkstemp(prefix=".astral-", suffix=".tmp",
                                       dir=os.path.dirname(target))
        except BaseException:
            _undo(created, target)
            raise
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
            _undo(created, target)
            raise
    except OSError as exc:
        if exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror, path) from None     # its subclass, by errno


def _asked(path: str) -> bool:
    """Ask the kernel, as open() would, whether the file at `path` may be written, before the
    whole file is renamed over it: a file its user may not write, or a link that
    `fs.protected_symlinks` forbids following (one planted in a shared folder such as /tmp,
    pointing at another's file), is refused (PermissionError) as open() refuses it, not
    replaced; nothing is truncated. True when that made the file (a dangling link's target),
    to be removed if the writing fails. Nothing to ask of a path where there is nothing."""
    if not os.path.lexists(path):
        return False
    existed = os.path.exists(path)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o666))
    return not existed


def _undo(created: bool, target: str) -> None:
    """Remove the empty file `_asked` made, when the writing failed."""
    if created:
        try:
            os.unlink(target)
        except OSError:
            pass


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
