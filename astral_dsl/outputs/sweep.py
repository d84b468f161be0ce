"""The rows of a sweep as a table (outputs/table.py), CSV or JSON Lines: the grid's parameters first, then
validity, error and warning codes, the metrics, and the diagnostics."""
from __future__ import annotations

import csv
import io
import math
import re
from typing import Any, Dict, List, Sequence

from astral_dsl.outputs.jsonout import csv_cell, dumps
from astral_dsl.regularfile import output

LABELS = {
    "gpus": "GPUs", "hosts": "hosts", "racks": "racks", "switches": "switches",
    "it_power_kw": "IT kW peak", "it_power_avg_kw": "IT kW avg",
    "facility_power_kw": "facility kW avg", "pue": "PUE",
    "cost_usd": "cost USD", "iteration_time_s": "iteration s", "tokens_per_s": "tokens/s",
    "mfu": "MFU", "memory_gb": "memory GB", "may_not_fit": "fits", "calibration": "band",
}
# columns that are not numbers (no plot axis)
TEXT_COLUMNS = ("may_not_fit", "calibration")
_NUMBER = re.compile(r"[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?")


def param_columns(names: Sequence[str], columns: Sequence[str]) -> Dict[str, str]:
    """Column name of each parameter: its own name, `param:NAME` if it is a metric's name."""
    taken = set(columns) | {"valid", "errors", "warnings", "diagnostics", "scenario_broken"}
    return {n: (f"param:{n}" if n in taken else n) for n in names}


def literal_json(text: str) -> Any:
    """A grid value in JSON: numbers as numbers, booleans as booleans, strings unquoted;
    quantities keep their unit as text (`45 kW`)."""
    if _NUMBER.fullmatch(text):
        if "." not in text and "e" not in text.lower():
            return int(text)
        x = float(text)
        return x if math.isfinite(x) else text      # JSON has no infinity: keep the text
    if text in ("true", "false"):
        return text == "true"
    return unquoted(text)


def unquoted(text: str) -> str:
    """A grid value as its point holds it: a string literal's text (`"a,b"` is a,b, its
    escapes replaced as the language replaces them), anything else as written. The CSV's and
    the JSON's parameter columns say the same (the CSV had kept the quotes)."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        from astral_dsl.syntax.literals import unescape

        try:
            return unescape(text[1:-1])
        except ValueError:               # not a literal the grid would have taken
            return text[1:-1]
    return text


def _codes(row, severity: str) -> List[str]:
    return sorted({d["code"] for d in row["diagnostics"] if d["severity"] == severity})


def _where(d) -> str:
    if d.get("range"):
        return f" ({d['file']}:{d['range']['start']['line']}:{d['range']['start']['column']})"
    return f" ({d['file']})" if d.get("file") else ""


def diagnostic_line(d) -> str:
    return f"{d['code']} {d['message']}{_where(d)}"


def flat(row, names: Sequence[str], columns: Sequence[str], scenario: bool,
         for_json: bool) -> Dict[str, Any]:
    cols = param_columns(names, columns)
    out: Dict[str, Any] = {}
    for n in names:
        value = row["params"][n]
        out[cols[n]] = literal_json(value) if for_json else unquoted(value)
    out["valid"] = row["valid"]
    errors, warnings = _codes(row, "error"), _codes(row, "warning")
    out["errors"] = errors if for_json else " ".join(errors)
    out["warnings"] = warnings if for_json else " ".join(warnings)
    if scenario:
        broken = row["metrics"].get("scenario_broken", [])
        out["scenario_broken"] = broken if for_json else " ".join(broken)
    for c in columns:
        out[c] = row["metrics"].get(c)
    if out.get("calibration") is not None and not for_json:
        out["calibration"] = _band(out["calibration"])
    if for_json:
        out["diagnostics"] = row["diagnostics"]
    else:
        out["diagnostics"] = " | ".join(diagnostic_line(d) for d in row["diagnostics"])
    return out


def jsonl(result, scenario: bool) -> str:
    """`--format jsonl` and `-o FILE.jsonl`: a row per line, nothing else."""
    return "".join(dumps(row) + "\n" for row in _json_rows(result, scenario))


def document(result, scenario=None, job=None) -> str:
    """`--format json`: one document, every command's envelope (outputs/jsonout.py) with the
    sweep's `grid` (each parameter's values, in order), `scenario`, `job`, `columns`, `notes`
    and `rows` (each as a line of `jsonl`). `valid` is the exit code's verdict: every point
    valid; each row has its own diagnostics, the envelope's are none."""
    from astral_dsl.outputs.jsonout import envelope

    rows = _json_rows(result, scenario is not None)
    return dumps(envelope((), file=result.file, valid=all(r["valid"] for r in rows),
                          grid=[{"name": g.name, "values": [literal_json(v) for v in g.values]}
                                for g in result.grids],
                          scenario=scenario, job=job, columns=list(result.columns),
                          notes=list(result.notes), rows=rows)) + "\n"


def _json_rows(result, scenario: bool) -> List[Dict[str, Any]]:
    names = [g.name for g in result.grids]
    return [flat(r, names, result.columns, scenario, True) for r in result.rows]


