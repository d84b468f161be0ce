"""The semantic passes, through `astral_dsl.loads(text, name=..., root=tmp_path)`: imports, names,
declarations, templates, replication, paths, aggregates, checks, parameters and `--set`
overrides, size limits and determinism."""
from __future__ import annotations

import json
import signal
import textwrap
from pathlib import Path

import pytest

import astral_dsl
from astral_dsl.outputs.export import export_design

REPO = Path(__file__).resolve().parents[1]
STDLIB = REPO / "stdlib"


# ---- helpers -----------------------------------------------------------------------------------------

def build(text: str, tmp_path: Path, name: str = "main.astral", **kw):
    return astral_dsl.loads(textwrap.dedent(text).lstrip("\n"), name=name, root=tmp_path, **kw)


def codes(design):
    return [d.code for d in design.diagnostics]


def one(design, code: str):
    found = [d for d in design.diagnostics if d.code == code]
    assert len(found) == 1, f"expected one {code}, got {[(d.code, d.message) for d in design.diagnostics]}"
    return found[0]


def at(d):
    return (d.span.start.line, d.span.start.column)


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


@pytest.fixture
def deadline():
    """Fail instead of hanging (import cycles, huge designs)."""
    def expired(signum, frame):
        raise TimeoutError("the compiler did not finish in time")

    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


SMALL = """
gpu Accel { power = 700 W, memory = 80 GB }
host Node(n: count = 8) { gpus = n x Accel }
rack Rack { hosts = 4 x Node }
site S { racks = 2 x Rack }
"""


def test_small_design_is_valid(tmp_path):
    d = build(SMALL, tmp_path)
    assert d.valid, d.diagnostics
    assert d.diagnostics == ()
    s = astral_dsl.summary(d)
    assert (s["gpus"], s["hosts"], s["racks"]) == (64, 8, 2)
    # 64 x 700 W = 44.8 kW
    assert s["it_power_kw"] == pytest.approx(44.8)
    assert [r.path for r in d.roots] == ["S"]


def test_empty_file_is_a_warning(tmp_path):
    d = build("", tmp_path)
    assert codes(d) == ["W100"]
    assert d.valid


def test_no_site_is_a_warning(tmp_path):
    d = build("gpu A { power = 1 W }\nhost H { gpus = 2 x A }\nrack R { hosts = 2 x H }\n",
              tmp_path)
    assert codes(d) == ["W400"]
    assert d.valid


# ---- imports --------------------------------------------------------------------------------------------

COMMON = """
gpu Accel { power = 700 W }
host Node(n: count = 8) { gpus = n x Accel }
"""


def test_import_names_from_a_project_module(tmp_path):
    write(tmp_path, "lib/common.astral", COMMON)
    d = build("import lib.common { Node }\nsite S { hosts = 2 x Node }\n", tmp_path)
    assert d.valid, d.diagnostics
    assert astral_dsl.summary(d)["gpus"] == 16


def test_import_with_alias(tmp_path):
    write(tmp_path, "lib/common.astral", COMMON)
    d = build("import lib.common as c\nsite S { hosts = 2 x c.Node(n = 4) }\n", tmp_path)
    assert d.valid, d.diagnostics
    assert astral_dsl.summary(d)["gpus"] == 8


def test_plain_import_binds_the_last_component(tmp_path):
    write(tmp_path, "lib/common.astral", COMMON)
    d = build("import lib.common\nsite S { hosts = 3 x common.Node }\n", tmp_path)
    assert d.valid, d.diagnostics
    assert astral_dsl.summary(d)["gpus"] == 24


def test_imported_names_are_not_re_exported(tmp_path):
    write(tmp_path, "lib/common.astral", COMMON)
    write(tmp_path, "lib/mid.astral", "import lib.common { Node }\ngpu Other { power = 1 W }\n")
    d = build("import lib.mid { Node }\n", tmp_path)
    e = one(d, "E208")
    assert at(e) == (1, 18)


def test_errors_in_an_imported_modules_lets_show_even_unused(tmp_path):
    # the entry imports only `Accel`: the module's broken `let` and `param` are still its
    # errors, in its file (as `astral check lib/parts.astral` reports them)
    write(tmp_path, "lib/parts.astral", """
        let budget = 45 kW + 3 m
        param spare = 1 kW + 1 s
        gpu Accel { power = 700 W }
        """)
    d = build("import lib.parts { Accel }\nsite S { g = Accel }\n", tmp_path)
    found = [(d.code, Path(d.span.file).name, at(d)) for d in d.diagnostics if d.is_error]
    assert found == [("E301", "parts.astral", (1, 14)), ("E301", "parts.astral", (2, 15))]
    assert not d.valid


def test_an_imported_let_in_error_is_reported_when_its_check_is_silenced(tmp_path):
    # `power` of the rack fails (the host's power is a string): the check that uses `budget`
    # is silenced, but `budget`'s own error is independent of it and shows
    write(tmp_path, "lib/parts.astral", """
        let budget = 45 kW + 3 m
        host Node { power = "x" }
        """)
    d = build("import lib.parts { Node, budget }\n"
              "site S { h = Node\n  check power <= budget }\n", tmp_path)
    assert sorted((d.code, at(d)) for d in d.diagnostics if d.is_error) == [
        ("E301", (1, 14)), ("E303", (2, 21))]


def test_an_error_in_a_templates_body_names_the_instance_and_its_call(tmp_path):
    # `power = p` fails for H(p = 1) and H(p = 2) at the same place of lib/h.astral (the
    # user's own file, which they edit: the error stays there): each error's related span is
    # its instance's call (main.astral, line 2, column 14 / 28), a note naming it before;
    # H(p = 3 kW) is right and has none
    write(tmp_path, "lib/h.astral", "host H(p) { power = p }\n")
    d = build("import lib.h { H }\nsite S { a = H(p = 1), b = H(p = 2), c = H(p = 3 kW) }\n",
              tmp_path)
    errors = [e for e in d.diagnostics if e.code == "E304"]
    assert [(Path(e.span.file).name, at(e)) for e in errors] == [("h.astral", (1, 21))] * 2
    assert [e.notes for e in errors] == [(), ()]
    assert [[(r.message, str(r.span)) for r in e.related] for e in errors] == [
        [("in `H(p = 1)`, made here", "main.astral:2:14")],
        [("in `H(p = 2)`, made here", "main.astral:2:28")]]


