"""W635: a feeder that nothing backs, in a design that declares redundant feeders.

A feeder is backed when a feeder of another `side` shares its load (2N: for an IT feeder one
serving the same parts, for a mechanical one another declared beside it) or it is one of a
`count = N` group (N-1; a count left to sizing is sized so that one may fail where the feeder
declares a `capacity`). One that is neither is a single point of failure: what it carries loses
power when it fails (a scenario that fails it says so, E628). Designs of single feeds on purpose exist (a lab rack on one
busway), so the warning is given only where the design declares redundancy: some feeder
declares a `side` (it names half of an A/B pair) or a `count` above 1 (or `?`). Uptime
Institute's Tier III and IV (Tier Standard: Topology) require every capacity component and
distribution path to be concurrently maintainable or fault tolerant; a design that declares
that intent elsewhere and leaves one path single is told where."""
from __future__ import annotations

from typing import Iterable, List, Optional

from astral_dsl.analyses.field_reading import si, symbol_name, warning
from astral_dsl.diagnostics import Diagnostic
from astral_dsl.model.design import Instance
from astral_dsl.model.values import UnknownValue
from astral_dsl.units import readable


def left_to_sizing(f: Instance, resolve) -> bool:
    """Its `count` is `?`: not chosen yet, or chosen by sizing (`resolve`: the design's
    Resolver, analyses/walk.py, which knows the values the design was compiled with)."""
    return isinstance(f.field("count"), UnknownValue) or resolve.sized(f, "count")


def redundant(f: Instance, sized: bool = False) -> Optional[str]:
    """How a feeder declaration says it is one of redundant feeders (None: it does not);
    `sized`: its `count` is `?` (left_to_sizing), whatever sizing chose."""
    count = f.field("count")
    if isinstance(count, UnknownValue) or sized and (si(count) or 1) <= 1:
        return "one of a `count = ?` group"
    if (si(count) or 1) > 1:
        return f"one of a `count = {int(si(count))}` group"
    if symbol_name(f.field("side")):
        return f"on side {symbol_name(f.field('side'))} of an A/B pair"
    return None


def evidence(feeders: Iterable[Instance], resolve) -> Optional[Instance]:
    """The first feeder declaration (of any kind: IT, network, mechanical) that says the
    design's power is redundant (a `count = ?` does, whatever sizing chose)."""
    return next((f for f in feeders if redundant(f, left_to_sizing(f, resolve)) is not None),
                None)


def unbacked(f: Instance, partners: List[Instance], count: int, load_w: float,
             example: Optional[Instance], replicas: int, resolve,
             partner: str = "serving the same parts") -> List[Diagnostic]:
    """W635 for feeder `f` (its `partners` of other sides, its `count`, its load per replica)
    when nothing backs it and `example` (the design's evidence of redundancy) exists;
    `resolve`: the design's Resolver (whether sizing chose the count); `partner`: what a
    partner must be besides on another side (an IT feeder's serves the same parts, a
    mechanical one is declared beside it with `mechanical = true`). A `count = ?` sized to 1
    is one without a `capacity` (with one, sizing counts a feeder more than the load needs):
    the hint is to declare it."""
    if example is None or partners or count > 1 or load_w <= 0:
        return []
    side = symbol_name(f.field("side"))
    sized = left_to_sizing(f, resolve)
    unrated = sized and f.field("capacity") is None
    why = f"its `side = {side}` names half of an A/B pair" if side else \
        "its `count = ?` asks for feeders that back one another" if sized else \
        f"the design's `{example.path}` is " \
        f"{redundant(example, left_to_sizing(example, resolve))}"
    every = f" (so are all {replicas:,} such feeders)" if replicas > 1 else ""
    pair = f"a partner feeder with `side = {'B' if side == 'A' else 'A'}` {partner}" if side \
        else f"`side = A` on it and a partner feeder with `side = B` {partner}"
    group = "its `count = ?` is sized to 1 (it declares no `capacity`)" if unrated else \
        "it is not one of a `count = N` group"
    fix = (f"declare its `capacity`, so that sizing can count the feeders that carry the load "
           f"with one of them failed (N-1; without a rating one feeder is taken to carry any "
           f"load), or {pair} (2N)") if unrated else \
        f"declare {pair} (2N), or `count = 2` or more feeders sharing the load (N-1)"
    return [warning("W635", f"feeder `{f.path}` is a single point of failure{every}: no feeder of "
                            f"another side shares its load and {group}, so the "
                            f"{readable.power(load_w)} it carries is lost when it fails ({why})",
                    f.span, f"{fix}; a single feed on purpose: `allow W635 \"reason\"`")]
