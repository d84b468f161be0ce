"""Runs tables (docs/runs.md): the reader on bad input (E766 with its position and a hint, or a
rejected row with its field), rows Seer cannot state (not expressible, with the field and why),
`astral runs` (its JSON against a schema, its text, its exit codes, the same bytes twice) and
`--gpu-file` (a user's own systems). `astral calibrate`: tests/test_calibrate.py."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import jsonschema
import pytest

from astral_dsl.runs import table as runs_table
from astral_dsl.runs.evaluate import evaluate, prepare
from astral_dsl.runs.table import COLUMNS, parse_table, read_table
from astral_dsl.seer.calibration import RUN_FILES, shipped

from test_cli import call

REPO = Path(__file__).resolve().parents[1]
A100 = list(csv.DictReader(io.StringIO(RUN_FILES["a100"].read_text(encoding="utf-8"))))
MODERN = list(csv.DictReader(io.StringIO(RUN_FILES["modern"].read_text(encoding="utf-8"))))


# a row's tokens/s per GPU and step time are one measurement (gbs x seq_len tokens a step over
# gpus), and a row whose two disagree is rejected (E777): a variant of a published row that moves
# one of these keeps one published rate, tokens/s unless it gives only the step
_ONE_MEASUREMENT = ("gbs", "seq_len", "gpus", "tokens_per_s_per_gpu", "step_time_s")


def _row(base, **cells):
    src = next(r for r in A100 + MODERN if r["id"] == base)
    row = dict(src, **cells)
    if any(k in cells for k in _ONE_MEASUREMENT) and not (
            "tokens_per_s_per_gpu" in cells and "step_time_s" in cells):
        dropped = "tokens_per_s_per_gpu" if "step_time_s" in cells else "step_time_s"
        if row["tokens_per_s_per_gpu"] and row["step_time_s"]:
            row[dropped] = ""
    return row


def _csv(rows, columns=COLUMNS) -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n",
                       extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    return out.getvalue()


def _write(tmp_path, rows, name="runs.csv") -> Path:
    path = tmp_path / name
    path.write_text(_csv(rows), encoding="utf-8")
    return path


def _only(diags):
    (d,) = diags
    assert d.code == "E766" and d.hint, d
    return d


# ---- the reader on bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("encoding, said", [
    ("utf-16", "UTF-16"), ("utf-16-le", "UTF-16 (or UTF-32, without a byte-order mark)"),
    ("utf-32", "UTF-32")])
def test_a_table_in_a_wide_encoding_says_which(tmp_path, encoding, said):
    """A table saved by Windows' PowerShell 5 (UTF-16 by default) was `not UTF-8 text (byte
    0xff)`, or without a byte-order mark `binary (it holds NUL bytes)`: now named, with the
    conversion, as a rank log in one is (E781)."""
    path = tmp_path / "t.csv"
    path.write_bytes((",".join(COLUMNS) + "\n").encode(encoding))
    d = _only(read_table(path).diagnostics)
    assert (d.code, d.message) == ("E766", f"the runs table is {said} text, not UTF-8")
    assert (d.span.start.line, d.span.start.column) == (1, 1)
    assert f"`iconv -f {said[:6]} -t UTF-8`" in d.hint and "Out-File -Encoding utf8" in d.hint


def test_an_empty_table_has_no_header():
    d = _only(parse_table("", "t.csv").diagnostics)
    assert "empty" in d.message and d.span.start.line == 1 and "id,source_url" in d.hint


def test_a_table_without_its_header_says_so_once():
    """Its first row's cells were said as unknown columns (eight, then `23 more`) and every
    column as missing: ten E766 around the one thing wrong. A design given as a table
    (`astral runs x.astral`) alike, its first comment's words as columns."""
    text = _csv([_row("k22b_full")]).split("\n", 1)[1]      # the data line first
    t = parse_table(text, "t.csv")
    assert not t.valid and not t.runs
    d = _only(t.diagnostics)
    assert d.message == ("the first line names none of a runs table's columns: it is not a runs "
                         "table's header")
    assert (d.code, d.span.start.line, d.span.start.column) == ("E766", 1, 1)
    assert d.hint == "the first line names the columns: " + ",".join(COLUMNS)
    d = _only(parse_table("// a design\nsite S {}\n", "lab.astral").diagnostics)
    assert d.hint == ("a design is forecast by `astral forecast lab.astral`; `astral runs` reads "
                      "a runs table, CSV (docs/runs.md)")


def test_a_table_separated_by_semicolons_or_tabs_says_so_once():
    """A spreadsheet's export with `;` (a decimal-comma locale) or tabs between cells was one
    unknown column of the whole header plus "lacks" every column: one E766 saying why now, at
    the first separator (after `id`: column 3)."""
    for sep, said in ((";", "semicolons"), ("\t", "tabs")):
        d = _only(parse_table(sep.join(COLUMNS) + "\nr1" + sep * 30 + "\n", "t.csv").diagnostics)
        assert d.message == f"the runs table's cells are separated by {said}, not commas"
        assert (d.span.start.line, d.span.start.column) == (1, 3) and "commas" in d.hint


def test_an_unknown_column_points_at_its_place_in_the_header():
    header = ",".join(COLUMNS).replace("step_time_s", "step_time")
    t = parse_table(header + "\n", "t.csv")
    bad = next(d for d in t.diagnostics if "unknown column" in d.message)
    assert bad.message == "unknown column `step_time` in the runs table"
    column = header.index("step_time") + 1
    assert (bad.span.start.line, bad.span.start.column, bad.span.end.column) == \
        (1, column, column + len("step_time"))
    assert "id, source_url" in bad.hint
    missing = next(d for d in t.diagnostics if "lacks" in d.message)
    assert missing.message == "the runs table lacks the column(s) step_time_s" and missing.hint


def test_a_header_of_many_unknown_columns_is_said_in_nine_diagnostics_in_linear_time():
    """50,000 unknown columns were 50,000 diagnostics (350,000 lines of output) and took 34 s
    (the duplicate check counted each name in the whole header); 5,000,000 did not end."""
    import time

    header = ",".join(COLUMNS) + "".join(f",x{i}" for i in range(50_000))
    start = time.thread_time()
    t = parse_table(header + "\n", "t.csv")
    assert time.thread_time() - start < 5                # about 0.1 s
    assert [d.message for d in t.diagnostics] == [
        f"unknown column `x{i}` in the runs table" for i in range(8)] + [
        "49,992 more unknown columns in the runs table, from here on"]
    column = header.index(",x8,") + 2
    assert (t.diagnostics[-1].code, t.diagnostics[-1].span.start.column) == ("E766", column)


def test_a_column_named_twice():
    header = ",".join(COLUMNS + ("gpus",))
    d = _only(parse_table(header + "\n", "t.csv").diagnostics)
    assert d.message == "the runs table names the column(s) gpus twice"


def test_columns_in_any_order_with_a_bom_and_crlf_read_the_same(tmp_path):
    rows = [_row("k22b_full"), _row("n1_7b")]
    plain = parse_table(_csv(rows), "t.csv")
    path = tmp_path / "t.csv"
    path.write_bytes(("\ufeff" + _csv(rows, tuple(reversed(COLUMNS)))).replace(
        "\n", "\r\n").encode("utf-8"))
    other = read_table(path)
    assert other.valid and [r.values for r in other.runs] == [r.values for r in plain.runs]
    assert [dict(r.text) for r in other.runs] == [dict(r.text) for r in plain.runs]


def test_bad_cells_reject_their_row_with_the_field_and_why_and_keep_the_others():
    rows = [_row("k22b_full", id="frac", tp="2.5"), _row("k22b_full", id="neg", gpus="-8"),
            _row("k22b_full", id="inf", step_time_s="inf"),
            _row("k22b_full", id="word", layers="many"), _row("k22b_full"),
            _row("k22b_full", id="k22b_full")]
    t = parse_table(_csv(rows), "t.csv")
    assert t.valid and [r.id for r in t.runs] == ["frac", "neg", "inf", "word", "k22b_full",
                                                   "k22b_full"]
    problems = [r.problems for r in t.runs]
    assert problems[0] == (("tp", "2.5 is not a whole number"),)
    assert problems[1] == (("gpus", "-8 is outside 1 - 1,000,000,000"),)
    assert problems[2] == (("step_time_s", "inf is not a finite number"),)
    assert problems[3] == (("layers", "`many` is not a number"),)
    assert problems[4] == ()
    assert problems[5] == (("id", "`k22b_full` is also the id of line 6"),)
    results = evaluate(prepare(t))
    assert [r.status for r in results] == ["rejected"] * 4 + ["ok", "rejected"]
    assert [r.prepared.field for r in results][:4] == ["tp", "gpus", "step_time_s", "layers"]


def test_each_rejected_cell_is_e777_at_its_line_and_column_with_a_hint():
    """A rejected row had no diagnostic (no code, no column, no hint; `runs --format json` had
    `diagnostics: []`, `valid: true` and exit 1). Each problem is E777 at its cell now."""
    header = "id,tp,gpus,step_time_s"
    cols = ",".join(c for c in COLUMNS if c not in header.split(","))
    text = (f"{header},{cols}\n"
            + "frac,2.5,8,1.5" + "," * (len(COLUMNS) - 4) + "\n"      # tp at columns 6-9
            + '"a, b",1,8,nan' + "," * (len(COLUMNS) - 4) + "\n"      # a quoted id; nan
            + "frac,1,8,1.5" + "," * (len(COLUMNS) - 3) + "\n")       # twice; a cell too many
    t = parse_table(text, "t.csv")
    assert t.valid and [r.id for r in t.runs] == ["frac", "a, b", "frac"]
    got = [(d.code, d.span.start.line, d.span.start.column, d.span.end.column, d.message)
           for d in t.rejected]
    assert got == [
        ("E777", 2, 6, 9, "row `frac` is rejected: tp: 2.5 is not a whole number"),
        # `"a, b",1,8,` is 11 characters: the step time's cell starts at column 12
        ("E777", 3, 12, 15, "row `a, b` is rejected: step_time_s: nan is not a finite number"),
        # a row that does not line up with the header: the whole line (12 + 28 commas)
        ("E777", 4, 1, 13 + len(COLUMNS) - 3,
         f"row `frac` is rejected: row: {len(COLUMNS) + 1} cells for {len(COLUMNS)} columns"),
        ("E777", 4, 1, 13 + len(COLUMNS) - 3,
         "row `frac` is rejected: id: `frac` is also the id of line 2")]
    assert t.rejected[0].hint.startswith("a whole number from 1 to 65,536")
    assert t.rejected[1].hint.startswith("a finite number from 1e-06 to 1e+09")
    assert "quote a cell that holds a comma" in t.rejected[2].hint


def test_rates_outside_their_plausible_bounds_reject_their_row():
    """A published rate as small as 1e-300 made an error of 4e304 (found by the runs fuzz
    target): rates have a smallest plausible value as well as a largest."""
    rows = [_row("k22b_full", id="tiny", step_time_s="1e-300"),
            _row("k22b_full", id="slow", step_time_s="2e9"),
            _row("k22b_full", id="edge", step_time_s="1e-6"),
            _row("r004", id="trickle", tokens_per_s_per_gpu="0.0001"),
            _row("r004", id="params", params_b="1e-9"),
            _row("k22b_full", id="na", step_time_s="n/a")]
    problems = [r.problems for r in parse_table(_csv(rows), "t.csv").runs]
    assert problems == [(("step_time_s", "1e-300 is outside 1e-06 - 1e+09"),),
                        (("step_time_s", "2e+09 is outside 1e-06 - 1e+09"),),
                        (),
                        (("tokens_per_s_per_gpu", "0.0001 is outside 0.001 - 1e+12"),),
                        (("params_b", "1e-09 is outside 1e-06 - 1e+06"),),
                        ()]
    na = parse_table(_csv(rows), "t.csv").runs[-1]
    assert dict(na.values)["step_time_s"] is None      # a rate "n/a": not published


def test_a_row_that_publishes_no_figure_is_forecast_in_tokens_per_s_unscored(tmp_path, capsys):
    """A run not yet measured (no tokens/s, step time or TFLOP/s) is still forecast, in tokens/s
    per GPU: the global batch's tokens over the iteration time and the GPUs (found by the runs
    fuzz target: such a row was `ok` with no forecast)."""
    rows = [_row("k1t_full", step_time_s="", tokens_per_s_per_gpu="", model_tflops_per_gpu="")]
    code, out, _ = call(["runs", str(_write(tmp_path, rows)), "--format", "json"], capsys)
    (row,) = json.loads(out)["rows"]
    assert row["status"] == "ok" and row["metric"] == "tokens_per_s_per_gpu"
    assert row["published"] is None and row["error"] is None
    gbs, seq, gpus = (int(rows[0][k]) for k in ("gbs", "seq_len", "gpus"))
    assert row["forecast"] == pytest.approx(gbs * seq / (row["iteration_time_s"] * gpus))
    assert json.loads(out)["summary"]["scored"] == 0


def test_a_row_with_too_many_cells_is_rejected():
    text = _csv([_row("k22b_full")]).rstrip("\n") + ",extra\n"
    (run,) = parse_table(text, "t.csv").runs
    assert run.problems == (("row", f"{len(COLUMNS) + 1} cells for {len(COLUMNS)} columns"),)


def test_a_quote_left_open_is_e766_where_it_opens_not_rows_swallowed():
    """Python's csv reads a cell whose quote is not closed on to the next quote, however many
    lines later: the rows between became text of one row's notes and were silently gone (the
    table of 4 rows read as 1, exit 0). It is E766 at the opening quote."""
    rows = [_row("k22b_full", id=f"x{k}") for k in range(4)]
    lines = _csv(rows).splitlines()
    lines[1] += ',"measured on 8 nodes'         # row x0 (line 2): a quote opened, never closed
    t = parse_table("\n".join(lines) + "\n", "t.csv")    # (it runs on to line 3's first quote)
    (d,) = t.diagnostics
    assert d.code == "E766" and d.message.startswith("a quote opened on line 2 is not closed")
    assert (d.span.start.line, d.span.start.column) == (2, len(lines[1]) - 19)
    assert not t.valid


def test_a_quoted_cell_on_its_line_is_read():
    rows = [_row("k22b_full", notes="measured, on 8 nodes \"as published\"")]
    (run,) = parse_table(_csv(rows), "t.csv").runs
    assert run.problems == () and dict(run.text)["notes"] == 'measured, on 8 nodes "as published"'


def test_a_misaligned_row_reports_no_published_figure(tmp_path, capsys):
    """A row with a cell too few has its cells shifted against the columns: its rates are not
    what the run published, so the rejected row reports none (it had reported the shifted
    cell as the published figure)."""
    row = _row("k22b_full")
    out = io.StringIO()
    csv.writer(out).writerows([COLUMNS, [row[c] for c in COLUMNS if c != "system"]])
    path = tmp_path / "short.csv"            # a cell short: the cells after `system` shift
    path.write_text(out.getvalue())
    code, out, _ = call(["runs", str(path), "--format", "json"], capsys)
    (got,) = json.loads(out)["rows"]
    assert code == 1 and got["status"] == "rejected" and got["field"] == "row"
    assert got["published"] is None and got["metric"] is None and got["error"] is None


def test_binary_not_utf8_huge_and_unreadable_files(tmp_path, monkeypatch):
    binary = tmp_path / "b.csv"
    binary.write_bytes(b"id,model\nx,\x00\x01")
    d = _only(read_table(binary).diagnostics)
    assert "binary" in d.message and (d.span.start.line, d.span.start.column) == (2, 3)
    latin = tmp_path / "l.csv"
    latin.write_bytes("id,model\nx,Caf\u00e9\n".encode("latin-1"))
    d = _only(read_table(latin).diagnostics)
    assert d.message == "the runs table is not UTF-8 text (byte 0xe9)"
    assert (d.span.start.line, d.span.start.column) == (2, 6)
    huge = tmp_path / "h.csv"
    with open(huge, "wb") as fh:
        fh.truncate(64 * 1024 * 1024 + 1)          # sparse: nothing is written
    d = _only(read_table(huge).diagnostics)
    assert d.message == "the runs table is over 64 MiB"
    d = read_table(tmp_path).diagnostics[0]          # a directory
    assert d.code == "E766" and "cannot read" in d.message
    monkeypatch.setattr(runs_table, "MAX_ROWS", 2)
    many = parse_table(_csv([_row("k22b_full", id=f"r{i}") for i in range(3)]), "t.csv")
    d = _only(many.diagnostics)
    assert d.message == "the runs table has more than 2 rows" and d.span.start.line == 4
    assert len(many.runs) == 2


# ---- rows Seer cannot state -------------------------------------------------------------------------------
NOT_EXPRESSIBLE = {
    "int3": ("precision", "unknown precision `INT3`"),
    "tpu": ("gpu", "no stdlib system matches system `TPU pod` / gpu `TPU v5p`"),
    "b300": ("gpu", "no stdlib system of B300 / GB300 GPUs"),
    "odd": ("gpus", "12 GPUs are not a multiple of tp x pp x cp = 8"),
    "nolayers": ("layers", "the row gives no `layers` and no stdlib model is named `Mine 9B`"),
    "mamba": ("model", "hybrid Mamba/attention model"),
    "noseq": ("seq_len", "the row gives no `seq_len`"),
    # Seer's own checks of the job stated, blamed on the column behind the field they name
    "deep": ("layers", "E762: `M` has 100,000 layers: Seer lowers at most 10,000"),
    "pp100": ("pp", "E751: job `run_pp100`: pp = 100 stages for the 48 layers of `M`"),
}


def _not_expressible_rows():
    return [_row("k22b_full", id="int3", precision="INT3"),
            _row("k22b_full", id="tpu", system="TPU pod", gpu="TPU v5p"),
            _row("k22b_full", id="b300", system="DGX-B300", gpu="B300"),
            _row("k22b_full", id="odd", gpus="12"),
            _row("k22b_full", id="nolayers", model="Mine 9B", layers="", hidden="", heads=""),
            _row("k22b_full", id="mamba", model="Nemotron-H 8B", layers="52", hidden="4096",
                 heads="32", notes="hybrid Mamba layers"),
            _row("k22b_full", id="noseq", seq_len=""),
            _row("k22b_full", id="deep", layers="100000"),
            _row("k22b_full", id="pp100", pp="100", gpus="800")]


def test_rows_seer_cannot_state_say_which_field_and_why():
    t = parse_table(_csv(_not_expressible_rows()), "t.csv")
    for p in prepare(t):
        field, why = NOT_EXPRESSIBLE[p.row.id]
        assert p.status == "not_expressible" and p.field == field, (p.row.id, p.field, p.reason)
        assert why in p.reason, (p.row.id, p.reason)


def test_a_model_cell_of_open_brackets_costs_linear_time():
    """A row's model is matched to the stdlib's by its name without the parenthesised parts:
    `re.sub(r"\\(.*?\\)", ...)` scanned to the line's end from every `(` left open, so a cell
    of 60,000 `(` took 12 s and one at the cell cap (131,072) about a minute, per row."""
    import re
    import time

    from astral_dsl.runs.row_model import unbracketed

    # the same text as the pattern gives: up to the first `)` on the line, nothing nested
    for text in ("Llama 3.1 (405B) (FP8", "a(b(c)d)e", "x(\n)y(z)", "((", ")(", ""):
        assert unbracketed(text) == re.sub(r"\(.*?\)", "", text), text
    assert unbracketed("Llama 3.1 (405B) (FP8") == "Llama 3.1  (FP8"
    row = _row("k22b_full", id="open", model="(" * 131_072, layers="", hidden="", heads="")
    table = parse_table(_csv([row]), "t.csv")
    start = time.thread_time()
    (p,) = prepare(table)
    assert time.thread_time() - start < 5            # about 0.01 s; 60 s before
    assert p.status == "not_expressible" and p.field == "layers"


def test_a_users_system_taken_for_the_stdlibs_by_its_gpu_is_assumed():
    """A row of one's own cluster ("Lab-H100-Pod", an H100-SXM5-80GB) runs on the stdlib's DGX
    H100 SuperPOD by its GPU: an assumption about hosts and network that the rows did not list
    (nor torchtitan's r243, Trainy on WhiteFiber's H200s, on DGX-H200). A system the cells
    name (DGX-H100; Grand Teton in the gpu cell) is no assumption."""
    rows = [_row("r020", id="lab", system="Lab-H100-Pod"), _row("r020"), _row("r243"),
            _row("r225")]
    said = "your cluster's hosts and network may differ (--gpu-file)"
    got = {p.row.id: [a for a in p.expressed.assumed if said in a]
           for p in prepare(parse_table(_csv(rows), "t.csv"))}
    assert got == {
        "lab": ["system DGX-H100 (stdlib.systems DGX_H100_SU, NDR_Fabric) for `Lab-H100-Pod`, by "
                f"its GPU: {said}"],
        "r020": [], "r225": [],
        "r243": ["system DGX-H200 (stdlib.systems DGX_H200_SU, NDR_Fabric) for `torchtitan "
                 f"benchmark`, by its GPU: {said}"]}