def csv_text(result, scenario: bool) -> str:
    names = [g.name for g in result.grids]
    out = io.StringIO()
    rows = [flat(r, names, result.columns, scenario, False) for r in result.rows]
    header = list(rows[0]) if rows else list(param_columns(names, result.columns).values()) + [
        "valid", "errors", "warnings"] + list(result.columns) + ["diagnostics"]
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: csv_cell(v) for k, v in r.items()})
    return out.getvalue()


def _band(cal) -> str:
    """A forecast's envelope (seer/envelope.py) as "-4/+7 %", "* outside" its envelope, "^
    gpus+tp" beyond the calibration runs in those dimensions (W759)."""
    from astral_dsl.seer.envelope import band_text

    return band_text(cal["band"]) + ("" if cal["inside"] else " * outside") + (
        " ^ " + "+".join(b["field"] for b in cal["extrapolated"]) if cal.get("extrapolated")
        else "")


def _show(column: str, v) -> str:
    if v is None:
        return "-"
    if column == "calibration":
        return _band(v)
    if column == "may_not_fit":       # as `astral search` shows it
        return "may not" if v else "yes"
    if column in ("pue", "mfu"):
        return f"{v:.3f}" if column == "pue" else f"{v * 100:.1f} %"
    if column == "iteration_time_s":
        return f"{v:.3f}"
    if column == "tokens_per_s":      # whole tokens, as `forecast` shows them: the band is
        return f"{v:,.0f}"            # +-10 % or more, a tenth of a token is no figure
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.1f}"
    return str(v)


def table(result, scenario: bool, colour: bool = False, width: int = 100) -> str:
    """The rows on a terminal (outputs/table.py: stacked to the width, no value cut short),
    each with its error and warning codes (and what the scenario breaks) under `status`; then
    the first error of each failing point and each warning with the points that have it."""
    from astral_dsl.outputs.table import Column, render
    from astral_dsl.outputs.terminal import printable

    names = [g.name for g in result.grids]
    columns = [Column(n, tuple(printable(r["params"][n]) for r in result.rows), key=True)
               for n in names]
    status, styles = [], []
    for r in result.rows:
        errors, warnings = _codes(r, "error"), _codes(r, "warning")
        broken = r["metrics"].get("scenario_broken", []) if scenario else []
        said = errors + warnings + (["breaks " + " ".join(broken)] if broken else [])
        status.append(" ".join(said) or "ok")
        styles.append("red" if errors else "yellow" if said else "green")
    columns.append(Column("status", tuple(status), right=False, styles=tuple(styles)))
    for c in result.columns:
        columns.append(Column(LABELS.get(c, c),
                              tuple(_show(c, r["metrics"].get(c)) for r in result.rows)))
    points = len(result.rows)
    title = f"{result.file}: {points} point{'' if points == 1 else 's'}" + (
        f" under scenario `{scenario}`" if scenario else "")
    lines = [render(columns, width, colour, printable(title))]
    failing = [r for r in result.rows if not r["valid"]]
    forecast = "iteration_time_s" in result.columns
    for r in failing[:20]:
        first = [d for d in r["diagnostics"] if d["severity"] == "error"]
        more = f" (and {len(first) - 1} more)" if len(first) > 1 else ""
        if forecast and r["metrics"].get("iteration_time_s") is None:
            more += "; not forecast"      # its `-`s are no figures: the errors say why
        lines.append(printable(f"{_point(r, names)}: {diagnostic_line(first[0])}{more}" if first
                               else _point(r, names)) + "\n")
    if len(failing) > 20:
        lines.append(f"... and {len(failing) - 20} more failing points\n")
    return "".join(lines + _warning_lines(result.rows, names, width))


def _point(row, names: Sequence[str]) -> str:
    return ", ".join(f"{n}={row['params'][n]}" for n in names)


def _warning_lines(rows, names: Sequence[str], width: int, most: int = 20) -> List[str]:
    """Each distinct warning (its code, message, place and notes) once, with the points that
    have it (a sweep of 60 points that all lack a price says W800 once), wrapped to `width`."""
    import textwrap

    points: Dict[str, List[str]] = {}
    for r in rows:
        for d in r["diagnostics"]:
            if d["severity"] == "warning":
                text = "; ".join([diagnostic_line(d)] + list(d.get("notes") or ()))
                at = points.setdefault(text, [])
                if not at or at[-1] != _point(r, names):
                    at.append(_point(r, names))
    from astral_dsl.outputs.terminal import printable

    out = []
    for text, at in list(points.items())[:most]:
        # every point of a sweep longer than the three named: "all 60 points", not "60 points
        # (a; b; c and 57 more)", which reads as if some had not
        where = at[0] if len(at) == 1 else f"all {len(at)} points" if len(at) == len(rows) > 3 \
            else f"{len(at)} points (" + "; ".join(at[:3]) + (
                f" and {len(at) - 3} more" if len(at) > 3 else "") + ")"
        out.append(textwrap.fill(printable(f"{where}: {text}"), width, subsequent_indent="    ",
                                 break_on_hyphens=False) + "\n")
    if len(points) > most:
        out.append(f"... and {len(points) - most} more warnings\n")
    return out


def write(result, path: str, scenario: bool) -> None:
    text = csv_text(result, scenario) if path.lower().endswith(".csv") else jsonl(result, scenario)
    with open(output(path), "w", encoding="utf-8", newline="") as fh:
        fh.write(text)

