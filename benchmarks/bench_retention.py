"""What a long-lived process keeps after its forecasts and searches have returned (quoted in the
README's performance section; never asserted here: tests/test_retention.py asserts the
structure, that no Lowering outlives its forecast and that the kept searches stay within
work.KEEP_STATES).

Forecasts: N distinct jobs forecast by the rule (seer.run) in one process, N = 1, 10, 50, 200:
the rows of the shipped runs tables (seer/calibration/modern.csv and a100.csv) as `astral runs`
states them, then the same rows at half and at twice their sequence. After each N, with
gc.collect(): the memory Python's allocator holds for live objects beyond what it held after
the first forecast (tracemalloc, started after it: imports and the calibration are not
counted), the resident set of the process (/proc/self/statm: it also keeps the allocator's free
arenas and the peak of the largest forecast), the live Lowering and Op objects (0: nothing
keeps a forecast's lowering once the Forecast is dropped), and how full Seer's caches are: the
dependency orders of pipeline schedules (schedule_plan._CACHE) and their programs (walk.
_PROGRAMS), each bounded by CACHE_BLOCKS blocks, and the layouts of rank numberings
(comm_groups._KEPT, at most KEPT).

Searches (`--searches` to run only these): distinct `astral search` runs of benchmarks/
gpt3_a100.astral in this process on one worker (its GPU counts 128, 256, 512, 1,024, 64, 32:
each a Setup of its own), after each the same figures and the number of States kept
(explore/search/work.py: at most KEEP_STATES, the most recently used)."""
from __future__ import annotations

import gc
import os
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from astral_dsl import seer  # noqa: E402
from astral_dsl.explore import search  # noqa: E402
from astral_dsl.explore.engines import LocalEngine  # noqa: E402
from astral_dsl.explore.search import work  # noqa: E402
from astral_dsl.runs.evaluate import prepare  # noqa: E402
from astral_dsl.runs.table import read_table  # noqa: E402
from astral_dsl.seer import comm_groups, schedule_plan, walk  # noqa: E402
from astral_dsl.seer.calibration import RUN_FILES  # noqa: E402
from astral_dsl.seer.lower import Lowering  # noqa: E402
from astral_dsl.seer.template import Op  # noqa: E402

MiB = 2 ** 20
FORECASTS = (1, 10, 50, 200)
SEARCH_GPUS = (128, 256, 512, 1024, 64, 32)


def rss() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MiB


def jobs():
    rows = []
    for name in ("modern", "a100"):
        rows += [p for p in prepare(read_table(RUN_FILES[name])) if p.status == "ok"]
    out = [(p.spec, p.gpu, p.net) for p in rows]
    out += [(p.spec.with_(seq=p.spec.seq // 2), p.gpu, p.net) for p in rows]
    out += [(p.spec.with_(seq=p.spec.seq * 2), p.gpu, p.net) for p in rows]
    return out


def kept(base: int) -> str:
    """After a gc.collect(): the MiB traced beyond `base`, the resident set, and the live
    Lowering and Op objects."""
    gc.collect()
    objs = gc.get_objects()
    lows = sum(1 for o in objs if isinstance(o, Lowering))
    ops = sum(1 for o in objs if type(o) is Op)
    del objs
    traced = (tracemalloc.get_traced_memory()[0] - base) / MiB
    return f"{traced:9.1f} {rss():8.0f} {lows:>9} {ops:>8,}"


def caches() -> str:
    plans = schedule_plan._CACHE.weight
    progs = walk._PROGRAMS.weight
    return (f"{plans:>8,} {progs:>8,} {len(comm_groups._KEPT):>5}"
            f"  (bounds {schedule_plan.CACHE_BLOCKS:,} / {schedule_plan.CACHE_BLOCKS:,} / "
            f"{comm_groups.KEPT:,})")


def forecasts() -> None:
    todo = jobs()
    seer.run(*todo[0])
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    print(f"{'distinct forecasts':>18} {'kept MiB':>9} {'RSS MiB':>8} {'Lowerings':>9} "
          f"{'Ops':>8} {'plan blk':>8} {'prog blk':>8} {'kept':>5}  CPU s")
    done, k, cpu = 1, 1, time.process_time()
    print(f"{1:>18} {kept(base)} {caches()}  0")
    for n in FORECASTS[1:]:
        while done < n:
            try:
                seer.run(*todo[k])
                done += 1
            except Exception:           # a variant the rule cannot forecast: the next one
                pass
            k += 1
        print(f"{n:>18} {kept(base)} {caches()}  {time.process_time() - cpu:.0f}")
    tracemalloc.stop()


def searches() -> None:
    path = str(ROOT / "benchmarks" / "gpt3_a100.astral")
    keep = getattr(work, "KEEP_STATES", None)
    print(f"\n{'distinct searches':>18} {'kept MiB':>9} {'RSS MiB':>8} {'Lowerings':>9} "
          f"{'Ops':>8} {'States':>6} (KEEP_STATES {keep})")
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for n, gpus in enumerate(SEARCH_GPUS, 1):
        engine = LocalEngine(1)
        try:
            search.run(path, top=10, gpus=(gpus,), engine=engine)
        finally:
            engine.close()
        print(f"{n:>18} {kept(base)} {len(work._STATES):>6}  (--gpus {gpus})")
    tracemalloc.stop()


def main() -> None:
    print(f"retention after the work returned, Python {sys.version.split()[0]}")
    if "--searches" not in sys.argv[1:]:
        forecasts()
    searches()


if __name__ == "__main__":
    main()
