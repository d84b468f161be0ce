"""`astral fmt FILE...`: rewrite .astral files in the canonical layout (astral_dsl/fmt).

`--check` writes nothing, lists the files that would change and exits 1 if there are any;
`--diff` writes nothing and prints what would change as a unified diff. A folder stands for the
.astral regular files below it: symbolic links (to files or folders) are skipped, so nothing
outside the folder is ever rewritten, and FIFOs, devices and sockets are skipped, so nothing
blocks. A file named on the command line must be a regular file (a symbolic link to one is
followed). `-` reads standard input and writes the result to standard output. A file that does
not parse is reported with the compiler's diagnostic and left as it is (exit 1).

Files are opened without blocking and re-checked after opening (a regular file, the same one
that was read when it is written back), so swapping a file for a FIFO or a link between the
walk and the write does not redirect the write. A file is rewritten in place (its inode, links
and permissions kept): its room reserved first, so that a full disk refuses before a byte
changes, and Ctrl-C held back until the write ends, so that no file is left half written."""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import threading
from pathlib import Path
from typing import List, Optional, Tuple

from astral_dsl.cli.common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, colour, print_diagnostics

NAME = "fmt"
HELP = "format .astral files in the canonical layout"


def register(sub) -> None:
    f = sub.add_parser(NAME, help=HELP)
    f.add_argument("files", nargs="+", metavar="FILE",
                   help="files or folders (.astral files below them); `-` for standard input")
    f.add_argument("--check", action="store_true",
                   help="write nothing; list the files that would change and exit 1 if any")
    f.add_argument("--diff", action="store_true",
                   help="write nothing; print the changes as a unified diff")
    f.add_argument("--color", choices=["auto", "always", "never"], default="auto")


MAX_FILE_BYTES = 16 * 1024 * 1024


class _File:
    """A file to format: named on the command line, or found below a folder (`root`, `rel`)."""

    def __init__(self, name: str, root: Optional[str] = None, rel: Tuple[str, ...] = ()):
        self.name, self.root, self.rel = name, root, rel


def _expand(names: List[str]) -> List[_File]:
    out: List[_File] = []
    for name in names:
        if name != "-" and os.path.isdir(name):
            out.extend(_File(os.path.join(name, *rel), name, rel) for rel in _walk(name))
        else:
            out.append(_File(name))
    return out


def _walk(folder: str) -> List[Tuple[str, ...]]:
    """The regular .astral files below `folder` (as path components), never through a
    symbolic link."""
    found: List[Tuple[str, ...]] = []
    for here, dirs, files, dirfd in os.fwalk(folder, follow_symlinks=False):
        dirs.sort()
        rel = Path(os.path.relpath(here, folder)).parts if here != folder else ()
        rel = tuple(p for p in rel if p != ".")
        for name in sorted(files):
            if not name.endswith(".astral"):
                continue
            try:
                st = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):      # not a link, FIFO, device or socket
                found.append(rel + (name,))
    return found


