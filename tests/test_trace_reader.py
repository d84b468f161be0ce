"""The trace reader on hostile and odd input (astral_dsl.observe.read_file): whatever the bytes,
it answers with traces and diagnostics, never an exception; a file reads the same plain and
gzipped; and where msgspec's schema decode takes a document, the full parse it falls back to
otherwise (json, then tracedoc.from_dict) gives the same result, so both meet at one reader.

- documents generated as JSON text (duplicate keys, odd whitespace, escapes, a BOM, bare event
  arrays, gzip; values of every type where the reader expects one), by hypothesis (fixed,
  derandomized examples) and by a seeded generator;
- the real traces of tests/fixtures/traces and traces generated for the single-pod example;
- malformed bytes (cut, flipped, invalid UTF-8, lone surrogates, 1e400, 100,000 nested arrays,
  empty, trailing garbage);
- targeted documents, one rule each (rounding, -0, integers past 2^53 and 2^63, keys given
  twice, True == 1 in a set, ...), 4,000 numbers and 500 strings in bulk, and the shortest
  documents of the mismatches and bugs found before (each once raised or read wrongly).

The documents come from tests/trace_documents.py; tests/fuzz_traces.py (`make fuzz-traces`)
runs the same checks on mutated traces."""
from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path
from typing import List, Tuple

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from astral_dsl.observe import read_file
from astral_dsl.observe.records import RankTrace
from trace_documents import TAPE, Obj, Seeded, Tape, Writer, document

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO / "tests" / "fixtures" / "traces"
REAL = sorted(TRACES.glob("*.json.gz"))

FUZZ = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.large_base_example])
SEEDED = 150                 # seeded random documents


# ---- the checks --------------------------------------------------------------------------------
@attrs.frozen
class Raised:
    kind: str
    message: str


def outcome(path: Path):
    """read_file's answer, or the exception it raised (which fails the checks)."""
    try:
        traces, diags = read_file(str(path))
    except Exception as exc:                        # noqa: BLE001 - reported by the checks
        return Raised(type(exc).__name__, str(exc)[:300])
    return tuple(traces), tuple(diags)


def typed(v):
    """A value with the type of every part of it: True is not 1, 1.0 is not 1, a numpy integer
    is not an int."""
    if isinstance(v, (tuple, list)):
        return (type(v).__name__, tuple(typed(x) for x in v))
    if isinstance(v, float):
        return ("float", v.hex())
    return (type(v).__name__, v)


TRACE_FIELDS = ("rank", "world_size", "file", "source", "iterations_from", "device", "timers",
                "kernel_names")
COLUMNS = ("iteration", "phase", "start", "duration", "peer", "op", "group", "kernel")
DIAG_FIELDS = ("code", "severity", "message", "file", "hint", "span", "notes")


