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
