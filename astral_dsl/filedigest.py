"""The SHA-256 of a large file a check reads at every run, remembered in the user cache by the
file's identity and times, so that a file that has not changed is not hashed again.

A check of a site on a stdlib climate file hashes it (1.7 MB for stdlib/climate/723170TYA.CSV:
its hours ship, analyses/climate_table.py, keyed by that digest) and the shipped wet-bulb table
(0.4 MB: its identity in the keys of what is derived from it, analyses/wetbulb_table.py): about
1.4 ms of CPU at every start, and 59 of the 784 million instructions of a warm check of the
reference under valgrind, which does not use the CPU's SHA instructions (784 -> 725 million).
The digest is remembered as Python's byte code remembers its source, by what `stat` says of the
file, and more strictly:

- the entry's key is the file's absolute path, device, inode, size, modification and status
  change times (nanoseconds): any write to the file changes its modification time and always
  its status change time, which only a change of the system's clock can set back; a file
  replaced by another (a rename, a new install) is another inode or has other times;
- a digest is remembered only when the file said the same to `stat` before and after it was
  hashed, and when it was last changed more than SETTLED_NS ago (a write in the same tick of the
  file system's clock as the hash would otherwise go unseen: git's "racily clean" entries);
- the entry is a user-cache entry (usercache.py: this user's private folder, verified, plain
  JSON): a missing, stale, damaged or foreign one means the file is hashed, as before.

The digest returned is always the file's SHA-256 as `compute` gives it; only when it is computed
changes."""
from __future__ import annotations

import os
import time
from typing import Callable

from astral_dsl import usercache

SETTLED_NS = 2_000_000_000
VERSION = "file digest 1"


def _identity(path: str):
    """What `stat` says of the file, and when it last changed (nanoseconds)."""
    st = os.stat(path)
    return (f"{st.st_dev} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}",
            max(st.st_mtime_ns, st.st_ctime_ns))


def sha256(path, compute: Callable[[], str]) -> str:
    """The SHA-256 (hex) of the file at `path`: remembered, or `compute()` (which hashes the
    file; its OSError propagates)."""
    where = os.path.abspath(path)
    try:
        before, _ = _identity(where)
    except OSError:
        return compute()
    name = f"digest-{usercache.key_digest(where)[:16]}"
    key = f"{VERSION} {before} {where}"
    kept = usercache.read(name, key)
    if isinstance(kept, str) and len(kept) == 64 and not kept.strip("0123456789abcdef"):
        return kept
    digest = compute()
    try:
        after, changed = _identity(where)
    except OSError:
        return digest
    if after == before and time.time_ns() - changed > SETTLED_NS:
        usercache.write(name, key, digest)
    return digest


__all__ = ["sha256"]