def test_torchtitan_pipelines_take_the_defaults_of_their_code():
    """torchtitan before 0.1.0 (a row dated 2024-12) split a pipeline's local batch into one
    micro-batch per stage, later ones into micro-batches of 1; interleaved schedules take 2
    stages per rank (docs/runs.md)."""
    old_1f1b, old_interleaved = _row("r225"), _row("r226")     # 256 / DP 8 = 32 per pipeline
    new = _row("r225", id="new", source_version="torchtitan abc (2025-07)")
    undated = _row("r225", id="undated", source_version="torchtitan abc")
    t = parse_table(_csv([old_1f1b, old_interleaved, new, undated]), "t.csv")
    specs = {p.row.id: p.spec for p in prepare(t)}
    assert specs["r225"].micro == 32 // 8 and specs["r225"].parallel.v == 1
    assert specs["r226"].micro == 4 and specs["r226"].parallel.v == 2
    assert specs["r226"].parallel.schedule == "interleaved"
    assert specs["new"].micro == specs["undated"].micro == 1


def test_cuda_graphs_from_26_06_for_transformer_moe_recipes_only():
    """The MoE recipes of transformer models step up at 26.06 (CUDA graphs, sync-free
    dispatch); the hybrid Mamba ones do not and run as before (runs/stacks.py)."""
    t = parse_table(_csv([_row("r023"), _row("r068"), _row("r026"), _row("r073")]), "t.csv")
    graphs = {p.row.id: p.spec.cuda_graphs for p in prepare(t)}
    assert graphs == {"r023": True, "r068": False, "r026": False, "r073": False}


