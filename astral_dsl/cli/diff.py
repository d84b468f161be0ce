"""`astral diff A B`: what changes from design A to design B, like `terraform plan`.

A and B are files, or `REV:path` read from git (`HEAD~1:examples/astral.astral`; the path is
relative to the repository's top, or to the working directory when it starts with `./` or
`../`, as git reads it). A revision's `.astral` files and `astral.toml` files are written from
git (`git ls-tree`, `git archive`) into a private temporary directory, so its imports resolve
in that same revision; the work tree is never touched. A revision is never read as an option
of git: one that starts with `-` is refused, it is resolved to its tree with
`--end-of-options` and git is given that tree's id. A symbolic link of the revision that
points outside the repository is never followed: as the entry it is refused (E100, exit 2), as
an import the compiler's E207 names it (imports resolve inside the project only).

`--set` overrides a parameter on both sides, `--set-a` on A only, `--set-b` on B only (so
`astral diff X X --set-b hosts_per_rack=5` is what a fifth host per rack does).

Exit codes: 0 both sides compile without errors, 1 either side has errors, 2 usage error or
unreadable input; with `--exit-code`, 1 when anything differs and 0 when nothing does (2 still
for a usage error)."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from astral_dsl.cli.common import (EXIT_ERRORS, EXIT_OK, EXIT_USAGE, UsageError,
                                   add_calibration, add_color, add_set, colour, parse_sets,
                                   unreadable, usage)

NAME = "diff"
HELP = "what changes between two designs (files or git REV:path)"


def register(sub) -> None:
    d = sub.add_parser(NAME, help=HELP)
    d.add_argument("a", metavar="A", help="a design: FILE or REV:path")
    d.add_argument("b", metavar="B", help="the other design: FILE or REV:path")
    add_set(d, help="override a top-level `param` on both sides")
    add_set(d, "--set-a", "override a top-level `param` on A only")
    add_set(d, "--set-b", "override a top-level `param` on B only")
    d.add_argument("--exit-code", action="store_true",
                   help="exit 1 when anything differs, 0 when nothing does (as git diff)")
    d.add_argument("--format", choices=["human", "json"], default="human")
    add_calibration(d)
    add_color(d)


class GitError(Exception):
    pass


class RevisionRefused(Exception):
    """A revision's entry that must not be read: `diagnostic` says why."""

    def __init__(self, diagnostic):
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def _git(args: List[str], cwd: Optional[str] = None, binary: bool = False,
         stdin: Optional[bytes] = None):
    # subprocess, tempfile and shutil are imported where used: `astral --help` and `--version`
    # import every command's module for its name and help (for start-up)
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


def materialise(rev: str, path: str) -> Tuple[Path, Path]:
    """Write the revision's design files into a new private directory; returns (directory,
    the entry file in it)."""
    top = _git(["rev-parse", "--show-toplevel"]).strip()
    if path.startswith(("./", "../")):
        prefix = _git(["rev-parse", "--show-prefix"]).strip()
        rel = os.path.normpath(os.path.join(prefix, path))
    else:
        rel = os.path.normpath(path)
    if rel.startswith("..") or os.path.isabs(rel):
        raise GitError(f"`{path}` is outside the repository")
    rel = rel.replace(os.sep, "/")
    try:
        tree = _git(["rev-parse", "--verify", "--end-of-options", f"{rev}^{{tree}}"],
                    cwd=top).strip()
    except GitError:
        raise GitError(f"`{rev}` is not a revision of this repository") from None
    kind = _git(["cat-file", "-t", f"{tree}:{rel}"], cwd=top).strip()
    if kind != "blob":
        raise GitError(f"`{rev}:{rel}` is a {kind}, not a file")
    files = _design_files(top, tree)
    names = [n for n in files if files[n] is None]
    links = {n: t for n, t in files.items() if t is not None}
    if rel not in files:
        names.append(rel)
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="astral-diff-"))
    try:
        data = _git(["archive", "--format=tar", tree, "--", *names], cwd=top, binary=True)
        import io
        import tarfile

        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(folder, filter="data")
        for name, target in links.items():       # never followed here: see the docstring
            link = folder.joinpath(*name.split("/"))
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(target, link)
        entry = folder / rel
        if entry.is_symlink() and not _inside(entry, folder):
            from astral_dsl.diagnostics import Diagnostic, Severity

            to = f"`{links[rel]}`, outside" if rel in links else "a link that leaves"
            raise RevisionRefused(Diagnostic(
                "E100", Severity.ERROR, f"cannot read `{rev}:{rel}`: it is a symbolic link to "
                f"{to} the repository", None,
                "astral diff reads a revision's files from git only; name the file the link "
                "points to", file=f"{rev}:{rel}"))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder, entry


