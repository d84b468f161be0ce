"""How a runs table's cells are read (docs/runs.md, "The format" and "What a row is taken to
have run"): numbers with thousands separators only, the `recompute` words the format defines,
ids generated for rows without one, and the column a diagnostic of a row's job is blamed on.
The reader on bad input and `astral runs` itself: tests/test_runs.py."""
from __future__ import annotations

from astral_dsl.runs.evaluate import prepare
from astral_dsl.runs.table import parse_table

from test_runs import _csv, _row


def _problems(rows):
    return {r.id: r.problems for r in parse_table(_csv(rows), "t.csv").runs}


def _values(rows, column):
    return {r.id: dict(r.values)[column] for r in parse_table(_csv(rows), "t.csv").runs}


# ---- numbers ----------------------------------------------------------------------------------------------
def test_a_comma_is_a_thousands_separator_only_between_groups_of_three_digits():
    ok = [_row("r117", id="four", tokens_per_s_per_gpu="31,508"),
          _row("r117", id="seven", tokens_per_s_per_gpu="1,234,567.5"),
          _row("k22b_full", id="plain", step_time_s="1.42")]
    assert _values(ok, "tokens_per_s_per_gpu") == {"four": 31508.0, "seven": 1234567.5,
                                                   "plain": None}
    assert all(p == () for p in _problems(ok).values())
    # a decimal comma ("3,87" s, a German-locale spreadsheet's) was read as 387 s, a misplaced
    # separator ("1,6934") as 16934: both reject their row with the column and why
    bad = [_row("k22b_full", id="decimal", step_time_s="3,87"),
           _row("r117", id="misplaced", tokens_per_s_per_gpu="1,6934"),
           _row("r117", id="trailing", tokens_per_s_per_gpu="31508,"),
           _row("k22b_full", id="count", gbs="1,28")]
    why = "a comma is read only between groups of three digits (4,912); write a decimal point " \
          "as `.`"
    assert _problems(bad) == {
        "decimal": (("step_time_s", f"`3,87`: {why}"),),
        "misplaced": (("tokens_per_s_per_gpu", f"`1,6934`: {why}"),),
        "trailing": (("tokens_per_s_per_gpu", f"`31508,`: {why}"),),
        "count": (("gbs", f"`1,28`: {why}"),)}
    t = parse_table(_csv(bad), "t.csv")
    assert [(p.status, p.field) for p in prepare(t)] == [
        ("rejected", "step_time_s"), ("rejected", "tokens_per_s_per_gpu"),
        ("rejected", "tokens_per_s_per_gpu"), ("rejected", "gbs")]


# ---- recompute --------------------------------------------------------------------------------------------
def test_recompute_is_full_selective_none_or_empty_and_anything_else_rejects_the_row():
    words = {"full": "full", "sel": "Selective (per-op)", "none": "None ", "empty": ""}
    rows = [_row("k22b_full", id=k, recompute=v) for k, v in words.items()]
    t = parse_table(_csv(rows), "t.csv")
    assert all(r.problems == () for r in t.runs)
    specs = {p.row.id: p.spec for p in prepare(t)}
    # empty: Seer's rule chooses (k22b_full on 8 A100s fits without recomputation)
    assert {k: s.recompute for k, s in specs.items() if k != "empty"} == {
        "full": "full", "sel": "selective", "none": "none"}
    # "false" and "partial" were Seer's rule, "non-full" was read as full
    odd = ["false", "partial", "non-full", "no", "off", "fulll"]
    rows = [_row("k22b_full", id=w, recompute=w) for w in odd]
    t = parse_table(_csv(rows), "t.csv")
    assert {r.id: r.problems for r in t.runs} == {
        w: (("recompute", f"`{w}` is not full, selective or none"),) for w in odd}
    assert {(p.status, p.field) for p in prepare(t)} == {("rejected", "recompute")}


# ---- ids --------------------------------------------------------------------------------------------------
def test_a_generated_id_never_takes_an_explicit_one():
    # line 2: no id; line 3: "line 3"; line 4: "line 2" (genid.csv of the audit): the explicit
    # "line 2" was reported as "also the id of line 2", the row without an id
    rows = [_row("k22b_full", id=""), _row("k22b_full", id="line 3"),
            _row("k22b_full", id="line 2"), _row("k22b_full", id="")]
    t = parse_table(_csv(rows), "t.csv")
    assert [(r.line, r.id, r.problems) for r in t.runs] == [
        (2, "line 2 (no id)", ()), (3, "line 3", ()), (4, "line 2", ()), (5, "line 5", ())]
    # two explicit ids alike are still one row too many
    t = parse_table(_csv([_row("k22b_full", id="line 3"), _row("k22b_full", id="line 3")]),
                    "t.csv")
    assert t.runs[1].problems == (("id", "`line 3` is also the id of line 2"),)


# ---- the column behind a diagnostic -----------------------------------------------------------------------
def test_virtual_stages_without_a_pipeline_blame_the_vp_column():
    # E760 points at `schedule = interleaved`, which the row's `vp` sets: it blamed `layout`,
    # which is not a column
    t = parse_table(_csv([_row("r117", id="vp_pp1", pp="1", vp="4", gpus="8")]), "t.csv")
    (p,) = prepare(t)
    assert p.status == "not_expressible" and p.field == "vp", (p.field, p.reason)
    assert p.reason.startswith("E760: ") and "pp = 1" in p.reason
