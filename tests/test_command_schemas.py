"""The JSON documents of `astral size`, `sweep`, `search`, `forecast` and `runs` validate against
their schemas (schema/NAME.schema.json, printed by `astral NAME --schema`): a real document of
each, the `--format jsonl` lines of sweep and search, a design that does not compile, a file
that cannot be read, a usage error and an internal error (E000). Each forecast carries its
`calibration` (regime, inside, band): a document without it does not validate. Before, none of
the five commands had a schema, nor a `--schema`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from clirun import astral
from test_envelope import H100
from test_envelope_schemas import schema_validator

REPO = Path(__file__).resolve().parents[1]
COMMANDS = ("size", "sweep", "search", "forecast", "runs")

# a job of 16 H100s on one scalable unit: each command runs it in a fraction of a second
LAB = H100 % "bf16" + "scenario hot { set Lab.utilization = 50 % }\n"
# the command's own arguments after FILE, where it needs some
EXTRA = {"sweep": ("--grid", "n=1,2", "--job", "train", "--workers", "1"),
         "search": ("--top", "2", "--workers", "1")}


@pytest.fixture(scope="module")
def schemas():
    return {name: schema_validator(name, name) for name in COMMANDS}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("command_schemas")
    (root / "lab.astral").write_text(LAB, encoding="utf-8")
    (root / "broken.astral").write_text("param n = 1\nsite S {", encoding="utf-8")
    # two rows of the shipped runs table: r117 is forecast (Llama 3 8B on 8 GB200s), r002
    # cannot be stated (DeepSeek V4 Flash: no layers given, no stdlib model of that name)
    lines = (REPO / "astral_dsl/seer/calibration/modern.csv").read_text(
        encoding="utf-8").splitlines(keepends=True)
    rows = [line for line in lines[1:] if line.startswith(("r002,", "r117,"))]
    assert len(rows) == 2
    (root / "runs.csv").write_text(lines[0] + "".join(rows), encoding="utf-8")
    (root / "bad.csv").write_text("id,gpu\nx,H100\n", encoding="utf-8")
    return root


def _input(command: str, design: str) -> str:
    if command != "runs":
        return design
    return {"lab.astral": "runs.csv", "broken.astral": "bad.csv"}.get(design, design)


@pytest.fixture(scope="module")
def documents(files):
    """Each command's document on the small job (and jsonl lines where it writes them)."""
    out = {}
    for name in COMMANDS:
        proc = astral(name, _input(name, "lab.astral"), *EXTRA.get(name, ()), "--format", "json",
                      cwd=files)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        out[name] = json.loads(proc.stdout)
    for name in ("sweep", "search"):
        proc = astral(name, "lab.astral", *EXTRA[name], "--format", "jsonl", cwd=files)
        assert proc.returncode == 0, proc.stderr
        out[name + "l"] = [json.loads(line) for line in proc.stdout.splitlines()]
    return out


def _errors(validator, doc) -> list:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(doc)]


@pytest.mark.parametrize("name", COMMANDS)
def test_a_document_of_each_command_validates(schemas, documents, name):
    doc = documents[name]
    assert doc["valid"] is True and _errors(schemas[name], doc) == []


@pytest.mark.parametrize("name", ["sweep", "search"])
def test_each_jsonl_line_validates_as_a_row(schemas, documents, name):
    lines = documents[name + "l"]
    assert len(lines) == 2                  # two points of the grid; the top 2
    row = schemas[name].schema["$defs"]["row"]
    for line in lines:
        assert _errors(schemas[name], line) == []
        assert "version" not in line and set(row["required"]) <= set(line)


@pytest.mark.parametrize("name", ["size", "forecast", "sweep"])
def test_a_document_under_a_scenario_validates(schemas, files, name):
    # `scenario`: what it failed and changed (outputs.jsonout.scenario_json; sweep: its name)
    proc = astral(name, "lab.astral", *EXTRA.get(name, ()), "--scenario", "hot", "--format",
                  "json", cwd=files)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and _errors(schemas[name], doc) == []
    if name == "sweep":
        assert doc["scenario"] == "hot" and doc["rows"][0]["scenario_broken"] == []
    else:
        assert doc["scenario"]["changed"] == [{"target": "Lab", "field": "utilization",
                                               "value": "50 %", "kind": "site", "replicas": 1}]


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("what, argv, code", [
    ("does not compile", ("broken.astral",), {1, 2}),        # runs: a table without its columns
    ("cannot be read", ("missing.astral",), {2}),              # E100
    ("usage error", ("lab.astral", "--set", "x"), {2}),
    ("no input", (), {2}),
])
def test_failure_documents_validate(schemas, files, name, what, argv, code):
    argv = tuple(_input(name, a) for a in argv)
    if name == "runs" and "--set" in argv:                     # runs takes no --set
        argv = (argv[0], "--calibration", "missing.json")
    proc = astral(name, *argv, *(EXTRA.get(name, ()) if argv else ()), "--format", "json",
                  cwd=files)
    (line,) = proc.stdout.splitlines()
    doc = json.loads(line)
    assert proc.returncode in code and doc["valid"] is False, (what, proc.stdout)
    assert _errors(schemas[name], doc) == [], (what, doc)
    if what in ("usage error", "no input"):
        assert doc["usage_error"] and doc["diagnostics"] == []
    else:
        assert any(d["severity"] == "error" for d in doc["diagnostics"])


