"""Issue #25, item 7: a value with a body (`battery = LeadAcid(...) { strings = 4 }`), sound
defaults with a warning where a data sheet's value is standard (`default(...)`, W212: HGX8's
NVLink bandwidth), and messages that point at the mistake (`8xG`, an unclosed `{`: E105 in
test_parser.py)."""
from __future__ import annotations

import textwrap

import pytest

import astral_dsl


def loads(text: str):
    return astral_dsl.loads(textwrap.dedent(text), name="m.astral")


def codes(design):
    return [d.code for d in design.diagnostics]


# ---- `x = Template(...) { body }` ------------------------------------------------------------------
def test_a_field_value_takes_a_body_as_a_derived_declaration_does():
    d = loads("""
        import stdlib.power { LeadAcid, Rectifier }
        gpu G { power = 700 W }
        host H { gpus = 8 x G, power = 10 kW }
        rack R { hosts = 4 x H }
        row Row {
          racks = 4 x R
          feeder hvdc {
            current = dc, voltage = 240 V, capacity = 200 kW, serves = racks
            battery = LeadAcid(autonomy = 10 min, string_capacity = 200 Ah) { strings = 4 }
            rectifier = Rectifier { module = 25 kW, modules = 10 }
          }
        }
        site S {
          rows = 1 x Row
          big = H { power = 12 kW }
          check rows[0].hvdc.battery.strings == 4 and rows[0].hvdc.battery.autonomy == 10 min
          check rows[0].hvdc.battery.cells == 120            // the rest is LeadAcid's
          check rows[0].hvdc.rectifier.modules == 10 and rows[0].hvdc.rectifier.module == 25 kW
          check big.power == 12 kW and count(big.gpus) == 8 and count(hosts) == 17
        }
    """)
    # only the stdlib's stated assumptions the design keeps (W216: LeadAcid's recharge rate,
    # Rectifier's efficiency and no-load loss); not the `module` default its body replaces
    assert d.valid and [x.code for x in d.diagnostics] == ["W216"] * 3, d.diagnostics
    assert not [x for x in d.diagnostics if "`module`" in x.message]
    assert [c.passed for c in d.checks] == [True] * 4
    # the same as the keyword form
    k = loads("""
        import stdlib.power { LeadAcid }
        site S { b = LeadAcid(autonomy = 10 min, strings = 4) }
    """)
    b = loads("""
        import stdlib.power { LeadAcid }
        site S { b = LeadAcid(autonomy = 10 min) { strings = 4 } }
    """)
    assert dict(k.instance("S.b").fields) == dict(b.instance("S.b").fields)


def test_only_a_template_instance_takes_a_body():
    d = loads("""
        gpu G { power = 1 W }
        site S { z = 3 { y = 1 } }
    """)
    (e,) = d.diagnostics
    assert e.code == "E303" and (e.span.start.line, e.span.start.column) == (3, 14)
    assert "only a template's instance takes a body" in e.message


def test_a_body_on_a_value_formats_like_a_declaration_body():
    from astral_dsl.fmt import format_text

    text = "row R { feeder f { battery = LeadAcid(autonomy = 10 min) {strings=4} } }\n"
    assert format_text(text, "f.astral") == \
        "row R { feeder f { battery = LeadAcid(autonomy = 10 min) { strings = 4 } } }\n"
    text = "row R {\n  feeder f {\n  battery = LeadAcid(autonomy = 10 min) {\nstrings=4\n}\n}\n}\n"
    assert format_text(text, "f.astral") == (
        "row R {\n  feeder f {\n    battery = LeadAcid(autonomy = 10 min) {\n      strings = 4\n"
        "    }\n  }\n}\n")


# ---- `default(part.field, fallback, "why")`: W212 ------------------------------------------------
HGX = """
    import stdlib.hardware {{ HGX8, CX7_400G }}
    gpu MyGPU {{
      power = 700 W, memory = 80 GB, memory_bandwidth = 3.35 TB/s, flops_bf16 = 989 TFLOP/s
      system_power = 10.2 kW, system_units = 8 U{extra}
    }}
    host Node = HGX8(gpu = MyGPU, nic = CX7_400G)
    site S {{ h = 2 x Node }}
"""


