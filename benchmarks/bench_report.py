"""Report benchmark: prints how long `astral report` takes on the 524,288-GPU reference design
and how big the page is (targets: under 5 s, under 5 MB), never asserted in tests.

The whole command in a fresh interpreter (compile, check with every scenario, size summaries,
Seer's forecast of the job baseline and under each scenario, five pictures laid out by `dot`, the
timeline, the page), wall and CPU time (the command and its `dot` children), median of N runs;
with `--scenario hvdc_lost` too (ten pictures). In process: where the time goes."""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))      # this checkout, not an installed copy
REFERENCE = ROOT / "examples" / "astral.astral"
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
TARGET_S, TARGET_MB = 5.0, 5.0


def _command(out: str, *extra: str):
    wall, cpu = [], []
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "astral_dsl.cli", "report", str(REFERENCE), "-o",
                        out, *extra], check=True, capture_output=True, cwd=ROOT)
        wall.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(wall), statistics.median(cpu), os.path.getsize(out)


def _phases():
    from astral_dsl.api import compile
    from astral_dsl.api.review import collect
    from astral_dsl.outputs.report import build

    t = time.perf_counter()
    ws = compile(REFERENCE)
    ws.design
    t1 = time.perf_counter()
    review = collect(ws)
    t2 = time.perf_counter()
    build(review)
    t3 = time.perf_counter()
    return t1 - t, t2 - t1, t3 - t2


def main() -> int:
    print(f"reference: {REFERENCE.relative_to(ROOT)}, median of {RUNS} runs")
    worst_s, worst_mb = 0.0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "review.html")
        for name, extra in (("astral report", ()),
                            ("astral report --scenario hvdc_lost", ("--scenario", "hvdc_lost"))):
            wall, cpu, size = _command(out, *extra)
            worst_s, worst_mb = max(worst_s, wall), max(worst_mb, size / 1e6)
            print(f"{name:<36} wall {wall:5.2f} s  CPU {cpu:5.2f} s  page {size / 1e6:5.2f} MB "
                  f"({size:,} bytes)")
    compile_s, collect_s, build_s = _phases()
    print(f"in process: compile {compile_s:.2f} s, analyses + forecasts + pictures "
          f"{collect_s:.2f} s, page {build_s:.2f} s")
    print(f"slowest: {worst_s:.2f} s (target under {TARGET_S:.0f} s); largest page: "
          f"{worst_mb:.2f} MB (target under {TARGET_MB:.0f} MB): "
          + ("ok" if worst_s < TARGET_S and worst_mb < TARGET_MB else "MISSED"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
