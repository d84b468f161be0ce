"""A design as a git revision holds it, for `astral diff REV:path` (cli/diff.py).

A revision is never read as an option of git: one that starts with `-` is refused, it is
resolved to its tree with `--end-of-options` and git is given that tree's id. The revision's
`.astral` and `astral.toml` files are laid out in a private temporary directory so that its
imports resolve in that same revision (the work tree is never touched), but their contents are
not written there: each file is a sparse placeholder of its size (no data, no disk), and the
compiler reads a module's bytes from git (`git cat-file blob`) only when it imports it, through
`RevisionReader`, refusing one beyond the 8 MiB source cap from its size alone (E108); a data
file the design reads through the compiler's reader (an inventory; a site's `climate`, which
analyses/climate.py reads with the design's reader) is looked up in the tree then, and
`import stdlib.X` reads the installed stdlib. A
revision's files cost neither memory nor disk, however large: `git archive` of every `.astral`
file had put a 700 MB file, never imported and stored in 700 KB by git, into the memory
(1.5 GB) and onto the disk.

A symbolic link of the revision that points outside the repository is never followed: as the
entry it is refused (E100, exit 2), as an import the compiler's E207 names it (imports resolve
inside the project only). A link's target is read only when it could be a path (at most
MAX_LINK bytes)."""
from __future__ import annotations

import errno
import os
import posixpath
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from astral_dsl import records

MAX_LINK = 4096                  # PATH_MAX on Linux: a longer target names no file


class GitError(Exception):
    pass


class RevisionRefused(Exception):
    """A revision's entry that must not be read: `diagnostic` says why."""

    def __init__(self, diagnostic):
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


@records.frozen
class Blob:
    oid: str
    size: int
    link: Optional[str] = None        # a symbolic link's target (read when at most MAX_LINK)


def git(args: List[str], cwd: Optional[str] = None, binary: bool = False,
        stdin: Optional[bytes] = None):
    # subprocess is imported where used: `astral --help` and `--version` import every command's
    # module for its name and help (for start-up)
    import subprocess

    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=120,
                              input=stdin)
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"`git {args[0]}` did not answer in 120 s") from None
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(err[-1] if err else f"`git {args[0]}` failed")
    return proc.stdout if binary else proc.stdout.decode("utf-8", "replace")


def split_revision(arg: str) -> Optional[Tuple[str, str]]:
    """(REV, path) when `arg` names a revision's file rather than an existing file."""
    if os.path.exists(arg) or ":" not in arg:
        return None
    rev, path = arg.split(":", 1)
    if not rev or not path:
        return None
    if rev.startswith("-"):
        raise GitError(f"`{rev}` is not a revision: it starts with `-`")
    return rev, path


class RevisionReader:
    """The compiler's `read` for a materialised revision: a placeholder's bytes from git, and
    the shipped stdlib's modules from the stdlib (`import stdlib.X` resolves there for every
    design, a revision's too: it was refused as no file of the revision, so a revision of any
    design that imports the stdlib could not be read)."""

    def __init__(self, top: str, folder: Path, blobs: Dict[str, Blob], tree: str = ""):
        from astral_dsl import resources

        self.top, self.folder, self.blobs, self.tree = top, folder.resolve(), blobs, tree
        self.stdlib = resources.stdlib_dir().resolve()

    def __call__(self, path: Path) -> bytes:
        from astral_dsl.semantics.source_files import MAX_SOURCE_BYTES, SourceTooLarge, read_file

        if _inside(Path(path), self.stdlib):
            return read_file(Path(path))
        try:
            name = Path(path).resolve().relative_to(self.folder).as_posix()
        except (ValueError, OSError, RuntimeError):
            name = None
        blob = self.blobs.get(name) if name is not None else None
        if blob is None and name is not None and self.tree:
            blob = self._data_file(name)
        if blob is None or blob.link is not None:
            raise FileNotFoundError(errno.ENOENT, "not a file of the revision", str(path))
        if blob.size > MAX_SOURCE_BYTES:
            raise SourceTooLarge(errno.EFBIG, f"{blob.size:,} bytes", str(path))
        return git(["cat-file", "blob", blob.oid], cwd=self.top, binary=True)

    def _data_file(self, name: str) -> Optional[Blob]:
        """A file of the revision that is not laid out, looked up when the design reads it (a
        data file it names: an inventory); a regular file only. It was "not a file of the
        revision", so the revision of a design with an inventory was E230."""
        found = _listing(self.top, [self.tree, "--", name]) if _plain(name) else []
        if len(found) != 1 or found[0][0] != name:
            return None
        mode, kind, oid, size = found[0][1]
        if kind != "blob" or mode == "120000":
            return None
        self.blobs[name] = Blob(oid, int(size))
        return self.blobs[name]


