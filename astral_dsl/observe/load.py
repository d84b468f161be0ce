"""Reading observed data from paths: trace files, rank logs, or directories of them. The format
is recognised from the content (gzip or not; a JSON object with `traceEvents` is a profiler
trace, a JSON array a bare trace-event list, JSON Lines or CSV a rank log), never from the
name. Every problem is a diagnostic naming its file; what can be read is kept."""
from __future__ import annotations

import errno
import gc
import gzip
import json
import os
import re
import sys
import threading
import zlib
from typing import Dict, List, Optional, Sequence, Tuple

from astral_dsl import encodings, records
from astral_dsl.regularfile import open_regular
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.line_ends import lines_of
from astral_dsl.observe import budget, kineto, ranklog, tracedoc
from astral_dsl.observe.kineto import diag
from astral_dsl.observe.records import RankTrace
from astral_dsl.observe.said import TWICE_HINT, ranges, read_twice, said_once
from astral_dsl.pools import cores, forked_map, local_workers

_CORRUPT = (EOFError, zlib.error, gzip.BadGzipFile)

MAX_BYTES = 1 << 30          # one file, after decompression: more is not a trace of one rank


@records.frozen(eq=False)
class Observed:
    traces: Tuple[RankTrace, ...]          # every rank read, in file order (a rank read twice
    #                                        with one world size is kept once)
    diagnostics: Tuple[Diagnostic, ...]
    files: Tuple[str, ...]                 # the files read
    sources: Tuple[str, ...] = ()          # the paths given (files and directories)

    @property
    def ranks(self) -> Dict[int, RankTrace]:
        """rank -> trace (the first read when traces of several world sizes claim it)."""
        out: Dict[int, RankTrace] = {}
        for t in self.traces:
            out.setdefault(t.rank, t)
        return dict(sorted(out.items()))


def files_of(paths: Sequence[str]) -> Tuple[List[Tuple[str, bool]], List[Diagnostic]]:
    """(file, named on the command line) for every file to read."""
    out, diags = [], []
    for p in paths:
        if os.path.isdir(p):
            listed = sorted(os.path.join(p, n) for n in os.listdir(p) if not n.startswith("."))
            found = [f for f in listed if os.path.isfile(f)]
            diags.extend(_skipped(f) for f in listed
                         if not os.path.isfile(f) and not os.path.isdir(f))
            if not found:
                diags.append(diag("E780", "the directory holds no file to read", p))
            out.extend((f, False) for f in found)
        elif os.path.isfile(p):
            out.append((p, True))
        elif "\0" in p:           # os.path's calls say False of it: "no such file" misled
            diags.append(_unreadable(p, "the path holds a NUL character, which no file's "
                                        "path can", errno.EINVAL))
        else:
            gone = not os.path.exists(p)
            diags.append(_unreadable(p, "no such file or directory" if gone
                                     else "not a regular file",
                                     errno.ENOENT if gone else errno.EINVAL))
    return out, diags


def _skipped(path: str) -> Diagnostic:
    """W782 for an entry of a directory that is no regular file, nor a folder (a FIFO, a
    device, a socket, a link to nothing): not read, as a README is not (it was left out in
    silence: a rank's log that is a FIFO left its rank unread with no word why)."""
    what = ("not a regular file (a FIFO, a device or a socket)" if os.path.exists(path) else
            "a link to nothing" if os.path.lexists(path) else "gone since the folder was listed")
    return diag("W782", f"skipped: {what}", path,
                "copy the profiler trace or rank log into the directory as a regular file to "
                "read it")


def _unreadable(path: str, message: str, err: Optional[int]) -> Diagnostic:
    """E780 for a path that cannot be read (the OS error `err`), with what to do: E100's hint
    for a missing path, permissions, a link loop; for a FIFO, a device or a socket (EINVAL,
    regularfile.open_regular's), what to give instead."""
    from astral_dsl.semantics.source_files import unreadable_hint

    return diag("E780", message, path,
                "give a profiler trace or a rank log, or a directory of them"
                if err == errno.EINVAL else unreadable_hint(err, "a profiler trace or a rank log",
                                                            imports=False))


def load(paths: Sequence[str], workers: Optional[int] = None) -> Observed:
    """Every file of `paths`. Two traces claiming one rank with the same world size: the second
    is left out (E786); with different world sizes both are kept, and the diagnosis keeps the
    one of its job's world size. The files are read by `workers` processes (`astral diagnose
    --jobs`); by default one per core, from PARALLEL_FROM files on (fewer are read faster than
    processes start). The result is the same whatever the number, byte for byte: each file is
    read alone, and the results are taken in file order. `workers` is None or 1 to 1,024
    (pools.MAX_LOCAL_WORKERS): ValueError past it, as `astral diagnose --jobs` says it."""
    local_workers("workers", workers)
    files, diags = files_of(paths)
    traces: List[RankTrace] = []
    seen: Dict[Tuple[int, object], RankTrace] = {}
    twice: Dict[Tuple[str, str], List[int]] = {}     # (file, the file read first) -> ranks
    for (path, named), (found, more) in zip(files, _read_all([f for f, _ in files], workers)):
        if not named and not found and [d.code for d in more] == ["E782"] and \
                not _looks_observed(path):
            # a directory's README or notes: said, not an error
            more = [diag("W782", "skipped: " + more[0].message, path)]
        diags.extend(more)
        for t in found:
            key = (t.rank, t.world_size)
            if key in seen:
                twice.setdefault((path, seen[key].file), []).append(t.rank)
                continue
            seen[key] = t
            traces.append(t)
    diags.extend(read_twice(twice))        # a log passed twice: once, not once a rank
    return Observed(tuple(traces), tuple(said_once(diags)), tuple(f for f, _ in files),
                    tuple(paths))