def test_missing_module_is_e205(tmp_path):
    write(tmp_path, "lib/common.astral", COMMON)
    d = build("import lib.comon { Node }\n", tmp_path)
    e = one(d, "E205")
    # the span covers the dotted path `lib.comon` (columns 8..16)
    assert at(e) == (1, 8)
    assert (e.span.end.line, e.span.end.column) == (1, 17)
    assert e.hint == "did you mean `lib.common`?"
    assert not d.valid


@pytest.mark.parametrize("text, hint", [
    # a folder misspelt (was no hint: the near miss was looked for in the last name only)
    ("import Lib.common { Node }", "did you mean `lib.common`?"),
    ("import lib.comon.Node", "did you mean `import lib.common { Node }`?"),
    # a declaration's path written as a module's
    ("import lib.common.Node", "`lib.common` is a module: import `Node` from it with "
                               "`import lib.common { Node }`"),
    ("import lib", "`lib` is a folder: import a module in it, e.g. `import lib.common`"),
    ("import lib.zz", "it would be the file lib/zz.astral below the project root, the nearest "
                      "folder above the entry file with an astral.toml, else the entry file's "
                      "folder; modules there: `lib.common`"),
    ("import stdlib.hardware.H800", "`stdlib.hardware` is a module: import `H800` from it with "
                                    "`import stdlib.hardware { H800 }`"),
])
def test_every_missing_module_has_a_hint(tmp_path, text, hint):
    """E205 had a hint only for a near miss of the last name in an existing folder."""
    write(tmp_path, "lib/common.astral", COMMON)
    e = one(build(text + "\n", tmp_path), "E205")
    assert e.hint == hint


def test_missing_stdlib_module_is_e205(tmp_path):
    d = build("import stdlib.no_such_module { X }\n", tmp_path)
    e = one(d, "E205")
    assert "stdlib" in e.message


def test_missing_name_is_e208(tmp_path):
    write(tmp_path, "lib/common.astral", COMMON)
    d = build("import lib.common { Nod }\n", tmp_path)
    e = one(d, "E208")
    assert at(e) == (1, 21)
    assert e.hint == "did you mean `Node`?"


def test_missing_name_through_an_alias_is_e208(tmp_path):
    write(tmp_path, "lib/common.astral", COMMON)
    d = build("import lib.common as c\nsite S { hosts = 2 x c.Nod }\n", tmp_path)
    e = one(d, "E208")
    assert at(e) == (2, 24)
    assert e.hint == "did you mean `Node`?"


def test_import_cycle_is_e206_and_terminates(tmp_path, deadline):
    write(tmp_path, "lib/a.astral", "import lib.b { Y }\ngpu X { power = 1 W }\n")
    write(tmp_path, "lib/b.astral", "import lib.a { X }\ngpu Y { power = 1 W }\n")
    d = build("import lib.a { X }\n", tmp_path)
    e = one(d, "E206")
    assert "lib.a -> lib.b -> lib.a" in e.message
    assert e.span.file.endswith("b.astral")
    assert at(e) == (1, 1)


def test_a_name_of_a_failed_import_is_no_second_error(tmp_path, deadline):
    """The import's diagnostic (E206 a cycle, E205 a module not found) is the root: a use of a
    name it would have brought in (a value, a function call, a template, a base, a namespace's
    member) is not E200 as well."""
    write(tmp_path, "lib/a.astral", "import lib.b { Y }\nparam p = 3 kW\ngpu X { power = 1 W }\n")
    write(tmp_path, "lib/b.astral", "import lib.a { p, X }\nparam q = p\nlet r = X(power = 2 W)\n"
                                    "gpu Y { power = q }\n")
    d = build("import lib.a { X }\nhost H { gpus = 8 x X }\nsite S { hosts = 1 x H }\n",
              tmp_path)
    assert codes(d) == ["E206"], [(x.code, x.message) for x in d.diagnostics]
    d = build("""
        import nothere { z, T }
        import gone as g
        param w = z
        param v = g.k
        gpu U = T { }
        host V { gpus = 1 x T }
        site S { hosts = 1 x V }
        """, tmp_path)
    assert codes(d) == ["E205", "E205"], [(x.code, x.message) for x in d.diagnostics]
    # a name the failed import does not bring in is still E200
    d = build("import nothere { z }\nparam w = y\n", tmp_path)
    assert codes(d) == ["E205", "E200"], [(x.code, x.message) for x in d.diagnostics]


def test_module_importing_itself_is_e206(tmp_path, deadline):
    write(tmp_path, "lib/me.astral", "import lib.me { Y }\ngpu Y { power = 1 W }\n")
    d = build("import lib.me { Y }\n", tmp_path)
    assert "E206" in codes(d)


def test_cycle_through_the_entry_file_is_e206(tmp_path, deadline):
    entry = write(tmp_path, "main.astral", "import lib.x { X }\nsite S { }\n")
    write(tmp_path, "lib/x.astral", "import main { S }\ngpu X { power = 1 W }\n")
    d = astral_dsl.load(entry)
    assert "E206" in codes(d)


def test_import_escaping_the_project_through_a_symlink_is_e207(tmp_path):
    project = tmp_path / "project"
    outside = write(tmp_path, "outside/far.astral", "gpu Far { power = 1 W }\n")
    (project / "lib").mkdir(parents=True)
    (project / "lib" / "far.astral").symlink_to(outside)
    d = build("import lib.far { Far }\n", project)
    e = one(d, "E207")
    assert e.span.start.line == 1
    assert "outside the project" in e.message


def test_symlinked_folder_escaping_the_project_is_e207(tmp_path):
    project = tmp_path / "project"
    write(tmp_path, "outside/lib/far.astral", "gpu Far { power = 1 W }\n")
    project.mkdir()
    (project / "lib").symlink_to(tmp_path / "outside" / "lib", target_is_directory=True)
    d = build("import lib.far { Far }\n", project)
    assert codes(d) == ["E207"]


def test_bare_stdlib_import_is_e205(tmp_path):
    d = build("import stdlib\n", tmp_path)
    assert codes(d) == ["E205"]


def test_stdlib_import(tmp_path):
    d = build("""
        import stdlib.hardware { H800 }
        host H { gpus = 8 x H800 }
        site S { hosts = 2 x H }
    """, tmp_path)
    assert d.valid, d.diagnostics
    assert astral_dsl.summary(d)["gpus"] == 16


def test_stdlib_module_with_an_alias(tmp_path):
    d = build("import stdlib.hardware as hw\nhost H { gpus = 8 x hw.H800 }\n"
              "site S { hosts = 1 x H }\n", tmp_path)
    assert d.valid, d.diagnostics
    assert astral_dsl.summary(d)["gpus"] == 8


# ---- names and declarations ---------------------------------------------------------------------------

