"""Hostile inputs beside the design text: JSON files a command is given or a design names, an
inventory built to blow up, a repository's revision built to fill the memory, a buffer past the
file cap. Each must be refused with a message or a diagnostic (never E000, never a traceback),
within bounded memory."""
from __future__ import annotations

import pytest

from clirun import REPO, astral

TUTORIAL = REPO / "examples" / "tutorial_rack.astral"
# nested past the interpreter's recursion limit (1,000 by default): json.loads raises
# RecursionError, not ValueError
DEEP = "[" * 100_000 + "]" * 100_000


def _no_internal_error(proc) -> None:
    out = proc.stdout + proc.stderr
    assert "E000" not in out and "Traceback" not in out and "RecursionError" not in out, out


# ---- JSON nested past the parser's depth -----------------------------------------------------
OPTIONS = [
    ("--baseline", ["check", str(TUTORIAL)]),
    # the fit is read before the table: the table need not exist
    ("--calibration", ["runs", "{tmp}/runs.csv"]),
    ("--highlight", ["render", str(TUTORIAL), "-o", "{tmp}/x.svg", "--view", "rack"]),
    ("--diagnosis", ["report", str(TUTORIAL), "-o", "{tmp}/x.html"]),
]


@pytest.mark.parametrize("option, command", OPTIONS)
def test_a_deeply_nested_json_option_is_a_usage_error(tmp_path, option, command):
    deep = tmp_path / "deep.json"
    deep.write_text(DEEP)
    args = [a.replace("{tmp}", str(tmp_path)) for a in command] + [option, str(deep)]
    proc = astral(*args, "--color", "never")
    _no_internal_error(proc)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{option}: " in proc.stderr and "nested too deeply" in proc.stderr, proc.stderr


@pytest.mark.parametrize("option, command", OPTIONS)
@pytest.mark.parametrize("what", ["device", "large"])
def test_a_json_option_that_is_a_device_or_too_large_is_a_usage_error(tmp_path, monkeypatch,
                                                                       option, command, what):
    """A FIFO given as a JSON option blocked the command; `/dev/zero` (or a link to it, as a
    repository may hold) filled the memory (E000). /dev/null stands for them here (its read
    ends: it was "not JSON"); a file past jsonin.MAX_BYTES (10 bytes here) is refused by its
    size before it is read."""
    from astral_dsl import jsonin

    path = tmp_path / "doc.json"
    if what == "device":
        path.symlink_to("/dev/null")
        said = "not a regular file (a FIFO, device or socket)"
    else:
        monkeypatch.setattr(jsonin, "MAX_BYTES", 10)
        path.write_text("[1, 2, 3, 4]")                   # 12 bytes
        said = "larger than 10 bytes"
    args = [a.replace("{tmp}", str(tmp_path)) for a in command] + [option, str(path)]
    proc = astral(*args, "--color", "never")
    _no_internal_error(proc)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{option}" in proc.stderr and said in proc.stderr, proc.stderr


# a 400-digit integer was an int float() could not take: a fit's constant of it or a suspect's
# probability was E000 (OverflowError) in forecast/runs, report --diagnosis and render
# --highlight; NaN and 1e400 (an infinity) were read as numbers, and a diagnosis of NaNs was
# drawn as "nan of nan hosts"
@pytest.mark.parametrize("number, said", [
    ("1" + "0" * 400, "the number 100000000000...000000 (401 characters) is too large"),
    ("-1e400", "the number -1e400 is too large: at most about 1.8e308"),
    ("NaN", "`NaN` is not a number JSON has (RFC 8259)"),
    ("-Infinity", "`-Infinity` is not a number JSON has (RFC 8259)"),
])
@pytest.mark.parametrize("option, command", OPTIONS)
def test_a_json_option_with_a_number_no_float_holds_is_a_usage_error(tmp_path, option, command,
                                                                     number, said):
    import json

    from astral_dsl.seer.calibration import shipped_document

    doc = tmp_path / "doc.json"
    if option == "--calibration":
        fit = shipped_document()
        fit["constants"]["gemm_eff"] = 0.5
        doc.write_text(json.dumps(fit).replace("0.5", number, 1))
    else:
        text = json.dumps({"diagnosis_version": 1, "astral_baseline": 1, "accepted": [],
                           "suspects": [{"kind": "gpu", "path": "R.hosts[0].gpus[0]",
                                         "parts": ["R.hosts[0].gpus[0]"], "probability": 0.5}]})
        doc.write_text(text.replace("0.5", number))
    args = [a.replace("{tmp}", str(tmp_path)) for a in command] + [option, str(doc)]
    proc = astral(*args, "--color", "never")
    _no_internal_error(proc)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{option}" in proc.stderr and said in proc.stderr, proc.stderr


