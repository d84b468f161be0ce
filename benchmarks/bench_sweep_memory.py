"""`astral sweep` memory benchmark: peak RSS of whole `astral sweep --workers 1` processes (every
point evaluated in the process that writes the rows) for 1,000 and 10,000 points, printed for
the README (never asserted in tests: tests/test_sweep_stream.py tests that no row is held).

The design is examples/tutorial_rack.astral with a parameter that changes nothing (`knob`), so
that a point is cheap (about 7 ms) and the grid can be large: servers 1..4 x knob 1..250 or
1..2,500. `ASTRAL_ROOT=/path/to/another/checkout` measures that tree instead (before/after)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(os.environ.get("ASTRAL_ROOT") or Path(__file__).resolve().parents[1])


def peak(argv, cwd):
    """(peak RSS in MiB, wall s, CPU s, exit code) of `astral ARGV`, its output discarded."""
    t0 = time.perf_counter()
    with open(os.devnull, "w") as null:
        proc = subprocess.Popen([sys.executable, "-m", "astral_dsl.cli", *argv], cwd=cwd,
                                stdout=null, stderr=subprocess.DEVNULL,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        _, status, usage = os.wait4(proc.pid, 0)
    return (usage.ru_maxrss / 1024, time.perf_counter() - t0, usage.ru_utime + usage.ru_stime,
            os.waitstatus_to_exitcode(status))


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [1000, 10000]
    print(f"astral sweep memory, {ROOT}, Python {sys.version.split()[0]}, "
          f"load average before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        design = Path(tmp, "rack.astral")
        design.write_text((ROOT / "examples/tutorial_rack.astral").read_text()
                          + "param knob = 1\n")
        for points in sizes:
            grid = ["--grid", "servers=1..4", "--grid", f"knob=1..{points // 4}"]
            for label, extra in (("--format jsonl", ["--format", "jsonl"]),
                                 ("--format json", ["--format", "json"]),
                                 ("-o rows.csv", ["-o", str(Path(tmp, "rows.csv"))])):
                rss, wall, cpu, code = peak(["sweep", str(design), *grid, "--workers", "1",
                                             *extra], tmp)
                if code not in (0, 1):
                    raise SystemExit(f"exit {code}")
                print(f"  {points:>6,} points {label:16} peak RSS {rss:6.1f} MiB  "
                      f"wall {wall:5.1f} s  CPU {cpu:5.1f} s")


if __name__ == "__main__":
    main()
