"""The one-line summary of a design: GPUs, hosts, racks, switches, IT power."""
from __future__ import annotations

from typing import Dict, Tuple

from astral_dsl import gcpause, records
from astral_dsl.model.design import Design
from astral_dsl.model.rollup import count_of, power_of
from astral_dsl.units import Quantity


@records.frozen(slots=False)
class Totals:
    """The counts and IT power of a checked design (`astral check`'s summary line, typed):
    the IT power (the compute's roll-up and the network's switches) is a Quantity."""
    sites: Tuple[str, ...]
    gpus: int
    hosts: int
    racks: int
    switches: int
    it_power: Quantity


@gcpause.pausing      # roll-ups allocate as they walk the model: no pass rescans it meanwhile
def totals(design: Design, eng=None) -> Totals:
    """The counts and the IT power of `design`; pass the Engineering result when it has been
    computed already."""
    cache: Dict = {}
    if eng is None and design.roots:
        from astral_dsl.analyses.engineering import analyse

        eng = analyse(design)
    compute_w = sum(power_of(r, cache).si for r in design.roots)
    network_w = eng.network_w if eng else 0.0
    return Totals(tuple(r.path for r in design.roots),
                  sum(count_of(r, ("gpu",), cache) for r in design.roots),
                  sum(count_of(r, ("host",), cache) for r in design.roots),
                  sum(count_of(r, ("rack",), cache) for r in design.roots),
                  sum(f.switches for f in eng.fabrics) if eng else 0,
                  Quantity.of(compute_w + network_w, "W").to("kW"))


def summarize(design: Design, eng=None) -> Dict[str, object]:
    """The check summary (the JSON's `summary`, power in kW rounded to the watt); pass the
    Engineering result when it has been computed already."""
    t = totals(design, eng)
    return {"sites": list(t.sites), "gpus": t.gpus, "hosts": t.hosts, "racks": t.racks,
            "switches": t.switches, "it_power_kw": round(t.it_power.si / 1000.0, 3)}


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "es" if word.endswith("h") else "s")


def counts_text(summary: Dict[str, object]) -> str:
    """`32 GPUs, 4 hosts, 1 rack, 0 switches`: the counts as `astral check` and `size` say them."""
    return (f"{_n(summary['gpus'], 'GPU')}, {_n(summary['hosts'], 'host')}, "
            f"{_n(summary['racks'], 'rack')}, {_n(summary['switches'], 'switch')}")


def one_line(design: Design, summary: Dict[str, object]) -> str:
    return f"{design.file}: {counts_text(summary)}, IT power {summary['it_power_kw']:,.1f} kW"
