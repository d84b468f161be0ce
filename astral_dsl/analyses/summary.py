"""The one-line summary of a design: GPUs, hosts, racks, switches, IT power."""
from __future__ import annotations

from typing import Dict

from astral_dsl.model.design import Design
from astral_dsl.model.rollup import count_of, power_of


def summarize(design: Design, eng=None) -> Dict[str, object]:
    """The check summary; pass the Engineering result when it has been computed already."""
    cache: Dict = {}
    if eng is None and design.roots:
        from astral_dsl.analyses.engineering import analyse

        eng = analyse(design)
    gpus = sum(count_of(r, ("gpu",), cache) for r in design.roots)
    hosts = sum(count_of(r, ("host",), cache) for r in design.roots)
    racks = sum(count_of(r, ("rack",), cache) for r in design.roots)
    switches = sum(f.switches for f in eng.fabrics) if eng else 0
    compute_w = sum(power_of(r, cache).si for r in design.roots)
    network_w = eng.network_w if eng else 0.0
    return {
        "sites": [r.path for r in design.roots],
        "gpus": gpus,
        "hosts": hosts,
        "racks": racks,
        "switches": switches,
        "it_power_kw": round((compute_w + network_w) / 1000.0, 3),
    }


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def one_line(design: Design, summary: Dict[str, object]) -> str:
    return (f"{design.file}: {_n(summary['gpus'], 'GPU')}, {_n(summary['hosts'], 'host')}, "
            f"{_n(summary['racks'], 'rack')}, {_n(summary['switches'], 'switch').replace('switchs', 'switches')}, "
            f"IT power {summary['it_power_kw']:,.1f} kW")