def _column(name: str, a: np.ndarray, b: np.ndarray) -> List[str]:
    if a is None and b is None:                     # a column a trace may lack (`kernel`)
        return []
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return [f"{name}: {type(a).__name__} vs {type(b).__name__}"]
    if a.dtype != b.dtype or a.shape != b.shape:
        return [f"{name}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"]
    if a.tobytes() == b.tobytes():
        return []
    i = int(np.flatnonzero(a.view(np.uint8).reshape(len(a), -1) !=
                           b.view(np.uint8).reshape(len(b), -1))[0] // a.itemsize) \
        if a.size else 0
    return [f"{name}[{i}]: {a[i]!r} vs {b[i]!r} (of {len(a)})"]


def differences(one, other) -> List[str]:
    """What differs between two outcomes of reading, in words (every field of every trace,
    values and dtypes bit for bit; every diagnostic)."""
    if isinstance(one, Raised) or isinstance(other, Raised):
        return [] if one == other else [f"outcome: {one!r} vs {other!r}"]
    out = []
    (ft, fd), (st_, sd) = one, other
    if len(ft) != len(st_):
        out.append(f"traces: {len(ft)} vs {len(st_)}")
    for i, (a, b) in enumerate(zip(ft, st_)):
        if type(a) is not RankTrace or type(b) is not RankTrace:
            out.append(f"trace {i}: {type(a).__name__} vs {type(b).__name__}")
            continue
        for f in TRACE_FIELDS:
            if typed(getattr(a, f)) != typed(getattr(b, f)):
                out.append(f"trace {i} .{f}: {getattr(a, f)!r} vs {getattr(b, f)!r}")
        ga = tuple((typed(g.name), typed(g.desc), typed(g.ranks), type(g)) for g in a.groups)
        gb = tuple((typed(g.name), typed(g.desc), typed(g.ranks), type(g)) for g in b.groups)
        if type(a.groups) is not type(b.groups) or ga != gb:
            out.append(f"trace {i} .groups: {a.groups!r} vs {b.groups!r}")
        for col in COLUMNS:
            out += [f"trace {i} .{m}" for m in _column(col, getattr(a, col), getattr(b, col))]
    if len(fd) != len(sd):
        out.append(f"diagnostics: {[d.code for d in fd]} vs {[d.code for d in sd]}")
    for i, (a, b) in enumerate(zip(fd, sd)):
        for f in DIAG_FIELDS:
            if typed(getattr(a, f)) != typed(getattr(b, f)):
                out.append(f"diagnostic {i} .{f}: {getattr(a, f)!r} vs {getattr(b, f)!r}")
    return out


def full_parse(path: Path, body: bytes):
    """What the reader gives for `body` parsed in full (json, from_dict), or None when json
    cannot parse it as UTF-8 text or it is not a trace. The reader does not parse in full: it
    decodes the events one at a time against the schema (tracedoc.decode), or where the schema
    decode does not take the document walks it with json's scanner (tracedoc.parse), each way
    keeping only the events it uses; both are compared with this."""
    from astral_dsl.observe import kineto

    plain = body[3:] if body[:3] == b"\xef\xbb\xbf" else body
    try:
        doc = json.loads(plain.decode("utf-8"))
    except (ValueError, RecursionError):           # UnicodeDecodeError is a ValueError
        return None
    doc = doc if isinstance(doc, dict) else {"traceEvents": doc}
    if not kineto.looks_like_trace(doc):
        return None
    trace, diags = kineto.read(str(path), doc)
    return ((trace,) if trace is not None else ()), tuple(diags)


def problems(folder: Path, name: str, body: bytes, packed: bool = True) -> List[str]:
    """What is wrong with reading `body`: an exception; another answer gzipped than plain;
    another answer from the full parse than from the schema decode."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)
    plain = outcome(path)
    out = [f"raised {plain!r}"] if isinstance(plain, Raised) else []
    if packed:
        path.write_bytes(gzip.compress(body, mtime=0))
        out += [f"gzipped: {d}" for d in differences(outcome(path), plain)]
        path.write_bytes(body)
    full = full_parse(path, body)
    if full is not None and not isinstance(plain, Raised):
        out += [f"full parse: {d}" for d in differences(full, plain)]
    return out


def shown(body: bytes, limit: int = 1500) -> str:
    text = repr(body[:limit])
    return text + (f" ... ({len(body)} bytes)" if len(body) > limit else "")


def assert_reads(folder: Path, name: str, body: bytes, packed: bool = True):
    found = problems(folder, name, body, packed)
    assert not found, "\n  ".join(found[:8]) + f"\ndocument {name}: {shown(body)}"


def test_the_comparison_sees_every_difference():
    """The comparison is not a stub that passes anything: a sign of zero, a dtype, a bool for an
    int, a group's description, a diagnostic's hint, an exception's message each differ."""
    from astral_dsl.observe.kineto import diag
    from astral_dsl.observe.records import ProcessGroup, make

    base = attrs.evolve(make(0, 2, "f", "kineto", [(1, 3, 0.0, 1e-6, -1, 0, 0)],
                             (ProcessGroup("a", "b", (0, 1)),), "H100", "ProfilerStep"),
                        kernel=np.array([0], dtype=np.int32), kernel_names=("gemm",))
    d = diag("W783", "message", "f", "hint")
    ok = ((base,), (d,))
    assert differences(ok, ok) == []
    changed = {
        "start": attrs.evolve(base, start=np.array([-0.0])),
        "phase": attrs.evolve(base, phase=base.phase.astype(np.int64)),
        "rank": attrs.evolve(base, rank=False),
        "world_size": attrs.evolve(base, world_size=2.0),
        "groups": attrs.evolve(base, groups=(ProcessGroup("a", "c", (0, 1)),)),
        "device": attrs.evolve(base, device="H200"),
        "timers": attrs.evolve(base, timers="megatron"),
        "kernel_names": attrs.evolve(base, kernel_names=("gemv",)),
        "kernel": attrs.evolve(base, kernel=np.array([0], dtype=np.int64)),
    }
    for field, trace in changed.items():
        found = differences(((trace,), (d,)), ok)
        assert len(found) == 1 and f".{field}" in found[0], (field, found)
    assert differences(((base,), (attrs.evolve(d, hint=None),)), ok)
    assert differences(((), (d,)), ok) == ["traces: 0 vs 1"]
    assert differences(Raised("TypeError", "a"), Raised("TypeError", "b"))
    assert differences(Raised("TypeError", "a"), ok)


def test_the_checks_see_a_full_parse_that_differs(tmp_path, monkeypatch):
    """A from_dict that loses the kernels' arguments is caught: the check compares the two
    ways of reading, not one with itself."""
    from astral_dsl.observe import tracedoc

    import msgspec

    real = tracedoc.from_dict
    monkeypatch.setattr(tracedoc, "from_dict", lambda doc: msgspec.structs.replace(
        real(doc), traceEvents=[msgspec.structs.replace(e, args=tracedoc.Args())
                                for e in real(doc).traceEvents]))
    assert any("full parse" in p for p in problems(tmp_path, "rank-0.json", _small()))


def test_each_record_keeps_its_kernel_name(tmp_path):
    """The per-record kernel column (diagnose/breakdown.py's kernel spread) is read: each
    record's index into kernel_names gives its kernel's name, in the records' order (by start),
    the same on the schema decode and the full parse (the checks above compare both)."""
    path = tmp_path / "rank-0.json"
    path.write_bytes(_small())
    (trace,), _ = read_file(str(path))
    assert trace.kernel is not None and trace.kernel.dtype == np.int32
    assert trace.kernel_names == ("gemm", "ncclDevKernel_AllReduce")
    assert [trace.kernel_names[k] for k in trace.kernel.tolist()] == \
        ["gemm", "ncclDevKernel_AllReduce"] * 2
    assert trace.select(trace.iteration == 2).kernel.tolist() == [0, 1]
    assert not problems(tmp_path, "rank-1.json", _small())


# ---- generated documents -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("reader")


@FUZZ
@given(TAPE)
def test_generated_documents_read(folder, tape):
    body, name = document(Tape(tape))
    assert_reads(folder, name, body)


def test_seeded_documents_read(folder):
    """SEEDED documents from a seeded generator (the same every run): every failure listed,
    the shortest document shown."""
    found = []
    for seed in range(SEEDED):
        body, name = document(Seeded(seed))
        bad = problems(folder / str(seed), name, body)
        if bad:
            found.append((len(body), seed, name, bad, body))
    found.sort(key=lambda f: f[0])
    assert not found, (f"{len(found)} of {SEEDED} documents fail (seeds "
                       f"{[f[1] for f in found][:30]}); the shortest, seed {found[0][1]} "
                       f"({found[0][2]}):\n  " + "\n  ".join(found[0][3]) +
                       f"\n{shown(found[0][4])}")


def test_the_generator_reaches_every_case():
    """The generated documents are not all one kind: between them they give traces read by
    ProfilerStep and by pattern, every diagnostic of the trace reader, documents the reader
    decodes with its schema (msgspec) and ones it parses in full, BOMs, bare arrays and
    traceEvents twice."""
    import tempfile

    from astral_dsl.observe import tracedoc

    seen = set()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(SEEDED):
            body, name = document(Seeded(seed))
            path = Path(tmp) / name
            path.write_bytes(body)
            got = outcome(path)
            if isinstance(got, Raised):
                seen.add("raised")
            else:
                seen.update(t.iterations_from for t in got[0])
                seen.update(d.code for d in got[1])
            plain = body[3:] if body[:3] == b"\xef\xbb\xbf" else body
            seen.add("schema" if tracedoc.decode(plain) is not None else "full parse")
            seen.add("bom" if b"\xef\xbb\xbf" in body[:80] else "no bom")
            seen.add("array" if body.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"[" else "object")
            seen.add("traceEvents twice" if body.count(b'"traceEvents"') > 1 else "once")
    assert {"ProfilerStep", "pattern", "E783", "E788", "W783", "W788", "schema", "full parse",
            "bom", "no bom", "array", "object", "traceEvents twice", "once"} <= seen, seen


# ---- the real traces ---------------------------------------------------------------------------
GENERATED_RANKS = (0, 1, 7, 8, 511, 812, 1023)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> List[Path]:
    """Traces of the single-pod example's 1,024-rank job as astral_dsl.synth writes them (a NIC
    port of rank 812 at half rate, seed 5, as benchmarks/bench_diagnose.py times them): the
    records of GENERATED_RANKS only (first and last rank, tensor and pipeline neighbours, the
    faulted one), since writing all 1,024 full traces takes over a minute; every other rank's
    file holds its process groups and no kernel, and one of them is read too (E788)."""
    import astral_dsl
    from astral_dsl import diagnose, seer
    from astral_dsl.synth import Fault, generate, write

    design = astral_dsl.load(str(REPO / "examples" / "single_pod.astral"))
    rm = diagnose.rank_map(design)
    data = generate(seer.forecast(design), rm,
                    [Fault("nic_port", rm.ranks[812].ports[1].name, 0.5, 812)], seed=5)
    keep = np.isin(data.rank, GENERATED_RANKS)
    data = attrs.evolve(data, **{f: getattr(data, f)[keep] for f in (
        "rank", "iteration", "phase", "start", "duration", "peer", "op")})
    paths = write.write_traces(data, str(tmp_path_factory.mktemp("single_pod")))
    return [Path(paths[r]) for r in GENERATED_RANKS + (2,)]


def test_real_traces_read(generated, tmp_path):
    """The three real traces and the generated ones: read the same plain, gzipped and parsed in
    full; each a trace of over a thousand kernels, without a diagnostic."""
    for path in REAL + generated:
        body = gzip.decompress(path.read_bytes())
        assert_reads(tmp_path / path.stem, path.name, body, packed=False)
        traces, diags = outcome(path)
        if path.name == "rank-2.json.gz":         # its process groups and no kernel
            assert not traces and [d.code for d in diags] == ["E788"]
        else:
            assert len(traces) == 1 and len(traces[0]) > 1000 and diags == (), path.name


def respelt(doc: dict) -> Obj:
    """A parsed trace as an Obj tree with a decoy before every key the reader uses: root
    `traceEvents` and `distributedInfo`, each event's `cat`, `ts` and `name`, each argument
    object's `correlation` and `Process Group Name` (the last of a repeated key counts)."""
    def args(a):
        if not isinstance(a, dict):
            return a
        pairs = []
        for k, v in a.items():
            if k in ("correlation", "Process Group Name"):
                pairs.append((k, -1 if k == "correlation" else "decoy"))
            pairs.append((k, v))
        return Obj(tuple(pairs))

    def event(e):
        if not isinstance(e, dict):
            return e
        pairs = []
        for k, v in e.items():
            if k in ("cat", "ts", "name"):
                pairs.append((k, {"cat": "kernel", "ts": 0, "name": "ProfilerStep#0"}[k]))
            pairs.append((k, args(v) if k == "args" else v))
        return Obj(tuple(pairs))

    root = [("traceEvents", [{"ph": "X", "cat": "kernel", "name": "decoy", "ts": 1, "dur": 1}]),
            ("distributedInfo", {"rank": 99, "world_size": 100})]
    for k, v in doc.items():
        root.append((k, [event(e) for e in v] if k == "traceEvents" else v))
    return Obj(tuple(root))


SAMPLED = [p for p in REAL if p.name.startswith("sampled")]   # 1.7 MB each (the 9.8 MB one
#                                                              takes ten seconds to respell)


@pytest.mark.parametrize("path", SAMPLED, ids=[p.name for p in SAMPLED])
def test_repeated_keys_take_the_last(path, tmp_path):
    """A real trace with every key the reader uses written twice, a decoy first, in odd
    whitespace with non-ASCII escaped: it reads to what the original says."""
    body = Writer(1, 2, 1).write(respelt(json.loads(gzip.decompress(path.read_bytes()))))
    (tmp_path / "original").mkdir()
    original = tmp_path / "original" / path.name
    original.write_bytes(path.read_bytes())
    assert_reads(tmp_path / "respelt", path.name, body, packed=False)
    p = tmp_path / "respelt" / path.name
    got = outcome(p)
    # the file's name aside, what the original reads to (its folder differs)
    moved = (tuple(attrs.evolve(t, file=str(original)) for t in got[0]),
             tuple(attrs.evolve(d, file=str(original)) for d in got[1]))
    assert not differences(moved, outcome(original)), differences(moved, outcome(original))


# ---- malformed bytes ------------------------------------------------------------------------
DEEP = 100_000


def _small() -> bytes:
    """A short trace of every part the reader uses: two steps, launches, compute kernels and
    NCCL kernels with their process group."""
    evs = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "ts": t,
            "dur": 1000} for n, t in ((1, 0), (2, 1000))]
    for i, (t, name) in enumerate(((100, "gemm"), (600, "ncclDevKernel_AllReduce"),
                                   (1100, "gemm"), (1600, "ncclDevKernel_AllReduce"))):
        evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t - 50,
                    "dur": 4, "args": {"correlation": i}})
        args = {"correlation": i, "device": 0}
        if name.startswith("nccl"):
            args.update({"Collective name": "allreduce", "Process Group Name": "dp-0",
                         "Process Group Description": "DATA_PARALLEL_GROUP",
                         "Process Group Ranks": "[0, 1]"})
        evs.append({"ph": "X", "cat": "kernel", "name": name, "ts": t, "dur": 20.5,
                    "args": args})
    return json.dumps({"distributedInfo": {"rank": 0, "world_size": 2},
                       "deviceProperties": [{"id": 0, "name": "H100"}],
                       "traceEvents": evs}).encode()