def test_hgx8_takes_nvlink_4_for_a_gpu_that_states_none_and_says_so():
    """HGX8 once failed with E209 unless the GPU stated `nvlink_bandwidth`."""
    d = loads(HGX.format(extra=""))
    assert d.valid, d.diagnostics
    # and HGX8's assumed 75 % liquid share (W216)
    (w,) = [x for x in d.diagnostics if x.code != "W216"]
    assert (w.code, w.severity.value) == ("W212", "warning")
    assert w.message == ("gpu `MyGPU` states no `nvlink_bandwidth`: assumed 450 GB/s for host "
                         "`Node`")
    assert (w.span.file, w.span.start.line) == ("m.astral", 7)      # the user's `host Node`
    assert "NVIDIA H100 Tensor Core GPU data sheet, 2023" in w.notes[0]
    assert w.hint == "state `nvlink_bandwidth` on gpu `MyGPU` (its data sheet value)"
    assert d.instance("S.h[0]").field("nvlink_bandwidth").value_in("GB/s") == 450
    # stated: taken as it is, without a word
    stated = loads(HGX.format(extra=", nvlink_bandwidth = 900 GB/s"))
    assert [x.code for x in stated.diagnostics] == ["W216"]
    assert stated.instance("S.h[0]").field("nvlink_bandwidth").value_in("GB/s") == 900


def test_default_falls_back_only_for_a_field_the_part_leaves_out():
    d = loads("""
        gpu G { power = 700 W }
        host H(g: gpu) {
          gpus = 8 x g
          nvlink_bandwidth = default(g.nvlink_bandwith, 450 GB/s, "NVLink 4")  // misspelt
        }
        site S { h = H(G) }
    """)
    assert codes(d) == ["E209"]                 # a misspelt field is not a missing one
    d = loads("""
        gpu G { power = 700 W }
        host H(g: gpu) { gpus = 8 x g, nvlink_bandwidth = default(g.nvlink_bandwidth, 1 TB/s) }
        site S { h = H(G) }
    """)
    assert codes(d) == ["E307"]                 # why it is assumed must be said
    d = loads("""
        gpu G { power = 700 W }
        host H(g: gpu) { gpus = 8 x g, nvlink_bandwidth = default(g.nvlink_bandwidth, 1 TB/s, 4) }
        site S { h = H(G) }
    """)
    assert codes(d) == ["E303"]


# ---- messages ---------------------------------------------------------------------------------------
def test_a_replication_without_spaces_points_at_the_spacing_rule():
    d = loads("gpu G { power = 1 W }\nsite S { x = 8xG }\n")
    (e,) = d.diagnostics
    assert (e.code, e.message) == ("E300", "unknown unit `xG`")
    assert e.hint == ("`8xG` reads `xG` as the unit of 8: to replicate, put spaces around `x`, "
                      "as in `8 x G`")
    # a real unit that starts with `x` is not this mistake: an unknown unit is said plainly
    d = loads("site S { note = \"n\", let y = 3 kW }\n")
    assert d.valid


# ---- E303 (wrong type) comes with a hint -------------------------------------------------------
@pytest.mark.parametrize("text, hint", [
    ('site S { power_limit = "45 kW" }',
     "write a number and its unit, without quotes: `45 kW`"),
    ("site S { power_limit = true }", "write a number and its unit, e.g. `10 kW`"),
    ('site S { x = 3 W < "a" }',
     "compare two quantities (`<`, `>`, `==`, ...), or two values of one kind with `==` or `!=`"),
    ("site S { x = if 3 W then 1 else 2 }",
     "write a comparison, e.g. `x > 10 kW`, or `true` / `false`"),
    ('site S { x = "a" + 1 }', "arithmetic works on numbers and quantities: use a field that "
                               "holds one (e.g. `host.power`), not a string or an instance"),
    ('site S { x = "a"[0] }', "index a group of instances or a list: `racks[3]`, `racks[0..7]`"),
    ('site S { x = -"a" }', "only numbers and quantities have a sign, e.g. `-5 K`"),
    ('site S { x = count(3 W) }', "e.g. `count(racks)` or `count([A, B])`"),
    ("site S { x = [i for i in 3 W] }",
     "e.g. `for i in 0..3`, `for g in [A, B]`, `for r in racks`"),
    ("import stdlib.hardware { HGX8 }\nsite S { hosts = 2 x HGX8(gpu = \"H100\") }",
     "name a gpu declared in this file or imported, by its name (without quotes)"),
])
def test_a_wrong_type_says_what_to_write(text, hint):
    """E303 came with no hint at most of its sites (docs/diagnostics.md)."""
    found = [d for d in loads(text + "\n").diagnostics if d.code == "E303"]
    assert [d.hint for d in found] == [hint]
