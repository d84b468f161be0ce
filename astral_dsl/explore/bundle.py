"""What a worker gets: the design's source text (the entry and the project files it imports)
and the project's data files it names (a site's `climate`, an `inventory`'s `file`), never a
pickled model. A worker lays the files out in a private folder with the project's
layout, compiles them as `astral check` would, and names every file in its results as the client
does, so a row computed on a remote machine reads exactly like one computed here.

The stdlib is the worker's own; `astral_dsl.__version__` must match: engines check it when they
connect, and laid_out for each task (a worker that joined the cluster later: its points are lost,
E800, rather than computed by other code)."""
from __future__ import annotations

import contextlib
import hashlib
import multiprocessing.util
import shutil
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable, Dict, Iterator, Optional, Sequence, Tuple


from astral_dsl import __version__, records
from astral_dsl.semantics.overrides import Option, command_line

ROOT_MARKER = "astral.toml"


@records.frozen
class Bundle:
    entry: str                                  # the entry's path relative to the project root
    files: Tuple[Tuple[str, bytes], ...]        # (relative POSIX path, content), sorted
    names: Tuple[Tuple[str, str], ...]          # (relative path, the client's display name)
    marker: bool = False                        # the project root holds an astral.toml
    version: str = __version__

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for rel, data in self.files:
            h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
        h.update(self.entry.encode() + (b"\1" if self.marker else b"\0"))
        return h.hexdigest()[:16]

    @property
    def entry_name(self) -> str:
        return dict(self.names)[self.entry]


def load_with_bundle(path: str, overrides=None, names: Sequence[str] = (),
                     set_option: Option = command_line):
    """Compile `path` here (the base design, in its workspace) and bundle every project file
    it read, and the data files it names (data_files): (workspace, bundle). `names`: the text
    values a sweep gives its parameters, which may name other data files; `set_option`: how
    the messages name an override (semantics/overrides.py)."""
    from astral_dsl.workspace import Workspace
    from astral_dsl.semantics.modules import display_name, project_root
    from astral_dsl.semantics.source_files import read_file

    seen: Dict[Path, bytes] = {}

    def recording(p: Path) -> bytes:
        data = read_file(p)
        seen[Path(p).resolve()] = data
        return data

    ws = Workspace.open(path, overrides, read=recording, option=set_option)
    data_files(ws, ws.design, names, recording)
    root = project_root(Path(path))
    files, names = [], []
    for p, data in sorted(seen.items()):
        try:
            rel = p.relative_to(root).as_posix()
        except ValueError:
            continue                            # the stdlib: the worker has its own
        files.append((rel, data))
        names.append((rel, display_name(p)))
    try:
        entry = Path(path).resolve().relative_to(root).as_posix()
    except (OSError, RuntimeError):             # a symbolic link in a loop: unreadable (E100)
        entry = Path(path).name
    if entry not in dict(files):               # unreadable entry: nothing to ship
        files.append((entry, b""))
        names.append((entry, display_name(Path(path))))
    bundle = Bundle(entry, tuple(sorted(files)), tuple(sorted(names)),
                    (root / ROOT_MARKER).is_file())
    return ws, bundle


def data_files(ws, design, names: Sequence[str], read: Callable[[Path], bytes]) -> None:
    """Read with `read` the project's data files that the checks read later, not the compile:
    each site's `climate` (relative to the project root; a stdlib one the worker has) and each
    `inventory` file (relative to the entry's folder), and any project file one of `names`
    names either way. What cannot be found or read is left out: the worker then says so
    as `astral check` would here (E652, E230)."""
    from astral_dsl.analyses.climate import locate
    from astral_dsl.analyses.climate_formats import ClimateError

    climates = [r.field("climate") for r in design.roots]
    beside = [i.field("file") for i in design.instances if i.kind == "inventory"]
    for name in dict.fromkeys(n for n in climates + list(names) if isinstance(n, str)):
        if Path(name).parts[:1] == ("stdlib",):
            continue
        try:
            read(locate(name, ws.root))
        except (ClimateError, OSError):
            pass
    for name in dict.fromkeys(n for n in beside + list(names) if isinstance(n, str)):
        ws.read_beside(name)                 # read with the workspace's reader: `read`


