"""Inputs whose sizes are within their columns' bounds but whose product is not: each is
answered with its diagnostic in bounded memory, never an out-of-memory E000. Each case runs in a
child process held to an address space of MEMORY bytes, so that a regression fails there
instead of taking the machine's memory."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MEMORY = 1_500_000_000


def _bounded(code: str) -> subprocess.CompletedProcess:
    prelude = (f"import resource, sys\n"
               f"resource.setrlimit(resource.RLIMIT_AS, ({MEMORY}, {MEMORY}))\n"
               f"sys.path[:0] = [{str(REPO)!r}, {str(REPO / 'tests')!r}]\n")
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=300, cwd=REPO)


def test_pipeline_and_virtual_stages_whose_product_is_huge_are_not_laid_out():
    # pp = 100,000 and vp = 100,000, each within a count's bounds: the frameworks' layout of
    # the 48 layers over pp x vp = 10^10 virtual stages was built as a list before any check
    # said that the stages outnumber the layers (E751), and ran out of memory (E000)
    proc = _bounded("""
        from astral_dsl.runs.evaluate import prepare
        from astral_dsl.runs.table import parse_table
        from test_runs import _csv, _row
        rows = [_row("k22b_full", id="deep", pp="100000", vp="100000", gpus="800000",
                     gbs="800000")]
        (p,) = prepare(parse_table(_csv(rows), "t.csv"))
        print(p.status, p.field, p.reason)
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("not_expressible pp E751: job `run_deep`: pp = 100000 stages "
                                  "for the 48 layers"), proc.stdout


def test_the_derived_layout_of_more_stages_than_layers_and_two_is_none():
    from astral_dsl.seer.stages import derived_layout

    # the embedding and the loss count as a layer each: 50 stages hold 48 layers, 51 cannot
    assert derived_layout(48, 50) == (0,) + (1,) * 48 + (0,)
    assert derived_layout(48, 51) is None
    assert derived_layout(48, 17, 3) is None
    assert derived_layout(61, 8, 4) == (1,) + (2,) * 30 + (0,)


def test_a_drills_log_is_written_in_memory_of_its_columns_not_of_its_rows():
    # astral synth bounds a drill's records (cli/synth.py MAX_RECORDS, ~2 GB of columns); its
    # log was then formatted whole, some 650 bytes a row more: the reference design's own job
    # (16,384 ranks, one iteration, 17M rows) needed over 5.7 GB and ended in E000. Here 1M
    # rows, about 43 MB of columns, are written with 384 MiB of address space beyond what the
    # process holds once they are built: written a slice at a time they take about 155 MiB
    # more, formatted whole about 930 MiB (a MemoryError). (It was 3M rows under an absolute
    # 1.5 GB, whole about 3.3 GB: the same verdict at three times the CPU, 8 -> 3 s.)
    proc = _bounded("""
        import numpy as np
        from astral_dsl.synth.generator import PH, Synthetic
        from astral_dsl.synth.write import write_log

        n, world = 1_000_000, 1_000
        rank = np.repeat(np.arange(world), n // world)
        data = Synthetic(
            job="j", world=world, iterations=(100,), rank=rank, iteration=np.full(n, 100),
            phase=np.full(n, PH["pp_comm"], dtype=np.int8), start=np.linspace(0.0, 9.0, n),
            duration=np.full(n, 1e-3), peer=(rank + 1) % world, op=np.ones(n, dtype=np.int8),
            faults=(), clock_offsets=np.zeros(world), groups={})
        with open("/proc/self/statm") as fh:
            held = int(fh.read().split()[0]) * resource.getpagesize()
        resource.setrlimit(resource.RLIMIT_AS, (held + (384 << 20),) * 2)
        for fmt in ("csv", "jsonl"):
            print(write_log(data, "/dev/null", fmt))
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["1000000", "1000000"]


def test_a_drills_log_is_the_same_text_written_a_slice_at_a_time(tmp_path, monkeypatch):
    import numpy as np

    from astral_dsl.synth import write
    from astral_dsl.synth.generator import PH, Synthetic

    n = 10
    data = Synthetic(
        job="j", world=2, iterations=(100,), rank=np.arange(n) % 2, iteration=np.full(n, 100),
        phase=np.array([PH["pp_comm"], PH["optimizer"]] * 5, dtype=np.int8),
        start=np.arange(n) * 0.25, duration=np.full(n, 1e-3), peer=np.array([1, -1] * 5),
        op=np.array([1, 0] * 5, dtype=np.int8), faults=(), clock_offsets=np.zeros(2), groups={})
    texts = {}
    for rows in (3, n, 100):
        monkeypatch.setattr(write, "WRITE_ROWS", rows)
        for fmt in ("csv", "jsonl"):
            path = tmp_path / f"{rows}.{fmt}"
            assert write.write_log(data, str(path), fmt) == n
            texts.setdefault(fmt, set()).add(path.read_text(encoding="utf-8"))
    (csv,), (jsonl,) = texts["csv"], texts["jsonl"]
    assert csv.splitlines()[:3] == ["rank,iteration,phase,start_s,duration_s,peer,op",
                                    "0,100,pp_comm,0.0000000,0.0010000,1,send",
                                    "0,100,pp_comm,0.5000000,0.0010000,1,send"]
    assert jsonl.splitlines()[5] == ('{"rank":1,"iteration":100,"phase":"optimizer",'
                                     '"start_s":0.2500000,"duration_s":0.0010000}')
    assert csv.endswith("\n") and len(csv.splitlines()) == n + 1