def _real(name: str = "sampled_rank-1.json.gz") -> bytes:
    return gzip.decompress((TRACES / name).read_bytes())


def _in(where: str, value: bytes) -> bytes:
    """The small trace with `value` (JSON text) in place of one of its values."""
    marks = {"name": b'"gemm"', "cat": b'"kernel"', "ts": b'"ts": 1100', "rank": b'"rank": 0',
             "correlation": b'"correlation": 2,', "pg": b'"[0, 1]"', "device": b'"H100"',
             "key": b'"dur"', "skipped": b'"world_size": 2'}
    mark = marks[where]
    keep = {"ts": b'"ts": ', "rank": b'"rank": ', "correlation": b'"correlation": ',
            "skipped": b'"world_size": 2, "other": '}.get(where, b"")
    tail = b"," if where == "correlation" else b""
    return _small().replace(mark, keep + value + tail, 1)


NUMBERS = {"1e400": b"1e400", "-1e400": b"-1e400", "1e-400": b"1e-400", "NaN": b"NaN",
           "-Infinity": b"-Infinity", "int-of-401-digits": b"1" + b"0" * 400}


def malformed() -> List[Tuple[str, bytes, bool]]:
    """(label, bytes, also gzipped) of every kind of broken or odd input, the same every run:
    the cuts and flips of a real trace plain only (1.7 MB each: their gzipped twin decompresses
    to the same bytes), a real gzipped trace cut short, the rest plain and gzipped."""
    rng = random.Random(4)
    real, small = _real(), _small()
    out = [(f"cut-{n}", real[:n], False) for n in sorted(rng.sample(range(len(real)), 40))]
    out += [(f"cut-small-{n}", small[:n], True) for n in sorted(rng.sample(range(len(small)), 10))]
    packed = (TRACES / "sampled_rank-1.json.gz").read_bytes()
    out += [(f"cut-gzip-{n}", packed[:n], False) for n in sorted(rng.sample(range(len(packed)), 5))]
    for i in range(50):
        data = bytearray(real if i < 25 else small)
        at = rng.randrange(len(data))
        data[at] ^= rng.randrange(1, 256)
        out.append((f"flip-{'real' if i < 25 else 'small'}-{at}", bytes(data), i >= 25))
    for where in ("name", "cat", "pg", "device", "key"):
        for bad in (b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xe2\x82", b"\xf4\x90\x80\x80",
                    b"\x80"):
            out.append((f"utf8-{where}-{bad.hex()}", _in(where, b'"x' + bad + b'y"')))
        for esc in (b"\\ud800", b"\\udc00", b"\\ud800\\u0041", b"x\\ud83d"):
            out.append((f"surrogate-{where}-{esc.decode()}", _in(where, b'"' + esc + b'"')))
    out.append(("utf8-outside-a-string", small.replace(b", ", b",\xff ", 1)))
    for where in ("ts", "rank", "correlation", "skipped"):
        for label, num in NUMBERS.items():
            out.append((f"number-{where}-{label}", _in(where, num)))
    nest = b"[" * DEEP + b"]" * DEEP
    out += [("deep-args-unknown-key", small.replace(b'"device": 0', b'"device": 0, "x": ' + nest)),
            ("deep-args-pg-ranks-list", _in("pg", nest)),
            ("deep-args-pg-ranks-text", _in("pg", b'"' + nest + b'"')),
            ("deep-args-objects", small.replace(b'"device": 0', b'"device": 0, "x": ' +
                                                b'{"a":' * DEEP + b"1" + b"}" * DEEP)),
            ("deep-distributed-info", _in("skipped", nest)),
            ("deep-events", small.replace(b'"traceEvents": [', b'"traceEvents": [' + nest + b",")),
            ("deep-unclosed", small.replace(b'"device": 0', b'"device": 0, "x": ' + b"[" * DEEP))]
    out += [("empty", b""), ("spaces", b"  \n\t\r "), ("space-70", b" " * 70),
            ("vertical-tab", b"\x0b\x0c"), ("bom", b"\xef\xbb\xbf"),
            ("bom-space", b"\xef\xbb\xbf \n"),
            ("two-boms", b"\xef\xbb\xbf" * 2 + small), ("nul", b"\x00"), ("nuls", b"\x00" * 64),
            ("trailing-garbage", small + b" x"), ("trailing-brace", small + b"}"),
            ("trailing-nul", small + b"\x00"), ("two-documents", small + small),
            ("two-documents-lines", small + b"\n" + small), ("leading-garbage", b"x" + small),
            ("control-in-string", small.replace(b'"gemm"', b'"ge\x01mm"', 1)),
            ("newline-in-string", small.replace(b'"gemm"', b'"ge\nmm"', 1)),
            ("unterminated-string", small[:small.find(b'"gemm"') + 3]),
            ("brace", b"{"), ("bracket", b"["), ("empty-object", b"{}"), ("empty-array", b"[]"),
            ("array-of-numbers", b"[1, 2]"), ("events-object", b'{"traceEvents": {}}'),
            ("events-null", b'{"traceEvents": null}'), ("events-string", b'{"traceEvents": "x"}'),
            ("single-quotes", small.replace(b'"', b"'")), ("comment", b"// x\n" + small),
            ("trailing-comma", small.replace(b"]}", b",]}")),
            ("text", "\u00e9t\u00e9 \u2028 \U0001F680".encode()),
            ("utf16", small.decode().encode("utf-16"))]
    return [case if len(case) == 3 else case + (True,) for case in out]


