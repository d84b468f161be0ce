"""Pictures `dot` laid out in this process, kept by what decides them: a process that draws the
same view again (a report beside the pictures drawn before it, a library user drawing a design
again) gets the bytes without a second `dot`.

A layout is kept by the SHA-256 of the DOT text, the format, the dpi and the `dot` run: its path
on PATH, that file's inode, size and modification time, and the environment Graphviz reads
(plugins, fonts). Only formats whose bytes are a function of those are kept: SVG and PNG (a PDF
carries the time it was written). At most 32 MiB of pictures, each counted as at least a 128th
of that (so at most 128 pictures), the least recently used dropped first (the views of the
examples the tests draw, each laid out once: 109 pictures, 4.4 MB of SVG, the largest 0.19 MB);
the process's threads (the report lays out its views in parallel) share it (kept.py: under a
lock)."""
from __future__ import annotations

import hashlib
import os
import shutil
from typing import Callable, Optional, Tuple

from astral_dsl.kept import Kept

KEPT_FORMATS = ("svg", "png")
MAX_PICTURES = 128
MAX_BYTES = 32 * 1024 * 1024
# what Graphviz and the fonts it draws with read from the environment
_ENVIRONMENT = ("GVBINDIR", "GVPLUGIN_PATH", "DOTFONTPATH", "GDFONTPATH", "FONTCONFIG_FILE",
                "FONTCONFIG_PATH", "FONTCONFIG_SYSROOT", "GV_FILE_PATH", "SERVER_NAME", "HOME",
                "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "LANG", "LC_ALL",
                "LC_CTYPE")


def kept(pictures: int = MAX_PICTURES, size: int = MAX_BYTES) -> Kept:
    """Where pictures are kept: at most `size` bytes of them, each weighing at least `size` /
    `pictures` (so at most `pictures` of them)."""
    return Kept(size, weigh=lambda data: max(len(data), size // pictures))


_KEPT = kept()


def _key(source: str, fmt: str, dpi: Optional[int]) -> Optional[Tuple]:
    """What decides the layout, or None when it is not kept (a format not kept, no `dot` file
    to name)."""
    if fmt not in KEPT_FORMATS:
        return None
    exe = shutil.which("dot")
    if exe is None:
        return None
    try:
        st = os.stat(exe)
    except OSError:
        return None
    return (hashlib.sha256(source.encode("utf-8", "surrogatepass")).digest(), fmt, dpi, exe,
            st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
            tuple(os.environ.get(name) for name in _ENVIRONMENT))


def laid_out(source: str, fmt: str, dpi: Optional[int], lay: Callable[[], bytes]) -> bytes:
    """`lay()`'s bytes, from an earlier call with the same key if one is kept. Whatever `lay`
    raises is raised and nothing is kept."""
    key = _key(source, fmt, dpi)
    if key is None:
        return lay()
    data = _KEPT.get(key)
    if data is None:
        data = _KEPT.put(key, lay())
    return data
