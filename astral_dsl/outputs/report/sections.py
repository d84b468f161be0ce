"""The sections of the review page about the design as a whole: the summary, every diagnostic
with its source, the scenario matrix and the pictures."""
from __future__ import annotations

from typing import Iterable, List, Optional

from astral_dsl.diagnostics import Diagnostic
from astral_dsl.outputs.report import matrix as mx
from astral_dsl.outputs.report.html import esc, number, tag
from astral_dsl.outputs.report.svg import SvgError, embed

SNIPPET_CONTEXT = 1        # lines shown before and after a diagnostic's span
SNIPPET_MAX = 8            # lines shown at most


def section(sid: str, title: str, body: str) -> str:
    return tag("section", tag("h2", esc(title)) + body, id=sid)


# -- summary -------------------------------------------------------------------------------------

def _card(key: str, value: str, cid: str) -> str:
    return tag("div", tag("div", value, cls="v") + tag("div", esc(key), cls="k"), cls="card",
               id=cid)


def summary(review) -> str:
    s = review.summary
    d = review.design
    errors, warnings = review.counts()      # the jobs' W753 too: as the closing line counts
    cards = []
    if s is not None:
        cards += [_card("GPUs", f"{s['gpus']:,}", "k-gpus"),
                  _card("hosts", f"{s['hosts']:,}", "k-hosts"),
                  _card("racks", f"{s['racks']:,}", "k-racks"),
                  _card("switches", f"{s['switches']:,}", "k-switches"),
                  _card("IT power, peak", f"{number(s['it_power_kw'])} kW", "k-it-power"),
                  _card("IT power, average", f"{number(s['it_power_avg_kw'])} kW",
                        "k-it-power-avg"),
                  _card("facility power, average", f"{number(s['facility_power_kw'])} kW",
                        "k-facility-power"),
                  _card("PUE (annualised)", f"{s['pue']:.4f}" if s.get("pue") else "-",
                        "k-pue")]
    for job in review.jobs:
        if job.forecast is not None:
            cards.append(_card(f"{job.name}: iteration time, "        # how far to trust it
                               + job.forecast.envelope().brief(),
                               f"{job.forecast.iteration_time:,.3f} s",
                               f"k-job-{_slug(job.name)}"))
    cards.append(_card("errors", f"{errors:,}", "k-errors"))
    cards.append(_card("warnings", f"{warnings:,}", "k-warnings"))
    body = tag("div", "".join(cards), cls="cards")
    rows = [("file", d.file), ("sites", ", ".join(r.path for r in d.roots) or "none"),
            ("jobs", ", ".join(j.template for j in d.jobs) or "none"),
            ("scenarios", ", ".join(x.template for x in d.scenarios) or "none")]
    if review.overrides:
        rows.append(("overrides (--set)", ", ".join(f"{k}={v}" for k, v in review.overrides)))
    chosen = _chosen(d)
    if chosen:
        rows.append(("chosen by sizing", chosen))
    body += tag("table", tag("tbody", "".join(
        tag("tr", tag("td", esc(k)) + tag("td", esc(v))) for k, v in rows)), cls="kv")
    return section("summary", "Summary", body)


def _chosen(design) -> str:
    """What sizing chose, named by the fields' paths as `astral check` prints them."""
    from astral_dsl.outputs.size_json import chosen_fields, chosen_text

    return "; ".join(chosen_text(c) for c in chosen_fields(design))


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text)


# -- diagnostics ---------------------------------------------------------------------------------

def snippet(text: Optional[str], d: Diagnostic) -> str:
    """The source lines around a diagnostic's span, numbered, the span marked."""
    span = d.span
    if text is None or span is None:
        return ""
    lines = text.split("\n")
    first = max(1, span.start.line - SNIPPET_CONTEXT)
    last = min(len(lines), span.end.line + SNIPPET_CONTEXT, first + SNIPPET_MAX - 1)
    out = []
    for n in range(first, last + 1):
        line = lines[n - 1].rstrip("\r")
        lo = span.start.column - 1 if n == span.start.line else 0
        hi = span.end.column - 1 if n == span.end.line else len(line)
        inside = span.start.line <= n <= span.end.line
        if inside and hi <= lo and n == span.start.line:
            hi = lo + 1                              # an empty span marks one character
        body = (esc(line[:lo]) + tag("mark", esc(line[lo:hi]) or " ") + esc(line[hi:])) \
            if inside else esc(line)
        out.append(tag("span", str(n), cls="ln") + tag("span", body, cls="hl" if inside
                                                          else None))
    return tag("pre", "\n".join(out), cls="src")