def _design_files(top: str, tree: str) -> Dict[str, Optional[str]]:
    """The tree's `.astral` and `astral.toml` files: path -> None for a file, or the target of
    a symbolic link that points outside the repository (tar's data filter writes the others,
    which stay inside the folder)."""
    out: Dict[str, Optional[str]] = {}
    links: Dict[str, str] = {}
    for entry in _git(["ls-tree", "-r", "-z", tree], cwd=top).split("\0"):
        if "\t" not in entry:
            continue
        meta, name = entry.split("\t", 1)
        if not (name.endswith(".astral") or name.split("/")[-1] == "astral.toml"):
            continue
        mode, _, oid = meta.split(" ")
        out[name] = None
        if mode == "120000":
            links[name] = oid
    if links:
        answer = _git(["cat-file", "--batch"], cwd=top,
                      stdin="".join(f"{oid}\n" for oid in links.values()).encode(),
                      binary=True)
        for name, target in zip(links, _batch_blobs(answer)):
            if _outside(name, target):
                out[name] = target
    return out


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
    import posixpath

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


def _load(arg: str, overrides, folders: List[Path]):
    """(label, checked design, relative-path function) of one side."""
    from astral_dsl import api

    rev = split_revision(arg)
    if rev is None:
        ws = api.compile(arg, overrides)
        result = api.check(ws)
        return arg, result, lambda f: _relative(f, ws.root)
    folder, entry = materialise(*rev)
    folders.append(folder)
    ws = api.compile(str(entry), overrides)
    result = _renamed(api.check(ws), folder, rev[0])
    return arg, result, lambda f: _relative(f, ws.root, f"{rev[0]}:")


def _relative(file: str, root: Optional[Path], strip: str = "") -> str:
    if strip and file.startswith(strip):
        return file[len(strip):]
    try:
        return str(Path(file).resolve().relative_to(root)) if root else file
    except ValueError:
        return file


def _renamed(result, folder: Path, rev: str):
    """Diagnostics name the revision's files as `REV:path`, not the temporary directory."""
    import attrs

    base = str(folder.resolve())

    def name(file):
        if file is None:
            return None
        try:
            return f"{rev}:" + str(Path(file).resolve().relative_to(base)).replace(os.sep, "/")
        except (ValueError, OSError):
            return file

    def fix(d):
        span = attrs.evolve(d.span, file=name(d.span.file)) if d.span is not None else None
        return attrs.evolve(d, span=span, file=name(d.file) if d.file else d.file)

    design = result.design
    return attrs.evolve(result, diagnostics=tuple(fix(d) for d in result.diagnostics),
                        design=attrs.evolve(design, file=name(design.file)))


def run(args, overrides) -> int:
    import shutil

    from astral_dsl.api.sides import side
    from astral_dsl.outputs.diff import compare, render, to_json
    from astral_dsl.outputs.jsonout import dumps

    from astral_dsl.cli.runs import read_calibration

    try:
        over_a = {**overrides, **parse_sets(args.set_a)}
        over_b = {**overrides, **parse_sets(args.set_b)}
    except UsageError as exc:
        return usage(str(exc))
    calibration, failed = read_calibration(args)
    if failed is not None:
        return failed
    folders: List[Path] = []
    try:
        sides = []
        for arg, over in ((args.a, over_a), (args.b, over_b)):
            try:
                label, result, relative = _load(arg, over, folders)
            except GitError as exc:
                return usage(f"cannot read `{arg}` from git: {exc}")
            except RevisionRefused as exc:
                from astral_dsl.cli.common import print_diagnostics

                print_diagnostics([exc.diagnostic], colour(args, sys.stderr), sys.stderr)
                return EXIT_USAGE
            if unreadable(result.design):
                from astral_dsl.cli.common import print_diagnostics

                print_diagnostics(result.diagnostics, colour(args, sys.stderr), sys.stderr)
                return EXIT_USAGE
            sides.append(side(label + "".join(f" --set {k}={v}" for k, v in over.items()),
                              result, relative, calibration))
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
    a, b = sides
    changes = compare(a, b)
    if args.format == "json":
        sys.stdout.write(dumps(to_json(a, b, changes)) + "\n")
    else:
        sys.stdout.write(render(a, b, changes, colour(args)))
    if args.exit_code:
        return EXIT_ERRORS if changes else EXIT_OK
    return EXIT_ERRORS if not (a.valid and b.valid) else EXIT_OK
