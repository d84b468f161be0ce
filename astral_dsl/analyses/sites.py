"""The sites of a design one by one: which parts each holds and how many replicas of each, and
its share of the design's IT load. A design of several sites (a campus of data halls) has each
site's transformers and mechanical feeders carry that site, not the others: its share of the IT
feeders' input and its own facility consumers (those of the cooling parts it holds and its
`auxiliary`: analyses/site_loads.py). A part whose template two sites share is one instance held
by both: it counts in each with the replicas that site holds."""
from __future__ import annotations

from typing import Dict, Tuple

from astral_dsl import records
from astral_dsl.analyses.walk import owned
from astral_dsl.model.design import Instance
from astral_dsl.model.rollup import power_of


@records.frozen(slots=False)
class Site:
    """A site, its IT load at the peak (W, rollup `power`), its share of the sites' IT load,
    and id(part) -> the replicas of the part it holds (itself included, as 1)."""
    inst: Instance
    it_w: float
    share: float
    replicas: Dict[int, int]

    def holds(self, inst: Instance) -> bool:
        return id(inst) in self.replicas


def sites(mult, cache: Dict) -> Tuple[Site, ...]:
    """Every site of `mult` (analyses/walk.multiplicities, parents before children) with the
    parts it holds: walked once per site, counts multiplied down as multiplicities does (a
    design whose root is no `site` is one site). With no IT load anywhere each site's share is
    1 / the number of sites."""
    order = [inst for _, inst in mult.values()]
    roots = [inst for inst in order if inst.kind == "site"] or order[:1]
    out = []
    for root in roots:
        held: Dict[int, int] = {id(root): 1}
        for inst in order:            # parents before children: a part's count is complete
            m = held.get(id(inst))
            if not m:
                continue
            for count, child in owned(inst):
                held[id(child)] = held.get(id(child), 0) + m * count
        out.append((root, power_of(root, cache).si, held))
    total = sum(w for _, w, _ in out)
    return tuple(Site(r, w, w / total if total > 0 else 1 / len(out), held)
                 for r, w, held in out)
