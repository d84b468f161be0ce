"""A runs-table row that publishes both its tokens per second per GPU and its step time: beyond
5 % apart one of its cells is wrong and the row is rejected (E777, `rates_disagree`); W778 where
the two disagree beyond the rounding of their cells and within that. One step moves gbs x seq_len tokens over
the row's gpus, so the step time the tokens/s imply is gbs x seq_len / (tokens_per_s_per_gpu x
gpus); the row is scored on the tokens/s (score.published: the first of the figures), and a step
time that says otherwise would go unseen.

Rounding: each cell is read as its value +/- half a unit of its last written digit (3.313: +/-
0.0005; 4,912: +/- 0.5; an integer's trailing zeros are taken as rounding, 5000: +/- 500); the
two relative half-units add (a ratio's relative error). The shipped tables agree within it (the
largest, modern.csv r241: 0.86 of its tolerance)."""
from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Dict, List, Optional, Sequence, Tuple

from astral_dsl.diagnostics import Diagnostic, Severity, Span
from astral_dsl.line_ends import lines_of
from astral_dsl.runs.score import STEP, TOKENS


# a row's tokens/s per GPU and step time are one measurement (gbs x seq_len tokens a step over
# gpus): the shipped tables' 122 rows with both agree within 0.07 %; beyond 5 % a cell is wrong
RATES_AGREE = 0.05
DISAGREE = "disagrees with the row's step time"


def rates_disagree(v: Dict[str, Optional[float]]) -> Optional[str]:
    """Why the row's tokens/s per GPU and its step time cannot both hold (beyond RATES_AGREE: the
    row is rejected, E777, by table._row; within it and beyond rounding, W778: `disagreement`),
    or None; `v` the row's cells as read."""
    tokens, step = v.get("tokens_per_s_per_gpu"), v.get("step_time_s")
    gbs, seq, gpus = v.get("gbs"), v.get("seq_len"), v.get("gpus")
    if not (tokens and step and gbs and seq and gpus) or min(gbs, seq, gpus) <= 0:
        return None
    implied = gbs * seq / (step * gpus)
    if abs(tokens / implied - 1) <= RATES_AGREE:
        return None
    return (f"{tokens:,.6g} tokens/s per GPU {DISAGREE}: {gbs:,.0f} x {seq:,.0f} tokens / "
            f"({step:,.6g} s x {gpus:,.0f} GPUs) = {implied:,.4g} tokens/s per GPU")


def half_unit(text: str) -> Optional[float]:
    """Half a unit of the last digit a number cell writes (None if it is not a plain number)."""
    try:
        d = Decimal(text.strip().strip('"').replace(",", ""))
    except InvalidOperation:
        return None
    if not d.is_finite() or d == 0:
        return None
    sign, digits, exp = d.as_tuple()
    if exp >= 0:                # an integer: its trailing zeros may be rounding
        exp += len(digits) - len("".join(map(str, digits)).rstrip("0"))
    return 0.5 * 10.0 ** exp


def implied_step(row) -> Optional[float]:
    """The step time the row's tokens/s per GPU imply, seconds (None without the cells)."""
    tokens, gbs, seq, gpus = row.tokens_per_s_per_gpu, row.count("gbs"), row.count("seq_len"), \
        row.count("gpus")
    if not (tokens and gbs and seq and gpus):
        return None
    return gbs * seq / (tokens * gpus)


def disagreement(row, tokens_text: str, step_text: str) -> Optional[Tuple[float, float]]:
    """(the implied step time, the published one's relative difference from it) where the two
    differ beyond the cells' rounding; else None."""
    implied, step = implied_step(row), row.step_time_s
    ut, us = half_unit(tokens_text), half_unit(step_text)
    if implied is None or not step or ut is None or us is None:
        return None
    off = step / implied - 1.0
    tolerance = ut / row.tokens_per_s_per_gpu + us / step
    return (implied, off) if abs(off) > tolerance * (1 + 1e-9) else None


def disagreements(runs: Sequence, names: List[str], text: str, file: str) -> List[Diagnostic]:
    """W778 for each row (not rejected) whose two figures disagree, over its two cells."""
    if TOKENS not in names or STEP not in names:
        return []
    from astral_dsl.runs.csvtext import cell_columns

    lines = lines_of(text)
    out = []
    for r in runs:
        if r.problems or r.step_time_s is None or r.line > len(lines):
            continue
        line = lines[r.line - 1]
        cells = cell_columns(line)
        if len(cells) != len(names):
            continue
        (a, b), (c, d) = cells[names.index(TOKENS)], cells[names.index(STEP)]
        found = disagreement(r, line[a - 1:b - 1], line[c - 1:d - 1])
        if found is None:
            continue
        implied, off = found
        tokens, step = line[a - 1:b - 1].strip().strip('"'), line[c - 1:d - 1].strip().strip('"')
        start, end = min(a, c), max(b, d)
        out.append(Diagnostic(
            "W778", Severity.WARNING,
            f"row `{r.id}`: step_time_s {step} s and tokens_per_s_per_gpu {tokens} disagree: "
            f"gbs x seq_len / (tokens/s per GPU x gpus) = {r.count('gbs'):,} x "
            f"{r.count('seq_len'):,} / ({tokens} x {r.count('gpus'):,}) = {implied:.4g} s, the "
            f"published step {100 * off:+.1f} % from it; the row is scored on "
            f"tokens_per_s_per_gpu", Span.at(file, r.line, start, r.line, max(end, start + 1)),
            f"correct the figure that is off (a step of {implied:.4g} s agrees with the tokens/s), "
            f"or leave the one the source does not publish empty (docs/runs.md)"))
    return out
