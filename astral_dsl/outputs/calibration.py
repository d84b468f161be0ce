"""`astral calibrate`'s report of a fit (runs/fit.py's document, fit.json's form) and the tables
docs/seer.md shows of the shipped fit, generated from the document: the leave-one-group-out
accuracy per GPU x precision family x dense / MoE, the leave-one-source-out accuracy of the
sets named by source (the A100 papers), and the constants with their spread and prior range.

`rewrite(markdown, doc)` replaces the text between each pair of markers
`<!-- calibration:NAME -->` and `<!-- /calibration:NAME -->` (NAME: accuracy, sources,
constants, ranges, outside: the constants outside their prior; accuracy-exact, sources-exact:
those of a fit whose leave-out refits are all exact) with the table generated from
`doc`; `make calibrate` runs it on
docs/seer.md and a test keeps the docs equal to what the shipped fit.json generates."""
from __future__ import annotations

import re
import textwrap
from typing import Any, Callable, Dict, List, Optional, Sequence

from astral_dsl.seer.calibration import CONSTANTS, Constant


def _g(x: float) -> str:
    return f"{x:.4g}"


def value_text(doc: dict, c: Constant) -> str:
    """`0.7697 +/- 0.012`, `1.9e-05 x/ 1.3` (fitted on a log scale; `(barely determined: x/
    >100)` past a factor of 100), `0.5 (not determined)`,
    `0.5 (held)` when not fitted, with `*` outside the prior range."""
    v = doc["constants"][c.name]
    flag = "*" if c.name in doc.get("outside_prior", ()) else ""
    if c.name not in doc.get("free", [k.name for k in CONSTANTS]):
        return f"{_g(v)}{flag} (held)"
    sd = doc.get("spread", {}).get(c.name)
    if sd is None:
        return f"{_g(v)}{flag} (not determined)"
    if c.log and sd > 100:     # a factor past 100: the runs barely bound it
        return f"{_g(v)}{flag} (barely determined: x/ >100)"
    return f"{_g(v)}{flag} " + (f"x/ {sd:.2g}" if c.log else f"+/- {sd:.2g}")


def prior_text(c: Constant) -> str:
    lo, hi = c.prior
    return f"{lo:g} - {hi:g}" + (f" {c.unit}" if c.unit else "")


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:.1f} %"


def _signed(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:+.1f} %"


def family_rows(doc: dict) -> List[tuple]:
    """(GPU, precision, dense / MoE, stats) of the leave-one-group-out families, then all, then
    (with more than one table) each table's rows alone: ("all", "table", name, stats), from the
    rows' left-out errors as fit.json rounds them."""
    from astral_dsl.runs.score import error_stats

    fams = doc.get("families", {})
    out = []
    for key, f in fams.items():
        parts = key.split(" ")
        if len(parts) == 3:
            out.append((parts[0], parts[1], parts[2], f))
    if "all" in fams:
        out.append(("all", "", "", fams["all"]))
    by_table: Dict[str, List[float]] = {}
    for r in doc.get("rows", []):
        by_table.setdefault(r["set"], []).append(r["left_out_pct"] / 100.0)
    if len(by_table) > 1:
        out += [("all", "table", name, error_stats(es)) for name, es in sorted(by_table.items())]
    return out


def repeats_text(doc: dict) -> Optional[str]:
    """The sentence on the runs read as one run published more than once (runs/repeats.py
    `repeats`), or None without any."""
    rep = doc.get("repeats")
    if not rep:
        return None
    runs = f"{rep['sets']} run" + ("s" if rep["sets"] != 1 else "")
    return (f"Repeats: {rep['rows']} rows are {runs} published more than once (one "
            "configuration, forecast alike: releases of one recipe, repeated runs); their "
            f"figures lie {_pct(rep['spread_mean_pct'])} (mean) from the one value that fits "
            f"each best, which no constants remove ({rep['overall_floor_pct']:.2f} points of "
            f"the overall mean |error|); left out, the error on them is "
            f"{_pct(rep['left_out_mean_pct'])}.")


# ---- markdown (docs/seer.md) ---------------------------------------------------------------------