def diagnostic(review, d: Diagnostic) -> str:
    sev = d.severity.value
    loc = ""
    if d.span is not None:
        loc = f"{d.span.file}:{d.span.start.line}:{d.span.start.column}"
    elif d.filename:
        loc = d.filename
    parts = [tag("span", esc(f"{sev}[{d.code}]"), cls=f"badge b-{sev}") + " "
             + tag("span", esc(d.message), cls="msg"),
             tag("div", esc(loc), cls="loc") if loc else "",
             snippet(review.source(d.span.file) if d.span else None, d)]
    items = [tag("li", "note: " + esc(n)) for n in d.notes]
    items += [tag("li", "note: " + esc(f"{r.message} ({r.span})")) for r in d.related]
    if d.hint:
        items.append(tag("li", "hint: " + esc(d.hint)))
    if items:
        parts.append(tag("ul", "".join(items)))
    return tag("div", "".join(parts), {"class": f"diag {sev}", "data-code": d.code})


def diagnostics(review, extra: Iterable[Diagnostic] = ()) -> str:
    """Every diagnostic of the design's checks, in the order of their source; the heading counts
    them apart from what the jobs' forecasts add (shown with each job), and says what the
    summary's cards count: both, so that the two numbers on the page agree."""
    diags = list(review.checked.diagnostics) + list(extra)
    own = _jobs_own(review)
    if diags:
        head = f"The design's checks: {_tally(diags)}, in the order of their source."
    else:       # the jobs may still add theirs: "every check holds" would deny the summary
        head = "The design's checks raise no diagnostic." if own else \
            "No diagnostics: every check holds."
    return section("diagnostics", "Diagnostics", tag("p", esc(head), cls="note") + own + "".join(
        diagnostic(review, d) for d in diags) + accepted_warnings(review))


def _tally(diags) -> str:
    """'1 error(s), 13 warning(s)' and ', 2 note(s)' when there are any: what each counts apart."""
    errors = sum(d.is_error for d in diags)
    warnings = sum(d.severity.value == "warning" for d in diags)
    notes = len(diags) - errors - warnings
    return f"{errors:,} error(s), {warnings:,} warning(s)" + (f", {notes:,} note(s)" if notes
                                                               else "")


def _jobs_own(review) -> str:
    """What the jobs' forecasts add to the design's diagnostics (shown with each job) and the
    totals the summary's cards give, or ''."""
    own = review.shown()[len(review.checked.diagnostics):]
    if not own:
        return ""
    errors, warnings = review.counts()
    codes = ", ".join(sorted({d.code for d in own}))
    return tag("p", esc(f"The jobs' forecasts add {_tally(own)} ({codes}), shown with each "
                        f"job under ") + tag("a", "Training jobs", href="#jobs")
               + esc(f": {errors:,} error(s) and {warnings:,} warning(s) in all, as the "
                     f"summary counts."), cls="note", id="jobs-own")


def accepted_warnings(review) -> str:
    """The warnings the design's `allow`s (or a baseline) accept, apart, each with its reason."""
    accepted = review.checked.accepted
    if not accepted:
        return ""
    items = []
    for a in accepted:
        by = (f"allow at {a.by.file}:{a.by.start.line}" if a.by is not None
              else f"baseline {a.baseline}")
        items.append(tag("div", diagnostic(review, a.diagnostic) + tag(
            "p", esc(f"accepted by {by}: {a.reason}"), cls="note"), cls="accepted"))
    return (tag("h3", esc(f"Accepted warnings ({len(accepted):,})"), id="accepted")
            + tag("p", esc("Warnings the design accepts, with the reason it gives; they count "
                           "neither as warnings nor under --strict."), cls="note")
            + "".join(items))


# -- scenario matrix -----------------------------------------------------------------------------

