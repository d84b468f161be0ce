"""The trace reader's memory (astral_dsl/observe/tracedoc.py): a trace's events are decoded one
at a time and only those the reader uses are kept, on the schema decode (`decode`) and on the
full parse it falls back to (`parse`, json's scanner walked over the document); `parse` is
json.loads, errors included, at every place a document can break."""
from __future__ import annotations

import gzip
import json
import tracemalloc
from pathlib import Path

import pytest

from astral_dsl.observe import read_file, tracedoc

TRACE = Path(__file__).resolve().parent / "fixtures" / "traces" / "sampled_rank-0.json.gz"

SMALL = ('{"distributedInfo": {"rank": 0, "world_size": 2},\n "traceEvents": [\n'
         '  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "args": {}},\n'
         '  {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 3.5, "dur": 4,\n'
         '   "args": {"correlation": 7, "device": 0}},\n'
         '  [1, 2], null, {"ph": "X", "cat": "cuda_runtime", "args": null}],\n'
         ' "deviceProperties": [{"id": 0, "name": "H100"}]}')


def outcome(fn, text):
    try:
        doc = fn(text)
    except (ValueError, RecursionError) as exc:
        return type(exc).__name__, str(exc)
    if isinstance(doc, tracedoc.TraceDoc):
        return "trace", doc
    return "value", doc


def loads_kept(text):
    """json.loads, then a trace brought to the schema's shape and its unused events dropped:
    what `parse` must give."""
    doc = json.loads(text)
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if isinstance(doc, dict) and type(doc.get("traceEvents")) is list:
        t = tracedoc.from_dict(doc)
        return tracedoc.TraceDoc([e for e in t.traceEvents if tracedoc.kept(e)],
                                 t.distributedInfo, t.deviceProperties)
    return doc


def test_parse_is_json_loads_wherever_the_document_breaks():
    """The small document cut at each of its 406 places, each of its characters replaced by
    each of `,:[]{}"` and a space, and 3 documents around it (a bare array, an array inside a
    value, trailing data): the same document or the same error (type, message, line, column)
    as json.loads."""
    texts = [SMALL[:k] for k in range(len(SMALL) + 1)]
    texts += [SMALL[:k] + c + SMALL[k + 1:] for k in range(len(SMALL)) for c in ',:[]{}" ']
    texts += ['[{"cat": "kernel"}, 1]', '{"a": [1, {"traceEvents": [2]}]}', SMALL + " x",
              "\ufeff" + SMALL, '{"traceEvents": 5, "traceEvents": []}']
    for text in texts:
        assert outcome(tracedoc.parse, text) == outcome(loads_kept, text), repr(text)


def test_decode_keeps_the_events_the_reader_uses():
    """Of the small document's 5 events: the cpu_op (not a ProfilerStep), the array and the
    null are dropped; the kernel is kept with its arguments, the launch with empty ones (its
    `args` null, decoded as plain JSON: the schema's Args does not take null)."""
    doc = tracedoc.decode(SMALL.encode())
    assert [(e.cat, e.name) for e in doc.traceEvents] == [("kernel", "gemm"),
                                                           ("cuda_runtime", None)]
    assert doc.traceEvents[0].args.correlation == 7
    assert doc.traceEvents[1].args == tracedoc.Args()
    assert doc.distributedInfo == {"rank": 0, "world_size": 2}


def _peak(fn, *args) -> int:
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def nan_trace(tmp_path_factory):
    """The real trace sampled_rank-0 (HolisticTraceAnalysis's, 1.8 MB of JSON, 4,855 events of
    which 2,358 are kernels or launches) with one kernel's argument NaN: JSON has no NaN, msgspec refuses
    it, so the reader falls back to the full parse."""
    doc = json.loads(gzip.decompress(TRACE.read_bytes()))
    kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
    kernel["args"]["est. achieved occupancy %"] = float("nan")
    path = tmp_path_factory.mktemp("nan") / "rank-0.json"
    path.write_text(json.dumps(doc))
    return path


def test_the_full_parse_holds_the_text_and_the_events_used(nan_trace):
    """Python's memory at its peak while the NaN trace is read (tracemalloc), against the file
    (1.8 MB of ASCII: its text is as many bytes). json.loads alone held every event as dicts,
    3.6 times the file on top of the text; with the bytes and the events brought to the
    schema's shape, the reader had peaked at about 6 times the file (and its read allocated a
    buffer of the whole 1 GiB cap first). Streamed: the bytes, then the text and the events
    kept, 2.0 times the file in all. The trace is the schema decode's of the file before the
    NaN (test_trace_reader compares the two ways on every document)."""
    size = nan_trace.stat().st_size
    peak = _peak(read_file, str(nan_trace))
    assert peak < 2.5 * size, peak / size
    (trace,), diags = read_file(str(nan_trace))
    (fits,), _ = read_file(str(TRACE))             # the trace as it was: the schema decode
    assert diags == [] and len(trace) == len(fits) > 1000
    assert (trace.start == fits.start).all() and trace.kernel_names == fits.kernel_names