PARALLEL_FROM = 64


def _read_all(files: List[str], workers: Optional[int]):
    """read_file of every file, in order: in worker processes (parsing is CPU-bound), else
    here."""
    if workers is None:
        workers = cores() if len(files) >= PARALLEL_FROM else 1
    workers = min(workers, len(files))
    # forked workers need nothing re-imported (spawned ones would re-run a caller's unguarded
    # script); a process running threads is not forked, but for `diagnose`'s progress line on
    # a terminal (pools.SAFE_THREADS: the workers never write the stderr it holds the lock of)
    return forked_map(read_file, files, workers,
                      chunksize=max(1, len(files) // (4 * max(workers, 1))),
                      safe=lambda: budget.fork_safe())


_OBSERVED_NAME = re.compile(r"(rank[-_]?\d+)|(\.(json|json\.gz|gz|csv|jsonl|ndjson)$)",
                            re.IGNORECASE)


def _looks_observed(path: str) -> bool:
    """A file named like a trace or a log (rank-N, .json, .json.gz, .csv, .jsonl): one that is
    neither is an error, not a note to skip."""
    return _OBSERVED_NAME.search(os.path.basename(path)) is not None


def read_file(path: str) -> Tuple[List[RankTrace], List[Diagnostic]]:
    """One file's ranks and diagnostics.

    The file is read on a thread of its own: Python's JSON parsers (msgspec, json) give up at
    a nesting depth that counts the caller's frames too, so on a fresh stack the answer is the
    file's alone, wherever in a program this is called. Millions of short-lived rows: the
    cyclic garbage collector would rescan them many times over (none of them forms a cycle),
    so it pauses while a file is read."""
    box: Dict[str, object] = {}

    def run():
        try:
            box["out"] = _read_file(path)
        except BaseException as exc:          # re-raised in the caller's thread
            box["exc"] = exc

    enabled = gc.isenabled()
    gc.disable()
    try:
        reader = threading.Thread(target=run, name="astral-read", daemon=True)
        reader.start()
        reader.join()
    finally:
        if enabled:
            gc.enable()
    if "exc" in box:
        raise box["exc"]                      # type: ignore[misc]
    return box["out"]                         # type: ignore[return-value]


def _too_large(path: str) -> Diagnostic:
    return diag("E781", f"the file is larger than {MAX_BYTES >> 20} MiB: not read", path,
                "profile fewer steps per file, or split a rank log by rank")


def _too_many(path: str, exc: Exception) -> Diagnostic:
    return diag("E781", f"the trace holds {exc}, past the reader's budget for one rank's "
                        f"trace (its memory): not read", path,
                "profile fewer steps per file (torch.profiler.schedule's `active`), or fewer "
                "activities")


def _read_file(path: str) -> Tuple[List[RankTrace], List[Diagnostic]]:
    try:
        with _open_regular(path) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_BYTES:            # refused unread (it had read the whole cap first)
                return [], [_too_large(path)]
            head = fh.read(2)
            fh.seek(0)
            # not read(MAX_BYTES + 1): that allocates the whole cap, whatever the file's size
            data = fh.read(size + 1)
        if head == b"\x1f\x8b" and len(data) <= MAX_BYTES:
            data = _gunzip(data)
    except OSError as exc:
        return [], [_unreadable(path, f"cannot read the file: {exc.strerror or exc}",
                                exc.errno)]
    except _CORRUPT as exc:
        return [], [diag("E781", f"the compressed file is truncated or corrupt ({exc})", path,
                         "copy the file again from the host that wrote it")]
    if len(data) > MAX_BYTES:
        return [], [_too_large(path)]
    wide = encodings.wide(data)
    if wide is not None:
        return [], [diag("E781", f"the file is {wide} text, not UTF-8", path,
                         f"a trace or a rank log is read as UTF-8: convert it (`iconv -f "
                         f"{wide[:6]} -t UTF-8`; in Windows PowerShell, `Out-File -Encoding "
                         f"utf8`)")]
    large = len(data) > budget.FROM_BYTES
    held = [data]                 # the parse drops the bytes when it has the text
    del data
    if large:
        try:
            return budget.bounded(_parse, path, handed=held)
        except budget.OverBudget as exc:
            return [], [_over_budget(path, exc)]
    return _parse(path, held)


def _over_budget(path: str, exc: Exception) -> Diagnostic:
    return diag("E781", f"{exc}: not read", path,
                "a real trace or rank log of this size reads within it: the file holds "
                "values the reader does not use, built whole (a large array or object outside "
                "the trace's events, or nested in one), or more than one rank's data")


def _parse(path: str, held: List[bytes]) -> Tuple[List[RankTrace], List[Diagnostic]]:
    """The ranks and diagnostics of a file's bytes (inflated, within MAX_BYTES), given in a
    list: emptied when they are no longer needed."""
    data = held.pop()
    bom = 3 if data[:3] == b"\xef\xbb\xbf" else 0
    if data[bom:bom + 64].lstrip()[:1] in (b"{", b"["):
        # a profiler trace: only the fields and the events the reader uses
        try:
            doc = tracedoc.decode(data[bom:] if bom else data)
        except tracedoc.TooManyEvents as exc:
            return [], [_too_many(path, exc)]
        if doc is not None:
            trace, diags = kineto.read(path, doc)
            return ([trace] if trace is not None else []), diags
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], [diag("E781", f"the file is neither JSON nor CSV text (not UTF-8: byte "
                                 f"0x{data[exc.start]:02x} at offset {exc.start:,})", path,
                         "a trace or a rank log is UTF-8 text: save it as UTF-8, or give the "
                         "file the profiler or the job wrote")]
    del data                      # the text is what is parsed: the bytes are not held with it
    stripped = text.lstrip()
    if not stripped:
        return [], [diag("E781", "the file is empty", path)]
    if stripped[0] in "{[":
        return _json(path, text, stripped)
    if ranklog.looks_like_csv(stripped):
        return ranklog.read_csv(path, stripped)
    return [], [diag("E782", "not a profiler trace or a rank log: expected a JSON trace, JSON "
                             "Lines or CSV with a `rank,iteration,phase,start_s,duration_s` "
                             "header", path)]


