"""Front-end benchmark: prints figures quoted in the README (never asserted in tests).

For the 524,288-GPU reference design and a 1,024-GPU design of the same shape:
- in-process compile time (read + parse + imports of .astral modules + evaluation + checks, with
  Python's own imports already done), best and median of N runs;
- the whole `astral check` process (a fresh interpreter: Python imports included), median of N;
- peak memory of the in-process compile (tracemalloc) and of the whole process (ru_maxrss).
"""
from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))      # this checkout, not an installed copy
REFERENCE = ROOT / "examples" / "astral.astral"
RUNS = int(os.environ.get("BENCH_RUNS", "7"))


def small_variant(text: str) -> str:
    """The reference shape at 1,024 GPUs: 1 pod of 2 rows (32 racks, 128 hosts)."""
    text = re.sub(r"rows = 128 x GpuRow", "rows = 2 x GpuRow", text)
    text = re.sub(r"pods = 8 x Pod", "pods = 1 x Pod", text)
    text = re.sub(r"\n *check gpus == .*", "", text)
    text = re.sub(r"\n *check count\(pods\).*", "", text)
    return text


def compile_times(path: Path):
    from astral_dsl.analyses.summary import summarize
    from astral_dsl.api import load as compile_file

    compile_file(path)  # warm: Python imports and the cached grammar
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        design = compile_file(path)
        times.append(time.perf_counter() - t0)
    tracemalloc.start()
    compile_file(path)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return times, peak, summarize(design), design


def process_times(path: Path):
    times, rss = [], 0
    code = ("import resource, sys; from astral_dsl.cli import main; rc = main(['check', sys.argv[1]]);"
            "sys.stderr.write('RSS=%d\\n' % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss);"
            "raise SystemExit(rc)")
    for _ in range(RUNS):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                              text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        times.append(time.perf_counter() - t0)
        m = re.search(r"RSS=(\d+)", proc.stderr)
        rss = max(rss, int(m.group(1)) if m else 0)
    return times, rss


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "examples" / "astral_1k.astral"
        small.parent.mkdir()
        small.write_text(small_variant(REFERENCE.read_text()))
        rows = []
        for label, path in (("reference (524,288 GPUs)", REFERENCE), ("same shape, 1,024 GPUs", small)):
            ctimes, peak, summary, design = compile_times(path)
            ptimes, rss = process_times(path)
            rows.append((label, summary["gpus"], min(ctimes), statistics.median(ctimes),
                         statistics.median(ptimes), peak, rss, len(design.instances),
                         design.valid))
    print(f"astral check front end, {RUNS} runs each, Python {sys.version.split()[0]}")
    print(f"{'design':28} {'GPUs':>9} {'compile best':>13} {'compile med':>12} "
          f"{'process med':>12} {'compile peak':>13} {'process RSS':>12} {'instances':>9}")
    for label, gpus, cbest, cmed, pmed, peak, rss, n, valid in rows:
        print(f"{label:28} {gpus:>9,} {cbest * 1000:>10.1f} ms {cmed * 1000:>9.1f} ms "
              f"{pmed * 1000:>9.1f} ms {peak / 2**20:>9.2f} MiB {rss / 1024:>8.1f} MiB {n:>9}"
              + ("" if valid else "  (design has errors!)"))
    ratio = rows[0][3] / rows[1][3]
    print(f"compile time ratio 524,288 / 1,024 GPUs: {ratio:.2f} (target <= 1.3)")
    print(f"whole `astral check` process, reference: {rows[0][4] * 1000:.0f} ms (target < 1000 ms)")


if __name__ == "__main__":
    main()