MALFORMED = [label for label, _, _ in malformed()]
# JSON nested past the depth where Python's parsers stop (about 1,000 levels, on the fresh stack
# read_file gives them), even in a field the reader skips: the file cannot be read (E781)
DEEPER_THAN_PYTHON = {"deep-args-unknown-key", "deep-args-objects", "deep-in-a-skipped-field"}


@pytest.fixture(scope="module")
def corpus():
    return {label: (body, packed) for label, body, packed in malformed()}


@pytest.mark.parametrize("label", MALFORMED)
def test_malformed_input_is_diagnosed(corpus, label, tmp_path):
    """Whatever the bytes, read_file answers with traces and diagnostics, the same plain and
    gzipped: no exception."""
    body, packed = corpus[label]
    assert_reads(tmp_path, "rank-0.json", body, packed)
    if label in DEEPER_THAN_PYTHON:
        got = outcome(tmp_path / "rank-0.json")
        assert ([d.code for d in got[1]], got[0]) == (["E781"], ()), got


# ---- targeted documents: one rule of the reader each ----------------------------------
_STEP = '{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","ts":0,"dur":1000}'


def _k(name="gemm", ts="10", dur="5", args="{}", extra="") -> str:
    return ('{"ph":"X","cat":"kernel","name":"%s","ts":%s,"dur":%s,"args":%s%s}'
            % (name, ts, dur, args, extra))


def _launch(corr, ts="5") -> str:
    return ('{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":%s,"dur":1,'
            '"args":{"correlation":%s}}' % (ts, corr))


def _trace(events, info='{"rank":0,"world_size":2}', props=None, extra="") -> bytes:
    return ('{"distributedInfo":%s,%s"traceEvents":[%s]%s}' % (
        info, '"deviceProperties":%s,' % props if props else "", ",".join(events),
        extra)).encode()


def _nccl(args: str, ts="10") -> str:
    return _k("ncclDevKernel_SendRecv", ts, "1", args)


def _step(old: str, new: str) -> str:
    return _STEP.replace(old, new)


