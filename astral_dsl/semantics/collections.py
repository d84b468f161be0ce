"""Replication (`N x T`, bundles), ranges, lists, comprehensions, and the unknowns `?` that the
sizing step chooses.

Plain functions over the expression evaluator `x` (semantics/evaluate.py), which dispatches the
syntax nodes here: `eval_replicate(x, node, env)` and so on."""
from __future__ import annotations

from astral_dsl.diagnostics import Span
from astral_dsl.model.values import (Bundle, Choice, Group,
                                     ListValue, RangeValue, Run, concat, type_name)
from astral_dsl.semantics.coerce import WHOLE_HINT
from astral_dsl.semantics.frames import Frame
from astral_dsl.semantics.operators import eval_or_probe, numeric
from astral_dsl.syntax import ast
from astral_dsl.units import Quantity, format_number
from astral_dsl.units.readable import count
from astral_dsl.semantics.errors import fail, unknown_key

MAX_COUNT = 10**9           # one replication count
MAX_GROUP = 10**12          # instances in one group value (nested replications multiply)
MAX_ITERATIONS = 100_000    # one comprehension
MAX_TOTAL_ITERATIONS = 200_000   # all comprehensions of one compile (nested ones multiply)
MAX_RANGE_END = 2**53       # range ends: integers a float holds exactly


def eval_unknown(x, e: ast.Unknown, env):
    """A structural unknown: the value assigned by sizing, else the first option (so that the
    front end can go on; the design is then provisional until `astral size` chooses)."""
    key = unknown_key(e.span)
    options = unknown_options(x, e, env)
    if key in x.host.assignments:
        chosen = x.host.assignments[key]
        return options[chosen.index] if isinstance(chosen, Choice) else chosen
    x.host.record_unknown(key, e.span, "structural", options,
                          inclusive_end=inclusive_range(e))
    return options[0]


def each_option(x, e, env, check) -> None:
    """`check(option, span of the options)` for every option of `e` where it is a `? in ...`,
    as the front end checks the first one (the value it goes on with): sizing alone tried the
    others, where a wrong one (`capacity = ? in [300 kW, -5 kW]`, `[300 kW, 3 m]`, a fluid
    among CDUs) only failed its combinations and was dropped without a word. A range is
    checked at its ends (every domain is an interval)."""
    if not isinstance(e, ast.Unknown) or e.domain is None:
        return
    options = unknown_options(x, e, env)
    if isinstance(e.domain, ast.Range):
        options = (options[0], options[-1])
    for option in options:
        check(option, e.domain.span)


def inclusive_range(e: ast.Unknown) -> bool:
    """The options of `?` are written `a..b` (b included; `a..<b` stops before it)."""
    return isinstance(e.domain, ast.Range) and e.domain.inclusive


def unknown_options(x, e: ast.Unknown, env):
    if e.domain is None:
        fail("E312", "an unknown here needs its options: write `? in 1..16` or "
                     "`? in [A, B]`", e.span,
             "only equipment counts (feeder `count`, loop `cdus`, rectifier `modules`, "
             "battery `strings`) may be a bare `?`")
    domain = x.eval(e.domain, env)
    if isinstance(domain, RangeValue):
        if len(domain) == 0:
            fail("E309", f"the range {domain} is empty", e.domain.span,
                 "`a..b` holds a to b, `a..<b` stops before b: give it at least one value")
        if len(domain) > 4096:
            fail("E401", f"the range {domain} has more than 4,096 options", e.domain.span,
                 "narrow it")
        return tuple(Quantity(float(i)) for i in range(domain.start, domain.stop))
    if isinstance(domain, ListValue) and domain.items:
        return tuple(domain.items)
    if isinstance(domain, Group) and domain.count:
        return tuple(i for _, i in domain.flat())
    fail("E303", f"the options of `?` must be a range or a non-empty list, not a "
                 f"{type_name(domain)}", e.domain.span, "e.g. `? in 1..16` or `? in [2, 4, 8]`")


def whole(x, value, span: Span, what: str) -> int:
    value = numeric(value, span)
    if not isinstance(value, Quantity) or not value.dimensionless:
        fail("E303", f"{what} must be a whole number, not a {type_name(value)}", span,
             "write a whole number, e.g. `4`")
    if not float(value.si).is_integer():
        fail("E308", f"{what} must be a whole number, not {value}", span, WHOLE_HINT)
    return int(value.si)


def eval_replicate(x, e: ast.Replicate, env):
    n = _replication_count(x, eval_or_probe(x, e.count, env, e.item), e.count.span)
    # `(? in [3, 2.5]) x Node`: every option a count, as the first
    each_option(x, e.count, env, lambda option, span: _replication_count(x, option, span))
    item = x.eval(e.item, env)
    if isinstance(item, Frame):
        return Group((Run(n, item),))
    if isinstance(item, Group):
        if item.count * n > MAX_GROUP:
            fail("E401", f"{count(n)} x a group of {item.count:,} makes {count(item.count * n)} "
                         f"instances, beyond the limit of {MAX_GROUP:,}", e.span)
        return item.repeat(n)
    if isinstance(item, Quantity):
        if item.point:        # its total (a sum of points) means nothing
            fail("E302", f"cannot bundle a temperature point ({item})", e.item.span,
                 "a bundle is N equal quantities that add up (links, feeds); temperatures do "
                 "not add: write the point alone, or a list of points")
        return Bundle(n, item)
    fail("E303", f"cannot replicate a {type_name(item)}", e.item.span,
         "replicate a template (`4 x Node`) or a quantity (`64 x 400 Gb/s`)")


