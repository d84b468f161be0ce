"""`astral search` and `astral check --margins` as functions (re-exported by
astral_dsl/api/__init__.py): thin over the code the commands call (explore.search.run,
explore.margins.analyse), which compiles the design from its file as the commands do."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Mapping, Optional, Sequence

from astral_dsl.api import arguments as _a
from astral_dsl.api.commands import Target, calibration_of, file_and_sets, literal_sets
from astral_dsl.semantics.overrides import from_python
from astral_dsl.workspace import ParamValue

if TYPE_CHECKING:
    from astral_dsl.explore.margins import Report
    from astral_dsl.explore.search import SearchResult
    from astral_dsl.units import Quantity


def search(target: Target, job: Optional[str] = None, objective: str = "tokens_per_s",
           top: int = 10, gpus: Sequence[int] = (),
           overrides: Optional[Mapping[str, ParamValue]] = None,
           life: Optional["Quantity"] = None, calibration=None, sure_fit: bool = False,
           workers: Optional[int] = None) -> "SearchResult":
    """`astral search`: the parallel configurations of `job` (default: the first declared) on
    its placement ranked by Seer's forecast (`objective`: "tokens_per_s", "iteration_time" or
    "cost_per_token"), the `top` first in `.rows`; `gpus` the GPU counts to split (default:
    the job's), `life` the write-off period of the cost per token (a Quantity of time; default
    4 yr), `sure_fit` only those whose memory estimate plus its uncertainty fits. Raises
    SearchError as the command refuses the same (an argument out of its values; the design's
    errors or an unknown job in `.diagnostics`), TypeError for an argument of the wrong kind."""
    from astral_dsl.explore import search as _search

    path, sets = file_and_sets(target, "search compiles the design again from its file")
    _a.mapping(overrides, "overrides")
    sets.update(literal_sets(overrides))
    _a.name(job, "job")
    _a.name(objective, "objective")
    _a.flag(sure_fit, "sure_fit")
    for value, what in ((top, "top"), (workers, "workers")):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{what} is an int, not {type(value).__name__}")
    why = _search.refused(objective, top, str)         # in the API's words: `top`, not `--top`
    if why is not None:
        raise _search.SearchError(why)
    counts = _counts(gpus)
    life_s = _search.LIFE_S if life is None else _life_s(life)
    try:                       # `workers` past its bounds: the message `--workers` gives
        return _search.run(os.fspath(path), job=job, objective=objective, top=top, gpus=counts,
                           sets=sets, workers=workers, life_s=life_s,
                           calibration=calibration_of(calibration), sure_fit=sure_fit,
                           option=str, set_option=from_python)   # `gpus`, not `--gpus`
    except ValueError as exc:
        if isinstance(exc, _search.SearchError):
            raise
        raise _search.SearchError(str(exc)) from None


def _counts(gpus: Sequence[int]) -> tuple:
    from astral_dsl.explore.search import SearchError

    if not isinstance(gpus, (list, tuple)) or \
            any(isinstance(n, bool) or not isinstance(n, int) for n in gpus):
        raise TypeError(f"gpus is a list of GPU counts (ints), not {gpus!r}"[:200])
    low = [n for n in gpus if n < 1]
    if low:
        raise SearchError(f"gpus: {low[0]} is not a count of GPUs of at least 1")
    return tuple(gpus)


def _life_s(life: "Quantity") -> float:
    from astral_dsl.explore.search import SearchError, life_refused
    from astral_dsl.units import Quantity

    _a.instance_of(life, Quantity, "life", " of time (Quantity.of(4, \"yr\"))")
    if life.dimension() != Quantity.of(1, "s").dimension() or life.point:
        raise TypeError(f"life is a Quantity of time, not {life.describe()}")
    why = life_refused(life.si)
    if why is not None:
        raise SearchError(f"life {life}: {why}")
    return life.si


def margins(target: Target, overrides: Optional[Mapping[str, ParamValue]] = None,
            params: Optional[Sequence[str]] = None) -> "Report":
    """`astral check --margins`: how far each limit of the design is from breaking, and for
    which values of each numeric top-level parameter it holds (`params`: only these; default
    every one; a name the design does not declare is E213, `params=['x']`, in `.diagnostics`,
    one that is not a number a note). The Report holds `.params` (their current values), `.margins` (a Margin per
    limit: `.limit`, `.ranges`, `.condition`), `.diagnostics` and `.note` (why there are
    none), as `astral check --margins` prints them."""
    from astral_dsl.explore import margins as _margins

    path, sets = file_and_sets(target, "margins compile the design again from its file")
    _a.mapping(overrides, "overrides")
    sets.update(literal_sets(overrides))
    return _margins.analyse(os.fspath(path), sets, params=_a.names(params, "params"),
                            set_option=from_python)          # `overrides['NAME']`


__all__ = ["margins", "search"]
