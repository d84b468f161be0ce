"""`astral diff` for people (`+` added, `-` removed, `~` changed, by section, with colours on a
terminal) and as JSON (outputs.jsonout's conventions)."""
from __future__ import annotations

from typing import Any, Dict, List, Sequence

from astral_dsl.outputs.diff.checks import changed_lines, summary
from astral_dsl.outputs.diff.compare import Change
from astral_dsl.outputs.diff.diagnostics import changed_lines as diagnostic_lines, place
from astral_dsl.outputs.diff.facts import COMPILED_ONLY, SECTION_TITLES, SECTIONS, Side
from astral_dsl.outputs.terminal import printable

_GREEN, _RED, _YELLOW, _BOLD, _RESET = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[1m", "\x1b[0m"
_MARK = {"added": "+", "removed": "-", "changed": "~"}


def value_text(v: Any) -> str:
    if v is None:
        return "none"              # JSON's null: a figure not computed (`pue` without cooling)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.6g}" if abs(v) < 1000 else f"{v:,.1f}"
    if isinstance(v, dict):
        if {"severity", "code", "message"} <= set(v):
            where = place(v)
            text = f"{v['severity']}[{v['code']}] {v['message']}" + (f" ({where})" if where
                                                                    else "")
            return f"accepted {text}: {v['accepted']}" if "accepted" in v else text
        return ", ".join(f"{k} {value_text(x)}" for k, x in v.items())
    return str(v)


def _delta(c: Change) -> str:
    d = c.delta
    if d is None:
        return ""
    text = f"{'+' if d > 0 else '-'}{value_text(abs(d) if isinstance(d, int) else abs(d))}"
    rel = c.relative
    if rel is not None:
        text += f", {rel * 100:+.1f} %" if abs(rel) >= 1e-3 else f", {rel * 100:+.2g} %"
    return f" ({text})"


def lines(c: Change) -> List[str]:
    """The change's lines: one, or for a changed check its key, then a line per field that
    changed, indented."""
    if c.section == "checks" and c.kind == "changed":
        return [f"~ {c.key}"] + ["    " + x for x in changed_lines(c.before, c.after)]
    if c.section == "diagnostics" and c.kind == "changed":
        return diagnostic_lines(c.before, c.after)
    return [line(c)]


def line(c: Change) -> str:
    mark = _MARK[c.kind]
    if c.section == "checks":
        return f"{mark} {c.key}{summary(c.after if c.kind == 'added' else c.before)}"
    if c.section == "diagnostics":
        v = c.after if c.kind == "added" else c.before
        return f"{mark} {value_text(v)}"
    if c.kind == "changed":
        return f"{mark} {c.key}: {value_text(c.before)} -> {value_text(c.after)}{_delta(c)}"
    return f"{mark} {c.key}: {value_text(c.after if c.kind == 'added' else c.before)}"


def _status(s: Side) -> str:
    if s.valid:
        return "ok" + (f", {s.warnings} warning(s)" if s.warnings else "")
    return f"{s.errors} error(s)" + (f", {s.warnings} warning(s)" if s.warnings else "")


def render(a: Side, b: Side, changes: Sequence[Change], colour: bool = False) -> str:
    def c(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if colour else text

    colours = {"added": _GREEN, "removed": _RED, "changed": _YELLOW}
    out: List[str] = [c(_BOLD, f"--- a: {printable(a.label)} [{_status(a)}]"),
                      c(_BOLD, f"+++ b: {printable(b.label)} [{_status(b)}]")]
    unknown = ", ".join(SECTION_TITLES[s] for s in COMPILED_ONLY)
    out.extend(f"note: {name} does not compile: {unknown} are not compared"
               for name, s in (("a", a), ("b", b)) if not s.compiled)
    out.extend(f"note: {name}'s {len(s.beyond_front_end)} diagnostic(s) of sizing, the "
               f"engineering checks, scenarios and jobs are not compared: they never ran on {other}"
               for name, s, other in (("a", a, "b"), ("b", b, "a"))
               if s.beyond_front_end and not (a.compiled and b.compiled))
    for section in SECTIONS:
        mine = [x for x in changes if x.section == section]
        if not mine:
            continue
        out.append("")
        out.append(c(_BOLD, SECTION_TITLES[section]))
        for x in mine:
            out.extend("  " + c(colours[x.kind], printable(text))
                       for text in lines(x))
    out.append("")
    if not changes:
        out.append("no differences")
    else:
        counts = {k: sum(x.kind == k for x in changes) for k in ("added", "removed", "changed")}
        out.append(f"{len(changes)} difference(s): {counts['added']} added, "
                   f"{counts['removed']} removed, {counts['changed']} changed")
    return "\n".join(out) + "\n"


def to_json(a: Side, b: Side, changes: Sequence[Change]) -> Dict[str, Any]:
    def side(s: Side):
        return {"label": s.label, "valid": s.valid, "compiled": s.compiled, "errors": s.errors,
                "warnings": s.warnings}

    def named(v, s: Side):
        """A diagnostic of side `s` with its file named: the facts name the entry `""`."""
        return dict(v, file=v["file"] or s.file) if isinstance(v, dict) and "file" in v else v

    sections: Dict[str, List[Dict[str, Any]]] = {}
    for x in changes:
        before, after = x.before, x.after
        if x.section == "diagnostics":
            before, after = named(before, a), named(after, b)
        item: Dict[str, Any] = {"key": x.key, "kind": x.kind, "before": before,
                                "after": after}
        if x.delta is not None:
            # to 12 significant digits, as values compare: 51.0 - 40.8 is 10.2, not
            # 10.200000000000003
            item["delta"] = x.delta if isinstance(x.delta, int) else float(f"{x.delta:.12g}")
        sections.setdefault(x.section, []).append(item)
    return {"a": side(a), "b": side(b), "identical": not changes, "changes": sections}