def _delta(f: mx.Figure) -> str:
    a, b = f.baseline, f.scenario
    unit = f" {f.unit}" if f.unit and not f.unit.startswith(":") else f.unit
    if b is None and a is None:
        # a figure that has no value on either side is left out, unless None says something
        return "" if f.missing == "n/a" else f"{esc(f.label)}: {esc(f.missing)}"
    if a == b:
        return f"{esc(f.label)}: {f.text(a)}{esc(unit)}"
    if b is None or a is None:
        def shown(v):
            return esc(f.missing) if v is None else f"{f.text(v)}{esc(unit)}"
        return f"{esc(f.label)}: {shown(a)} &rarr; {shown(b)}"
    change = b - a
    worse = (change > 0) == (f.worse == "up")
    rel = ""
    if a:
        pct = change / abs(a) * 100
        rel = (f", {pct:+.1f} %" if abs(pct) >= 0.1 else f", {pct:+.2f} %" if abs(pct) >= 0.01
               else f", {'+' if pct > 0 else '-'}<0.01 %")
    sign = "+" if change > 0 else "-"
    return (f"{esc(f.label)}: {f.text(a)} &rarr; {f.text(b)}{esc(unit)} "
            + tag("span", f"({sign}{f.text(abs(change))}{esc(rel)})",
                  cls="delta-up" if worse else "delta-down"))


def _matrix_cell(c: mx.Cell) -> str:
    state = c.state
    body = [tag("span", esc(state), cls=f"badge s-{state}")]
    items = [tag("li", tag("b", esc(f"[{d.code}]")) + " " + esc(d.message)
                 + "".join(f"<br>{esc(n)}" for n in d.notes[:3]))
             for d in c.broken + c.warned]
    figs = [tag("li", esc(n), cls="fig") for n in c.notes]
    figs += [tag("li", _delta(f), cls="fig") for f in c.figures if _delta(f)]
    if items:
        body.append(tag("ul", "".join(items)))
    if figs:
        body.append(tag("ul", "".join(figs)))
    return tag("td", "".join(body), {"data-state": state, "data-family": c.family})


def scenario_matrix(review) -> str:
    rows = mx.matrix(review)
    if not review.design.scenarios:
        return section("scenarios", "Scenario matrix",
                       tag("p", "The design declares no scenario.", cls="note"))
    families = list(mx.FAMILIES) + (["other"] if any(r.cell("other").broken or
                                                      r.cell("other").warned for r in rows)
                                    else [])
    head = tag("th", "scenario") + "".join(tag("th", esc(mx.FAMILY_TITLES[f])) for f in families)
    body = []
    for r in rows:
        what = tag("b", esc(r.name)) + (" " + tag("span", "required", cls="badge b-info")
                                        if r.required else "")
        what += "".join(tag("div", esc(n), cls="note") for n in r.notes)
        body.append(tag("tr", tag("td", what) + "".join(_matrix_cell(r.cell(f))
                                                          for f in families),
                        {"data-scenario": r.name}))
    note = tag("p", "Each scenario is compiled and checked again (what it fails is named under "
               "it); a cell lists what appears only under the scenario (errors break, warnings "
               "warn) and the family's figures, baseline &rarr; scenario.", cls="note")
    return section("scenarios", "Scenario matrix",
                   note + tag("table", tag("thead", tag("tr", head)) + tag("tbody",
                                                                             "".join(body)),
                              cls="matrix", id="scenario-matrix"))


# -- views ---------------------------------------------------------------------------------------

def _figure(v, title: str, uid: str) -> str:
    caption = title + (f" (scenario {v.scenario})" if v.scenario else " (baseline)")
    if v.svg is None:
        inner = tag("p", esc(f"not drawn: [{v.error.code}] {v.error.message}"
                             + (f" ({v.error.hint})" if v.error.hint else "")), cls="note")
    else:
        try:
            inner = embed(v.svg, caption)
        except SvgError as exc:
            inner = tag("p", esc(f"not drawn: {exc}"), cls="note")
    return tag("figure", tag("figcaption", esc(caption)) + inner,
               {"class": "view", "id": uid, "data-view": v.view,
                "data-scenario": v.scenario or ""})


def views(review) -> str:
    from astral_dsl.outputs.report.review import VIEW_TITLES

    if not review.views:
        return section("views", "Pictures", tag("p", "Nothing to draw: the design has errors "
                                                     "that stop the analyses.", cls="note"))
    out: List[str] = []
    order = []
    for v in review.views:
        if v.view not in order:
            order.append(v.view)
    for view in order:
        pair = [v for v in review.views if v.view == view]
        figs = "".join(_figure(v, VIEW_TITLES[view], f"view-{view}"
                               + (f"-{_slug(v.scenario)}" if v.scenario else ""))
                       for v in pair)
        out.append(tag("div", figs, cls="views pair" if len(pair) > 1 else "views"))
    note = tag("p", "Drawn by Graphviz from the checked design: identical parts once with "
               "their count; problems in red with their code (hover a part for its details); "
               "under a scenario the failed parts are greyed.", cls="note")
    return section("views", "Pictures", note + "".join(out))
