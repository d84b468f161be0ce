"""What one `?` costs `astral check`: prints the figures quoted in the README (never asserted in
tests).

The design is examples/sizing.astral with every value sizing chooses written in, but one: the
hosts per rack stay `(? in 1..5)` (five combinations, each compiled and checked with its required
scenario). Its twin gives that value (`3 x Node`, the one sizing chooses). Each is checked by a
whole `astral check` process; the figure is the CPU time (user + system, children included),
median of RUNS runs after one warm-up run:

- cached: sizing's result is kept per user (astral_dsl/analyses/sizing_cache.py), as it is
  after the first check of a text: the process compiles the design, then compiles it again with
  the value chosen, and checks that (target: at most 1.5x the design with the value given);
- cold: every run with an empty cache (ASTRAL_CACHE_DIR of its own), so the five combinations
  are compiled and checked each time (what a first check, or an edit, costs).

    python benchmarks/bench_one_unknown.py            # RUNS=5 by default (BENCH_RUNS=...)
"""
from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
TARGET = 1.5
CHOSEN = {r"count = \? in 1\.\.8": "count = 3", r"modules = \?": "modules = 9",
          r"strings = \?": "strings = 2", r"cdu = \? in \[SmallCDU, LargeCDU\]": "cdu = SmallCDU",
          r"cdus = \?": "cdus = 2"}


def designs(folder: Path):
    """(one `?`, the value given) written below `folder`, from examples/sizing.astral."""
    text = (ROOT / "examples" / "sizing.astral").read_text(encoding="utf-8")
    for pattern, value in CHOSEN.items():
        text, n = re.subn(pattern, value, text)
        assert n == 1, pattern
    assert text.count("?") == 1 and "(? in 1..5) x Node" in text
    one = folder / "one_unknown.astral"
    given = folder / "value_given.astral"
    one.write_text(text, encoding="utf-8")
    given.write_text(text.replace("(? in 1..5) x Node", "3 x Node"), encoding="utf-8")
    return one, given


def cpu(path: Path, cache: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT), ASTRAL_CACHE_DIR=cache)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [sys.executable, "-m", "astral_dsl.cli", "check", str(path)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stdout.decode()[-800:]}"
                         f"{proc.stderr.decode()[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median(path: Path, cache_of) -> tuple:
    cpu(path, cache_of())                      # warm-up: byte code, parser tables, the cache
    runs = [cpu(path, cache_of()) for _ in range(RUNS)]
    return statistics.median(runs), runs


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        one, given = designs(Path(tmp))
        shared = os.path.join(tmp, "cache")
        os.makedirs(shared, mode=0o700)
        fresh = iter(range(1_000_000))

        def cold() -> str:
            folder = os.path.join(tmp, f"cold-{next(fresh)}")
            os.makedirs(folder, mode=0o700)
            # the parser tables and the stdlib's syntax trees stay cached: only sizing's
            # result is missing (it is the one entry named sizing-*)
            for entry in os.listdir(shared):
                if not entry.startswith("sizing-"):
                    os.link(os.path.join(shared, entry), os.path.join(folder, entry))
            return folder

        base, base_runs = median(given, lambda: shared)
        cached, cached_runs = median(one, lambda: shared)
        first, first_runs = median(one, cold)
    print(f"astral check, CPU time (user + system), median of {RUNS} runs after a warm-up run:")
    rows = [("the value given (3 x Node)", base, base_runs),
            ("one `?` (? in 1..5), sizing cached", cached, cached_runs),
            ("one `?`, sizing not cached (5 combinations)", first, first_runs)]
    for label, value, runs in rows:
        print(f"  {label:46s} {value * 1000:6.0f} ms   runs: "
              + ", ".join(f"{x * 1000:.0f}" for x in runs))
    print(f"  ratio, cached: {cached / base:.2f} (target: at most {TARGET:g}); "
          f"not cached: {first / base:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