@pytest.mark.parametrize("suspect, said", [
    ({"kind": "nic port", "path": "R.hosts[0]", "parts": [1, 2]},
     "suspect 1: `parts` is not a list of part names (strings)"),
    ({"kind": "nic port", "path": "R.hosts[0]", "parts": True},
     "suspect 1: `parts` is not a list of part names (strings)"),
    ({"kind": "switch", "path": ["R"]}, "suspect 1: `path` is not a part's name (a string)"),
    ({"kind": "switch", "path": 7}, "suspect 1: `path` is not a part's name (a string)"),
    ({"kind": "tier", "path": "R", "tied": [None, "x"]},
     "suspect 1: `tied` is not a list of part names (strings)"),
    ({"kind": 5, "path": "R"}, "suspect 1: `kind` is not a string"),
    ("R.hosts[0]", "suspect 1: not an object"),
])
def test_a_highlight_of_suspects_of_the_wrong_types_is_a_usage_error(tmp_path, suspect, said):
    """A diagnosis edited by hand: a `parts` of numbers or a `path` that is a list was E000
    (`'int' object has no attribute 'startswith'`) in `astral render --highlight`; found by
    mutating each field of a real diagnosis (report --diagnosis already refused them)."""
    import json

    doc = tmp_path / "diagnosis.json"
    doc.write_text(json.dumps({"suspects": [suspect]}))
    proc = astral("render", str(TUTORIAL), "--view", "rack", "-o", str(tmp_path / "x.svg"),
                  "--highlight", str(doc), "--color", "never")
    _no_internal_error(proc)
    assert proc.returncode == 2 and not (tmp_path / "x.svg").exists()
    assert f"--highlight: `{doc}`: {said} (schema/diagnosis.schema.json" in proc.stderr, \
        proc.stderr


def test_a_diagnosis_of_a_job_the_design_does_not_declare_is_a_usage_error(tmp_path):
    """`astral report tutorial_rack.astral --diagnosis d.json`, d.json a diagnosis of another
    design's job, wrote a page saying "The design declares no job" above that job's verdict and
    suspects as the design's own."""
    tiny = REPO / "tests" / "fixtures" / "diagnose" / "tiny.astral"
    drill, diagnosis = tmp_path / "drill.csv", tmp_path / "d.json"
    assert astral("synth", str(tiny), "-o", str(drill)).returncode == 0
    assert astral("diagnose", str(tiny), "--observed", str(drill), "-o",
                  str(diagnosis)).returncode == 0
    proc = astral("report", str(TUTORIAL), "-o", str(tmp_path / "r.html"), "--diagnosis",
                  str(diagnosis), "--color", "never")
    _no_internal_error(proc)
    assert proc.returncode == 2 and not (tmp_path / "r.html").exists()
    assert proc.stderr == (f"astral: error: --diagnosis: `{diagnosis}` diagnoses job `two`, "
                           f"which {TUTORIAL} does not declare (it declares no job): a "
                           f"diagnosis of another design\n")
    proc = astral("report", str(tiny), "-o", str(tmp_path / "r.html"), "--diagnosis",
                  str(diagnosis), "--color", "never")
    assert proc.returncode == 0 and (tmp_path / "r.html").exists(), proc.stderr