_LONG = _step('"dur":1000', '"dur":1e20')      # a step long enough for times past 2^53
_DEV = _k(args='{"device":0}')
_HALF = "1.00000000000000011102230246251565404236316680908203125"     # 1 + 2^-53 exactly
TARGETED = {
    # numbers: exact conversions, rounding at the edges, -0, exponents, integers past 2^53
    "ts-minus-zero-int": _trace([_STEP, _k(ts="-0")]),
    "ts-minus-zero": _trace([_STEP, _k(ts="-0.0", dur="-0.0")]),
    "step-minus-zero": _trace([_step('"ts":0', '"ts":-0'), _k()]),
    "ts-2^53+1": _trace([_LONG, _k(ts=str(2 ** 53 + 1))]),
    "ts-2^63": _trace([_LONG, _k(ts=str(2 ** 63))]),
    "ts-2^64-1": _trace([_LONG, _k(ts=str(2 ** 64 - 1))]),
    "ts-halfway-2^53": _trace([_LONG, _k(ts="9007199254740993.0")]),
    "ts-halfway-one": _trace([_STEP, _k(ts=_HALF)]),           # 1 + 2^-53: to even, 1
    "ts-past-halfway": _trace([_STEP, _k(ts=_HALF + "00000001")]),      # up, 1 + 2^-52
    "ts-800-digits": _trace([_STEP, _k(ts="10." + "3" * 800)]),
    "dur-max": _trace([_STEP, _k(dur="1.7976931348623157e308")]),
    "dur-rounds-to-max": _trace([_STEP, _k(dur="1.7976931348623158e308")]),
    "dur-past-max": _trace([_STEP, _k(dur="1.7976931348623159e308")]),
    "ts-half-least-subnormal": _trace([_STEP, _k(ts="2.4703282292062327e-324")]),
    "ts-past-half-subnormal": _trace([_STEP, _k(ts="2.4703282292062328e-324")]),
    "ts-least-normal": _trace([_STEP, _k(ts="2.2250738585072011e-308")]),
    "ts-exponents": _trace([_STEP, _k(ts="1E1", dur="5e0")]),
    "ts-zero-huge-exponent": _trace([_STEP, _k(ts="0e999")]),
    "ts-underflow": _trace([_STEP, _k(ts="123e-999")]),
    "step-past-float-sum": _trace([_step('"ts":0', '"ts":1e308').replace('"dur":1000',
                                                                           '"dur":1e308'),
                                   _k(ts="1e308")]),
    # correlations: only integers link a launch; a float or True equals an integer key
    "corr-2^63": _trace([_STEP, _launch(2 ** 63),
                         _k(ts="2000", args='{"correlation":%d}' % 2 ** 63)]),
    "corr-2^64-1": _trace([_STEP, _launch(2 ** 64 - 1),
                           _k(ts="2000", args='{"correlation":%d}' % (2 ** 64 - 1))]),
    "corr--2^63": _trace([_STEP, _launch(-2 ** 63),
                          _k(ts="2000", args='{"correlation":%d}' % -2 ** 63)]),
    "corr-float": _trace([_STEP, _launch(5), _k(ts="2000", args='{"correlation":5.0}')]),
    "corr-true": _trace([_STEP, _launch(1), _k(ts="2000", args='{"correlation":true}')]),
    "corr-text": _trace([_STEP, _launch(1), _k(ts="2000", args='{"correlation":"1"}')]),
    "launch-corr-float": _trace([_STEP, _launch("5.0"), _k(ts="2000", args='{"correlation":5}')]),
    "launch-ts-past-2^63": _trace([_LONG, _launch(5, str(2 ** 63 + 1)),
                                   _k(ts="2000", args='{"correlation":5}')]),
    "launch-twice-last-counts": _trace([_STEP, _launch(5, "5"), _launch(5, "5000"),
                                        _k(ts="2000", args='{"correlation":5}')]),
    # keys given twice: the last counts, at every level
    "args-twice": _trace([_STEP, _launch(5), _k(ts="2000", args='{"correlation":99}',
                                                extra=',"args":{"correlation":5}')]),
    "args-twice-last-null": _trace([_STEP, _launch(5), _k(ts="2000", args='{"correlation":5}',
                                                          extra=',"args":null')]),
    "cat-twice": _trace([_STEP, _k(extra=',"cat":"cpu_op"')]),
    "name-twice": _trace([_STEP, _k(name="ncclX", extra=',"name":"gemm"')]),
    "ph-twice": _trace([_STEP, _k(extra=',"ph":"B"')]),
    "nccl-key-twice": _trace([_STEP, _nccl('{"Process Group Name":"a","Process Group Name":"b"}')]),
    "info-twice": _trace([_STEP, _k()], '{"rank":0,"rank":1}'),
    "props-twice": _trace([_STEP, _DEV], props='[{"id":0,"name":"a"}]',
                          extra=',"deviceProperties":[{"id":0,"name":"b"}]'),
    "events-twice": _trace([_STEP, _k()], extra=',"traceEvents":[%s]' % _k("x", "20")),
    "events-twice-first-junk": ('{"traceEvents":"junk","distributedInfo":{"rank":0},'
                                '"traceEvents":[%s,%s]}' % (_STEP, _k())).encode(),
    # distributedInfo and deviceProperties: read as msgspec reads them, values of any type
    "rank-10^30": _trace([_STEP, _k()], '{"rank":%d,"world_size":2}' % 10 ** 30),
    "world-size-2^66+1": _trace([_STEP, _k()], '{"rank":0,"world_size":%d}' % (2 ** 66 + 1)),
    "group-ranks-10^30": _trace([_STEP, _k()],
                                '{"rank":0,"pg_config":[{"pg_name":"a","ranks":[%d]}]}' % 10 ** 30),
    "group-desc-below-int64": _trace([_STEP, _k()], '{"rank":0,"pg_config":[{"pg_name":"a",'
                                                    '"pg_desc":-9223372036854775809}]}'),
    "info-lone-surrogate": _trace([_STEP, _k()], '{"rank":0,"backend":"\\ud800"}'),
    "info-escapes": _trace([_STEP, _k()], '{"rank":0,"backend":"\\u00e9\\n\\/"}'),
    "rank-float-17-digits": _trace([_STEP, _k()], '{"rank":3.0000000000000001}'),
    "rank-minus-zero": _trace([_STEP, _k()], '{"rank":-0.0,"world_size":1E1}'),
    "rank-1.5": _trace([_STEP, _k()], '{"rank":1.5}'),
    "rank-1e300": _trace([_STEP, _k()], '{"rank":1e300}'),
    "rank-text": _trace([_STEP, _k()], '{"rank":" 7 ","world_size":"\\u0663"}'),
    "info-null": _trace([_STEP, _k()], "null"),
    "info-a-list": _trace([_STEP, _k()], "[1]"),
    "device-id-10^30": _trace([_STEP, _DEV], props='[{"id":%d,"name":"a"},{"id":0,"name":"b"}]'
                              % 10 ** 30),
    "device-id-float": _trace([_STEP, _DEV], props='[{"id":0.0,"name":"a"}]'),
    "device-id-text": _trace([_STEP, _k(args='{"device":"0"}')], props='[{"id":"0","name":"a"}]'),
    "device-true": _trace([_STEP, _k(args='{"device":true}')],
                          props='[{"id":1,"name":"a"},{"id":true,"name":"b"}]'),
    "device-2^63": _trace([_STEP, _k(args='{"device":%d}' % 2 ** 63)],
                          props='[{"id":%d,"name":"a"}]' % 2 ** 63),
    "device-float": _trace([_STEP, _k(args='{"device":0.0}')], props='[{"id":0,"name":"a"}]'),
    **{f"device-name-{label}": _trace([_STEP, _DEV], props='[{"id":0,"name":%s}]' % v)
       for label, v in (("1e16", "1e16"), ("0.1", "0.1"), ("1e22", "1e22"), ("5e-324", "5e-324"),
                        ("2^64", "18446744073709551616"), ("10^30", str(10 ** 30)),
                        ("minus-zero", "-0"), ("object", '{"a":[1,2.5,"x",null,true]}'))},
    # NCCL arguments: equal keys share a meaning (True == 1 == 1.0), peers as text
    "nccl-true-then-1": _trace([_STEP, _nccl('{"Collective name":"send","Dst Rank":true}'),
                                _nccl('{"Collective name":"send","Dst Rank":1}', "20")]),
    "nccl-1.0-then-1": _trace([_STEP, _nccl('{"Collective name":"send","Dst Rank":1.0}'),
                               _nccl('{"Collective name":"send","Dst Rank":1}', "20")]),
    "nccl-1-then-1.0": _trace([_STEP, _nccl('{"Collective name":"send","Dst Rank":1}'),
                               _nccl('{"Collective name":"send","Dst Rank":1.0}', "20")]),
    "nccl-peer-text": _trace([_STEP, _nccl('{"Collective name":"send","Dst Rank":" 7 "}')]),
    "nccl-peer-arabic-digit": _trace([_STEP, _nccl('{"Collective name":"send",'
                                                   '"Dst Rank":"\\u0663"}')]),
    "nccl-peer-minus-zero": _trace([_STEP, _nccl('{"Collective name":"send","Dst Rank":-0}')]),
    "nccl-peer-int64-max": _trace([_STEP, _nccl('{"Collective name":"send","Dst Rank":%d}'
                                                % (2 ** 63 - 1))]),
    "nccl-peer-int64-min": _trace([_STEP, _nccl('{"Collective name":"send","Dst Rank":%d}'
                                                % -2 ** 63)]),
    "nccl-ranks-list-then-text": _trace([_STEP, _nccl('{"Process Group Name":"a",'
                                                      '"Process Group Ranks":[0,1]}'),
                                         _nccl('{"Process Group Name":"a",'
                                               '"Process Group Ranks":"[0, 1]"}', "20")]),
    "nccl-ranks-true": _trace([_STEP, _nccl('{"Process Group Name":"a","Process Group Ranks":'
                                            '[true,1]}'),
                               _nccl('{"Process Group Name":"a","Process Group Ranks":[1,1]}',
                                     "20")]),
    "nccl-ranks-odd-text": _trace([_STEP, _nccl('{"Process Group Name":"a","Process Group Ranks":'
                                                '"[1e20, NaN, 2.0, \\"3\\", true]"}')]),
    "nccl-ranks-text-nested-5000": _trace([_STEP, _nccl(
        '{"Process Group Name":"a","Process Group Ranks":"%s"}' % ("[" * 5000 + "]" * 5000))]),
    "nccl-group-name-int": _trace([_STEP, _nccl('{"Process Group Name":7}')]),
    "nccl-group-name-float": _trace([_STEP, _nccl('{"Process Group Name":0.1}')]),
    "nccl-collective-upper": _trace([_STEP, _nccl('{"Collective name":"SEND","Peer":3}')]),
    "nccl-desc-kelvin": _trace([_STEP, _nccl('{"Process Group Name":"x",'
                                             '"Process Group Description":"\\u212aTENSOR"}')]),
    "nccl-desc-dotted-i": _trace([_STEP, _nccl('{"Process Group Name":"x",'
                                               '"Process Group Description":"P\\u0130PELINE"}')]),
    "nccl-nul-in-names": _trace([_STEP, _k("nccl\\u0000x", "10", "1",
                                           '{"Process Group Name":"a\\u0000b"}')]),
    "nccl-upper-case": _trace([_STEP, _k("NCCL", "10", "1", '{"Process Group Name":"a"}')]),
    "nccl-name-escaped": _trace([_STEP, _k("\\u006ecc\\u006c", "10", "1",
                                           '{"Process Group Name":"a"}')]),
    # steps, patterns, shapes
    "pattern": _trace([_k("a", str(10 + 100 * i)) for i in range(4)] +
                      [_k("b", str(60 + 100 * i)) for i in range(4)]),
    "step-arabic-digits": _trace([_step("#1", "#\\u0661\\u0662"), _k()]),
    "step-fullwidth-digit": _trace([_step("#1", "#\\uff13"), _k()]),
    "step-newline": _trace([_step("#1", "#12\\n"), _k()]),
    "step-ts-text": _trace([_step('"ts":0', '"ts":"0"'), _k()]),
    "step-ts-false": _trace([_step('"ts":0', '"ts":false'), _k()]),
    "step-negative-length": _trace([_step('"dur":1000', '"dur":-1000'), _k()]),
    "bare-array": ("[%s,%s]" % (_STEP, _k())).encode(),
    "event-null": _trace([_STEP, _k(), "null"]),
    "event-a-number": _trace([_STEP, _k(), "7"]),
    "kernel-name-null": _trace([_STEP, _k().replace('"name":"gemm"', '"name":null')]),
    "kernel-args-a-list": _trace([_STEP, _k(args="[1]")]),
    "kernel-args-null": _trace([_STEP, _k(args="null")]),
}


