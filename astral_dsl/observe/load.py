"""Reading observed data from paths: trace files, rank logs, or directories of them. The format
is recognised from the content (gzip or not; a JSON object with `traceEvents` is a profiler
trace, a JSON array a bare trace-event list, JSON Lines or CSV a rank log), never from the
name. Every problem is a diagnostic naming its file; what can be read is kept."""
from __future__ import annotations

import gc
import gzip
import json
import os
import zlib
from typing import Dict, List, Sequence, Tuple

import attrs

from astral_dsl.diagnostics import Diagnostic
from astral_dsl.observe import kineto, ranklog
from astral_dsl.observe.kineto import diag
from astral_dsl.observe.records import RankTrace

MAX_BYTES = 1 << 30          # one file, after decompression: more is not a trace of one rank


@attrs.frozen(eq=False)
class Observed:
    ranks: Dict[int, RankTrace]
    diagnostics: Tuple[Diagnostic, ...]
    files: Tuple[str, ...]

    @property
    def world_sizes(self) -> Dict[int, List[str]]:
        out: Dict[int, List[str]] = {}
        for t in self.ranks.values():
            if t.world_size is not None:
                out.setdefault(t.world_size, []).append(t.file)
        return out


def files_of(paths: Sequence[str]) -> Tuple[List[Tuple[str, bool]], List[Diagnostic]]:
    """(file, named on the command line) for every file to read."""
    out, diags = [], []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(os.path.join(p, n) for n in os.listdir(p)
                           if not n.startswith(".") and os.path.isfile(os.path.join(p, n)))
            if not found:
                diags.append(diag("E780", "the directory holds no file to read", p))
            out.extend((f, False) for f in found)
        elif os.path.isfile(p):
            out.append((p, True))
        else:
            diags.append(diag("E780", "no such file or directory" if not os.path.exists(p)
                              else "not a regular file", p))
    return out, diags


def load(paths: Sequence[str]) -> Observed:
    files, diags = files_of(paths)
    ranks: Dict[int, RankTrace] = {}
    for path, named in files:
        traces, more = read_file(path)
        if not named and not traces and [d.code for d in more] == ["E782"]:
            # a directory's README or notes: said, not an error
            more = [diag("W782", "skipped: " + more[0].message, path)]
        diags.extend(more)
        for t in traces:
            if t.rank in ranks:
                diags.append(diag("E786", f"rank {t.rank} appears twice: already read from "
                                          f"{ranks[t.rank].file}; this one is left out", path))
                continue
            ranks[t.rank] = t
    return Observed(dict(sorted(ranks.items())), tuple(diags), tuple(f for f, _ in files))


def read_file(path: str) -> Tuple[List[RankTrace], List[Diagnostic]]:
    """Millions of short-lived rows: the cyclic garbage collector would rescan them many times
    over (none of them forms a cycle), so it pauses while a file is read."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read_file(path)
    finally:
        if enabled:
            gc.enable()


def _read_file(path: str) -> Tuple[List[RankTrace], List[Diagnostic]]:
    try:
        with open(path, "rb") as fh:
            head = fh.read(2)
            fh.seek(0)
            if head == b"\x1f\x8b":
                data = gzip.GzipFile(fileobj=fh).read(MAX_BYTES + 1)
            else:
                data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        return [], [diag("E780", f"cannot read the file: {exc.strerror or exc}", path)]
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        return [], [diag("E781", f"the compressed file is truncated or corrupt ({exc})", path,
                         "copy the file again from the host that wrote it")]
    if len(data) > MAX_BYTES:
        return [], [diag("E781", f"the file is larger than {MAX_BYTES >> 20} MiB: not read",
                         path, "profile fewer steps per file")]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return [], [diag("E781", "the file is neither JSON nor CSV text (not UTF-8)", path)]
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


def _json(path: str, text: str, stripped: str):
    try:
        doc = json.loads(text)
    except ValueError as exc:
        first = stripped.split("\n", 1)[0]
        try:
            obj = json.loads(first)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and "rank" in obj and "phase" in obj:
            return ranklog.read_jsonl(path, stripped)
        return [], [diag("E781", f"the file is truncated or not JSON ({exc.msg} at line "
                                 f"{exc.lineno}, column {exc.colno})", path,
                         "a profiler trace is written when the profiler stops: copy it again "
                         "after the run")]
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if kineto.looks_like_trace(doc):
        trace, diags = kineto.read(path, doc)
        return ([trace] if trace is not None else []), diags
    if isinstance(doc, dict) and "rank" in doc and "phase" in doc:
        return ranklog.read_jsonl(path, stripped)
    return [], [diag("E782", "a JSON file without `traceEvents`: not a profiler trace", path)]


__all__ = ["MAX_BYTES", "Observed", "files_of", "load", "read_file"]