def test_recipes_recompute_and_optimizer_where_the_row_matches_them():
    """Megatron-Bridge rows that state no recomputation take the recompute modules of the
    0.6.2 performance recipe of their model, GPU, precision and layout (GPT-OSS 120B on 64
    GB200s in BF16: layernorm and moe_act; DeepSeek-V3 on GB200 in MXFP8: mla_up_proj), and
    DeepSeek-V3 its recipe's bf16 optimizer states; another layout, a stated recomputation or a
    release before the Megatron-Bridge recipes is left to the rule (runs/stacks.py)."""
    rows = [_row("r040"), _row("r001"), _row("r040", id="mbs2", mbs="2"),
            _row("r040", id="stated", recompute="full"),
            _row("r001", id="old", source_version="NeMo 25.07 container")]
    specs = {p.row.id: p.spec for p in prepare(parse_table(_csv(rows), "t.csv"))}
    assert (specs["r040"].recompute, specs["r040"].recompute_modules) == (
        "modules", ("layernorm", "moe_act"))
    assert (specs["r001"].recompute, specs["r001"].recompute_modules) == (
        "modules", ("mla_up_proj",))
    assert specs["r001"].optimizer_dtype == "bf16" and specs["r040"].optimizer_dtype == "fp32"
    assert specs["mbs2"].recompute_modules is None and specs["mbs2"].recompute != "modules"
    assert specs["stated"].recompute == "full" and specs["stated"].recompute_modules is None
    assert specs["old"].recompute_modules is None and specs["old"].optimizer_dtype == "fp32"