def test_a_runs_table_that_is_a_device_is_e766(tmp_path):
    """`astral runs` on a FIFO blocked; on a device it read 64 MiB (/dev/null: an empty table)."""
    from astral_dsl.runs.table import read_table

    path = tmp_path / "runs.csv"
    path.symlink_to("/dev/null")
    (d,) = read_table(path).diagnostics
    assert d.code == "E766"
    assert d.message == "cannot read the runs table: not a regular file (a FIFO, device or socket)"


def test_a_deeply_nested_inventory_is_e230(tmp_path):
    (tmp_path / "astral.toml").write_text("")
    (tmp_path / "fleet.json").write_text(DEEP)
    design = tmp_path / "d.astral"
    design.write_text(TUTORIAL.read_text(encoding="utf-8")
                      + '\ninventory Fleet {\n  file = "fleet.json"\n}\n')
    proc = astral("check", "--color", "never", str(design))
    _no_internal_error(proc)
    assert proc.returncode == 1
    assert "error[E230]: the inventory `fleet.json` cannot be read: it is not JSON (arrays or " \
           "objects nested too deeply to read" in proc.stdout, proc.stdout


# ---- a NetBox inventory's nesting ------------------------------------------------------------
def test_a_json_inventorys_column_names_are_bounded():
    """Every leaf's column name is its chain of keys: unbounded, 500 levels each holding a leaf
    and a nested object under 8,000-character keys (an 8 MB file) made ~1 GB of names (8,000 x
    500^2 / 2 characters). A name past MAX_COLUMN is not a column, nor anything under it."""
    from astral_dsl.analyses.fleet import MAX_COLUMN, rows_of

    k = "k" * 300                                       # > MAX_COLUMN (256) on its own
    level = '{"name": "x", "L' + k + '": 1, "D' + k + '": '
    doc = '{"results": [' + level * 200 + "1" + "}" * 200 + "]}"
    rows, bad, lines = rows_of(doc.encode(), "fleet.json")
    assert bad is None and not lines and len(rows) == 1
    assert rows[0].values == {"name": "x"}              # both long keys of level 0 left out
    # a short chain is read in full, however deep: 100 levels of `a.` is 200 characters
    deep = '{"results": [{"name": "y", ' + '"a": {' * 100 + '"v": 7' + "}" * 100 + "}]}"
    rows, bad, _ = rows_of(deep.encode(), "fleet.json")
    assert bad is None and rows[0].values == {"name": "y", "a." * 100 + "v": "7"}
    assert len("a." * 100 + "v") <= MAX_COLUMN


def test_e234_lists_at_most_twenty_columns():
    from astral_dsl.analyses.fleet import bind, rows_of

    header = ",".join(f"c{i:02d}" for i in range(25))   # no `name` column
    rows, bad, lines = rows_of((header + "\n" + ",".join("v" * 25) + "\n").encode(), "f.csv")
    assert bad is None
    (d,) = bind(rows, "f.csv", lines, {"name": "name", "path": None, "serial": "serial",
                                       "asset_tag": "asset_tag"}, {}, {}, (), None).diagnostics
    assert d.code == "E234" and d.message == "the inventory `f.csv` has no column `name`"
    # sorted: c00 .. c19 shown, c20 .. c24 counted
    assert d.hint == ("its columns: " + ", ".join(f"`c{i:02d}`" for i in range(20))
                      + " and 5 more; say which to read in `columns { ... }`"), d.hint