def test_unknown_name_is_e200_with_did_you_mean(tmp_path):
    d = build("param limit = 45 kW\nsite S { power_limit = limt }\n", tmp_path)
    e = one(d, "E200")
    assert at(e) == (2, 24)
    assert (e.span.end.line, e.span.end.column) == (2, 28)
    assert e.hint == "did you mean `limit`?"


def test_did_you_mean_never_offers_the_field_being_defined(tmp_path):
    # `h = hw`: `h` is the nearest name, but `h = h` is a cycle (E404); in `k = hw` it is fine
    d = build("site S { h = hw, k = hw + 1 }\n", tmp_path)
    hints = [(at(e), e.hint) for e in d.diagnostics if e.code == "E200"]
    assert hints == [((1, 14), "nothing named `hw` is declared here or imported: declare it "
                               "(`let hw = ...`, a `param` or a template) or import it (`import "
                               "MODULE { hw }`); names are case-sensitive"),
                     ((1, 22), "did you mean `h`?")]


def test_unknown_template_in_a_member_is_e200(tmp_path):
    d = build("""
        gpu Accel { power = 700 W }
        host Node { gpus = 8 x Accl }
        site S { hosts = 2 x Node }
    """, tmp_path)
    e = one(d, "E200")
    assert at(e) == (2, 24)
    assert e.hint == "did you mean `Accel`?"
    assert not d.valid


def test_duplicate_declaration_is_e202(tmp_path):
    d = build("gpu G { power = 700 W }\ngpu G { power = 600 W }\n", tmp_path)
    e = one(d, "E202")
    assert at(e) == (2, 5)
    assert "1:5" in e.message


def test_duplicate_param_and_template_is_e202(tmp_path):
    d = build("param n = 4\nhost n { }\n", tmp_path)
    assert at(one(d, "E202")) == (2, 6)


def test_unknown_kind_is_e201(tmp_path):
    d = build("gpux G { power = 700 W }\n", tmp_path)
    e = one(d, "E201")
    assert at(e) == (1, 1)
    assert (e.span.end.line, e.span.end.column) == (1, 5)
    assert e.hint == "did you mean `gpu`?"


def test_unknown_field_is_e203_with_hint(tmp_path):
    d = build("""
        gpu G { powr = 700 W }
        host N { gpus = 8 x G }
        site S { hosts = 1 x N }
    """, tmp_path)
    e = one(d, "E203")
    assert at(e) == (1, 9)
    assert e.hint == "did you mean `power`?"


def test_unknown_block_is_e203(tmp_path):
    d = build("""
        model M { layers = 2, hidden = 8, heads = 2 }
        job J {
          model = M
          paralel { tp = 8 }
        }
    """, tmp_path)
    e = one(d, "E203")
    assert at(e) == (4, 3)
    assert e.hint == "did you mean `parallel`?"


def test_missing_required_field_is_e204(tmp_path):
    d = build("loop L { supply = 30 degC }\n", tmp_path)
    found = sorted((x.message, at(x)) for x in d.diagnostics if x.code == "E204")
    assert len(found) == 2
    assert all(where == (1, 6) for _, where in found)     # at the template's name
    assert "`fluid`" in found[0][0] and "`rise`" in found[1][0]


def test_wrong_dimension_for_a_field_is_e304(tmp_path):
    d = build("site S {\n  power_limit = 45 GB\n}\n", tmp_path)
    e = one(d, "E304")
    assert at(e) == (2, 17)
    assert "power" in e.message


def test_non_ascii_before_an_error_keeps_code_point_columns(tmp_path):
    d = build('// café\nsite S { note = "µµ", power_limit = 45 GB }\n', tmp_path)
    assert at(one(d, "E304")) == (2, 37)


def test_enum_field_takes_bare_names(tmp_path):
    d = build("""
        model M { layers = 2, hidden = 8, heads = 2 }
        job J {
          model = M
          recompute = selective
          parallel { tp = 8, pp = 2, schedule = "1f1b" }
        }
    """, tmp_path)
    assert d.valid, d.diagnostics
    d = build("""
        model M { layers = 2, hidden = 8, heads = 2 }
        job J {
          model = M
          recompute = selectve
        }
    """, tmp_path)
    e = one(d, "E311")
    assert at(e) == (4, 15)
    assert e.hint == "did you mean `selective`?"


# ---- templates ---------------------------------------------------------------------------------------------

TEMPLATES = """
gpu Accel(p: power = 700 W) { power = p }
host HGX8(g: gpu = Accel, n: count = 8) {
  gpus = n x g
  let budget = 8 kW
  check sum(gpus.power) <= budget else error "host over budget"
}
host Node = HGX8(g = Accel(p = 1200 W)) {
  let budget = BUDGET
}
host Small = HGX8(n = 4)
site S { hosts = 2 x Node, small = 3 x Small }
"""


def test_templates_params_defaults_and_base(tmp_path):
    d = build(TEMPLATES.replace("BUDGET", "12 kW"), tmp_path)
    assert d.valid, d.diagnostics
    s = astral_dsl.summary(d)
    # 2 Node hosts with 8 GPUs of 1200 W, 3 Small hosts with 4 GPUs of 700 W
    assert s["gpus"] == 2 * 8 + 3 * 4
    assert s["hosts"] == 5
    assert s["it_power_kw"] == pytest.approx((16 * 1200 + 12 * 700) / 1000)
    node = d.instance("S.hosts[0].gpus[0]")
    assert node is not None and str(node.field("power")) == "1200 W"


def test_base_check_sees_the_derived_override(tmp_path):
    # the base's check reads `budget`; the derived template's 9 kW replaces the base's 8 kW
    d = build(TEMPLATES.replace("BUDGET", "9 kW"), tmp_path)
    e = one(d, "E500")
    assert e.message == "host over budget"
    assert at(e) == (5, 9)
    # 8 x 1200 W = 9.6 kW > 9 kW in the 2 Node hosts; the 3 Small hosts pass (2.8 kW <= 8 kW)
    assert any("9.6 kW" in n and "9 kW" in n for n in e.notes)
    assert any("2 instances" in n and "S.hosts[0]" in n for n in e.notes)
    results = sorted((c.instances, c.passed) for c in d.checks)
    assert results == [(2, False), (3, True)]