# ---- on the worker ------------------------------------------------------------------------------
# A worker keeps the laid-out copies of the KEEP_LAID_OUT designs it used last (by content
# digest: the same files named otherwise by another client, or another project with the same
# text, are written once and renamed each their own way). A copy a task still reads is never
# removed: it goes when that task is done and the copy is beyond the bound. Before, a
# long-lived worker kept one copy per distinct design it was ever sent, on disk until it ended.
KEEP_LAID_OUT = 8
_LOCK = threading.Lock()
_ON_DISK: "OrderedDict[str, Path]" = OrderedDict()   # digest -> root, least recently used first
_IN_USE: Dict[str, int] = {}                          # digest -> tasks reading its copy
_TMP: Optional[Path] = None


def _cleanup() -> None:
    if _TMP is not None:
        shutil.rmtree(_TMP, ignore_errors=True)


@contextlib.contextmanager
def laid_out(bundle: Bundle) -> Iterator[Tuple[Path, Dict[str, str]]]:
    """The entry's path in this process's private copy of the project, and the map from this
    process's display names to the client's, for the duration of the `with` block: the copy
    stays on disk while any block that laid it out is running."""
    from astral_dsl.semantics.modules import display_name

    if bundle.version != __version__:       # a worker that joined after the engine's check
        raise RuntimeError(f"this worker runs astral_dsl {__version__}, the client "
                           f"{str(bundle.version)[:40]}: install the same version")
    digest = bundle.digest
    with _LOCK:
        root = _ON_DISK.get(digest) or _write(bundle)
        _ON_DISK[digest] = root
        _ON_DISK.move_to_end(digest)
        _IN_USE[digest] = _IN_USE.get(digest, 0) + 1
        _evict()
    try:
        client = dict(bundle.names)
        rename = {display_name(root.joinpath(*rel.split("/"))): client[rel]
                  for rel, _ in bundle.files}
        yield root.joinpath(*bundle.entry.split("/")), rename
    finally:
        with _LOCK:
            _IN_USE[digest] -= 1
            if not _IN_USE[digest]:
                del _IN_USE[digest]
            _ON_DISK.move_to_end(digest)        # used until now: the most recently used
            _evict()


def _write(bundle: Bundle) -> Path:
    """Write the bundle's files under this process's private folder (made on first use)."""
    global _TMP
    if _TMP is None:
        _TMP = Path(tempfile.mkdtemp(prefix="astral-explore-"))
        # not atexit: a worker of a forked process pool ends with os._exit and runs no atexit
        # hook (it left one folder behind per worker and run); multiprocessing's finalizers
        # run there, and at a normal exit of the main process too
        multiprocessing.util.Finalize(None, _cleanup, exitpriority=0)
    root = _TMP / bundle.digest
    for rel, data in bundle.files:
        target = root.joinpath(*rel.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    root.mkdir(parents=True, exist_ok=True)
    if bundle.marker:
        (root / ROOT_MARKER).touch()
    return root


def _evict() -> None:
    """Remove the least recently used copies beyond KEEP_LAID_OUT that no task reads (under
    _LOCK)."""
    for digest in list(_ON_DISK):
        if len(_ON_DISK) <= KEEP_LAID_OUT:
            return
        if digest not in _IN_USE:
            shutil.rmtree(_ON_DISK.pop(digest), ignore_errors=True)


def renamer(rename: Dict[str, str]):
    """Rewrite this process's file names to the client's in a diagnostic's JSON."""
    order = sorted(rename, key=len, reverse=True)

    def text(s):
        if not isinstance(s, str):
            return s
        for k in order:
            if k in s:
                s = s.replace(k, rename[k])
        return s

    def fix(d: dict) -> dict:
        d = dict(d)
        if d.get("file") in rename:
            d["file"] = rename[d["file"]]
        d["message"] = text(d.get("message"))
        d["hint"] = text(d.get("hint"))
        if d.get("notes"):
            d["notes"] = [text(n) for n in d["notes"]]
        return d

    return fix