def test_rows_of_another_fleet_are_said_twenty_at_a_time():
    """An 8 MB inventory of 1,000,000 rows that name no part printed as many W231s (45 s, 979 MB):
    the first ROWS_SAID (20) of each code stand at their rows, the rest are one diagnostic at
    the first of them that counts them. Here 25 foreign rows (lines 2-26) and 22 second rows of
    part `a` (its first at line 27; seconds at lines 28-49)."""
    from astral_dsl.analyses.fleet import ROWS_SAID, bind, rows_of

    text = "name\n" + "".join(f"x{i}\n" for i in range(25)) + "a\n" * 23
    rows, bad, lines = rows_of(text.encode(), "f.csv")
    assert bad is None and len(rows) == 48
    diags = bind(rows, "f.csv", lines, {"name": "name", "path": None, "serial": "serial",
                                        "asset_tag": "asset_tag"},
                 {"S.a": ("host", "a")}, {"a": "S.a"}, (), None).diagnostics
    assert ROWS_SAID == 20
    w231 = [d for d in diags if d.code == "W231"]
    e233 = [d for d in diags if d.code == "E233"]
    # W231: lines 2-21 one by one, then 25 - 20 = 5 from line 22
    assert [d.span.start.line for d in w231] == list(range(2, 22)) + [22]
    assert w231[-1].message == "5 more inventory rows, from line 22, name no part of the " \
                               "design (the first 20 are said one by one)"
    # E233: lines 28-47 one by one, then 22 - 20 = 2 from line 48
    assert [d.span.start.line for d in e233] == list(range(28, 48)) + [48]
    assert e233[-1].message == "2 more inventory rows, from line 48, for parts that have a " \
                               "row already (the first 20 are said one by one)"
    assert e233[-1].is_error and "remove one of the rows" in e233[-1].hint


def test_the_designs_data_files_are_bounded_together(tmp_path, monkeypatch):
    """An `inventory` each over hard links to one 8 MiB file cost 4 s of CPU each, without
    bound. At a limit of 100 bytes: a.csv (57 bytes) and b.csv (57) pass it together, so b's
    inventory is E230; a third naming a.csv again costs nothing more."""
    from astral_dsl.semantics import modules

    monkeypatch.setattr(modules, "MAX_DATA_BYTES", 100)
    (tmp_path / "astral.toml").write_text("")
    for name in ("a", "b"):
        (tmp_path / f"{name}.csv").write_text("name,serial\n" + "".join(
            f"S.hosts[{i}],SN{i}\n" for i in range(3)))          # 12 + 3 x 15 = 57 bytes
    main = tmp_path / "main.astral"
    main.write_text(
        "gpu G { power = 700 W }\nhost H { gpus = 8 x G, power = 10 kW }\n"
        "site S { hosts = 3 x H }\n"
        'inventory A { file = "a.csv" }\ninventory B { file = "b.csv" }\n'
        'inventory C { file = "a.csv" }\n')
    from astral_dsl.pipeline import devices
    from astral_dsl.workspace import Workspace

    ws = Workspace.open(main)
    _, diags = devices(ws, ws.design)
    codes = [(d.code, d.span.start.line) for d in diags if d.is_error]
    # 57 + 57 = 114 > 100: inventory B's `file` (line 5); C reads a.csv again
    assert ("E230", 5) in codes
    e230 = next(d for d in diags if d.code == "E230")
    assert e230.message.endswith("cannot be read: with the data files read before it, 114 "
                                 "bytes, past the limit of 100 bytes for one design")
    assert [c for c in codes if c[0] == "E230"] == [("E230", 5)]


# ---- a text past the file cap ----------------------------------------------------------------
def test_a_text_past_the_file_cap_is_e108():
    from astral_dsl import api
    from astral_dsl.semantics.source_files import MAX_SOURCE_BYTES

    text = "site S { }\n// " + "x" * MAX_SOURCE_BYTES + "\n"          # 8 MiB + 11 + 3 + 1 bytes
    (d,) = api.loads(text).diagnostics
    assert (d.code, d.span, d.file) == ("E108", None, "<string>")
    assert d.message == f"`<string>` is too large to compile ({MAX_SOURCE_BYTES + 15:,} bytes; " \
                        "the limit is 8 MiB)"
    assert api.loads(text[:MAX_SOURCE_BYTES]).diagnostics == ()       # at the cap: compiled