@pytest.mark.parametrize("label", sorted(TARGETED))
def test_targeted_documents_read(label, tmp_path):
    assert_reads(tmp_path, "rank-0.json", TARGETED[label])


def test_minus_zero_and_integers_read_as_their_values(tmp_path):
    """A start of -0 (an integer) is 0, one of -0.0 is -0.0; an integer past 2^53 is its
    nearest double, as Python's float() gives it."""
    def starts(label):
        p = tmp_path / f"{label}.json"
        p.write_bytes(TARGETED[label])
        (trace,), _ = outcome(p)
        return trace.start.tolist()

    assert [x.hex() for x in starts("ts-minus-zero-int")] == [(0.0).hex()]
    assert [x.hex() for x in starts("ts-minus-zero")] == [(-0.0).hex()]
    assert starts("ts-2^53+1") == [float(2 ** 53 + 1) * 1e-6]
    assert starts("ts-halfway-one") == [1e-6] and starts("ts-past-halfway") == [
        (1 + 2 ** -52) * 1e-6]


def _spelt_number(r: random.Random) -> str:
    """A number as JSON may spell it: an integer from 2^53 to 2^64 or below 2^63, a decimal of
    2 to 26 digits, with an exponent from -340 (past the least subnormal) to 280, a fraction
    with up to 30 leading zeros."""
    kind = r.randrange(6)
    if kind < 2:
        return str(r.randrange(2 ** 53, 2 ** 64) if kind == 0 else r.randrange(0, 2 ** 63))
    digits = "".join(r.choice("0123456789") for _ in range(r.randint(1, 25))).lstrip("0") + "1"
    cut = r.randint(1, len(digits) - 1) if len(digits) > 1 else 1
    if kind == 2:
        return digits[:cut] + "." + (digits[cut:] or "0")
    if kind == 3:
        return digits + "e" + str(r.randint(-340, 280))
    if kind == 4:
        return "0." + "0" * r.randint(0, 30) + digits
    return (digits[0] + "." + (digits[1:] or "0") + r.choice("eE") + r.choice(("+", "-", "")) +
            str(r.randint(0, 280)))