def markdown_accuracy(doc: dict) -> str:
    """Leave-one-group-out error per GPU x precision family x dense / MoE."""
    lines = ["| GPU | precision | dense / MoE | runs | mean \\|error\\| | max \\|error\\| | "
             "mean error |", "|---|---|---|---:|---:|---:|---:|"]
    for g, p, m, f in family_rows(doc):
        label = ([g, p, m] if g != "all" else ["**all**", "", ""] if not p
                 else ["all", f"table `{m}`", ""])
        lines.append("| " + " | ".join(label + [str(f["rows"]), _pct(f["mean_abs_pct"]),
                                                _pct(f["max_abs_pct"]),
                                                _signed(f["mean_pct"])]) + " |")
    rep = repeats_text(doc)
    return "\n".join(lines + (["", rep] if rep else []))


def markdown_sources(doc: dict) -> str:
    """Per source of the sets fitted by source: in the fit and left out of it."""
    lines = ["| source | runs | in fit: mean / max | left out: mean / max |",
             "| --- | ---: | ---: | ---: |"]
    for name, s in doc.get("sources", {}).items():
        lines.append(f"| {name} | {s['rows']} | {_pct(s['in_fit_mean_pct'])} / "
                     f"{_pct(s['in_fit_max_pct'])} | {_pct(s['left_out_mean_pct'])} / "
                     f"{_pct(s['left_out_max_pct'])} |")
    return "\n".join(lines)


def markdown_constants(doc: dict) -> str:
    """Each constant: meaning, fitted value with its spread, prior range and its source."""
    lines = ["| constant | meaning | fitted | prior range (source) |", "|---|---|---:|---|"]
    for c in CONSTANTS:
        lines.append(f"| `{c.name}` | {c.meaning} | {value_text(doc, c)} | {prior_text(c)} "
                     f"({c.source}) |")
    return "\n".join(lines)


def markdown_ranges(doc: dict) -> str:
    """The scale and layout the fitted runs spanned (seer/checked.py), and the left-out errors
    of the runs whose left-out forecast extrapolated beyond the other runs' against the rest."""
    from astral_dsl.seer.checked import WHAT, show

    lines = ["| dimension | checked: lowest | highest |", "|---|---:|---:|"]
    for name, (lo, hi) in doc.get("ranges", {}).items():
        lines.append(f"| `{name}`: {WHAT.get(name, name)} | {show(name, lo)} | "
                     f"{show(name, hi)} |")
    b = doc.get("beyond_left_out")
    if b:
        lines += ["", f"Left out, {b['rows']} of the {b['rows'] + b['others_rows']} runs lay "
                  "beyond the ranges of the others (" + (", ".join(
                      f"{r['id']}: {'+'.join(r['beyond_left_out'])}" for r in doc["rows"]
                      if r.get("beyond_left_out")) or "none")
                  + f"): mean |error| {_pct(b['mean_abs_pct'])}, against "
                  f"{_pct(b['others_mean_abs_pct'])} for the rest."]
    return "\n".join(lines)


def markdown_outside(doc: dict) -> str:
    """The fitted constants outside their prior range (`outside_prior`, the table's `*`), one
    item each: the value, which side of the range, the range, and whether the fit stopped at a
    bound of the constant."""
    lines = []
    for c in CONSTANTS:
        if c.name not in doc.get("outside_prior", ()):
            continue
        v = doc["constants"][c.name]
        side = "below" if v < c.prior[0] else "above"
        bound = ", at its bound" if v in c.bounds else ""
        lines.append(f"- `{c.name}` {_g(v)}{' ' + c.unit if c.unit else ''}: {side} its prior "
                     f"range {prior_text(c)}{bound}")
    return "\n".join(lines) or "- none"


TABLES: Dict[str, Callable[[dict], str]] = {"accuracy": markdown_accuracy,
                                            "sources": markdown_sources,
                                            "constants": markdown_constants,
                                            "ranges": markdown_ranges,
                                            "outside": markdown_outside,
                                            "accuracy-exact": markdown_accuracy,
                                            "sources-exact": markdown_sources}
EXACT = "-exact"      # a table of a fit whose every leave-out refit is exact (`rewrite`)


class MarkerError(ValueError):
    """Markers that do not mark tables as `--docs` rewrites them (regions)."""


_MARKER = re.compile(r"<!-- (/?)calibration:(\S*) -->")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})([^\r\n]*)")