def test_fp8_parameters_for_the_nemo_2_and_megatron_bridge_fp8_rows():
    """The fp8, current-scaling and MXFP8 rows of NeMo 24.07 on (NeMo's and Megatron-Bridge's
    precision configs) hold their linear weights as fp8 parameters; BF16 rows, the 128-block
    FP8 of Hopper and NeMo 24.03's rows do not (runs/stacks.py, FP8_PARAMS_FROM)."""
    rows = [_row("r117"), _row("r118"), _row("r121"), _row("r167"), _row("r196"),
            _row("r117", id="blocks", precision="FP8 alt granularity", gpu="H100-SXM5-80GB",
                 system="DGX-H100")]
    prepared = {p.row.id: p for p in prepare(parse_table(_csv(rows), "t.csv"))}
    assert [prepared[i].spec.fp8_params
            for i in ("r117", "r118", "r121", "r167", "r196", "blocks")] == \
        [True, True, False, True, False, False]
    assert any("fp8 parameters" in a for a in prepared["r117"].expressed.assumed)
    assert not any("fp8 parameters" in a for a in prepared["r121"].expressed.assumed)


def test_nemo_25_04_fsdp_rows_run_without_fp8_parameters():
    """NeMo 25.04's performance scripts turn fp8 parameters off under Megatron FSDP (nemo_toolkit
    2.3.0 scripts/performance/utils.py 352-354; runs/stacks.py FSDP_NO_FP8_PARAMS): its Llama 3
    70B current-scaling row on GB200 with FSDP (r181) holds 16-bit weights; NeMo 25.07's FSDP
    row of the same model (r188, nemo_toolkit 2.4.0, which no longer does so) and r181 read
    without FSDP keep them in fp8. By hand, Llama 3 70B has 80 x 855.6 M linear weights (q and o
    8192^2 each, k and v 8192 x 1024 each, the MLP 3 x 8192 x 28672) = 68.45 B; without fp8
    parameters each of the 64 ranks holds their 16-bit shard, 2 x 68.45 B / 64 = 2.14 GB, which
    fp8 parameters leave out of its 16-bit weights."""
    import attrs
    from astral_dsl.seer.forecast import run
    rows = [_row("r181"), _row("r188"), _row("r181", id="nofsdp", fsdp="")]
    prepared = {p.row.id: p for p in prepare(parse_table(_csv(rows), "t.csv"))}
    assert [prepared[i].spec.fp8_params for i in ("r181", "r188", "nofsdp")] == \
        [False, True, True]
    assert not any("fp8 parameters" in a for a in prepared["r181"].expressed.assumed)
    p = prepared["r181"]
    assert p.spec.parallel.zero == 3 and p.spec.dtype == "fp8"
    off = run(p.spec, p.gpu, p.net).memory.weights
    on = run(attrs.evolve(p.spec, fp8_params=True), p.gpu, p.net).memory.weights
    assert off - on >= 2 * 68.45e9 / 64