# ---- the snippet of a diagnostic's file ------------------------------------------------------
def test_a_diagnostics_snippet_reads_no_fifo_and_no_file_past_the_cap(tmp_path):
    """print_diagnostics shows the source line from the file named by the span, read again when
    printed: read as the compiler reads a source, a FIFO put where the file was does not block
    (open() of a FIFO waits for a writer) and a file grown past the 8 MiB cap is not read."""
    import io
    import os
    import threading

    from astral_dsl.cli.common import print_diagnostics
    from astral_dsl.diagnostics import Diagnostic, Severity, Span

    fifo = tmp_path / "design.astral"
    os.mkfifo(fifo)
    big = tmp_path / "big.astral"
    with open(big, "wb") as fh:
        fh.write(b"let a = 1\n")
        fh.truncate(9 * 1024 * 1024)            # sparse: 9 MiB past the 8 MiB cap
    out = io.StringIO()
    diags = [Diagnostic("E301", Severity.ERROR, "bad", Span.at(str(f), 1, 1), None)
             for f in (fifo, big)]
    t = threading.Thread(target=print_diagnostics, args=(diags, False, out), daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "blocked on the FIFO"
    text = out.getvalue()
    assert text.count("error[E301]") == 2 and "let a = 1" not in text


# ---- device names put beside the paths in a message ------------------------------------------
def test_names_beside_paths_cost_linear_time_in_a_long_message():
    """`annotate` runs on every diagnostic of a design that names its parts, and a check's
    message is the design's string (up to 2^20 characters). Its search for paths was tried from
    every letter of a run with no `.` or `[` after it, each scanning to the run's end: 60,000
    letters in a check message took 35 s of CPU in `astral check`, 100,000 take about 90 s.
    Now a path starts only where its run of word characters does (digits before it kept)."""
    import time

    from astral_dsl.analyses.devices import Devices, annotate
    from astral_dsl.analyses.fleet import Device

    devices = Devices({p: Device(p, "rack", n) for p, n in
                       (("C.r[0]", "r0"), ("C.r[0].h[1]", "h1"), ("C.r[10]", "C.r[10]"))})
    # what it does: a name before the longest named prefix, the rest kept after it; a run's
    # leading digits are kept and the path after them named; a part named by its path and a
    # run without a path are left as they are
    assert annotate("see C.r[0].h[1].nics[2], 9C.r[0] (C.r[10]) and aC.r[0] x.y", devices) == \
        "see h1 (C.r[0].h[1]).nics[2], 9r0 (C.r[0]) (C.r[10]) and aC.r[0] x.y"
    for text in ("a" * 100_000, "9" * 50_000 + "a" * 50_000, "C[" + "b" * 100_000):
        start = time.thread_time()
        assert annotate(text, devices) == text
        assert time.thread_time() - start < 5, len(text)         # about 0.01 s


def test_the_longest_named_prefix_looks_up_only_prefixes_as_long_as_a_name():
    """Each lookup slices and hashes its prefix: every prefix of a 1 MB `a.a.a...` path in a
    message (500,000 of them) was hours. Only those no longer than the longest named path are
    looked up now: for `C.r[0]` (6 characters), the whole token, then its prefixes cut before
    a `.` within its first 7 characters: `a.a.a`, `a.a`, `a`."""
    from astral_dsl.analyses.devices import Devices, longest

    class Counting(dict):
        looked = 0

        def __contains__(self, key):
            Counting.looked += 1
            return dict.__contains__(self, key)

    known = Counting({"C.r[0]": None})
    devices = Devices(known)
    assert devices.longest_path == 6
    assert longest("a." * 500_000, known, devices.longest_path) is None
    assert Counting.looked == 4               # 1 + 3, not 1 + 500,000
    assert longest("C.r[0].h[1]" + ".x" * 1000, known, devices.longest_path) == "C.r[0]"


def test_a_json_option_with_a_utf8_bom_is_read(tmp_path):
    """A diagnosis, fit or baseline saved by a Windows editor starts with a UTF-8 BOM, which
    RFC 8259 lets a reader ignore (and astral's readers of tables, rank logs and traces do):
    it was "not JSON (Unexpected UTF-8 BOM (decode using utf-8-sig))", Python's advice."""
    from astral_dsl import jsonin

    doc = tmp_path / "diagnosis.json"
    doc.write_bytes(b'\xef\xbb\xbf{"suspects": []}')
    assert jsonin.load_path(doc) == {"suspects": []}
    proc = astral("render", str(TUTORIAL), "-o", str(tmp_path / "x.svg"), "--view", "rack",
                  "--highlight", str(doc), "--color", "never")
    assert proc.returncode == 0 and "0 of 0 suspect(s) drawn" in proc.stdout, proc.stderr
    doc.write_bytes(b'\xef\xbb\xbf\xef\xbb\xbf{}')          # one BOM is dropped, not two
    with pytest.raises(ValueError, match="Unexpected UTF-8 BOM"):
        jsonin.load_path(doc)


def test_a_name_of_a_million_characters_is_not_echoed_whole(tmp_path):
    """An unknown name of 1,000,000 characters was said whole in the message and again in
    its hint (4 MB of output for a 1 MB line): a message or hint is at most MAX_TEXT
    characters, its start and end around `...`."""
    import astral_dsl
    from astral_dsl.diagnostics.diagnostic import MAX_TEXT

    name = "a" * 1_000_000
    (d,) = astral_dsl.loads(f"let x = {name}\n").diagnostics
    assert d.code == "E200" and (d.span.start.line, d.span.start.column) == (1, 9)
    assert len(d.message) == MAX_TEXT and d.message.startswith("unknown name `aaa")
    assert "..." in d.message and d.message.endswith("aaa`")
    assert len(d.hint) == MAX_TEXT and d.hint.startswith("nothing named `aaa")
    (path := tmp_path / "long.astral").write_text(f"let x = {name}\n")
    proc = astral("check", str(path), "--color", "never")
    assert proc.returncode == 1 and len(proc.stdout) < 3 * MAX_TEXT, len(proc.stdout)
    short = astral_dsl.loads("let x = y\n").diagnostics[0]
    assert short.message == "unknown name `y`"               # a message of its own length


def test_an_import_of_a_name_past_the_file_system_s_limit_is_e100(tmp_path):
    """`import aaa...(a million) { x }`: the file's name past the file system's limit raised
    OSError (ENAMETOOLONG) from the module's lookup: an internal error (E000)."""
    for dotted in ("a" * 1_000_000, ".".join(["b" * 200] * 30)):
        path = tmp_path / "main.astral"
        path.write_text(f"import {dotted} {{ x }}\n")
        proc = astral("check", str(path), "--color", "never")
        _no_internal_error(proc)
        assert proc.returncode == 2 and proc.stdout.startswith(     # unreadable, as E100 is
            "error[E100]: cannot read module `"), proc.stdout[:300]
        assert " --> " in proc.stdout and "main.astral:1:8" in proc.stdout
        assert "= hint: a module's path names a .astral file: check the import's names" in \
            proc.stdout


def test_a_suspect_of_a_long_name_is_cut_in_the_picture(tmp_path):
    """A diagnosis's `path` and `kind` are any text: a suspect named by 20,000 characters went
    whole into the legend ("not in this picture: ..."), a label `dot` refused (E000), and at
    60,000 `dot` stopped reading its input, which the command took for its own reader gone:
    exit 0, nothing written, nothing said. Its label is cut now (SUSPECT_CHARS)."""
    import json

    from astral_dsl.outputs.render.context import SUSPECT_CHARS

    for suspect in ({"kind": "gpu", "path": "x." * 10_000},
                    {"kind": "gpu", "path": "x." * 30_000},
                    {"kind": "k" * 60_000, "path": "Tutorial.racks[0].hosts[0].gpus[3]"}):
        doc, out = tmp_path / "diagnosis.json", tmp_path / "x.svg"
        doc.write_text(json.dumps({"suspects": [suspect]}))
        proc = astral("render", str(TUTORIAL), "--view", "rack", "-o", str(out),
                      "--highlight", str(doc), "--color", "never")
        _no_internal_error(proc)
        assert proc.returncode == 0 and "suspect(s) drawn" in proc.stdout, proc.stderr
        svg = out.read_text(encoding="utf-8")
        if "0 of 1 suspect(s) drawn" in proc.stdout:        # named in the legend, cut
            assert "not in this picture: suspect 1: gpu x.x.x." in svg
        assert "x." * SUSPECT_CHARS not in svg and "k" * SUSPECT_CHARS not in svg
        out.unlink()
