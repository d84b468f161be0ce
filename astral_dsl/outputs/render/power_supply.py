"""The upstream side of `--view power` (power.py): the site's transformer stages in series,
each side's supply (how many feeders it feeds and what they carry), and the edges from a
supply to its feeders."""
from __future__ import annotations

from typing import List, Optional

from astral_dsl.model.values import Symbol
from astral_dsl.analyses.power import feeder_loss
from astral_dsl.outputs.render.numbers import n, watts
from astral_dsl.outputs.render.labels import Line
from astral_dsl.outputs.render.style import Canvas
from astral_dsl.outputs.render.tree import Tree
from astral_dsl.units.readable import apparent


def sym(v) -> Optional[str]:
    return v.name if isinstance(v, Symbol) else None


def drawn_w(f, share_w: float) -> float:
    """What feeder `f` draws from its side's supply carrying `share_w`: the load and its
    conversion losses, a rectifier's and its no-load draw included (analyses/power.py's
    `feeder_loss`, the facility's conversion losses): the supplies then add up to what the
    transformers carry."""
    return share_w + feeder_loss(f, share_w)


def transformers(canvas: Canvas, stages, supplies: List[str]) -> None:
    """The site's transformer stages in the order declared, in series, each carrying the site's
    load (in a design of several sites, its own: analyses/chain.py), the last one feeding
    every side's supply."""
    previous = None
    for i, s in enumerate(stages):
        units = s.replicas * s.count
        name = s.path.rsplit(".", 1)[-1]
        template = s.inst.template if s.inst is not None else ""
        gid = canvas.node(f"transformer_{i}", [
            f"transformers {name}" + (f" · {template}" if template not in ("", name) else ""),
            Line(f"{n(units)} x {apparent(watts(s.capacity_w))} · {s.redundancy}", small=True),
            Line(f"carries {watts(s.peak_load_w * s.replicas)} at the peak hour", bold=True),
            Line(f"{apparent(watts(s.peak_load_w * s.replicas / s.power_factor))} at power "
                 f"factor {s.power_factor:.3g}", small=True),
            Line(f"losses {watts(s.average_loss_w)} average, {watts(s.peak_loss_w)} at the "
                 f"peak", small=True)],
            theme="power", parts=[s.inst] if s.inst is not None else (),
            tooltip=f"transformer {s.path}: no-load loss {watts(s.no_load_w)} and load loss "
                    f"{watts(s.load_loss_w)} at the rating, per unit")
        if previous is not None:
            canvas.edge(previous, gid, watts(s.peak_load_w * s.replicas), theme="power")
        previous = gid
    if previous is not None:
        for sup in supplies:
            canvas.edge(previous, sup, "", theme="power", tooltip="the site's low-voltage supply")


def supply(canvas: Canvas, ctx, side: str, items) -> None:
    total_feeders, normal, alone = 0, 0.0, 0.0
    kinds = set()
    for reps, f in items:
        r = ctx.feeders.get(f.path)
        count = r.count if r else 1
        total_feeders += reps * count
        if r is not None:       # what the feeders in service draw (a scenario's failed one of
            #                     `count` none): through their conversion, their rectifier's
            #                     included (its input is this supply's output)
            normal += reps * r.running * drawn_w(r, r.normal_w)
            alone += reps * r.running * drawn_w(r, r.worst_w)
        kinds.add("DC" if (sym(f.field("current")) or "dc") == "dc" else "AC")
    head = f"side {side} supply" if side else "supply"
    canvas.node(f"supply_{side or 'x'}", [
        head, Line(f"{n(total_feeders)} feeder{'s' if total_feeders != 1 else ''} "
                   f"({', '.join(sorted(kinds))})", small=True),
        Line(f"{'carries' if ctx.scenario else 'normal'} {watts(normal)}", bold=True),
        Line(f"at most {watts(alone)}", small=True) if alone > normal * 1.0001 else None],
        theme="power", tooltip="the upstream supply of this side (not modelled)",
        failed=all(f.path in ctx.failed_paths for _, f in items) or None)


def supply_edges(canvas: Canvas, ctx, tree: Tree, drawn) -> None:
    """Edges from each side's supply to its feeders (or their rectifiers)."""
    for key, f, entry, node in drawn:
        side = sym(f.field("side")) or ""
        r = ctx.feeders.get(f.path)
        reps = tree.count_within(key, None) * (r.count if r else 1)
        text = f"{n(reps)} feeders" if reps > 1 else ""
        canvas.edge(f"supply_{side or 'x'}", entry, text, theme="power",
                    failed=f.path in ctx.failed_paths,
                    tooltip=f"{n(reps)} feeder(s) {f.template}")


__all__ = ["supply", "supply_edges", "sym", "transformers"]