def test_nemotron_4_340b_of_nemo_24_07_fits_without_recomputation():
    """NeMo 24.07's Nemotron-4 340B (TP 8, PP 8, 12 virtual stages of one layer, DP 2, 16
    micro-batches) with fp8 parameters holds its states and the interleaved schedule's
    activations in an H100's 80 GiB without recomputing, as its published speed says it ran.
    By hand, per rank of stage 0 (h 18432, ffn 73728, 8 of 96 heads of 192 for keys and values):
    a layer's linear weights are 18432 (18432 + 2 x 8 x 192) + 18432^2 + 2 x 18432 x 73728 =
    3,454.0 M, 431.75 M per TP rank, 12 layers 5,181.0 M; the embedding 256000 x 18432 / 8 =
    589.8 M; 5,770.8 M parameters (the norms' are below 1 M).
      fp8 parameters: 16-bit weights of the embedding and norms alone, 2 x 589.8 M = 1.18 GB;
      fp8 weights and transposes 2 x 5,181.0 M = 10.36 GB; bf16 gradients 11.54 GB;
      Adam's 12 bytes over DP 2: 6 x 5,770.8 M = 34.62 GB; reserved 3 GB: 60.7 GB of states.
    In flight on stage 0 (Megatron-Core schedules.py, interleaved warm-up plus one):
    (8 - 0 - 1) x 2 + (12 - 1) x 8 + 1 = 103 one-layer chunks."""
    import attrs
    from astral_dsl.seer.forecast import run
    from astral_dsl.seer.memory import in_flight

    assert in_flight(8, 12, 16, 0, "interleaved") == 103
    p = next(iter(prepare(parse_table(_csv([_row("r176")]), "t.csv"))))
    assert p.spec.fp8_params
    mem = run(attrs.evolve(p.spec, recompute="none"), p.gpu, p.net).memory
    assert mem.stage == 0
    assert mem.weights == pytest.approx(1.18e9, rel=0.01)
    assert mem.fp8_weights == pytest.approx(10.36e9, rel=0.01)
    assert mem.gradients == pytest.approx(11.54e9, rel=0.01)
    assert mem.optimizer == pytest.approx(34.62e9, rel=0.01)
    assert mem.total < 80 * 2 ** 30


def test_nemo_24_03_rows_run_attention_on_flashattention_2s_kernels():
    """NeMo 24.03 (Transformer Engine 1.4) is read with `attention = flash2`, priced at
    attn_eff_sdpa; 24.07 and later keep Transformer Engine's fused attention (runs/stacks.py,
    FA2_BEFORE). The fit's Jacobian (runs/fit.py `uses`) takes the same constant: attn_eff_sdpa
    moves the 24.03 row and torchtitan's, attn_eff 24.07's (it had counted the 24.03 row under
    attn_eff and not under attn_eff_sdpa)."""
    from astral_dsl.runs.uses import uses
    from astral_dsl.seer.costs import Costs
    rows = [_row("r196"), _row("r171"), _row("r117")]
    prepared = {p.row.id: p for p in prepare(parse_table(_csv(rows), "t.csv"))}
    assert [prepared[i].spec.attention for i in ("r196", "r171", "r117")] == \
        ["flash2", "flash", "flash"]
    assert any("FlashAttention-2" in a for a in prepared["r196"].expressed.assumed)
    cal = shipped()
    p = prepared["r196"]
    assert Costs.of(p.spec, p.gpu).attn_eff == cal.attn_eff_sdpa
    assert Costs.of(prepared["r171"].spec, p.gpu).attn_eff == cal.attn_eff
    names = ("attn_eff", "attn_eff_sdpa", "attn_eff_blackwell", "attn_seq_half")
    assert [uses(n, p.spec, p.gpu) for n in names] == [False, True, False, True]
    q = prepared["r171"]
    assert [uses(n, q.spec, q.gpu) for n in names] == [True, False, False, True]
    t = next(iter(prepare(parse_table(_csv([_row("r213")]), "t.csv"))))
    assert t.spec.framework == "torchtitan"
    assert [uses(n, t.spec, t.gpu) for n in names] == [False, True, False, True]


def test_attention_rate_names_the_constant_each_stack_is_priced_at():
    """seer/costs.py attention_rate: FlashAttention-2's kernels (torchtitan's scaled-dot-product
    attention, `attention = flash2`) at attn_eff_sdpa on any GPU, Transformer Engine's fused
    attention at attn_eff, on Blackwell attn_eff_blackwell; Costs takes that constant's value."""
    from astral_dsl.seer.costs import Costs, GpuSpec, attention_rate
    assert attention_rate("torchtitan", "flash", "hopper") == "attn_eff_sdpa"
    assert attention_rate("megatron", "flash2", "hopper") == "attn_eff_sdpa"
    assert attention_rate("automodel", "flash2", "blackwell") == "attn_eff_sdpa"
    assert attention_rate("megatron", "flash", "hopper") == "attn_eff"
    assert attention_rate("megatron", "flash", "ampere") == "attn_eff"
    assert attention_rate("megatron", "flash", "blackwell") == "attn_eff_blackwell"
    cal = shipped()
    for arch, want in (("hopper", cal.attn_eff), ("blackwell", cal.attn_eff_blackwell)):
        gpu = GpuSpec("G", (("bf16", 989e12),), 80e9, 3350e9, 450e9, arch=arch)
        assert Costs(gpu, "bf16").set_framework("megatron", True).attn_eff == want
        assert Costs(gpu, "bf16").set_framework("megatron", True, "flash2").attn_eff == \
            cal.attn_eff_sdpa


def test_automodel_pipelines_run_once_per_accumulation_step():
    """NeMo AutoModel runs its pipeline schedule once per gradient-accumulation step: a row
    with a pipeline and "GA=N" in its notes runs N schedules a step (Kimi K2: GA 2, DeepSeek-V3:
    GA 4); without a pipeline (Qwen3 30B, GA 16) accumulation is one schedule's micro-batches
    (runs/express.py)."""
    t = parse_table(_csv([_row("r206"), _row("r208"), _row("r209")]), "t.csv")
    specs = {p.row.id: p.spec for p in prepare(t)}
    assert specs["r206"].pipeline_runs == 4 and specs["r206"].microbatches == 32
    assert specs["r208"].pipeline_runs == 2 and specs["r208"].microbatches == 16
    assert specs["r209"].pipeline_runs == 1


def test_a_row_the_memory_estimate_says_may_not_fit_carries_the_warning():
    """A row whose estimate is within its uncertainty of the GPU's memory (GPT-OSS 120B with
    EP 8 on 64 B200s at 5,376 tokens a sequence: ~194 GB of 180 GiB, 193.3 GB) is forecast
    with W750's message in its notes, as one clearly over (E757) is; a row that fits has none
    (the published run, at 4,096 tokens: ~169 GB)."""
    t = parse_table(_csv([_row("r131", id="longer", seq_len="5376"), _row("r131"),
                          _row("r040")]), "t.csv")
    notes = {p.row.id: p.notes for p in prepare(t)}
    assert len(notes["longer"]) == 1 and "may not fit in GPU memory" in notes["longer"][0]
    assert "193.3 GB (180 GiB) on the GPU" in notes["longer"][0]
    assert notes["r131"] == () and notes["r040"] == ()