def materialise(rev: str, path: str) -> Tuple[Path, Path, RevisionReader]:
    """Lay the revision's design files out in a new private directory; returns (directory, the
    entry file in it, the reader of their contents)."""
    top = git(["rev-parse", "--show-toplevel"]).strip()
    if path.startswith(("./", "../")):
        prefix = git(["rev-parse", "--show-prefix"]).strip()
        rel = os.path.normpath(os.path.join(prefix, path))
    else:
        rel = os.path.normpath(path)
    if rel.startswith("..") or os.path.isabs(rel):
        raise GitError(f"`{path}` is outside the repository")
    rel = rel.replace(os.sep, "/")
    try:
        tree = git(["rev-parse", "--verify", "--end-of-options", f"{rev}^{{tree}}"],
                   cwd=top).strip()
    except GitError:
        raise GitError(f"`{rev}` is not a revision of this repository") from None
    blobs = _design_files(top, tree, rel, rev)
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="astral-diff-"))
    try:
        _lay_out(folder, blobs)
        entry = folder / rel
        link = blobs[rel].link
        if link == "" or (entry.is_symlink() and not _inside(entry, folder)):
            from astral_dsl.diagnostics import Diagnostic, Severity

            to = ("a target that is no path (" + f"{blobs[rel].size:,} bytes), outside"
                  if link == "" else f"`{link}`, outside" if _outside(rel, link or "")
                  else "a link that leaves")
            raise RevisionRefused(Diagnostic(
                "E100", Severity.ERROR, f"cannot read `{rev}:{rel}`: it is a symbolic link to "
                f"{to} the repository", None,
                "astral diff reads a revision's files from git only; name the file the link "
                "points to", file=f"{rev}:{rel}"))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder, entry, RevisionReader(top, folder, blobs, tree)


def _design_files(top: str, tree: str, rel: str, rev: str) -> Dict[str, Blob]:
    """The tree's `.astral` and `astral.toml` files and links to them, and the entry `rel`
    whatever its name, with their sizes; a link's target when it could be a path (else "")."""
    out: Dict[str, Blob] = {}
    for name, (mode, kind, oid, size) in _listing(top, ["-r", tree]):
        if name.endswith(".astral") or name.split("/")[-1] == "astral.toml":
            if kind == "blob" and _plain(name):
                out[name] = Blob(oid, int(size), "" if mode == "120000" else None)
    if rel not in out:
        found = _listing(top, [tree, "--", rel])
        if not found:
            raise GitError(f"path '{rel}' does not exist in '{rev}'")
        mode, kind, oid, size = found[0][1]
        if kind != "blob":
            raise GitError(f"`{rev}:{rel}` is a {kind}, not a file")
        out[rel] = Blob(oid, int(size), "" if mode == "120000" else None)
    links = [n for n, b in out.items() if b.link is not None and b.size <= MAX_LINK]
    if links:
        answer = git(["cat-file", "--batch"], cwd=top,
                     stdin="".join(f"{out[n].oid}\n" for n in links).encode(), binary=True)
        for name, target in zip(links, _batch_blobs(answer)):
            out[name] = Blob(out[name].oid, out[name].size, "" if "\0" in target else target)
    return out


def _listing(top: str, args: List[str]) -> List[Tuple[str, List[str]]]:
    """`git ls-tree -l`: (path, [mode, type, object, size]) per entry; paths literal."""
    out = []
    for entry in git(["--literal-pathspecs", "ls-tree", "-l", "-z", *args], cwd=top).split("\0"):
        if "\t" in entry:
            meta, name = entry.split("\t", 1)
            out.append((name, meta.split()))
    return out


def _plain(name: str) -> bool:
    """A relative path of plain components (git's own trees hold no other; a forged one may)."""
    parts = name.split("/")
    return "\0" not in name and all(p not in ("", ".", "..") for p in parts) \
        and parts[0] != ".git"


def _lay_out(folder: Path, blobs: Dict[str, Blob]) -> None:
    """Placeholders, then links (a link laid first could lead a later path out of `folder`);
    nothing is written through a link or outside the folder."""
    base = folder.resolve()
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    for name, blob in sorted(blobs.items(), key=lambda nb: nb[1].link is not None):
        if blob.link == "":
            continue                        # a target longer than any path: no file
        target = folder.joinpath(*name.split("/"))
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if not _inside(target.parent, base) or os.path.lexists(target):
                continue
            if blob.link is not None:
                os.symlink(blob.link, target)
                continue
            fd = os.open(target, flags, 0o600)
        except OSError:                     # a forged tree's file where a folder must be
            continue
        try:
            os.ftruncate(fd, blob.size)     # sparse: the size, no data
        finally:
            os.close(fd)


def _batch_blobs(data: bytes) -> List[str]:
    """The contents of `git cat-file --batch`'s answer, in order."""
    out, i = [], 0
    while i < len(data):
        end = data.index(b"\n", i)
        size = int(data[i:end].split(b" ")[2])
        out.append(data[end + 1:end + 1 + size].decode("utf-8", "surrogateescape"))
        i = end + 1 + size + 1
    return out


def _outside(name: str, target: str) -> bool:
    """Whether a link at `name` (relative to the repository's top) to `target` leaves it."""
    if target.startswith("/") or "\0" in target:
        return True
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    return resolved == ".." or resolved.startswith("../")


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except (ValueError, OSError, RuntimeError):
        return False


__all__ = ["GitError", "RevisionReader", "RevisionRefused", "git", "materialise",
           "split_revision"]