def _open_regular(path: str):
    """The file opened for reading, if it is a regular file (regularfile.open_regular: a FIFO
    put in its place after files_of looked would wait for a writer); else OSError."""
    return os.fdopen(open_regular(path), "rb")


def _gunzip(raw: bytes) -> bytes:
    """The content of a gzip file (one member or several, as gzip reads them), at most
    MAX_BYTES + 1 bytes of it; EOFError when it is cut short, zlib.error when corrupt."""
    out: List[bytes] = []
    size = 0
    while raw:
        z = zlib.decompressobj(31)
        chunk = z.decompress(raw, MAX_BYTES + 1 - size)
        out.append(chunk)
        size += len(chunk)
        if size > MAX_BYTES:
            break
        if not z.eof:
            raise EOFError("compressed file ended before the end-of-stream marker was reached")
        raw = z.unused_data.lstrip(b"\x00")       # gzip ignores zero padding after a member
    return b"".join(out)


def _json(path: str, text: str, stripped: str):
    try:
        doc = tracedoc.parse(text)        # json.loads, a trace's unused events dropped
    except tracedoc.TooManyEvents as exc:
        return [], [_too_many(path, exc)]
    except RecursionError:
        return [], [diag("E781", "the JSON is nested deeper than a trace or a log is: not "
                                 "read", path)]
    except ValueError as exc:       # not one JSON document, or an integer past Python's digits
        if _looks_like_log(stripped):
            return ranklog.read_jsonl(path, stripped)
        if not isinstance(exc, json.JSONDecodeError):
            return [], [diag("E781", f"the JSON holds an integer of more than "
                                     f"{sys.get_int_max_str_digits():,} digits: not read",
                             path)]
        # json's "Unterminated string starting at" ends in "at" already
        return [], [diag("E781", f"the file is truncated or not JSON "
                                 f"({exc.msg.removesuffix(' at')} at line {exc.lineno}, "
                                 f"column {exc.colno})", path,
                         "a profiler trace is written when the profiler stops: copy it again "
                         "after the run")]
    return _document(path, doc, stripped)


def _looks_like_log(stripped: str) -> bool:
    """JSON Lines of a rank log: the first of its first 8 lines that parses is an object with
    `rank` and `phase` (a bad first row is the log reader's to report)."""
    for line in lines_of(stripped, 8)[:8]:
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        return isinstance(obj, dict) and "rank" in obj and "phase" in obj
    return False


def _document(path: str, doc, stripped):
    """A parsed JSON document: a trace, or one JSON Lines record (the text read as a log)."""
    if kineto.looks_like_trace(doc):
        trace, diags = kineto.read(path, doc)
        return ([trace] if trace is not None else []), diags
    if isinstance(doc, dict) and "rank" in doc and "phase" in doc:
        return ranklog.read_jsonl(path, stripped)
    return [], [diag("E782", "a JSON file without `traceEvents`: not a profiler trace", path)]


__all__ = ["MAX_BYTES", "Observed", "TWICE_HINT", "files_of", "load", "ranges", "read_file",
           "said_once"]
