"""Peak memory of reading one large profiler trace (observe/load.py `read_file`), by path.

The real trace of tests/fixtures/traces (nccl_data_rank-0: 40,573 events, 9.8 MB) repeated to
about `--mb` megabytes (the repetitions' times shifted by the trace's span, so that they are
steps one after the other), written three ways:

- `fits`: as it is: msgspec decodes it against the schema of the fields read (tracedoc.py);
- `odd args`: one event's `args` null and one event that is not an object (a number);
- `NaN`: one kernel's argument `NaN` (Python's json.dumps writes it; JSON and msgspec do not
  take it): the fallback, Python's json.

Each read runs in a process of its own: its peak resident memory after the read (Linux's
VmHWM, /proc/self/status: getrusage's ru_maxrss would count the parent's at the fork; or the
peak of the child a file above observe/budget.py's FROM_BYTES is parsed in, which holds the
process's memory at the fork and what it builds), less the same before it (the interpreter,
numpy, msgspec and the reader's modules imported). The figures are one run's.

    python benchmarks/bench_trace_memory.py            # 200 MB
    python benchmarks/bench_trace_memory.py --mb 50"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = REPO / "tests" / "fixtures" / "traces" / "nccl_data_rank-0.json.gz"

CHILD = """
import re, sys
sys.path.insert(0, {repo!r})
from astral_dsl.observe.load import read_file

def peak():
    import resource
    with open("/proc/self/status") as fh:
        own = int(re.search(r"VmHWM:\\s*(\\d+)", fh.read()).group(1))
    return max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)

import numpy, msgspec, gzip, zlib, json          # every module the read uses, imported
from astral_dsl.observe import kineto, kernels, period, tracedoc, ranklog
before = peak()
traces, diags = read_file({path!r})
assert traces and traces[0].iterations, [d.code for d in diags]
print(before, peak(), len(traces[0]))
"""


def write(directory: str, mb: float):
    doc = json.loads(gzip.decompress(SOURCE.read_bytes()))
    events = doc["traceEvents"]
    stamps = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    span = max(stamps) - min(stamps) + 1000.0
    one = len(json.dumps(events))
    reps = max(1, int(mb * 1e6 / one))
    out = []
    for k in range(reps):
        for e in events:
            e = dict(e)
            if isinstance(e.get("ts"), (int, float)):
                e["ts"] = e["ts"] + k * span
            if "args" in e and isinstance(e["args"], dict):
                args = dict(e["args"])
                if "correlation" in args:
                    args["correlation"] = args["correlation"] + k * 10_000_000
                if "External id" in args:
                    args["External id"] = args["External id"] + k * 10_000_000
                e["args"] = args
            if str(e.get("name", "")).startswith("ProfilerStep#"):
                e["name"] = "ProfilerStep#%d" % (int(e["name"][13:]) + 3 * k)
            out.append(e)
    paths = {}
    doc["traceEvents"] = out
    paths["fits"] = os.path.join(directory, "fits.json")
    Path(paths["fits"]).write_text(json.dumps(doc))
    odd = dict(doc, traceEvents=[7, {"ph": "i", "name": "x", "args": None}] + out)
    paths["odd args"] = os.path.join(directory, "odd.json")
    Path(paths["odd args"]).write_text(json.dumps(odd))
    kernel = next(i for i, e in enumerate(out) if e.get("cat") == "kernel")
    nan = list(out)
    nan[kernel] = dict(out[kernel], args=dict(out[kernel]["args"],
                                              **{"est. achieved occupancy %": float("nan")}))
    paths["NaN"] = os.path.join(directory, "nan.json")
    Path(paths["NaN"]).write_text(json.dumps(dict(doc, traceEvents=nan)))
    return paths, len(out)


def measure(path: str):
    proc = subprocess.run([sys.executable, "-c", CHILD.format(
        repo=str(REPO), path=path)], stdout=subprocess.PIPE, text=True)
    if proc.returncode:
        raise SystemExit(f"the read of {path} failed")
    before, after, records = map(int, proc.stdout.split())
    return (after - before) / 1024, records


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=200.0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        paths, events = write(tmp, args.mb)
        print(f"trace of {events:,} events; peak memory of the read above the process's "
              f"before it", flush=True)
        for name, path in paths.items():
            size = os.path.getsize(path) / 1e6
            peak, records = measure(path)
            print(f"  {name:9s} {size:7.1f} MB: {peak:8.1f} MiB ({peak * 1.048576 / size:4.1f}x "
                  f"the file), {records:,} kernels")


if __name__ == "__main__":
    main()