def _replication_count(x, value, span: Span) -> int:
    """The count of `N x T`, a whole number from 1 to MAX_COUNT."""
    value = numeric(value, span)
    if isinstance(value, Quantity) and value.dimensionless and \
            not float(value.si).is_integer():
        fail("E400", f"a replication count must be a positive whole number, not {value}", span,
             WHOLE_HINT)
    n = whole(x, value, span, "a replication count")
    if n <= 0:
        fail("E400", f"a replication count must be at least 1, not {n}", span,
             "replicate at least once; to leave a part out, declare a template variant "
             "without that member")
    if n > MAX_COUNT:
        fail("E401", f"a replication count of {count(n)} is beyond the limit of {MAX_COUNT:,}",
             span, "check the count and the expression giving it")
    return n


def eval_range(x, e: ast.Range, env):
    start = whole(x, x.eval(e.start, env), e.start.span, "the start of a range")
    stop = whole(x, x.eval(e.stop, env), e.stop.span, "the end of a range")
    for value, part in ((start, e.start), (stop, e.stop)):
        if abs(value) > MAX_RANGE_END:
            fail("E316", f"a range end of {format_number(value)} is beyond the plausible range",
                 part.span, f"range ends lie within ±2^53 ({MAX_RANGE_END:,})")
    op = ".." if e.inclusive else "..<"
    if stop < start:
        fail("E309", f"a range ends before it starts ({start}{op}{stop})", e.span,
             f"`a..b` counts up from a to b; for none at all write `{start}..<{start}`")
    return RangeValue(start, stop + 1 if e.inclusive else stop, e.inclusive)


# `a..b` holds b since astral_dsl 0.2 (it stopped before b, as `a..<b` does now): where a
# design written for the old reading now names one past the end, the hint says so
INCLUSIVE_NOTE = "`a..b` includes b (it used to stop before b)"


def range_hint(sel: RangeValue, size: int):
    """The hint of a range selector outside its group: the half-open form when that is what
    the range would have meant before `..` included its end."""
    if sel.inclusive and sel.stop == size + 1 and 0 <= sel.start < size:
        return f"{INCLUSIVE_NOTE}: write `{sel.start}..<{size}` (or `{sel.start}..{size - 1}`)"
    return f"the members are 0..{size - 1}" if size else "the group is empty"


def shown_index(index: int) -> str:
    """An index for a message: one past 2^53 as the float it was read as (`1e23`), not the
    int of that float (99999999999999991611392 for a `99999999999999999999999` written)."""
    from astral_dsl.units.quantity import format_number

    return str(index) if abs(index) < 2 ** 53 else format_number(float(index))


def index_hint(index: int, size: int, last: str = "") -> str:
    """The hint of an index outside 0..size-1 (`last` the last one's label when it is not its
    number, as plane `D`, port `b`): an index one past the end perhaps from a range written for
    the old `..`; a negative one read as counting from the end, which indices do not."""
    if not size:
        return "there is nothing to index: the collection is empty"
    shown = f"the last is `[{last or size - 1}]`"
    if index == size and not last:
        return (f"{shown}; if it comes from a range `a..{size}`, {INCLUSIVE_NOTE}: write "
                f"`a..<{size}`")
    if index < 0:
        return f"indices count from the start, not from the end: {shown}"
    return f"{shown}: check the count, or the expression giving the index"


def eval_list(x, e: ast.ListExpr, env):
    return collection([x.eval(i, env) for i in e.items])


def collection(items):
    if items and all(isinstance(i, (Frame, Group)) for i in items):
        return concat(items)
    return ListValue(tuple(items))


def eval_comprehension(x, e: ast.Comprehension, env):
    source = x.eval(e.iterable, env)
    if isinstance(source, RangeValue):
        items = [Quantity(float(i)) for i in range(source.start, source.stop)] \
            if len(source) <= MAX_ITERATIONS else None
    elif isinstance(source, ListValue):
        items = list(source.items)
    elif isinstance(source, Group):
        items = source.items(MAX_ITERATIONS)
    else:
        fail("E303", f"`for` needs a range, list or group, not a {type_name(source)}",
             e.iterable.span, "e.g. `for i in 0..3`, `for g in [A, B]`, `for r in racks`")
    if items is None:
        fail("E401", f"a `for` over more than {MAX_ITERATIONS:,} items", e.iterable.span,
             "replicate with `N x Template` to keep the design symbolic")
    host = x.host                 # one count per compile: nested `for`s multiply
    host.iterations = getattr(host, "iterations", 0) + len(items)
    if host.iterations > MAX_TOTAL_ITERATIONS:
        fail("E401", f"the `for`s of this design run more than {MAX_TOTAL_ITERATIONS:,} "
                     f"iterations in all", e.iterable.span,
             "replicate with `N x Template` to keep the design symbolic")
    return collection([x.eval(e.element, env.child(**{e.var.name: v}))
                            for v in items])