@pytest.mark.parametrize("name", COMMANDS)
def test_an_internal_error_envelope_validates(schemas, files, name, monkeypatch):
    # the E000 envelope as the command writes it: open the design (or read the table) fails
    from astral_dsl.runs import table
    from astral_dsl.workspace import Workspace

    def bug(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(Workspace, "open", bug)
    monkeypatch.setattr(table, "read_table", bug)
    proc = astral(name, _input(name, "lab.astral"), *EXTRA.get(name, ()), "--format", "json",
                  cwd=files)
    (line,) = proc.stdout.splitlines()
    doc = json.loads(line)
    assert proc.returncode == 3 and [d["code"] for d in doc["diagnostics"]] == ["E000"]
    assert _errors(schemas[name], doc) == []


def _without(doc: dict, key: str) -> dict:
    return {k: v for k, v in doc.items() if k != key}


def test_every_forecast_must_carry_its_calibration(schemas, documents):
    # docs/seer.md, README: every forecast carries its regime's band, `calibration`
    fc = documents["forecast"]
    assert set(fc["calibration"]) >= {"regime", "inside", "band"}
    assert _errors(schemas["forecast"], _without(fc, "calibration"))
    for key in ("regime", "inside", "band"):
        assert _errors(schemas["forecast"], dict(fc, calibration=_without(fc["calibration"], key)))
    assert _errors(schemas["forecast"], dict(fc, calibration=None))
    # a ranked configuration of search, a point of sweep with its forecast, a runs row forecast
    search = documents["search"]
    row = search["rows"][0]
    assert _errors(schemas["search"], dict(search, rows=[_without(row, "calibration")]))
    assert _errors(schemas["search"], _without(row, "calibration"))          # a jsonl line
    sweep = documents["sweep"]
    point = sweep["rows"][0]
    assert point["iteration_time_s"] > 0 and point["calibration"]["inside"] is False
    assert _errors(schemas["sweep"], dict(point, calibration=None))
    assert _errors(schemas["sweep"], dict(point, calibration=_without(point["calibration"],
                                                                         "band")))
    runs = documents["runs"]
    ok = next(r for r in runs["rows"] if r["status"] == "ok")
    other = next(r for r in runs["rows"] if r["status"] != "ok")
    assert other["calibration"] is None            # not stated, not forecast: none to carry
    assert _errors(schemas["runs"], dict(runs, rows=[dict(ok, calibration=None), other]))


def test_the_schemas_reject_what_the_docs_do_not_allow(schemas, documents):
    size = documents["size"]
    # a documented key of the summary missing (docs/language.md, section 19.2)
    assert _errors(schemas["size"], dict(size, summary=_without(size["summary"], "facility")))
    # a document that is neither a result nor an error
    assert _errors(schemas["size"], _without(size, "summary"))
    assert _errors(schemas["runs"], dict(documents["runs"], rows=[
        dict(documents["runs"]["rows"][0], status="maybe")]))
    assert _errors(schemas["search"], dict(documents["search"], objective="speed"))


def test_the_search_summary_writes_the_declared_time_with_one_unit(documents):
    # the JSON's `summary` holds the text's lines: a time under a second read "833.5 ms s"
    search = documents["search"]
    t = search["declared"]["iteration_time_s"]
    assert 0.1 < t < 1             # tp8 dp2 on 16 H100s: about 0.83 s
    (line,) = [x for x in search["summary"] if x.startswith("as declared:")]
    assert line == (f"as declared: tp8 pp1 dp2 mb1 selective zero1: {t * 1e3:.1f} ms, "
                    f"{search['declared']['tokens_per_s']:,.0f} tokens/s, "
                    f"MFU {search['declared']['mfu'] * 100:.1f} %")