def test_derived_field_override_is_seen_by_the_base_check(tmp_path):
    d = build("""
        gpu A { power = 700 W }
        host H { gpus = 8 x A, power = 10 kW }
        rack Base {
          hosts = 4 x H
          power_limit = 45 kW
          check power <= power_limit else error "over the rack limit"
        }
        rack Dense = Base { power_limit = 35 kW }
        site S { racks = 2 x Base, dense = 3 x Dense }
    """, tmp_path)
    e = one(d, "E500")
    assert e.message == "over the rack limit"
    assert any("3 instances" in n and "S.dense[0]" in n for n in e.notes)
    assert any("40 kW" in n and "35 kW" in n for n in e.notes)


def test_keyword_argument_overrides_a_schema_field(tmp_path):
    d = build("""
        gpu A { power = 700 W }
        host H { gpus = 8 x A(power = 650 W) }
        site S { hosts = 1 x H }
    """, tmp_path)
    assert d.valid, d.diagnostics
    assert astral_dsl.summary(d)["it_power_kw"] == pytest.approx(5.2)


def test_positional_arguments(tmp_path):
    d = build("""
        gpu A(p: power = 700 W) { power = p }
        host H(g: gpu, n: count) { gpus = n x g }
        site S { hosts = 2 x H(A(500 W), 4) }
    """, tmp_path)
    assert d.valid, d.diagnostics
    assert astral_dsl.summary(d)["it_power_kw"] == pytest.approx(4.0)


def test_missing_argument_is_e212(tmp_path):
    d = build("""
        gpu A(p: power) { power = p }
        host H { gpus = 2 x A }
        site S { hosts = 1 x H }
    """, tmp_path)
    assert at(one(d, "E212")) == (2, 21)


def test_unknown_argument_is_e211(tmp_path):
    d = build("""
        gpu A(p: power = 1 W) { power = p }
        host H { gpus = 2 x A(q = 3 W) }
        site S { hosts = 1 x H }
    """, tmp_path)
    assert at(one(d, "E211")) == (2, 23)


def test_template_derived_from_itself_is_e215(tmp_path, deadline):
    d = build("host H(x: count = 1) = H { }\nsite S { hosts = 1 x H }\n", tmp_path)
    assert at(one(d, "E215")) == (1, 6)


def test_base_of_another_kind_is_e303(tmp_path):
    d = build("gpu A { power = 1 W }\nhost H = A { }\n", tmp_path)
    assert at(one(d, "E303")) == (2, 10)


# ---- replication -----------------------------------------------------------------------------------------------

ASTRAL = """
param hosts_per_rack = 4
gpu Accel { power = 700 W }
host Node { gpus = 8 x Accel, power = 10 kW }
rack GpuRack { hosts = hosts_per_rack x Node }
pod Pod { racks = 64 x GpuRack }
site Astral {
  pods = 256 x Pod
  CHECKS
}
"""


def astral(tmp_path, checks: str = "", **kw):
    return build(ASTRAL.replace("CHECKS", checks), tmp_path, **kw)


def test_replication_stays_symbolic(tmp_path, deadline):
    d = astral(tmp_path)
    assert d.valid, d.diagnostics
    s = astral_dsl.summary(d)
    # 256 pods x 64 racks x 4 hosts x 8 GPUs
    assert s["gpus"] == 524_288
    assert s["hosts"] == 65_536
    assert s["racks"] == 16_384
    # one instance per distinct template instantiation, not one per replica
    assert len(d.instances) <= 6
    assert {i.path for i in d.instances} >= {
        "Astral", "Astral.pods[0]", "Astral.pods[0].racks[0]",
        "Astral.pods[0].racks[0].hosts[0]", "Astral.pods[0].racks[0].hosts[0].gpus[0]"}


def test_same_template_in_two_parents(tmp_path):
    # one GPU instance shared by two different host templates
    d = build("""
        gpu A { power = 1 W }
        host H1 { gpus = 2 x A }
        host H2 { gpus = 4 x A }
        site S { h1 = 1 x H1, h2 = 3 x H2 }
    """, tmp_path)
    assert d.valid, d.diagnostics
    s = astral_dsl.summary(d)
    assert s["gpus"] == 2 + 3 * 4
    assert s["hosts"] == 4
    json.dumps(export_design(d))


def test_replication_in_a_list(tmp_path):
    d = build("""
        gpu A { power = 700 W }
        host H { gpus = 8 x A }
        rack GpuRack { hosts = 4 x H }
        rack NetRack { power = 12 kW }
        site S { racks = [16 x GpuRack, 2 x NetRack] }
    """, tmp_path)
    assert d.valid, d.diagnostics
    s = astral_dsl.summary(d)
    assert s["racks"] == 18 and s["gpus"] == 16 * 32


def test_comprehension(tmp_path):
    d = build("""
        gpu A { power = 1 W }
        host H(slot: count = 0) { gpus = 2 x A }
        rack R { hosts = [H(slot = i) for i in 0..<8] }
        site S { racks = 1 x R }
    """, tmp_path)
    assert d.valid, d.diagnostics
    assert astral_dsl.summary(d)["hosts"] == 8


def test_bundle_of_quantities(tmp_path):
    d = build("""
        switch Sw { ports = 64, port_speed = 400 Gb/s }
        site S {
          let links = 64 x 400 Gb/s
          check links.count == 64
          check links.total == 25.6 Tb/s
        }
    """, tmp_path)
    assert d.valid, d.diagnostics
    assert [c.passed for c in d.checks] == [True, True]


# ---- paths --------------------------------------------------------------------------------------------------------

def test_paths_into_groups(tmp_path):
    d = astral(tmp_path, """
      check count(pods[3].racks) == 64
      check pods[3].racks[16].power == 40 kW
      check count(pods[0..3]) == 4
      check count(pods[0..<4].racks) == 256
      check count(pods[*].racks) == 16384
      check count(pods[*]) == 256
    """)
    assert d.valid, d.diagnostics
    assert len(d.checks) == 6 and all(c.passed for c in d.checks)


def test_index_out_of_range_is_e214(tmp_path):
    d = astral(tmp_path, "let r = pods[3].racks[64]")
    e = one(d, "E214")
    # `pods[3].racks[64]` on line 8; the index `64` is at columns 25..27
    assert at(e) == (8, 25)
    assert (e.span.end.line, e.span.end.column) == (8, 27)
    assert "64" in e.message


def test_slice_out_of_range_is_e214(tmp_path):
    d = astral(tmp_path, "let p = pods[250..300]")
    e = one(d, "E214")
    assert at(e) == (8, 16)


def test_unknown_member_is_e209(tmp_path):
    d = astral(tmp_path, "let p = pods[0].rakcs")
    e = one(d, "E209")
    assert at(e) == (8, 19)
    assert e.hint == "did you mean `racks`?"


# ---- aggregates and conditionals ------------------------------------------------------------------------------

