"""A per-user cache of derived data (the parser tables of the grammar), safe against other users.

The old cache was a pickle at a predictable path in the shared temporary directory: any local
user who created that file first ran code in every later `astral` process. This cache

- lives in a directory of the current user only: `$ASTRAL_CACHE_DIR`, else
  `$XDG_CACHE_HOME/astral_dsl`, else `~/.cache/astral_dsl`; it is created with mode 0700 and used
  only when it is a real directory (not a symlink) owned by the effective user and writable by
  nobody else; otherwise nothing is cached (`ASTRAL_CACHE_DIR=off` turns caching off);
- sits where no one else can move it: every directory above it must belong to the user or to
  root and be writable by no one else, unless it has the sticky bit (as /tmp has: there others
  may add entries but not rename or remove this user's); a folder the cache creates on the way
  is created alone, with mode 0700, and checked like the rest (a parent writable by others
  would let another user rename the cache away and put their own in its place);
- holds plain data, never a pickle: an entry is JSON, so even a forged entry cannot run code;
- is verified before it is read: the file is opened without following symlinks, must be a
  regular file of the same owner writable by nobody else and of bounded size, and must carry the
  key it was written for and the SHA-256 of its payload;
- is written atomically (a private temporary file in the same directory, then a rename).

Every failure (no home directory, a read-only disk, a forged or truncated entry) means "not
cached": the caller computes the data again, and nothing is reported."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Optional

# SHA-256 without OpenSSL, for the keys and payloads here (a few hundred kB in a check):
# `import hashlib` loads and initialises OpenSSL's libcrypto, 2.5-3 ms of CPU at every start,
# more than hashing them costs (for start-up); CPython's own implementation, hashlib's
# fallback, gives the same digests (_sha256 up to Python 3.11, _sha2 from 3.12)
try:
    from _sha2 import sha256 as _sha256
except ImportError:
    try:
        from _sha256 import sha256 as _sha256
    except ImportError:                 # pragma: no cover - a Python without them
        from hashlib import sha256 as _sha256

MAGIC = b"astral-cache 1\n"
MAX_ENTRY_BYTES = 16 * 1024 * 1024


def cache_dir(create: bool = True) -> Optional[Path]:
    """The current user's cache directory, or None when there is no safe one."""
    chosen = os.environ.get("ASTRAL_CACHE_DIR")
    if chosen is not None:
        if chosen.strip().lower() in ("", "off", "0", "none", "no"):
            return None
        folder = Path(chosen)
    else:
        base = os.environ.get("XDG_CACHE_HOME")
        if not base or not os.path.isabs(base):
            try:
                base = str(Path.home() / ".cache")
            except (RuntimeError, KeyError, OSError):
                return None
        folder = Path(base) / "astral_dsl"
    if not folder.is_absolute():
        return None
    if create and not _make(folder):
        return None
    if not _safe_ancestors(folder.parent):
        return None
    return folder if _private_dir(folder) else None


def _make(folder: Path) -> bool:
    """Create `folder` and the missing folders above it, one at a time, each with mode 0700
    and checked to be this user's private directory once made."""
    missing = []
    for p in [folder, *folder.parents]:
        if os.path.lexists(p):
            break
        missing.append(p)
    for p in reversed(missing):
        try:
            os.mkdir(p, 0o700)
        except FileExistsError:
            pass                                    # made meanwhile: checked below
        except OSError:
            return False
        if not _private_dir(p):
            return False
    return True


def _safe_ancestors(parent: Path) -> bool:
    """Every directory from `parent` up to the root (links followed) belongs to this user or
    to root and is writable by no one else, or has the sticky bit."""
    try:
        resolved = parent.resolve(strict=True)
    except (OSError, RuntimeError):
        return False
    for p in [resolved, *resolved.parents]:
        try:
            st = os.stat(p)
        except OSError:
            return False
        if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (0, os.geteuid()):
            return False
        if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
            return False
    return True


def _private_dir(folder: Path) -> bool:
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return False
    return not st.st_mode & 0o022        # nobody else may create or replace entries


def _entry_path(folder: Path, name: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return folder / f"{safe}.json"


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of `data` (hex), for a key or a name of the cache."""
    return _sha256(data).hexdigest()


def key_digest(*parts: bytes | str) -> str:
    h = _sha256()
    for p in parts:
        data = p.encode("utf-8") if isinstance(p, str) else p
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def read(name: str, key: str, object_hook=None) -> Optional[Any]:
    """The JSON value stored under `name` for `key`, or None (absent, foreign, forged, stale,
    or refused by `object_hook`, which json.loads calls on each object: it may raise
    ValueError, KeyError or TypeError)."""
    folder = cache_dir(create=False)
    if folder is None:
        return None
    data = _read_verified(_entry_path(folder, name))
    if data is None:
        return None
    head, sep, rest = data.partition(b"\n")
    digest, sep2, payload = rest.partition(b"\n")
    if not (sep and sep2) or head != key.encode("ascii", "replace"):
        return None
    if _sha256(payload).hexdigest().encode() != digest:
        return None
    try:
        return json.loads(payload, object_hook=object_hook)
    except (ValueError, KeyError, TypeError, RecursionError):
        return None


def _read_verified(path: Path) -> Optional[bytes]:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022 \
                or st.st_size > MAX_ENTRY_BYTES:
            return None
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_ENTRY_BYTES:
                return None
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if not data.startswith(MAGIC):
        return None
    return data[len(MAGIC):]


def prune(prefix: str, keep: int = 4) -> None:
    """Remove all but the `keep` newest entries whose names start with `prefix` (the parser
    tables of grammars no checkout uses any more)."""
    folder = cache_dir(create=False)
    if folder is None:
        return
    safe = _entry_path(folder, prefix).name[:-len(".json")]
    try:
        found = []
        for entry in os.scandir(folder):
            if entry.name.startswith(safe) and entry.name.endswith(".json") and \
                    entry.is_file(follow_symlinks=False):
                found.append((entry.stat(follow_symlinks=False).st_mtime, entry.path))
        for _, path in sorted(found, reverse=True)[keep:]:
            os.unlink(path)
    except OSError:
        pass


def write(name: str, key: str, value: Any, dumps=None) -> bool:
    """Store a JSON-serialisable value under `name` for `key`; False when it cannot be cached.
    `dumps`: what writes the value as JSON bytes (default: json.dumps, compact)."""
    folder = cache_dir(create=True)
    if folder is None:
        return False
    payload = dumps(value) if dumps is not None else \
        json.dumps(value, separators=(",", ":")).encode("utf-8")
    if len(payload) > MAX_ENTRY_BYTES - 200:
        return False
    data = MAGIC + key.encode("ascii", "replace") + b"\n" + \
        _sha256(payload).hexdigest().encode() + b"\n" + payload
    import tempfile          # here: only a write needs it, and `astral check` starts faster

    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=folder)     # mode 0600
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, _entry_path(folder, name))
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
