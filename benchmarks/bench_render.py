"""Render benchmark: prints the time to draw each view of the 524,288-GPU reference design
(target: under 5 s each), never asserted in tests.

For each view: the in-process time to build the picture from a checked design (`render`), to lay
it out with `dot` into SVG, and the whole `astral render` command in a fresh interpreter
(compile, check, draw, lay out, write), median of N runs; and the size of the SVG."""
from __future__ import annotations

import os
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
TARGET_S = 5.0


def main() -> int:
    from astral_dsl.cli.common import checked
    from astral_dsl.outputs.render import VIEWS, dot_available, layout, render

    if not dot_available():
        print("Graphviz's dot is not installed: apt-get install graphviz")
        return 1
    t0 = time.perf_counter()
    result = checked(str(REFERENCE), {})
    check_s = time.perf_counter() - t0
    print(f"reference: {REFERENCE.relative_to(ROOT)} (compile + check {check_s:.2f} s, "
          f"median of {RUNS} runs below)")
    print(f"{'view':<8} {'render':>8} {'dot svg':>8} {'command':>8} {'svg':>10}  target")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for view in VIEWS:
            draw, lay, whole = [], [], []
            size = 0
            for _ in range(RUNS):
                t = time.perf_counter()
                g = render(result.design, view, checked=result)
                draw.append(time.perf_counter() - t)
                t = time.perf_counter()
                size = len(layout(g, "svg"))
                lay.append(time.perf_counter() - t)
                out = os.path.join(tmp, f"{view}.svg")
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "astral_dsl.cli", "render", str(REFERENCE),
                                "-o", out, "--view", view], check=True, capture_output=True,
                               cwd=ROOT)
                whole.append(time.perf_counter() - t)
            cmd = statistics.median(whole)
            worst = max(worst, cmd)
            print(f"{view:<8} {statistics.median(draw):>7.3f}s {statistics.median(lay):>7.3f}s "
                  f"{cmd:>7.2f}s {size:>9,}B  {'ok' if cmd < TARGET_S else 'SLOW'}")
    print(f"slowest view, whole command: {worst:.2f} s (target under {TARGET_S:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