def test_aggregates_over_groups(tmp_path):
    d = astral(tmp_path, """
      check count(gpus) == 524_288
      check count(racks) == 16384
      check sum(racks.power) == 655360 kW
      check sum(pods.power) == 655360 kW
      check max(racks.power) == 40 kW
      check min(racks.power) == 40 kW
      check mean(racks.power) == 40 kW
      check all(racks.power <= 45 kW)
      check any(racks.power > 30 kW)
      check power == 655.36 MW
      check gpus == 524288
    """)
    assert d.valid, d.diagnostics
    assert len(d.checks) == 11 and all(c.passed for c in d.checks)


def test_aggregates_over_mixed_groups(tmp_path):
    d = build("""
        gpu A { power = 700 W }
        gpu B { power = 1000 W }
        host HA { gpus = 8 x A }
        host HB { gpus = 8 x B }
        rack R(h: host = HA, n: count = 4) { hosts = n x h }
        site S {
          racks = [R(n = 8), 3 x R(h = HB)]
          check count(racks) == 4
          check sum(racks.power) == 44.8 kW + 3 * 32 kW
          check max(racks.power) == 44.8 kW
          check min(racks.power) == 32 kW
          check count(gpus) == 64 + 96
          check racks[0].power == 44.8 kW
          check racks[1..3].power == 32 kW
          check all(racks.power > 40 kW) else warning "not all racks are dense"
        }
    """, tmp_path)
    w = one(d, "W500")
    assert w.message == "not all racks are dense"
    assert d.valid
    assert [c.passed for c in d.checks] == [True] * 7 + [False]


def test_conditionals(tmp_path):
    src = """
        param dense = true
        gpu A { power = 700 W }
        host H { gpus = 8 x A }
        rack R { hosts = (if dense then 8 else 4) x H }
        site S {
          racks = 2 x R
          let kind = if count(hosts) > 8 then "dense" else "sparse"
          check kind == "dense"
        }
    """
    d = build(src, tmp_path)
    assert d.valid, d.diagnostics
    assert astral_dsl.summary(d)["hosts"] == 16
    d = build(src, tmp_path, overrides={"dense": "false"})
    assert astral_dsl.summary(d)["hosts"] == 8
    e = one(d, "E500")
    assert at(e) == (8, 9)


def test_condition_must_be_yes_or_no(tmp_path):
    d = build("site S {\n  let x = if 3 then 1 else 2\n}\n", tmp_path)
    assert at(one(d, "E303")) == (2, 14)


# ---- checks --------------------------------------------------------------------------------------------------------

CHECKED = """
gpu Accel { power = 700 W }
host Node { gpus = 8 x Accel, power = 10 kW }
rack R {
  hosts = 4 x Node
  check power <= 30 kW else warning "rack is hot"
}
site S {
  racks = 6 x R
  check count(racks) == 5
}
"""


def test_checks_produce_e500_and_w500_with_instance_counts(tmp_path):
    d = build(CHECKED, tmp_path)
    w = one(d, "W500")
    assert w.message == "rack is hot"
    assert w.severity.value == "warning"
    assert at(w) == (5, 9)
    assert "in 6 instances, e.g. S.racks[0]" in w.notes
    assert "left side: 40 kW; right side: 30 kW" in w.notes
    e = one(d, "E500")
    assert e.severity.value == "error"
    assert at(e) == (9, 9)
    assert (e.span.end.line, e.span.end.column) == (9, 26)
    assert "count(racks) == 5" in e.message
    assert "left side: 6; right side: 5" in e.notes
    assert not d.valid
    by_message = {c.message: c for c in d.checks}
    assert by_message["rack is hot"].instances == 6
    assert not by_message["rack is hot"].passed


def test_warnings_alone_keep_the_design_valid(tmp_path):
    d = build(CHECKED.replace("== 5", "== 6"), tmp_path)
    assert codes(d) == ["W500"]
    assert d.valid


def test_check_in_a_symbolic_design_is_evaluated_once(tmp_path, deadline):
    d = build(ASTRAL.replace("CHECKS", "").replace(
        "host Node { gpus = 8 x Accel, power = 10 kW }",
        "host Node { gpus = 8 x Accel, power = 10 kW\n  check power < 5 kW }"), tmp_path)
    e = one(d, "E500")
    assert any(n.startswith("in 65,536 instances") for n in e.notes)
    (result,) = [c for c in d.checks if not c.passed]
    assert result.instances == 65_536


def test_top_level_checks(tmp_path):
    d = build("check 1 + 1 == 2\ncheck 2 > 3 else warning \"module-level warning\"\n",
              tmp_path)
    assert codes(d) == ["W500"]
    assert at(one(d, "W500")) == (2, 7)


def test_check_needs_a_condition_e501(tmp_path):
    d = build("site S {\n  check 5 kW\n}\n", tmp_path)
    assert at(one(d, "E501")) == (2, 9)


def test_check_with_an_unknown_severity_is_e502(tmp_path):
    d = build('site S {\n  check 1 < 2 else fatal "x"\n}\n', tmp_path)
    assert at(one(d, "E502")) == (2, 20)


# ---- cycles ----------------------------------------------------------------------------------------------------------

def test_field_cycle_is_e404(tmp_path, deadline):
    d = build("""
        site S {
          power_limit = utilization * 1 kW
          utilization = power_limit / 1 kW
        }
    """, tmp_path)
    e = one(d, "E404")
    assert e.span.start.line in (2, 3)
    assert "depends on itself" in e.message


def test_let_cycle_is_e404(tmp_path, deadline):
    d = build("""
        host H {
          let a = b + 1
          let b = a + 1
          power = a * 1 W
        }
        site S { hosts = 1 x H }
    """, tmp_path)
    assert "E404" in codes(d)


def test_module_constant_cycle_is_e404(tmp_path, deadline):
    d = build("let a = b\nlet b = a\n", tmp_path)
    assert "E404" in codes(d)


def test_fields_may_refer_to_later_fields(tmp_path):
    d = build("""
        site S {
          power_limit = 2 * half
          let half = 10 kW
          check power_limit == 20 kW
        }
    """, tmp_path)
    assert d.valid, d.diagnostics
    assert [c.passed for c in d.checks] == [True]


# ---- parameter annotations -------------------------------------------------------------------------------------------

def test_param_annotations_accept_matching_values(tmp_path):
    d = build("""
        param limit: power = 45 kW
        param t: temperature = 30 degC
        param dt: temperature_delta = 10 K
        param on: bool = true
        param label: string = "x"
        param n: count = 4
        param r: ratio = 75 %
        site S { power_limit = limit }
    """, tmp_path)
    assert d.valid, d.diagnostics
    params = dict(d.params)
    assert str(params["limit"]) == "45 kW"
    assert params["on"] is True and params["label"] == "x"