# ---- `astral runs` -----------------------------------------------------------------------------------------
ROW = {
    "type": "object",
    "required": ["id", "status", "reason", "published", "forecast", "metric", "error", "band",
                 "field", "calibration", "line", "system", "layout", "assumed"],
    "properties": {
        "id": {"type": "string"}, "line": {"type": "integer"},
        "status": {"enum": ["ok", "not_expressible", "rejected"]},
        "reason": {"type": ["string", "null"]}, "field": {"type": ["string", "null"]},
        "published": {"type": ["number", "null"]}, "forecast": {"type": ["number", "null"]},
        "metric": {"enum": ["tokens_per_s_per_gpu", "step_time_s", "model_tflops_per_gpu",
                            None]},
        "error": {"type": ["number", "null"]},
        "band": {"oneOf": [{"type": "null"},
                           {"type": "array", "items": {"type": "number"}, "minItems": 2,
                            "maxItems": 2}]},
        "calibration": {"oneOf": [{"type": "null"}, {
            "type": "object", "required": ["regime", "inside", "band"],
            "properties": {"regime": {"type": "object",
                                      "required": ["gpu", "precision", "attention", "moe",
                                                   "framework"]},
                           "inside": {"type": "boolean"}}}]},
        "assumed": {"type": "array", "items": {"type": "string"}}}}
FAMILY = {"type": "object", "required": ["rows", "mean_abs_pct", "max_abs_pct", "mean_pct"]}
SCHEMA = {
    "type": "object",
    "required": ["version", "format", "valid", "diagnostics", "file", "rows", "summary"],
    "properties": {
        "rows": {"type": "array", "items": ROW},
        "summary": {"type": "object",
                    "required": ["rows", "ok", "not_expressible", "rejected", "families",
                                 "constants"],
                    "properties": {"families": {"type": "object",
                                                "additionalProperties": FAMILY}}}}}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """A100 runs, a modern one, a rejected row and the rows Seer cannot state."""
    rows = [_row("n1_7b"), _row("k22b_sel"), _row("r117"),
            _row("k22b_full", id="bad", tp="2.5")] + _not_expressible_rows()
    return _write(tmp_path_factory.mktemp("runs"), rows)


def test_runs_json_has_every_row_in_order_against_its_schema(mixed, capsys):
    code, out, _ = call(["runs", str(mixed), "--format", "json"], capsys)
    assert code == 1                             # a rejected row: the table has an error
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    # ... and says so: E777 at the `tp` cell of line 5, the envelope not valid
    (d,) = doc["diagnostics"]
    assert doc["valid"] is False and d["code"] == "E777" and d["range"]["start"]["line"] == 5
    assert d["message"] == "row `bad` is rejected: tp: 2.5 is not a whole number"
    ids = [r["id"] for r in doc["rows"]]
    assert ids == [r.id for r in read_table(mixed).runs]
    by = {r["id"]: r for r in doc["rows"]}
    for rid in ("n1_7b", "k22b_sel", "r117"):
        r = by[rid]
        assert r["status"] == "ok" and r["reason"] is None
        assert r["error"] == pytest.approx(r["forecast"] / r["published"] - 1, rel=1e-12)
        assert r["band"] == r["calibration"]["band"] and r["band"][0] <= 0 <= r["band"][1]
    assert by["n1_7b"]["metric"] == "step_time_s" and by["r117"]["metric"] == \
        "tokens_per_s_per_gpu"
    assert by["n1_7b"]["system"] == "DGX-A100" and by["r117"]["system"] == "DGX-GB200"
    assert by["bad"]["status"] == "rejected" and by["bad"]["field"] == "tp"
    for rid, (field, why) in NOT_EXPRESSIBLE.items():
        assert by[rid]["status"] == "not_expressible" and by[rid]["field"] == field
        assert why in by[rid]["reason"] and by[rid]["forecast"] is None
    s = doc["summary"]
    assert (s["rows"], s["ok"], s["not_expressible"], s["rejected"]) == (13, 3, 9, 1)
    fam = s["families"]
    assert fam["all"]["rows"] == 3 and fam["A100 BF16 dense"]["rows"] == 2
    a100 = [by["n1_7b"]["error"], by["k22b_sel"]["error"]]
    assert fam["A100 BF16 dense"]["mean_abs_pct"] == pytest.approx(
        100 * sum(map(abs, a100)) / 2, abs=0.006)
    assert fam["A100 BF16 dense"]["mean_pct"] == pytest.approx(100 * sum(a100) / 2, abs=0.006)


def test_runs_text_lists_every_row_and_the_families(mixed, capsys):
    code, out, _ = call(["runs", str(mixed)], capsys)
    assert code == 1
    assert "13 rows: 3 forecast, 9 not expressible, 1 rejected" in out
    for rid in ("n1_7b", "k22b_sel", "r117"):
        assert f"\n{rid} " in out
    assert "bad (line 5, rejected) tp: 2.5 is not a whole number" in out
    for rid, (field, _) in NOT_EXPRESSIBLE.items():
        assert f"{rid} (line" in out and f"not expressible) {field}:" in out
    assert "GPU x precision x dense/MoE" in out and "A100 BF16 dense" in out
    assert "GB200 FP8 dense" in out


def test_runs_output_is_the_same_bytes_twice(mixed, capsys):
    first = call(["runs", str(mixed), "--format", "json"], capsys)
    second = call(["runs", str(mixed), "--format", "json"], capsys)
    assert first == second


