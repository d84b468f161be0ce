"""The byte code of the methods attrs generates for the package's records, kept beside the
package's own byte code.

attrs writes the methods of each class it builds (the `__init__` of every record, the repr,
equality and hash of those that keep attrs' own: astral_dsl/records.py) as Python source and
compiles it whenever the class is built, that is at every start: `compile` was 95 of the 837
million instructions of a warm `astral check` of the reference (valgrind), 64 million of them
for the package's 91 records (the rest: attrs' own classes, built as attrs is imported, and
typing's). Python keeps a module's byte code in `__pycache__`; this module keeps what attrs'
compiles gave the same way, in one file there (`attrs-methods.<cache tag>.bin` beside
astral_dsl/__pycache__/records.*.pyc, or under `sys.pycache_prefix` when it is set), and hands
a compile the code it kept for the very same source (reading it back costs about 11 million:
the check went from 837 to 784 million). A record whose source holds a salt of the process
(attrs' own hash, for an `order=True` record) is compiled every time: it never matches.

- an entry is the file name attrs gave the source (`<attrs generated methods module.Class>`),
  the source itself and its byte code (marshal's, as in a .pyc); it is used only when attrs
  compiles source equal to the entry's, character for character, under the same file name, so a
  record that changed finds its entry stale and is compiled as before (the entry then replaced);
- the file starts with the byte-code format's magic number (importlib.util.MAGIC_NUMBER): another
  Python ignores it; a file that does not read (damaged, truncated, another format), that is not
  a regular file, that belongs to neither this user nor root or that others may write, is not
  used: everything is compiled as if there were none;
- it is written once, as the process exits (atexit), when a compile missed it and byte code may
  be written (sys.dont_write_bytecode, which PYTHONDONTWRITEBYTECODE and `-B` set, is obeyed, as
  Python obeys it for .pyc files): the entries read, with the new ones, written to a temporary
  file in the same folder then renamed over it (a concurrent process's entries may be lost, not
  mixed). A file of more than MAX_ENTRIES keeps only the entries this process used.

It trusts the file as Python trusts the .pyc files beside it: whoever may write one may write the
other. How: attrs compiles the generated source with the built-in `compile`, looked up in the
globals of its module attr._make; while a record is built (`caching`), a `compile` of this module
stands there. Should a later attrs compile otherwise, nothing is cached and nothing else changes
(tests/test_methodcache.py would say so)."""
from __future__ import annotations

import marshal
import os
import stat
import sys
import threading
from contextlib import contextmanager
from typing import Dict, Iterator, Optional, Set, Tuple

try:            # attrs' private module, where it compiles the generated methods
    from attr import _make
except ImportError:             # pragma: no cover - an attrs without it: nothing is cached
    _make = None

MAX_ENTRIES = 1024
MAX_BYTES = 16 * 1024 * 1024
TAG = b"astral attrs methods 1\n"

_lock = threading.Lock()
_entries: Optional[Dict[str, Tuple[str, bytes]]] = None   # read from the file, on first use
_new: Dict[str, Tuple[str, bytes]] = {}                    # compiled by this process
_used: Set[str] = set()


def path() -> Optional[str]:
    """Where the file is (None when this Python keeps no byte code: no cache tag)."""
    from importlib.util import cache_from_source

    try:
        beside = cache_from_source(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                "records.py"))
    except NotImplementedError:
        return None
    return os.path.join(os.path.dirname(beside),
                        f"attrs-methods.{sys.implementation.cache_tag}.bin")


@contextmanager
def caching() -> Iterator[None]:
    """The block (one record built by attrs) with attrs' compiles going through the cache."""
    if _make is None:
        yield
        return
    _make.compile = _compile
    try:
        yield
    finally:
        # back to the built-in: another thread's build meanwhile compiles without the cache
        _make.__dict__.pop("compile", None)


def _compile(source, filename, mode, *args, **kwargs):
    if args or kwargs or mode != "exec" or type(source) is not str or type(filename) is not str:
        return compile(source, filename, mode, *args, **kwargs)
    with _lock:
        entries = _load() if _entries is None else _entries
        kept = _new.get(filename) or entries.get(filename)
    if kept is not None and kept[0] == source:
        try:
            code = marshal.loads(kept[1])
        except (EOFError, ValueError, TypeError):
            code = None
        if code is not None and type(code) is type(_compile.__code__):
            _used.add(filename)
            return code
    code = compile(source, filename, mode)
    with _lock:
        if not _new:
            import atexit

            atexit.register(write)
        _new[filename] = (source, marshal.dumps(code))
        _used.add(filename)
    return code


def _load() -> Dict[str, Tuple[str, bytes]]:
    global _entries
    _entries = {}
    where = path()
    data = _read(where) if where is not None else None
    if data is not None:
        try:
            entries = marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            entries = None
        if isinstance(entries, dict) and all(
                type(k) is str and type(v) is tuple and len(v) == 2 and type(v[0]) is str
                and type(v[1]) is bytes for k, v in entries.items()):
            _entries = entries
    return _entries


def _header() -> bytes:
    from importlib.util import MAGIC_NUMBER

    return TAG + MAGIC_NUMBER


def _read(where: str) -> Optional[bytes]:
    """The file's entries (marshal's bytes), or None when it is absent or not to be used."""
    try:
        fd = os.open(where, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid not in (0, os.geteuid()) \
                or st.st_mode & 0o022 or st.st_size > MAX_BYTES:
            return None
        data = os.read(fd, st.st_size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    header = _header()
    if len(data) > st.st_size or not data.startswith(header):
        return None
    return data[len(header):]


def write() -> bool:
    """Write the entries read and those compiled since (atexit); False when nothing is written
    (nothing new, byte code not to be written, no folder, an error)."""
    global _entries
    with _lock:
        if not _new or sys.dont_write_bytecode:
            return False
        merged = {**(_entries or {}), **_new}
        if len(merged) > MAX_ENTRIES:
            merged = {k: v for k, v in merged.items() if k in _used}
        data = _header() + marshal.dumps(merged)
    where = path()
    if where is None or not os.path.isdir(os.path.dirname(where)) or len(data) > MAX_BYTES:
        return False
    tmp = f"{where}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                     0o644)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, where)
        except OSError:
            os.unlink(tmp)
            return False
    except OSError:
        return False
    with _lock:
        _entries = merged
        _new.clear()
    return True


__all__ = ["MAX_ENTRIES", "caching", "path", "write"]