def test_param_annotation_wrong_dimension_is_e304(tmp_path):
    d = build("param limit: power = 45 GB\nsite S { power_limit = limit }\n", tmp_path)
    assert at(one(d, "E304")) == (1, 22)


def test_param_annotation_temperature_point_versus_difference(tmp_path):
    d = build("param t: temperature = 30 K\nsite S { }\n", tmp_path)
    e = one(d, "E304")
    assert "degC" in e.hint


def test_param_annotation_count_must_be_whole_e308(tmp_path):
    d = build("param n: count = 2.5\nsite S { }\n", tmp_path)
    assert at(one(d, "E308")) == (1, 18)


def test_param_annotation_unknown_type(tmp_path):
    d = build("param n: cnt = 2\nsite S { }\n", tmp_path)
    e = one(d, "E303")
    assert at(e) == (1, 10)
    assert e.hint == "did you mean `count`?"


def test_template_param_annotation_of_a_kind(tmp_path):
    d = build("""
        gpu A { power = 1 W }
        host H(g: gpu = 5) { gpus = 1 x g }
        site S { hosts = 1 x H }
    """, tmp_path)
    e = one(d, "E303")
    assert e.span.start.line == 2


# ---- --set overrides --------------------------------------------------------------------------------------------------

OVERRIDABLE = """
param n = 4
param limit = 45 kW
gpu G { power = 1 kW }
host H { gpus = 8 x G }
rack R {
  hosts = n x H
  power_limit = limit
  check power <= limit
}
site S { racks = 2 x R }
"""


def test_set_changes_a_count(tmp_path):
    d = build(OVERRIDABLE, tmp_path, overrides={"n": "2"})
    assert d.valid, d.diagnostics
    assert astral_dsl.summary(d)["hosts"] == 4
    assert str(dict(d.params)["n"]) == "2"
    d = build(OVERRIDABLE, tmp_path, overrides={"n": "8"})
    assert astral_dsl.summary(d)["hosts"] == 16
    # 8 hosts x 8 GPUs x 1 kW = 64 kW > 45 kW
    assert "E500" in codes(d)


def test_set_bare_number_takes_the_default_unit(tmp_path):
    d = build(OVERRIDABLE, tmp_path, overrides={"limit": "50"})
    assert d.valid, d.diagnostics
    limit = dict(d.params)["limit"]
    assert limit.unit == "kW" and limit.value_in("kW") == pytest.approx(50)


def test_set_with_a_unit(tmp_path):
    d = build(OVERRIDABLE, tmp_path, overrides={"limit": "0.06 MW"})
    assert d.valid, d.diagnostics
    assert dict(d.params)["limit"].value_in("kW") == pytest.approx(60)


def test_set_bare_number_on_a_typed_param(tmp_path):
    d = build("param limit: power = 45 kW\nsite S { power_limit = limit }\n", tmp_path,
              overrides={"limit": "50"})
    assert d.valid, d.diagnostics
    assert dict(d.params)["limit"].value_in("kW") == pytest.approx(50)


def test_set_wrong_dimension_is_e310(tmp_path):
    d = build(OVERRIDABLE, tmp_path, overrides={"limit": "60 GB"})
    e = one(d, "E310")
    assert e.message.startswith("overrides['limit']: ")       # from the API (loads)
    assert not d.valid


def test_set_wrong_dimension_on_a_typed_param_is_e310(tmp_path):
    d = build("param limit: power = 45 kW\nsite S { power_limit = limit }\n", tmp_path,
              overrides={"limit": "50 GB"})
    e = one(d, "E310")
    assert e.message.startswith("overrides['limit']: ")


def test_set_quantity_on_a_count_param_is_e310(tmp_path):
    d = build(OVERRIDABLE, tmp_path, overrides={"n": "2 kW"})
    e = one(d, "E310")
    assert e.message.startswith("overrides['n']: ")


RATIO = """
param ups_eff = 97 %
param drift = 20 ppm
host H { power = 10 kW }
rack R { hosts = 4 x H }
site S {
  racks = 2 x R
  feeder a { current = ac, voltage = 400 V, phases = 3, power_factor = 95 %, count = 2,
             capacity = 250 kW, efficiency = ups_eff, serves = racks }
}
"""


def test_set_a_bare_fraction_on_a_percent_param_is_e310(tmp_path):
    """`--set ups_eff=1` was 1 %: within E316's range (from 1 %), it gave E620 (the feeder
    carrying 100 times its load) with nothing pointing at the --set; 0.97 was 0.97 %."""
    from astral_dsl.semantics.overrides import command_line
    from astral_dsl.workspace import Workspace

    for given, fraction in (("1", "100"), ("0.97", "97"), ("-0.5", "-50")):
        d = build(RATIO, tmp_path, overrides={"ups_eff": given})
        assert [x.code for x in d.diagnostics if x.is_error] == ["E310"], d.diagnostics
        e = one(d, "E310")
        assert e.message == (f"overrides['ups_eff']: the bare number {given} is ambiguous: in "
                             f"the unit of the default (97 %) it is {given} %, as a fraction "
                             f"{fraction} %")
        # in the caller's words: the API's calls (it was given the command's options too)
        assert e.hint == (f"write the unit: with_params(ups_eff='{fraction} %') (or "
                          f"with_params(ups_eff={fraction})) for the fraction {given}, "
                          f"with_params(ups_eff='{given} %') for {given} %")
        # the command's options, quoted for the shell (without the API's call)
        ws = Workspace.of_text(RATIO, root=tmp_path, overrides={"ups_eff": given},
                               option=command_line)
        assert one(ws.design, "E310").hint == (
            f"write the unit: --set 'ups_eff={fraction} %' (or --set ups_eff={fraction}) for "
            f"the fraction {given}, --set 'ups_eff={given} %' for {given} %")
    # from Python, a number is as bare
    ws = astral_dsl.compiles(RATIO, name="r.astral").with_params(ups_eff=0.97)
    assert [x.code for x in ws.design.diagnostics if x.is_error] == ["E310"]
    assert one(ws.design, "E310").hint.startswith(
        "write the unit: with_params(ups_eff='97 %') (or with_params(ups_eff=97))")
    # another ratio unit: 0.5 might be 0.5 ppm or the fraction 500,000 ppm
    d = build(RATIO, tmp_path, overrides={"drift": "0.5"})
    assert "as a fraction 500000 ppm" in one(d, "E310").message
    # with the unit written, above 1, or 0, the value is as given
    for given, pct in (("1 %", 1), ("97", 97), ("0.97 %", 0.97), ("98 %", 98), ("0", 0)):
        d = build(RATIO, tmp_path, overrides={"ups_eff": given})
        assert "E310" not in codes(d), given
        assert dict(d.params)["ups_eff"].value_in("%") == pytest.approx(pct)
    # a number-valued parameter is not a ratio's: 0.5 is 0.5
    d = build("param f = 0.25\nsite S { }\n", tmp_path, overrides={"f": "0.5"})
    assert d.valid and str(dict(d.params)["f"]) == "0.5"