def _fenced(line: str, fence: Optional[str]) -> tuple:
    """(whether `line` is a fence line, the fence open after it), as CommonMark reads them: a
    block opens at 3 or more backticks or tildes and closes at a line of the same character,
    at least as many, and nothing else (a ```` ```python ```` or a ```` ``` ```` line inside a
    ```` ```` ```` block is its text: a Markdown example of a fence, as a document quoting the
    markers would give)."""
    m = _FENCE.match(line)
    if m is None or (m.group(1)[0] == "`" and "`" in m.group(2)):
        return False, fence
    if fence is None:
        return True, m.group(1)
    closes = m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and \
        not m.group(2).strip()
    return True, None if closes else fence


def _lines(text: str) -> List[str]:
    """`text`'s lines with their ends, at "\n" only: str.splitlines also splits at U+2028, a
    form feed or a lone "\r", and the line numbers the errors give were then not the
    editor's."""
    *whole, last = text.split("\n")
    return [ln + "\n" for ln in whole] + ([last] if last else [])


def regions(markdown: str) -> List[tuple]:
    """The marked tables of `markdown`: (name, first line, end line) in its lines (keeping
    their ends), the text to replace being lines[first:end]. A marker is a line of its own
    outside a fenced code block (a marker quoted in prose or in an example is text); each names
    a table of TABLES, at most once, and its closing marker follows it before any other marker.
    MarkerError says which line breaks that: the rewrite would replace what lies between
    markers that do not pair (a missing closing marker took the rest of the file up to the
    next table's)."""
    out, open_, seen, fenced = [], None, {}, None
    for i, line in enumerate(_lines(markdown), 1):
        fence, fenced = _fenced(line, fenced)
        if fence:
            continue
        m = _MARKER.fullmatch(line.rstrip("\r\n").strip())
        if fenced or not m:
            continue
        closing, name = m.group(1) == "/", m.group(2)
        if name not in TABLES:
            raise MarkerError(f"line {i}: `{m.group(0)}` names no table (the tables: "
                              f"{', '.join(TABLES)})")
        if closing:
            if open_ is None or open_[0] != name:
                raise MarkerError(f"line {i}: `{m.group(0)}` closes no open "
                                  f"`<!-- calibration:{name} -->`" + (
                                      f" (`{open_[0]}`, line {open_[1]}, is open)"
                                      if open_ else ""))
            out.append((name, open_[1], i - 1))
            open_ = None
            continue
        if open_ is not None:
            raise MarkerError(f"line {i}: `{m.group(0)}` opens a table inside `{open_[0]}`'s "
                              f"(line {open_[1]}): close it first")
        if name in seen:
            raise MarkerError(f"line {i}: `{name}` is marked a second time (first at line "
                              f"{seen[name]})")
        seen[name] = i
        open_ = (name, i)
    if open_ is not None:
        raise MarkerError(f"line {open_[1]}: `<!-- calibration:{open_[0]} -->` is never closed "
                          f"(`<!-- /calibration:{open_[0]} -->`)")
    return out


def rewrite(markdown: str, doc: dict) -> str:
    """`markdown` with every marked table generated from `doc` (module docstring), in the
    line ends of its opening marker; every other line as it was (MarkerError as regions).
    A table named NAME-exact is one of a fit whose leave-out refits are all exact (`astral
    calibrate --leave-out exact`: docs/seer.md shows both, the exact ones from fit-exact.json):
    written from such a fit only, which then writes only those where the file has any (its
    other tables are the one-step fit's)."""
    lines = _lines(markdown)
    marked = regions(markdown)
    exact = doc.get("leave_out") == "exact"
    only_exact = exact and any(name.endswith(EXACT) for name, _, _ in marked)
    for name, first, end in reversed(marked):
        if name.endswith(EXACT) != only_exact:
            continue
        ending = lines[first - 1][len(lines[first - 1].rstrip("\r\n")):] or "\n"
        table = TABLES[name](doc)
        lines[first:end] = [ln + ending for ln in table.split("\n")]
    return "".join(lines)


def markers(markdown: str) -> List[str]:
    """The table names marked in `markdown` (MarkerError as regions)."""
    return [name for name, _, _ in regions(markdown)]


# ---- the terminal ---------------------------------------------------------------------------------

LEAVE_OUT = {"exact": " (each group's refit an exact fit)",
             "one-step": " (each group's refit one Gauss-Newton step from the fit: the "
                         "standard approximation, runs/accuracy.py)"}


