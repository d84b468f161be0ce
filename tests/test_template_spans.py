"""A check on a value that a stdlib template reads from its arguments stands where the user's file
gives it, the template's line that reads it its related span (semantics/origins.py,
model/uses.py); a value the stdlib states itself stands on the user's line that brings the
template in, the stdlib's line that states it its related span (rustc's primary span in the
user's code, a labelled note into the library). Before, the analyses pointed inside the stdlib
(`max_rack_heat = rated` of RearDoor, `count = units` of Transformer), or each code chose a
place of its own (E627, E635, E644, E634); then the template's line, and the stdlib's, were
notes naming `file:line:column`."""
from __future__ import annotations

import astral_dsl


def _at(text: str, needle: str, nth: int = 0):
    """(line, column) of the `nth` occurrence of `needle` in `text`, 1-based."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


def _one(text: str, code: str, name: str = "d.astral", **kw):
    ws = astral_dsl.compiles(text, name=name, **kw)
    (d,) = [d for d in astral_dsl.check(ws).diagnostics if d.code == code]
    return d


def _where(d):
    return d.span.file, d.span.start.line, d.span.start.column


def _related(d):
    """The related spans of `d`: (message, file, line, column) each."""
    return [(r.message, r.span.file, r.span.start.line, r.span.start.column) for r in d.related]


DOORS = """import stdlib.cooling { RearDoor }
host H { power = @POWER@ }
rack R { hosts = 4 x H }
site S {
  racks = 2 x R
  doors = @DOOR@
}
"""


def test_a_stdlib_air_units_rack_limit_given_as_an_argument_stands_at_the_argument():
    # 4 x 12.6 kW = 50.4 kW of air heat a rack, over the 40 kW given: E644 stood at
    # stdlib/cooling.astral:81:19 (`max_rack_heat = rated`) when the unit is a field's value
    text = DOORS.replace("@POWER@", "12.6 kW").replace("@DOOR@", "RearDoor(rated = 40 kW)")
    e = _one(text, "E644")
    assert _where(e) == ("d.astral",) + _at(text, "40 kW")
    assert e.notes == () and _related(e) == [
        ("`RearDoor` reads it as `max_rack_heat`", "stdlib/cooling.astral", 81, 19)]


def test_a_limit_the_stdlib_states_itself_stands_on_the_users_line_with_the_stdlibs_related():
    # RearDoor()'s 50 kW is the stdlib's default: E644 stood at the stdlib's line that states
    # it, with a note naming the user's line that brings the door in; it stands on that line
    # now, the stdlib's its related span; so does a diagnostic at the template's declaration
    # (W642: no `dew_point`)
    text = DOORS.replace("@POWER@", "15 kW").replace("@DOOR@", "RearDoor()")
    e = _one(text, "E644")
    assert _where(e) == ("d.astral",) + _at(text, "RearDoor()")
    assert e.notes == () and _related(e) == [
        ("`RearDoor` states `max_rack_heat` here", "stdlib/cooling.astral", 81, 19)]
    (w,) = [d for d in astral_dsl.check(astral_dsl.compiles(text, name="d.astral")).diagnostics
            if d.code == "W642" and "dew_point" in d.message]
    assert _where(w) == ("d.astral",) + _at(text, "RearDoor()") and w.notes == ()
    assert _related(w) == [("air `RearDoor` is declared here", "stdlib/cooling.astral", 78, 1)]


def test_no_users_line_is_noted_where_two_instances_share_the_stdlibs():
    """Two doors of other ratings are two instances of RearDoor: each W642 stands at its
    declaration, which does not tell them apart: neither moves to one of the two lines."""
    text = DOORS.replace("@POWER@", "5 kW").replace(
        "@DOOR@", "RearDoor(rated = 40 kW)\n  more = RearDoor(rated = 45 kW)")
    ws = astral_dsl.compiles(text, name="d.astral")
    found = [d for d in astral_dsl.check(ws).diagnostics
             if d.code == "W642" and "dew_point" in d.message]
    assert len(found) == 2 and all(d.notes == () and d.related == () and
                                   d.span.file == "stdlib/cooling.astral" for d in found)


def test_an_argument_named_by_a_parameter_stands_at_the_name_in_the_users_file():
    text = ("param limit = 45 kW\n" + DOORS.replace("@POWER@", "12.6 kW")
            .replace("@DOOR@", "RearDoor(rated = limit)"))
    e = _one(text, "E644", overrides={"limit": "40 kW"})
    assert "(40 kW at a 12 K rise)" in e.message
    assert _where(e) == ("d.astral",) + _at(text, "limit)")


def test_a_transformer_count_given_as_units_stands_at_the_argument():
    # one unit of a 2N pair leaves none in service: E634 stood at `count = units` of
    # stdlib/power.astral (the template's own line)
    text = """import stdlib.power { Transformer }