def test_set_not_a_literal_is_e310(tmp_path):
    d = build(OVERRIDABLE, tmp_path, overrides={"limit": "x y"})
    assert "E310" in codes(d)
    d = build(OVERRIDABLE, tmp_path, overrides={"limit": "some_name"})
    assert "E310" in codes(d)


def test_set_unknown_unit_is_e310(tmp_path):
    d = build(OVERRIDABLE, tmp_path, overrides={"limit": "5 kWatt"})
    assert codes(d) == ["E310"]


@pytest.mark.parametrize("value, why, hint", [
    ("1e999", "number `1e999` is too large to represent",
     "the largest number is about 1.8e308: write it in a larger unit, or smaller"),
    ("1e-400 kW", "number `1e-400 kW` is too small to represent: it would be read as 0",
     "the smallest number above zero is about 5e-324: write it in a smaller unit (`1 pW` "
     "rather than `1e-12 W`), or write 0"),
    ("5__0", "number `5__0` has a `_` that is not between two digits",
     "a `_` goes between two digits (`65_536`): write `5_0`"),
])
def test_set_of_a_number_a_literal_cannot_hold_says_why(tmp_path, value, why, hint):
    """As E106 says of the same literal in a file; it was "`1e999` is not a value"."""
    d = build(OVERRIDABLE, tmp_path, overrides={"limit": value})
    e = one(d, "E310")
    assert (e.message, e.hint) == (f"overrides['limit']: {why}", hint)


# A replication count that failed to evaluate holds no members that count as zero: the roll-ups
# over it (gpus, power) fail silently too, so the site's checks of them say nothing more
# (docs/diagnostics.md: one mistake, one diagnostic; it used to add two E500s, "left side: 0").
MISCOUNTED = """
gpu Accel { power = 700 W }
host Node { gpus = 8 x Accel, power = 10 kW }
param servers = 4
rack Rack { hosts = servrs x Node }
site S {
  racks = 1 x Rack
  check gpus == 32
  check power to BTU/h > 100000 BTU/h
}
"""


def test_a_failed_replication_count_gives_one_diagnostic(tmp_path):
    d = build(MISCOUNTED, tmp_path)
    assert codes(d) == ["E200"], [(x.code, x.message) for x in d.diagnostics]


def test_a_bad_set_of_a_replication_count_gives_one_diagnostic(tmp_path):
    d = build(MISCOUNTED.replace("servrs", "servers"), tmp_path, overrides={"servers": "5 kW"})
    assert codes(d) == ["E310"], [(x.code, x.message) for x in d.diagnostics]
    # and without the mistake both checks pass (4 x 8 = 32 GPUs; 40 kW = 136,486 BTU/h)
    assert build(MISCOUNTED.replace("servrs", "servers"), tmp_path).valid


def test_set_unknown_parameter_is_e213(tmp_path):
    d = build(OVERRIDABLE, tmp_path, overrides={"limt": "50"})
    e = one(d, "E213")
    assert e.hint == "did you mean `limit`?"
    assert e.filename == "main.astral"
    assert not d.valid


def test_set_zero_count_is_e400(tmp_path):
    d = build(OVERRIDABLE, tmp_path, overrides={"n": "0"})
    assert "E400" in codes(d)


# ---- counts and size limits ---------------------------------------------------------------------------------------------

COUNTED = """
gpu G { power = 1 W }
host H { gpus = COUNT x G }
site S { hosts = 1 x H }
"""


def test_zero_count_is_e400(tmp_path):
    d = build(COUNTED.replace("COUNT", "0"), tmp_path)
    e = one(d, "E400")
    assert at(e) == (2, 17)


def test_negative_count_is_e400(tmp_path):
    d = build(COUNTED.replace("COUNT", "-2"), tmp_path)
    e = one(d, "E400")
    assert at(e) == (2, 17)


def test_fractional_count_is_e400(tmp_path):
    # a replication count is a positive whole number (E400), like zero or negative counts
    d = build(COUNTED.replace("COUNT", "2.5"), tmp_path)
    assert at(one(d, "E400")) == (2, 17)


def test_count_with_a_unit_is_e303(tmp_path):
    d = build(COUNTED.replace("COUNT", "(2 kW)"), tmp_path)
    assert "E303" in codes(d)


def test_huge_count_is_e401(tmp_path):
    d = build(COUNTED.replace("COUNT", "2_000_000_000"), tmp_path)
    e = one(d, "E401")
    assert at(e) == (2, 17)


def test_more_than_a_billion_gpus_is_e405(tmp_path, deadline):
    d = build("""
        gpu G { power = 1 W }
        host H { gpus = 1000 x G }
        rack R { hosts = 1000 x H }
        site S { racks = 1001 x R }
    """, tmp_path)
    e = one(d, "E405")
    assert at(e) == (4, 6)
    assert "1,001,000,000" in e.message


def test_a_billion_gpus_is_allowed(tmp_path, deadline):
    d = build("""
        gpu G { power = 1 W }
        host H { gpus = 1000 x G }
        rack R { hosts = 1000 x H }
        site S { racks = 1000 x R }
    """, tmp_path)
    assert "E405" not in codes(d)
    assert astral_dsl.summary(d)["gpus"] == 10**9


def test_containment_goes_down_e403(tmp_path):
    d = build("""
        rack R { power = 1 kW }
        host H { racks = 2 x R }
        site S { hosts = 1 x H }
    """, tmp_path)
    assert at(one(d, "E403")) == (2, 10)


# ---- determinism ----------------------------------------------------------------------------------------------------------

def test_compiling_twice_gives_the_same_export(tmp_path):
    src = ASTRAL.replace("CHECKS", "check all(racks.power <= 45 kW)\ncheck count(pods) == 256")
    first = json.dumps(export_design(build(src, tmp_path)), ensure_ascii=False)
    second = json.dumps(export_design(build(src, tmp_path)), ensure_ascii=False)
    assert first == second
    doc = json.loads(first)
    assert doc["roots"] == ["Astral"]
    assert [i["path"] for i in doc["instances"]][0] == "Astral"