def report(doc: dict, unused: Sequence[Dict[str, Any]], colour: bool = False,
           width: int = 100) -> str:
    """What `astral calibrate` prints: the rows left out of the fit and why, each row's error in
    the fit and left out of it, the families, the sources, and the constants."""
    from astral_dsl.outputs.table import Column, render
    from astral_dsl.outputs.terminal import printable

    rows = doc.get("rows", [])
    tables = ", ".join(doc.get("fitted_on", []))
    lines = [printable(f"calibrate: {len(doc.get('free', []))} constants fitted on {len(rows):,} "
                       f"rows of {tables}"),
             *textwrap.wrap("error = forecast / published - 1 on each row's metric; left out: "
                            "forecast with the constants refitted without the row's group (one "
                            "configuration across releases and tables), the accuracy on data "
                            "the fit did not see" + LEAVE_OUT.get(doc.get("leave_out"), ""),
                            width)]
    if unused:
        lines += ["", "not used (the field and why):"]
        for u in unused:
            lines.append(printable(f"  {u['table']}: {u['id']} (line {u['line']}, "
                                   f"{u['status'].replace('_', ' ')}) {u['field']}: "
                                   f"{u['reason']}"))
    if rows:
        cols = [Column("id", tuple(printable(r["id"]) for r in rows), False, True),
                Column("table", tuple(printable(r["set"]) for r in rows), False),
                Column("regime", tuple(r["regime"] for r in rows), False),
                Column("in fit", tuple(_signed(r["in_fit_pct"]) for r in rows)),
                Column("left out", tuple(_signed(r["left_out_pct"]) for r in rows))]
        lines += ["", render(cols, width, colour).rstrip("\n")]
    fam = family_rows(doc)
    if fam:
        stats = [f for *_, f in fam]
        cols = [Column("GPU x precision x dense/MoE",
                       tuple(" ".join(x for x in (g, p, m) if x) for g, p, m, _ in fam),
                       False, True),
                Column("rows", tuple(str(f["rows"]) for f in stats)),
                Column("left out: mean |error|", tuple(_pct(f["mean_abs_pct"]) for f in stats)),
                Column("max |error|", tuple(_pct(f["max_abs_pct"]) for f in stats)),
                Column("mean error", tuple(_signed(f["mean_pct"]) for f in stats))]
        lines += ["", render(cols, width, colour).rstrip("\n")]
    rep = repeats_text(doc)
    if rep:
        lines += textwrap.wrap(printable(rep), width)
    sources = doc.get("sources", {})
    if sources:
        items = list(sources.items())
        cols = [Column("source (left out: refitted without it)",
                       tuple(printable(k) for k, _ in items), False, True),
                Column("rows", tuple(str(s["rows"]) for _, s in items)),
                Column("in fit: mean / max", tuple(f"{_pct(s['in_fit_mean_pct'])} / "
                                                   f"{_pct(s['in_fit_max_pct'])}"
                                                   for _, s in items)),
                Column("left out: mean / max", tuple(f"{_pct(s['left_out_mean_pct'])} / "
                                                     f"{_pct(s['left_out_max_pct'])}"
                                                     for _, s in items))]
        lines += ["", render(cols, width, colour).rstrip("\n")]
    cols = [Column("constant", tuple(c.name for c in CONSTANTS), False, True),
            Column("fitted", tuple(value_text(doc, c) for c in CONSTANTS)),
            Column("prior range", tuple(prior_text(c) for c in CONSTANTS))]
    lines += ["", render(cols, width, colour).rstrip("\n"),
              *textwrap.wrap("+/- one standard error from the runs alone (x/ a factor, for a "
                             "constant fitted on a log scale); *: outside the prior range; not "
                             "determined: the runs alone do not fix it (no row moves the forecast "
                             "along it: its prior holds it; or the rows move it only with other "
                             "constants: its value is theirs and the prior's, not a measurement, "
                             "W769 when that put it outside its prior range)", width)]
    return "\n".join(lines) + "\n"


def compare(doc: dict, old: dict) -> List[str]:
    """How two fit documents differ: each constant's value, then every other part by name (an
    empty list: the same document)."""
    out = []
    for c in CONSTANTS:
        new_v, old_v = doc["constants"].get(c.name), old.get("constants", {}).get(c.name)
        if new_v != old_v:
            out.append(f"{c.name} = {new_v!r}, was {old_v!r}")
    for key in sorted(set(doc) | set(old)):
        if key != "constants" and doc.get(key) != old.get(key):
            out.append(f"`{key}` differs")
    return out


__all__ = ["TABLES", "compare", "markdown_accuracy", "markdown_constants",
           "markdown_sources", "markers", "report", "rewrite", "value_text"]