def test_a_table_that_cannot_be_read_exits_2_with_e766(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text(",".join(COLUMNS).replace("gbs", "batch") + "\n", encoding="utf-8")
    code, out, _ = call(["runs", str(path), "--color", "never"], capsys)
    column = ",".join(COLUMNS).index("gbs") + 1
    assert code == 2 and "error[E766]: unknown column `batch` in the runs table" in out
    assert f"t.csv:1:{column}" in out and "= hint:" in out
    code, out, _ = call(["runs", str(path), "--format", "json"], capsys)
    doc = json.loads(out)
    assert code == 2 and doc["valid"] is False
    assert {d["code"] for d in doc["diagnostics"]} == {"E766"}
    assert doc["diagnostics"][0]["range"]["start"] == {"line": 1, "column": column}
    code, _, err = call(["runs", str(tmp_path / "none.csv")], capsys)
    assert code == 2


def test_a_table_without_rejected_rows_exits_0(tmp_path, capsys):
    path = _write(tmp_path, [_row("n1_7b"), _row("k22b_full", id="int3", precision="INT3")])
    code, out, _ = call(["runs", str(path)], capsys)
    assert code == 0 and "1 not expressible" in out


# ---- --gpu-file: a user's own systems ----------------------------------------------------------------------
LAB = """
// our lab: DGX H100 racks in scalable units of 32, as the stdlib's DGX-H100
import stdlib.systems { DGX_H100_Rack, NDR_Fabric }
block Lab_SU { racks = 8 x DGX_H100_Rack }
fabric Lab_Fabric = NDR_Fabric
model M { layers = 2, hidden = 64, heads = 2 }       // a name the run's own model also takes
"""


def test_gpu_file_systems_forecast_as_the_same_stdlib_system(tmp_path, capsys):
    lab = tmp_path / "lab.astral"
    lab.write_text(LAB, encoding="utf-8")
    rows = [_row("r020", id="ours", system="our lab"),
            _row("r020", id="mine", system="Lab SU", gpu="whatever"), _row("r117"), _row("r020")]
    path = _write(tmp_path, rows)
    code, out, _ = call(["runs", str(path), "--format", "json"], capsys)
    plain = {r["id"]: r for r in json.loads(out)["rows"]}
    code, out, _ = call(["runs", str(path), "--gpu-file", str(lab), "--format", "json"], capsys)
    doc = json.loads(out)
    # no W400 (a systems file has no site); the stdlib rack's assumed 4 hosts (W216)
    assert code == 0 and [d["code"] for d in doc["diagnostics"]] == ["W216"]
    own = {r["id"]: r for r in doc["rows"]}
    # by its `system` cell (the block's name), then by its `gpu` cell (an H100 matches)
    assert own["mine"]["system"] == "Lab_SU" and own["ours"]["system"] == "Lab_SU"
    assert plain["ours"]["system"] == "DGX-H100"
    assert own["mine"]["forecast"] == own["ours"]["forecast"] == plain["ours"]["forecast"]
    # a GB200 row matches no block of the file, and a row whose `system` names the stdlib's
    # DGX-H100 (the published r020) keeps it: the stdlib's
    assert own["r117"]["system"] == "DGX-GB200" and own["r020"]["system"] == "DGX-H100"
    assert own["r117"]["forecast"] == plain["r117"]["forecast"]


def test_gpu_file_rows_that_cannot_run_on_it_say_why(tmp_path, capsys):
    two = tmp_path / "two.astral"
    two.write_text("import stdlib.systems { DGX_H100_Rack, NDR_Fabric }\n"
                   "block A_SU { racks = 8 x DGX_H100_Rack }\n"
                   "block B_SU { racks = 4 x DGX_H100_Rack }\n"
                   "fabric F1 = NDR_Fabric\nfabric F2 = NDR_Fabric\n", encoding="utf-8")
    path = _write(tmp_path, [_row("r020", system="lab"), _row("r020", id="a", system="A_SU")])
    code, out, _ = call(["runs", str(path), "--gpu-file", str(two), "--format", "json"], capsys)
    by = {r["id"]: r for r in json.loads(out)["rows"]}
    assert code == 0
    assert by["r020"]["field"] == "system" and "matches the blocks A_SU, B_SU" in \
        by["r020"]["reason"]
    assert by["a"]["field"] == "system" and "several fabrics (F1, F2) and none is named " \
        "`A_Fabric`" in by["a"]["reason"]


def test_gpu_file_blocks_whose_names_differ_in_case_alone_are_told_apart(tmp_path, capsys):
    """`Lab_SU` (1 rack) and `LAB_SU` (8): a row naming LAB_SU ran on Lab_SU, the first whose
    name matched without case and punctuation, and said nothing."""
    two = tmp_path / "two.astral"
    two.write_text("import stdlib.systems { DGX_H100_Rack, NDR_Fabric }\n"
                   "block Lab_SU { racks = 1 x DGX_H100_Rack }\n"
                   "block LAB_SU { racks = 8 x DGX_H100_Rack }\n"
                   "fabric Lab_Fabric = NDR_Fabric\n", encoding="utf-8")
    path = _write(tmp_path, [_row("r020", id=cell, system=cell)
                             for cell in ("LAB_SU", "Lab_SU", "lab-su")])
    code, out, _ = call(["runs", str(path), "--gpu-file", str(two), "--format", "json"], capsys)
    by = {r["id"]: r for r in json.loads(out)["rows"]}
    assert code == 0
    assert by["LAB_SU"]["system"] == "LAB_SU" and by["Lab_SU"]["system"] == "Lab_SU"
    assert by["lab-su"]["status"] == "not_expressible" and by["lab-su"]["field"] == "system"
    assert by["lab-su"]["reason"] == (
        "system `lab-su` matches the blocks Lab_SU, LAB_SU of the --gpu-file (names are "
        "compared without case and punctuation): give their names apart")


def test_gpu_file_errors(tmp_path, capsys):
    path = _write(tmp_path, [_row("r020")])
    empty = tmp_path / "empty.astral"
    empty.write_text("import stdlib.hardware { H100_SXM }\nrack R { }\n", encoding="utf-8")
    code, out, _ = call(["runs", str(path), "--gpu-file", str(empty), "--color", "never"],
                        capsys)
    assert code == 1 and "error[E767]" in out and "empty.astral:1:1" in out and "hint" in out
    bad = tmp_path / "bad.astral"
    bad.write_text("block B { racks = 8 x Nope }\n", encoding="utf-8")
    code, out, _ = call(["runs", str(path), "--gpu-file", str(bad), "--format", "json"], capsys)
    assert code == 1 and [d["code"] for d in json.loads(out)["diagnostics"]] == ["E200"]
    code, out, _ = call(["runs", str(path), "--gpu-file", str(tmp_path / "no.astral")], capsys)
    assert code == 2 and "E100" in out


def test_runs_reads_a_bad_calibration_as_a_usage_error(tmp_path, capsys):
    path = _write(tmp_path, [_row("n1_7b")])
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": 1}', encoding="utf-8")
    code, _, err = call(["runs", str(path), "--calibration", str(bad)], capsys)
    assert code == 2 and "--calibration" in err and "not a calibration fit" in err
    assert shipped() is not None


def test_an_over_long_cell_is_e766_with_its_limit():
    """Python's csv stops at a cell over its field limit; the hint had said to quote commas."""
    import csv as _csv_module

    rows = [_row("k22b_full", notes="x" * (_csv_module.field_size_limit() + 1))]
    (d,) = parse_table(_csv(rows), "t.csv").diagnostics
    assert d.code == "E766" and "field limit" in d.message
    assert d.hint.startswith(f"a cell holds at most {_csv_module.field_size_limit():,} characters")


def test_nemo_25_07_mxfp8_rows_gather_their_weights_after_the_step():
    """NeMo 25.07's performance scripts run MXFP8 with `reuse_grad_buf_for_mxfp8_param_ag` and
    `overlap_param_gather = False` (nemo_toolkit 2.4.0 scripts/performance/helpers.py,
    set_precision_configs), as Megatron-Core 0.13.0 requires (distributed_data_parallel.py
    551-554): the distributed optimizer all-gathers the 16-bit weights after the step
    (runs/stacks.py MXFP8_GATHER_AFTER_STEP). So r187, r189 and r193 (25.07, "FP8 alt" on
    GB200) read no gather overlap; the same release's current-scaling row (r188, under FSDP, no
    such gather), r189 as 25.11 (Megatron-Bridge's scripts keep it overlapped) and r189 in BF16
    keep theirs.
    By hand, r187 (Llama 3 8B, TP 1, PP 1, DP 8) gathers every parameter in 2 bytes after the
    step: embedding and head 2 x 128,256 x 4,096 = 1,050.67 M, 32 layers of 2 x 4,096^2 +
    2 x 4,096 x 1,024 + 3 x 4,096 x 14,336 linear weights and 4 x 4,096 of norms (Seer's count,
    params.layer_params) = 218.12 M each, 6,979.85 M: 8,030.52 M parameters, 16.06 GB, all of
    it after the optimizer in the step."""
    from astral_dsl.seer import comm
    from astral_dsl.seer.forecast import run

    rows = [_row("r187"), _row("r189"), _row("r193"), _row("r188"),
            _row("r189", id="bridge", source_version="NeMo 25.11 container (Megatron-Bridge)"),
            _row("r189", id="bf16", precision="BF16")]
    prepared = {p.row.id: p for p in prepare(parse_table(_csv(rows), "t.csv"))}
    assert {i: prepared[i].spec.overlap_param_gather for i in prepared} == {
        "r187": False, "r189": False, "r193": False, "r188": False, "bridge": True,
        "bf16": True}
    assert [prepared[i].spec.parallel.zero for i in ("r187", "r189", "r193")] == [1, 1, 1]
    assert any("after the optimizer step" in a for a in prepared["r189"].expressed.assumed)
    assert not any("after the optimizer step" in a
                   for a in prepared["bridge"].expressed.assumed)
    p = prepared["r187"]
    fc = run(p.spec, p.gpu, p.net)
    low = fc.lowering
    gather = low.at(0).param_gather(low.stage_split(0), low.stage_linear(0))
    assert low.stage_params(0) == pytest.approx(8030.52e6, rel=1e-5)
    assert gather == pytest.approx(comm.all_gather(p.net, low.groups["dp"], 2 * 8030.52e6),
                                   rel=1e-5)
    assert fc.breakdown["dp_comm"] >= gather
    overlapped = run(p.spec.with_(overlap_param_gather=True), p.gpu, p.net)
    assert fc.iteration_time > overlapped.iteration_time


def test_nemo_25_09_mxfp8_twins_gather_their_weights_after_the_step():
    """NeMo 25.09's rows ran NeMo 2.x's performance scripts (runs/releases.py
    BRIDGE_SCRIPTS_FROM), and those of nemo_toolkit 2.5.0 and 2.5.3 (scripts/performance/
    helpers.py, set_precision_configs) still turn `overlap_param_gather` off for every MXFP8 run,
    whatever Megatron-Core 0.14.0 could overlap: so Llama 3 8B's "FP8 alt" twins on GB200 and
    B200 (r141, r153: MXFP8, DP 8) gather their 16-bit weights after the optimizer step, exposed,
    while the same release's current-scaling twins (r140, r152) and NeMo 25.11's MXFP8 twins
    (r118, r127: Megatron-Bridge's scripts) keep the gather overlapped. The exposed gather is
    every parameter in 2 bytes (8,030.52 M: test above), over the 8 GPUs' DP group."""
    from astral_dsl.seer import comm
    from astral_dsl.seer.forecast import run

    ids = ("r141", "r153", "r140", "r152", "r118", "r127")
    prepared = {p.row.id: p for p in prepare(parse_table(_csv([_row(i) for i in ids]),
                                                          "t.csv"))}
    assert {i: prepared[i].spec.overlap_param_gather for i in ids} == {
        "r141": False, "r153": False, "r140": True, "r152": True, "r118": True, "r127": True}
    assert any("25.09's scripts" in a for a in prepared["r141"].expressed.assumed)
    p = prepared["r141"]
    fc = run(p.spec, p.gpu, p.net)
    overlapped = run(p.spec.with_(overlap_param_gather=True), p.gpu, p.net)
    gather = comm.all_gather(p.net, fc.lowering.groups["dp"], 2 * 8030.52e6)
    # overlapped, all but the last bucket's share hides behind the first forward
    assert 0.8 * gather < fc.iteration_time - overlapped.iteration_time <= gather
    assert fc.breakdown["dp_comm"] >= gather


def test_a_row_whose_gpus_need_a_design_too_large_blames_its_gpus(tmp_path, capsys):
    # two blocks of 992 million GPUs for a run of 10^9: E405 was blamed on the `model` column
    huge = tmp_path / "huge.astral"
    huge.write_text(LAB.replace("8 x DGX_H100_Rack", "31_000_000 x DGX_H100_Rack"),
                    encoding="utf-8")
    path = _write(tmp_path, [_row("r020", id="big", system="Lab_SU", gpus="1000000000",
                                  gbs="1000000000")])
    code, out, _ = call(["runs", str(path), "--gpu-file", str(huge), "--format", "json"], capsys)
    (row,) = json.loads(out)["rows"]
    assert (row["status"], row["field"]) == ("not_expressible", "gpus"), row
    assert row["reason"].startswith("E405: site `Cluster` holds 1,984,000,000 GPUs"), row


@pytest.mark.parametrize("cells, field", [
    ({"model_tflops_per_gpu": "1000000", "step_time_s": ""}, "model_tflops_per_gpu"),
    ({"step_time_s": "0.001"}, "step_time_s"),
    ({"tokens_per_s_per_gpu": "10000000", "step_time_s": ""}, "tokens_per_s_per_gpu")])
def test_a_figure_beyond_the_gpus_peak_is_not_scored(cells, field):
    """A row published at more model FLOP/s per GPU than the GPU's highest dense peak cannot be
    (an A100 at 1,000,000 TFLOP/s was scored at -100 % and fitted on): not expressible, at its
    cell, saying how far beyond; the shipped tables' rows reach at most 56 % of it."""
    rows = [_row("k22b_full"), _row("k22b_full", id="fast", **cells)]
    prepared = {p.row.id: p for p in prepare(parse_table(_csv(rows), "t.csv"))}
    assert prepared["k22b_full"].status == "ok"
    p = prepared["fast"]
    assert (p.status, p.field) == ("not_expressible", field), p.reason
    assert "of the A100_80GB's highest dense peak (312 TFLOP/s): no run computes faster than " \
           "its GPUs" in p.reason


def test_no_shipped_row_is_beyond_its_gpus_peak():
    assert not [p.row.id for table in (A100, MODERN)
                for p in prepare(parse_table(_csv(table), "t.csv"))
                if "dense peak" in (p.reason or "")]


def test_a_number_beyond_a_float_is_too_large_not_said_not_finite():
    """A cell of 400 nines or `1e400` (finite numbers that float() reads as inf) was "not a
    finite number", as `inf` is; it is too large to represent, as the language says (E106)."""
    rows = [_row("k22b_full", id="nines", gpus="9" * 400), _row("k22b_full", id="exp",
                                                             step_time_s="-1e400"),
            _row("k22b_full", id="inf", step_time_s="-Infinity")]
    t = parse_table(_csv(rows), "t.csv")
    assert [r.problems for r in t.runs] == [
        (("gpus", "999999999999999999999999999...9999999999 is too large to represent (beyond "
                  "about 1.8e308)"),),
        (("step_time_s", "-1e400 is too large to represent (beyond about 1.8e308)"),),
        (("step_time_s", "-Infinity is not a finite number"),)]
    assert [(d.code, d.span.start.line) for d in t.rejected] == [("E777", 2), ("E777", 3),
                                                                  ("E777", 4)]