def test_numbers_read_exactly(tmp_path):
    """4,000 kernel starts and durations in every spelling of a number, in one trace (one step
    long enough to hold them): each becomes the double Python's float() makes of its text, bit
    for bit (correct rounding of 16-26 digit decimals, subnormals, integers past 2^53 and
    2^63)."""
    r = random.Random(8)
    long = _step('"dur":1000', '"dur":1e308')
    spelt = [(_spelt_number(r), _spelt_number(r)) for _ in range(4000)]
    body = _trace([long] + [_k(f"k{i % 7}", ts, dur) for i, (ts, dur) in enumerate(spelt)])
    assert_reads(tmp_path, "rank-0.json", body, packed=False)
    (trace,), diags = outcome(tmp_path / "rank-0.json")
    assert len(trace) == 4000 and diags == ()        # every one finite, in the step
    want = sorted((float(ts) * 1e-6, float(dur) * 1e-6) for ts, dur in spelt)
    got = sorted(zip(trace.start.tolist(), trace.duration.tolist()))
    assert [(a.hex(), b.hex()) for a, b in got] == [(a.hex(), b.hex()) for a, b in want]


def _text(r: random.Random) -> str:
    """A string of any code points but lone surrogates: ASCII, controls, NUL, the BMP's edges,
    past it (surrogate pairs when escaped)."""
    pools = ((0x20, 0x7E), (0, 0x1F), (0x80, 0x7FF), (0x800, 0xD7FF), (0xE000, 0xFFFF),
             (0x10000, 0x10FFFF))
    out = []
    for _ in range(r.randint(0, 12)):
        lo, hi = r.choice(pools)
        out.append(chr(r.randint(lo, hi)))
    return "".join(out)


def test_strings_read_exactly(tmp_path):
    """500 NCCL kernels whose process group names and descriptions, collectives and kernel
    names hold any code point, each character escaped or not: the groups are those the trace
    states, in order of first appearance, with their names and descriptions as written."""
    r = random.Random(9)
    evs = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 10 ** 6}]
    declared = {"pg_name": _text(r), "pg_desc": _text(r), "ranks": [0, 5]}
    want = [(declared["pg_name"], declared["pg_desc"], (0, 5))]
    for i in range(500):
        args = {"Collective name": r.choice(("send", "recv", _text(r))),
                "Process Group Name": _text(r), "Process Group Description":
                    r.choice(("tensor", "DATA", "")) + _text(r),
                "Process Group Ranks": [i % 3, 5], "Dst Rank": i % 4}
        name = r.choice(("nccl", "NCCL")) + _text(r)
        evs.append({"ph": "X", "cat": "kernel", "name": name, "ts": 10 + i, "dur": 1,
                    "args": args})
        group = (args["Process Group Name"], args["Process Group Description"], (i % 3, 5))
        if all((g[0], g[2]) != (group[0], group[2]) for g in want):
            want.append(group)
    body = Writer(3, 2, 2).write({"distributedInfo": {"rank": 0, "pg_config": [declared]},
                                  "traceEvents": evs})
    assert_reads(tmp_path, "rank-0.json", body)
    (trace,), _ = outcome(tmp_path / "rank-0.json")
    assert [(g.name, g.desc, g.ranks) for g in trace.groups] == want
    assert len(trace) == 500


# ---- the mismatches found between the reader's two implementations while there were two (their
# shortest documents), and what the reader itself once got wrong ---------------------------------
_DEEP_SKIPPED = ('{"distributedInfo":{"rank":0},"traceEvents":[%s,%s]}' % (
    _STEP, _k(args='{"x":%s}' % ("[" * 2000 + "]" * 2000)))).encode()
MISMATCHES = {
    # the compiled reader raised msgspec.ValidationError (out of read_file) on a number past a
    # double's range in distributedInfo or deviceProperties
    "info-number-past-double": b'{"distributedInfo":{"rank":0,"x":1e400},"traceEvents":[]}',
    "props-number-past-double": (b'{"distributedInfo":{"rank":0},"deviceProperties":'
                                 b'[{"x":-1e400}],"traceEvents":[]}'),
    # JSON nested 2,000 deep in a field the reader skips: E781 (msgspec and json.loads give
    # up near 1,000, the depth depending on the caller's stack)
    "deep-in-a-skipped-field": _DEEP_SKIPPED,
    # a kernel's `device` a list or an object: the reader raised TypeError (unhashable)
    "device-a-list": _trace([_STEP, _k(args='{"device":[]}')]),
    "device-an-object": _trace([_STEP, _k(args='{"device":{}}')]),
    # kernels on device `true`, then on device 1: the set of devices kept True (1 == True was
    # not added), then dropped it (not an integer): no device, so the first GPU of
    # deviceProperties ("A") rather than "B"
    "device-true-then-1": _trace([_STEP, _k(args='{"device":true}'),
                                  _k(ts="20", args='{"device":1}')],
                                 props='[{"id":0,"name":"A"},{"id":1,"name":"B"}]'),
    # an integer past 64 bits in distributedInfo / deviceProperties of a document the schema
    # decode rejects (here `args: null`): the orjson fallback made it a float (rank 10^30 read
    # as 1000000000000000019884624838656)
    "rank-past-64-bits-off-schema": _trace([_STEP, _k(args="null")], '{"rank":%d}' % 10 ** 30),
    "world-size-past-64-bits-off-schema": _trace([_STEP, _k(args="null")],
                                                 '{"rank":0,"world_size":%d}' % (2 ** 64 + 1)),
    "device-name-past-64-bits-off-schema": _trace([_STEP, _k(args="null")], props=(
        '[{"id":0,"name":%d}]' % (2 ** 64 + 1))),
}


