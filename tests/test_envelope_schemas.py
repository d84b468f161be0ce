"""The JSON documents of `astral check` and `astral diff` validate against their schemas
(schema/check.schema.json, schema/diff.schema.json, printed by `--schema`): a design, one with
sizing's choices, one whose warnings an `allow` accepts, one that does not compile, a file that
cannot be read, a usage error and an internal error (E000). Before, neither command had a
schema, and `astral export`'s usage-error envelope (docs/language.md, section 19.4) did not
validate against `export --schema` (`design` was required, `file` a string)."""
from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from clirun import astral

REPO = Path(__file__).resolve().parents[1]

GOOD = """\
host H { power = 1 kW }
rack R { hosts = 2 x H }
site S { racks = 1 x R, utilization = 75 % }
allow W626 "a bench rack"
"""


def schema_validator(command: str, name: str):
    """The validator of the schema `astral COMMAND --schema` prints: a valid draft 2020-12
    schema, and schema/NAME.schema.json (shipped with the package)."""
    proc = astral(command, "--schema")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(doc)
    assert doc == json.loads((REPO / "schema" / f"{name}.schema.json").read_text())
    return jsonschema.Draft202012Validator(doc)


@pytest.fixture(scope="module")
def schemas():
    return {name: schema_validator(command, name)
            for name, command in (("check", "check"), ("diff", "diff"), ("design", "export"))}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("envelopes")
    (root / "good.astral").write_text(GOOD, encoding="utf-8")
    (root / "more.astral").write_text(GOOD.replace("2 x H", "3 x H"), encoding="utf-8")
    (root / "broken.astral").write_text("site S {", encoding="utf-8")
    (root / "sized.astral").write_text(GOOD.replace("2 x H", "(? in 1..2) x H"), encoding="utf-8")
    return root


def _documents(*argv, cwd) -> list:
    proc = astral(*argv, "--format", "json", cwd=cwd)
    return [(proc.returncode, json.loads(line)) for line in proc.stdout.splitlines()]


def _errors(validator, doc) -> list:
    return [e.message for e in validator.iter_errors(doc)]


@pytest.mark.parametrize("argv, codes", [
    (("check", "good.astral"), {0}),
    (("check", "sized.astral"), {0}),                                  # `chosen` by sizing
    (("check", "good.astral", "--strict", "broken.astral", "missing.astral"), {1, 2}),
    (("check", "good.astral", "--set", "x"), {2}),                     # usage: `usage_error`
    (("check",), {2}),
])
def test_check_documents_validate(schemas, files, argv, codes):
    docs = _documents(*argv, cwd=files)
    assert docs and {code for code, _ in docs} <= codes
    for _, doc in docs:
        assert _errors(schemas["check"], doc) == [], doc


def test_the_check_schema_holds_the_documented_fields(schemas, files):
    [(_, doc)] = _documents("check", "good.astral", cwd=files)
    assert doc["accepted"][0]["reason"] == "a bench rack"
    [(_, sized)] = _documents("check", "sized.astral", cwd=files)
    assert [(c["path"], c["field"]) for c in sized["chosen"]] == [("S.racks[0]", "hosts")]
    # a document without the command's fields and neither a usage nor an internal error
    assert _errors(schemas["check"], {k: v for k, v in doc.items() if k != "summary"})
    [(_, broken)] = _documents("check", "broken.astral", cwd=files)
    assert broken["summary"] is None and not _errors(schemas["check"], broken)


@pytest.mark.parametrize("argv, code", [
    (("diff", "good.astral", "more.astral"), 0),
    (("diff", "good.astral", "broken.astral"), 1),                     # b does not compile
    (("diff", "good.astral", "missing.astral"), 2),                    # E100 envelope
    (("diff", "good.astral"), 2),                                      # usage
])
def test_diff_documents_validate(schemas, files, argv, code):
    [(returncode, doc)] = _documents(*argv, cwd=files)
    assert returncode == code
    assert _errors(schemas["diff"], doc) == [], doc


def test_the_diff_schema_holds_its_sections(schemas, files):
    [(_, doc)] = _documents("diff", "good.astral", "more.astral", cwd=files)
    # 2 -> 3 hosts of 1 kW: the IT power goes from 2 to 3 kW
    power = {c["key"]: c for c in doc["changes"]["power"]}
    assert (power["it_power_kw"]["before"], power["it_power_kw"]["delta"]) == (2, 1)
    bad = dict(doc, changes=dict(doc["changes"], hosts=[]))           # no such section
    assert _errors(schemas["diff"], bad)


def test_usage_and_internal_error_envelopes_validate_against_every_schema(schemas, files):
    from astral_dsl.diagnostics import Diagnostic, Severity
    from astral_dsl.outputs.jsonout import envelope

    [(code, usage)] = _documents("export", "good.astral", "--set", "x", cwd=files)
    assert code == 2 and "usage_error" in usage and "design" not in usage
    internal = envelope([Diagnostic("E000", Severity.ERROR, "internal compiler error", None,
                                    "this is a bug", file="good.astral")],
                        file="good.astral", valid=False)
    for name, validator in schemas.items():
        assert _errors(validator, usage) == [], name
        assert _errors(validator, internal) == [], name