def test_export_of_a_design_with_unused_template_instances(tmp_path):
    # `R` has defaults, so it is instantiated on its own besides `R(n = 8)` in the site
    d = build("""
        gpu A { power = 700 W }
        host HA { gpus = 8 x A }
        rack R(n: count = 4) { hosts = n x HA }
        site S { racks = 2 x R(n = 8) }
    """, tmp_path)
    assert d.valid, d.diagnostics
    doc = export_design(d)
    site = next(i for i in doc["instances"] if i["path"] == "S")
    assert site["rollup"]["gpus"] == 128
    json.dumps(doc)


def test_diagnostics_are_sorted_and_deterministic(tmp_path):
    src = """
        site S {
          power_limit = 45 GB
          let a = nope
          let b = 1 kW + 1 Gb/s
        }
    """
    a = build(src, tmp_path)
    b = build(src, tmp_path)
    assert [(d.code, at(d), d.message) for d in a.diagnostics] == \
        [(d.code, at(d), d.message) for d in b.diagnostics]
    positions = [at(d) for d in a.diagnostics]
    assert positions == sorted(positions)
    assert codes(a) == ["E304", "E200", "E301"]


def test_a_template_parameter_declared_twice_is_e202(tmp_path):
    # `rack R(n, n)` compiled: the argument went to one of the two, silently
    e = one(build("rack R(n, n) { }\nsite S { racks = 1 x R(n = 1) }\n", tmp_path), "E202")
    assert at(e) == (1, 11)
    assert e.message == "parameter `n` of `R` is already declared (at 1:8)"



def test_a_word_named_twice_in_per_is_e202(tmp_path):
    # `per = [rail, rail]` was accepted and counted rail once: most likely `[rail, plane]`
    d = build("""
        switch Sw { ports = 64, port_speed = 400 Gb/s }
        fabric F {
          rails = 2, planes = 2
          tier leaf { switch = Sw, scope = site, per = [rail, rail], down = 8 x 400 Gb/s }
        }
        site S { fabric = F }
    """, tmp_path)
    assert [x.code for x in d.diagnostics if x.is_error] == ["E202"]
    e = one(d, "E202")
    assert at(e) == (4, 55)                       # the second `rail`
    assert e.message == "`rail` is already in `per` (at 4:49)"
    assert e.hint == ("remove one of them: a word named twice counts once; or name the one "
                      "not named: `per = [rail, plane]`")

def test_a_default_that_reads_a_later_parameter_says_so(tmp_path):
    # E200 "unknown name `m`" had no hint: the parameters are bound in order
    e = one(build("rack R(n = m, m = 1) { }\nsite S { racks = 1 x R }\n", tmp_path), "E200")
    assert at(e) == (1, 12)
    assert e.hint == ("`m` is a parameter of `R` declared after `n`: a default may use only "
                      "the parameters before it; declare `m` first")
    # a module's `m` is the one read there: 5, not the parameter's 1
    d = build("let m = 5\nrack R(n = m, m = 1) { check n == 5 }\nsite S { racks = 1 x R }\n",
              tmp_path)
    assert [x.code for x in d.diagnostics if x.is_error] == []


def test_an_unknown_name_with_no_near_miss_still_has_a_hint(tmp_path):
    e = one(build("let y = zz\n", tmp_path), "E200")
    assert e.hint.startswith("nothing named `zz` is declared here or imported: declare it")
    # Python's spelling of the yes/no values
    assert one(build("let y = True\n", tmp_path), "E200").hint == "did you mean `true`?"
    # a unit apart from its number: `1 W/ s` is `1 W` divided by a name `s`
    assert one(build("let y = 1 W/ s\n", tmp_path), "E200").hint.endswith(
        "names are case-sensitive; if `s` is meant as a unit, it follows its number (`1 s`), "
        "and a compound unit has no spaces (`1 m^3/h`, not `1 m^3/ h`)")


def test_a_symbolic_link_in_a_loop_is_e100_never_e000(tmp_path):
    """An entry file or an import that is a link to itself raised RuntimeError from
    Path.resolve (E000, exit 3); an import of one was E205 "not found" though it is there."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "loop.astral").symlink_to("loop.astral")
    e = one(build("import lib.loop\n", tmp_path), "E100")
    assert at(e) == (1, 8)
    assert e.message.endswith("lib/loop.astral is a symbolic link in a loop")
    assert e.hint == "point the link at the module's file, or replace it with the file"
    d = astral_dsl.load(tmp_path / "lib" / "loop.astral")
    (e,) = d.diagnostics
    assert e.code == "E100" and e.hint.startswith("the symbolic link points at itself")
    from astral_dsl.explore.bundle import load_with_bundle      # what `astral sweep` reads
    assert load_with_bundle(str(tmp_path / "lib" / "loop.astral"), {}, [])[1].entry == \
        "loop.astral"


def test_a_folder_named_as_a_module_is_e100_with_a_hint(tmp_path):
    (tmp_path / "lib" / "parts.astral").mkdir(parents=True)
    e = one(build("import lib.parts\n", tmp_path), "E100")
    assert e.hint.startswith("a module is a .astral file")


def test_an_environments_symbol_reading_keeps_every_other_field():
    """Env.as_symbols (an enum-typed field's expression: bare names are its symbols) is the
    environment with `symbols` set and every other field as it was, whatever fields Env has."""
    import attrs

    from astral_dsl.semantics.frames import Env

    values = {f.name: object() for f in attrs.fields(Env)}
    values["symbols"] = False
    env = Env(**values)
    read = env.as_symbols()
    assert type(read) is Env and read.symbols is True
    assert all(getattr(read, name) is value for name, value in values.items()
               if name != "symbols")


@pytest.mark.parametrize("example", ["single_pod", "gb200_nvl72", "sizing"])
def test_a_compile_leaves_nothing_to_the_cycle_collector(own_heap, example):
    """A compile's frames, environments, scopes and instantiator are freed as it returns, by
    their reference counts (semantics/release.py), not left in reference cycles for the
    collector's next pass: a pass after it finds nothing. The design is what it was."""
    import gc

    from astral_dsl.outputs.export import export_design
    from astral_dsl.workspace import Workspace

    ws = Workspace.open(str(REPO / "examples" / f"{example}.astral"), {})
    before = json.dumps(export_design(ws.design), sort_keys=True)
    enabled = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        design = ws.compile()
        assert json.dumps(export_design(design), sort_keys=True) == before
        del design
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()