@pytest.mark.parametrize("label", sorted(MISMATCHES))
def test_mismatches_found_read(label, tmp_path):
    assert_reads(tmp_path, "rank-0.json", MISMATCHES[label])
    if label in DEEPER_THAN_PYTHON:
        got = outcome(tmp_path / "rank-0.json")
        assert ([d.code for d in got[1]], got[0]) == (["E781"], ()), got


def test_an_answer_does_not_depend_on_the_callers_stack(tmp_path):
    """Arrays nested 800 deep in a skipped argument: read_file gives one answer however deep in
    a program it is called (Python's JSON parsers count the caller's frames against the
    recursion limit: read when called near the top, E781 when called 300 frames down)."""
    body = ('{"distributedInfo":{"rank":0},"traceEvents":[%s,%s]}' % (
        _STEP, _k(args='{"x":%s}' % ("[" * 800 + "]" * 800)))).encode()
    p = tmp_path / "rank-0.json"
    p.write_bytes(body)

    def below(n: int):
        return below(n - 1) if n else outcome(p)

    top = below(0)
    assert not isinstance(top, Raised) and len(top[0]) == 1, top
    assert not differences(below(300), top)


def _doc(kernel_args: str = "{}", info: str = '{"rank": 0, "world_size": 2}', step: str = "1",
         ts: str = "10", dur: str = "5", props: str = "[]") -> bytes:
    """A step and one kernel launched in it, with the given JSON texts."""
    return ('{"distributedInfo": %s, "deviceProperties": %s, "traceEvents": ['
            '{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%s", "ts": 0, '
            '"dur": 1000}, {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv", '
            '"ts": %s, "dur": %s, "args": %s}]}' % (info, props, step, ts, dur,
                                                   kernel_args)).encode()


PYTHON_BUGS = {   # label -> (document, what went wrong)
    "rank-superscript-two": (_doc(info='{"rank": "\u00b2"}'),
                             "ValueError: kineto._int takes str.isdigit() digits int() refuses"),
    "rank-two-minus-signs": (_doc(info='{"rank": "--5"}'),
                             "ValueError: kineto._int strips every leading '-' then int('--5')"),
    "peer-past-int64": (_doc('{"Collective name": "send", "Dst Rank": 9223372036854775808}'),
                        "OverflowError: np.array(table, int64) in kineto._codes"),
    "peer-text-past-int64": (_doc('{"Collective name": "send", "Dst Rank": "%d"}' % 10 ** 30),
                             "OverflowError: np.array(table, int64) in kineto._codes"),
    "step-past-uint64": (_doc(step=str(2 ** 64)),
                         "OverflowError: the step number past 2^64 in kineto.read's astype"),
    "step-past-int64": (_doc(step=str(2 ** 63)),
                        "silently wrong: ProfilerStep#2^63 read as iteration -2^63 (uint64 "
                        "numbers, np.where with -1 gives float64, cast back)"),
    "device-a-list": (_doc('{"device": [0]}'),
                      "TypeError: unhashable list in kineto._Scan's set of devices"),
    "device-id-a-list": (_doc('{"device": 0}', props='[{"id": [0], "name": "H100"}]'),
                         "TypeError: `p.get('id') in ids` in kineto._device"),
    "duration-int-past-float": (_doc(dur="1" + "0" * 400),
                                "OverflowError: np.array(dur, float64) in kineto._Scan"),
}


@pytest.mark.parametrize("label", sorted(PYTHON_BUGS))
def test_reader_bugs_stay_mended(label, tmp_path):
    """The reader answers without an exception, and every iteration it reports is a step the
    trace states (each of these once raised, or read ProfilerStep#2^63 as -2^63)."""
    assert_reads(tmp_path, "rank-0.json", PYTHON_BUGS[label][0])
    got = outcome(tmp_path / "rank-0.json")
    stated = {int(n) for n in re.findall(rb"ProfilerStep#(\d+)", PYTHON_BUGS[label][0])}
    assert all(set(t.iterations) <= stated for t in got[0]), [t.iterations for t in got[0]]


def test_an_nccl_kernels_key_is_its_arguments_after_correlation_and_device():
    """kernels.py keys an NCCL kernel by tracedoc.Args' fields after its first two: those two
    are the correlation and the device (which its meaning does not depend on)."""
    from astral_dsl.observe import kernels, tracedoc

    fields = tracedoc.Args.__struct_fields__
    assert fields[:kernels._KEY_FROM] == ("correlation", "device")
    assert "collective" in fields[kernels._KEY_FROM:] and "pg_ranks" in fields


def test_a_trace_cut_in_a_string_says_where_once(tmp_path):
    """A trace cut inside a string: json's "Unterminated string starting at" had been followed
    by " at line", "starting at at line 1"."""
    path = tmp_path / "rank-0.json"
    path.write_text('{"traceEvents": [{"name": "ncclDevKernel_Sen')
    traces, diags = read_file(str(path))
    assert traces == [] and [d.code for d in diags] == ["E781"]
    assert diags[0].message == ("the file is truncated or not JSON (Unterminated string "
                                "starting at line 1, column 27)")


def test_a_transfers_peer_is_its_rank_within_the_process_group(tmp_path):
    """PyTorch records a send's `Dst Rank` and a recv's `Src Rank` as the peer's rank within the
    process group (torch.distributed passes ProcessGroupNCCL the group's rank; isend and
    batch_isend_irecv turn the global one into it), beside the group's global `Process Group
    Ranks`. Stage 1 of a pipeline group [3, 67] sends to group rank 0 (rank 3) and receives from
    group rank 0; read as global, its peer had been rank 0 (of another pipeline group). A peer
    past the listed ranks (no list, or one cut short) is read as written."""
    def kernel(ts, args):
        return {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv", "ts": ts,
                "dur": 5, "args": {"device": 0, "stream": 28, **args}}

    group = {"Process Group Name": "pp-3", "Process Group Description": "PIPELINE_MODEL_PARALLEL",
             "Process Group Ranks": [3, 67]}
    doc = {"distributedInfo": {"rank": 67, "world_size": 128},
           "traceEvents": [
               {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0,
                "dur": 1000},
               kernel(10, {"Collective name": "recv", "Src Rank": 0, **group}),
               kernel(20, {"Collective name": "send", "Dst Rank": 0, **group}),
               kernel(30, {"Collective name": "send", "Dst Rank": 5, **group}),
               kernel(40, {"Collective name": "send", "Dst Rank": 2})]}
    path = tmp_path / "rank-67.json"
    path.write_text(json.dumps(doc))
    (trace,), diags = read_file(str(path))
    assert list(trace.peer) == [3, 3, 5, 2]
