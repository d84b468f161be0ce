"""The configurations of a runs table's rows: rows that state the same job on the same system
are forecast alike under any constants, whatever their ids and published figures (a run
published by several releases that Seer reads alike, or a table's repeated runs), so a fit
(runs/fit.py) forecasts, chooses and asks uses() once per configuration, `astral runs`
(runs/evaluate.py) forecasts each once, both compile and validate each once (`shape`,
evaluate.prepare), and their cost grows with the configurations, not the rows (but for
reading and expressing each row)."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import attrs


def stated(p) -> Tuple:
    """What a row's forecast under any constants depends on: its job as stated, but for the
    job's name (`run_<row id>`, which only the validator's messages print), its GPU and its
    network. Rows that state the same are one configuration to the fit (a run published by
    several releases that Seer reads alike, or a table's repeated runs)."""
    return attrs.evolve(p.spec, name=""), p.gpu, p.net


def configurations(prepared: Sequence) -> Tuple[List[int], List[int]]:
    """(row -> the index of its configuration (`stated`), configuration -> its first row), of
    rows prepared alright (runs/evaluate.py's Prepared with a job)."""
    index: Dict[Tuple, int] = {}
    config, first = [], []
    for i, p in enumerate(prepared):
        k = index.setdefault(stated(p), len(index))
        if k == len(first):
            first.append(i)
        config.append(k)
    return config, first


def named(job, name: str):
    """`job` under `name` (a row's own: its configuration's job is forecast under the first
    row's)."""
    return job if job.name == name else attrs.evolve(job, name=name)


def shape(e) -> Optional[Tuple[str, str]]:
    """An expressed row's (runs/express.Expressed) source but for its job's name, and where its
    imports resolve: rows of one shape compile alike but for that name, so evaluate.prepare
    compiles and validates one of them; None when the name shows elsewhere in the source."""
    rest = e.source.replace(f"\njob {e.job} {{\n", "\njob {\n", 1)
    return None if rest == e.source or e.job in rest else (rest, e.root)


def renamed(text: str, old: str, new: str, label: str) -> Optional[str]:
    """`text`, a message about the job `old` compiled from the source labelled `label`, about
    the job `new` of the same shape; None when it names `old` or `label` otherwise than as
    `old` in backticks (the compiler's and the validator's way of naming a job)."""
    out = text.replace(f"`{old}`", "\0")
    if "\0" in text or old in out or label in out:
        return None
    return out.replace("\0", f"`{new}`")
