"""A rank log that holds one of a rank's iterations twice, at different times (W796): a job
restarted from a checkpoint runs, and logs, the iterations since that checkpoint again. Summed
as one, such an iteration had doubled the rank's compute (the diagnosis named the forecast or
the software, 2x slower) and given its collectives two ends its peers' clocks could not fit.

A restart is told from a rank's own order in time: its iterations follow one another, so compute
of an iteration after compute of a later iteration starts a new run. Communication alone is not
counted (an asynchronous gradient reduction or parameter gather may end in the next iteration's
first blocks). The rank's last run is read, as the job went on from it: its re-logged iterations
are the later occurrences, and the earlier run (cut short by the crash or the restart, and
minutes or hours before) is left out whole, so that the time between the runs is not read as
the rank's idle time. Said with the rank, the iteration and the first line of each occurrence.
A crash in the checkpoint's own iteration leaves no such order (run 1: ..., 100, 101 cut short;
run 2: 101, 102, ...): it is not seen here."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np

from astral_dsl.diagnostics import Diagnostic
from astral_dsl.observe.kineto import diag
from astral_dsl.observe.records import COMPUTE_CODES

Relog = Tuple[int, int, int, int, int]   # (rank, the last run's first iteration, the line of
#                                          its earlier occurrence, of the later, rows left out)


def relogged(rank: int, lines: np.ndarray, it: np.ndarray, phase: np.ndarray
             ) -> Tuple[Optional[np.ndarray], Optional[Relog]]:
    """One rank's rows in time order (their line numbers, iterations and phase codes): (the mask
    of the rows kept, or None when every row is; the restart, or None)."""
    at = np.flatnonzero(np.isin(phase, COMPUTE_CODES))
    back = np.flatnonzero(np.diff(it[at]) < 0)
    if back.size == 0:
        return None, None
    first = int(at[back[-1] + 1])          # the last run's first compute
    while first > 0 and it[first - 1] == it[first]:     # and its rows before it
        first -= 1
    value = int(it[first])
    before = np.flatnonzero(it[:first] >= value)   # the iteration (or one after it) run before
    keep = np.arange(it.size) >= first
    return keep, (rank, value, int(lines[before[0]]), int(lines[first]), first)


def suspects(rank: np.ndarray, it: np.ndarray, phase: np.ndarray) -> np.ndarray:
    """The ranks (rows sorted by rank, then time) whose compute goes back an iteration: those
    `relogged` looks at, found at once for a whole file."""
    at = np.flatnonzero(np.isin(phase, COMPUTE_CODES))
    r = rank[at]
    back = (np.diff(it[at]) < 0) & (r[1:] == r[:-1])
    return np.unique(r[1:][back])


def said(path: str, found: Sequence[Relog]) -> List[Diagnostic]:
    """W796 for the ranks whose log holds a restart, the first of them named."""
    if not found:
        return []
    rank, it, earlier, later, _ = min(found)
    rows = sum(f[4] for f in found)
    return [diag("W796", f"{len(found):,} rank(s) log iterations twice at different times (a "
                         f"restart): each rank's last run is read and its {rows:,} earlier "
                         f"row(s) left out; the first, rank {rank}, logs iteration {it} from "
                         f"line {earlier} and again from line {later}", path,
                 "a job restarted from a checkpoint runs and logs the iterations since it "
                 "again: to diagnose the earlier run, give its part of the log alone")]


__all__ = ["Relog", "relogged", "said", "suspects"]