class _NotRegular(OSError):
    pass


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BASE_FLAGS = os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _open(f: _File, flags: int) -> int:
    """Open a named file (following a link the user named), or a found file component by
    component below its folder without following any link, so that nothing outside the folder
    can be reached even if a folder is swapped for a link meanwhile."""
    if f.root is None:
        return os.open(f.name, flags | _BASE_FLAGS)
    fd = os.open(f.root, os.O_RDONLY | os.O_DIRECTORY | _BASE_FLAGS)
    try:
        for part in f.rel[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | _BASE_FLAGS,
                            dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(f.rel[-1], flags | _NOFOLLOW | _BASE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)


def _read(f: _File) -> Tuple[bytes, os.stat_result]:
    """The bytes of a regular file (never blocking on a FIFO or a device)."""
    fd = _open(f, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _NotRegular(0, "not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise _NotRegular(0, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def _read_stdin() -> bytes:
    """Standard input's bytes, at most MAX_FILE_BYTES as of a file: it was read whole (`astral
    fmt - < /dev/zero` filled the memory, E000; 300 MB of text took 0.9 GB and 51 s)."""
    data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise _NotRegular(0, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    return data


def _write(f: _File, text: str, read_st: os.stat_result) -> Optional[str]:
    """Rewrite the file that was read (same device and inode); an error message or None."""
    try:
        fd = _open(f, os.O_WRONLY)
    except OSError as exc:
        return exc.strerror or str(exc)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_dev, st.st_ino) != (read_st.st_dev,
                                                                      read_st.st_ino):
            return "the file was replaced while it was being formatted"
        data = text.encode("utf-8")
        try:                # the room first: a full disk refuses before a byte is changed
            os.posix_fallocate(fd, 0, max(len(data), 1))
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
                raise
        except AttributeError:      # no posix_fallocate here
            pass
        with _uninterrupted():      # never half a file: Ctrl-C waits for the end of the write
            view = memoryview(data)
            offset = 0
            while offset < len(data):
                offset += os.pwrite(fd, view[offset:], offset)
            os.ftruncate(fd, len(data))
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        os.close(fd)


def _source_out(text: str) -> None:
    """Formatted source on standard output: UTF-8, as a .astral file is, whatever the locale
    (an ASCII terminal's escapes would be another program)."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(text)
        return
    sys.stdout.flush()
    buffer.write(text.encode("utf-8"))
    buffer.flush()


@contextlib.contextmanager
def _uninterrupted():
    """Ctrl-C held back until the block ends, then taken as it would have been. A handler, not
    a signal mask: SIGINT reaches whichever thread does not block it, and Python runs its
    handler in the main thread all the same."""
    import signal

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            if callable(previous):
                previous(signal.SIGINT, None)       # KeyboardInterrupt, as it would have been
            elif previous == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)


def run(args, overrides) -> int:
    from astral_dsl.diagnostics import DiagnosticError
    from astral_dsl.fmt import FormatError, format_text
    from astral_dsl.outputs.terminal import printable, printable_line
    from astral_dsl.syntax.source import decode

    worst = EXIT_OK
    changed: List[str] = []
    use_colour = colour(args, sys.stderr)
    for f in _expand(args.files):
        name = f.name
        read_st = None
        try:
            if name == "-" and f.root is None:
                data = _read_stdin()
            else:
                data, read_st = _read(f)
        except OSError as exc:
            sys.stderr.write(f"error[E100]: cannot read `{printable(name)}`: "
                             f"{exc.strerror or exc}\n")
            worst = max(worst, EXIT_USAGE)
            continue
        shown = "<stdin>" if name == "-" else name
        try:
            text = decode(shown, data).text
            result = format_text(text, shown)
        except DiagnosticError as exc:
            print_diagnostics([exc.diagnostic], use_colour, sys.stderr)
            worst = max(worst, EXIT_ERRORS)
            continue
        except FormatError as exc:   # a bug: never write a file whose meaning would change
            sys.stderr.write(f"error[E000]: internal formatter error: {printable(exc)}\n")
            worst = max(worst, EXIT_ERRORS)
            continue
        original = data.decode("utf-8", errors="replace")
        if name == "-" and not (args.check or args.diff):
            _source_out(result)
            continue
        if result == original:
            continue
        changed.append(shown)
        if args.diff:      # shown on a terminal: control characters escaped
            import difflib      # here: `astral --help` imports this module (for start-up)

            sys.stdout.writelines(printable_line(line) for line in difflib.unified_diff(
                original.replace("\r\n", "\n").splitlines(True), result.splitlines(True),
                f"{shown} (original)", f"{shown} (formatted)"))
        if args.check:
            sys.stdout.write(f"{printable(shown)}\n") if not args.diff else None
        elif not args.diff:
            problem = _write(f, result, read_st)
            if problem is not None:
                sys.stderr.write(f"error[E100]: cannot write `{printable(shown)}`: {problem}\n")
                worst = max(worst, EXIT_USAGE)
                continue
            sys.stderr.write(f"formatted {printable(shown)}\n")
    if args.check and changed:
        sys.stderr.write(f"{len(changed)} file(s) would be reformatted\n")
        worst = max(worst, EXIT_ERRORS)
    return worst
