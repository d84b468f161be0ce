"""HolisticTraceAnalysis (HTA, `pip install astral-dsl[hta]`) where it serves PyTorch profiler
traces: its idle time breakdown of each rank's CUDA streams (`astral diagnose --hta`).

HTA sorts a stream's idle gaps by cause (hta/analyzers/breakdown_analysis.py): host wait (the
kernel's launch came after the stream had gone idle: the CPU did not enqueue work fast
enough), kernel wait (a gap shorter than its consecutive-kernel delay: launch overhead), other
(waiting on another stream: a collective's peers, an event). The diagnosis's own breakdown
(diagnose/breakdown.py) computes the rest as HTA does and is checked against it; this cause
needs every kernel's launch, which only HTA's reading keeps. It parses about a trace per
second or two (pandas), so it is asked for, not run by default."""
from __future__ import annotations

import logging
import os
from typing import Dict, Sequence

CAUSES = ("host_wait", "kernel_wait", "other")


class HtaMissing(ImportError):
    pass


class HtaFailed(Exception):
    """HTA raised on these traces (its own reading of them): said as W793, the rest stands."""


def idle_by_cause(files: Dict[int, str], iterations: Dict[int, Sequence[int]]
                  ) -> Dict[int, Dict[str, float]]:
    """rank -> cause -> idle seconds per iteration, summed over the rank's streams, over the
    `iterations` of each rank (HTA's own iteration of each kernel, from its launch). Timestamps
    as the trace has them (HTA's rounding of nanosecond traces to whole microseconds off)."""
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError as exc:
        raise HtaMissing("HolisticTraceAnalysis is not installed: pip install "
                         "'astral-dsl[hta]'") from exc
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    level = logging.root.manager.disable
    logging.disable(logging.WARNING)              # HTA logs every file it parses
    try:
        return _idle(TraceAnalysis, files, iterations)
    except Exception as exc:    # a third-party reader's failure on input it cannot read
        raise HtaFailed(f"{type(exc).__name__}: {exc}"[:300]) from exc
    finally:
        logging.disable(level)


def _idle(TraceAnalysis, files, iterations) -> Dict[int, Dict[str, float]]:
    # each file by its absolute path: HTA joins a relative one to its own trace_dir
    # (/tmp/trace), so `--observed run/rank-0.json.gz` was W793 ("validation failed")
    a = TraceAnalysis(trace_files={r: os.path.abspath(f) for r, f in files.items()},
                      include_last_profiler_step=True)
    out: Dict[int, Dict[str, float]] = {}
    for rank in sorted(files):
        df = a.t.traces[rank]
        a.t.traces[rank] = df[df["iteration"].isin(list(iterations[rank]))]
        idle, _ = a.get_idle_time_breakdown(ranks=[rank], visualize=False)
        n = max(1, len(iterations[rank]))
        out[rank] = {c: float(idle.loc[idle["idle_category"] == c, "idle_time"].sum())
                     * 1e-6 / n for c in CAUSES}
    return out


__all__ = ["CAUSES", "HtaFailed", "HtaMissing", "idle_by_cause"]