host H { power = 10 kW }
rack R { hosts = 10 x H }
site S {
  racks = 3 x R
  mv = Transformer(rating = 100 kVA, units = 1)
}
"""
    e = _one(text, "E634")
    assert _where(e) == ("d.astral",) + _at(text, "1)")
    assert _related(e)[-1] == ("`Transformer` reads it as `count`", "stdlib/power.astral", 194, 11)


SHELF = """import stdlib.power { HVDC240, PowerShelf }
host H { power = 10 kW }
rack R { hosts = 10 x H }
site S {
  racks = 3 x R
  feeder hvdc {
    current = dc, voltage = 240 V, standard = HVDC240, capacity = 400 kW, serves = racks
    rectifier = @SHELF@
    conductors = 2, conductor_area = 240 mm^2, material = copper, length = 20 m
    ampacity = 1000 A, conductor_temperature = 70 degC
  }
}
"""


def test_rectifier_modules_read_from_an_argument_stand_at_it_and_the_stdlibs_at_its_line():
    """PowerShelf's `modules = 6 * shelves`: at `shelves = 2` when the user gives it (E627 had
    its own rule: where the feeder names the rectifier); for its default of 8 shelves at the
    user's `PowerShelf()` (it stood at the stdlib's line), the stdlib's line its related span."""
    text = SHELF.replace("@SHELF@", "PowerShelf(shelves = 2)")
    e = _one(text, "E627")
    assert _where(e) == ("d.astral",) + _at(text, "2)")
    assert _related(e) == [("`PowerShelf` reads it as `modules`", "stdlib/power.astral", 140, 13)]
    text = SHELF.replace("@SHELF@", "PowerShelf()")
    e = _one(text, "E627")
    assert _where(e) == ("d.astral",) + _at(text, "PowerShelf()")
    assert _related(e) == [("`PowerShelf` states `modules` here", "stdlib/power.astral", 140, 13)]


def test_an_approach_given_to_a_stdlib_air_unit_is_where_its_supply_is_out_of_reach():
    # RearDoor states its 27 degC supply; the user's 20 K approach on 15 degC water reaches
    # 35 degC: E651 stood at the stdlib's `supply = 27 degC`
    text = """import stdlib.cooling { RearDoor, Water }
host H { power = 5 kW }
rack R { hosts = 4 x H }
site S {
  racks = 2 x R
  doors = RearDoor(rated = 40 kW, gap = 20 K)
  facility F { supply = 15 degC, rise = 10 K, fluid = Water, pump_head = 200 kPa, pump_efficiency = 75 % }
}
"""
    e = _one(text, "E651")
    assert _where(e) == ("d.astral",) + _at(text, "20 K")
    assert _related(e) == [("`RearDoor` reads it as `approach`", "stdlib/cooling.astral", 82, 14)]


def test_a_value_passed_on_through_stdlib_templates_and_parts_keeps_the_users_place():
    """NVL72 passes its `nic` on to its trays, whose power reads the NIC's; HGX8's power
    defaults to its GPU's `system_power`: each field is set where the user's file states
    the figure, and the template's expression is kept as its use."""
    text = """import stdlib.hardware { NVL72, HGX8, CX7_400G }
nic Mine { ports = 1, port_speed = 400 Gb/s, power = 30 W, protocol = infiniband }
gpu G { power = 700 W, system_power = 11 kW, system_units = 8 U }
site S {
  racks = 1 x NVL72(nic = Mine)
  hosts = 1 x HGX8(gpu = G, nic = CX7_400G)
}
"""
    design = astral_dsl.compiles(text, name="d.astral").design
    (tray,) = [i for i in design.instances if i.template == "GB200_Tray"]
    assert tray.span_of("power").file == "d.astral"
    assert (tray.span_of("power").start.line, tray.span_of("power").start.column) == \
        _at(text, "30 W")
    assert dict(tray.uses)["power"].file == "stdlib/hardware.astral"
    assert "units" in tray.stated and tray.span_of("units").file == "stdlib/hardware.astral"
    (hgx,) = [i for i in design.instances if i.template == "HGX8"]
    assert (hgx.span_of("power").file, hgx.span_of("power").start.line,
            hgx.span_of("power").start.column) == ("d.astral",) + _at(text, "11 kW")
    # the first of several fields the user's files set; else the first's (the stdlib's: G
    # states no `nvlink_bandwidth`, HGX8's default stands, W212)
    assert hgx.span_of("liquid_share", "power") == hgx.span_of("power")
    assert hgx.span_of("liquid_share", "nvlink_bandwidth").file == "stdlib/hardware.astral"


def test_a_value_a_stdlib_template_refuses_stands_on_the_users_argument(tmp_path):
    # `Rectifier(module = -5 kW)`: the stdlib's `module = module` refuses it (E315); it stood at
    # stdlib/power.astral's `module` with a note naming the user's line, then at the user's with
    # a note naming the stdlib's: the stdlib's line is its related span
    import astral_dsl

    path = tmp_path / "neg.astral"
    path.write_text("import stdlib.power { Rectifier }\n"
                    "gpu G { power = 700 W }\n"
                    "host H { gpus = 8 x G, power = 10 kW }\n"
                    "rack Rk { hosts = 2 x H }\n"
                    "row Rw {\n"
                    "  racks = 2 x Rk\n"
                    "  feeder a { current = dc, voltage = 240 V, capacity = 100 kW,\n"
                    "             rectifier = Rectifier(module = -5 kW), serves = racks }\n"
                    "}\n"
                    "site S { rows = 1 x Rw }\n", encoding="utf-8")
    found = astral_dsl.check(astral_dsl.compile(path)).diagnostics
    (e,) = [d for d in found if d.code == "E315"]
    assert (e.span.file, e.span.start.line, e.span.start.column) == (str(path), 8, 45)
    ((said, file, _, _),) = _related(e)
    assert said == "`Rectifier` reads it as `module`" and file == "stdlib/power.astral"
